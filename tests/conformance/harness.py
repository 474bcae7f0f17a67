"""The conformance harness: case files in, workbooks built, three calculations out.

A case (tests/conformance/cases/<FUNCTION>.yaml, format in tests/conformance/README.md) becomes
an .xlsx written as Excel writes it (openpyxl; newer functions with their `_xlfn.` prefix), and
is calculated three ways:

- IronCalc alone: the `ironcalc` package, no correction layer.
- formulas alone: the `formulas` package as published. The service patches formulas' function
  table in its own process (shared/calc/formulas/functions.py), so this runs in a child process
  that never imports the service, one workbook per case file (a sheet per case: formulas pays
  about a quarter of a second per workbook, a few hundredths per sheet).
- the service: what a job of a workbook holding only the case answers. The workbook is loaded
  as an upload is (IronCalc with the correction layer), serialized and restored as the worker
  does, calculated, its output read through the named range as a job reads it; an output that
  depends on a function the engine lacks fails as a job fails (shared.calc.fidelity.
  unimplemented). When IronCalc's answer differs from Excel's, the per-workbook choice checks
  the `formulas` engine against the value Excel saved and keeps it when it matches, as the
  upload of an Excel-saved file with only that cell would.
"""

from __future__ import annotations

import io
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from shared.calc.xlsx.prefixes import XLFN, XLWS

# formulas draws a progress bar per calculation (tqdm); the run's output is the table, not those.
os.environ.setdefault("TQDM_DISABLE", "1")

CASES_DIR = Path(__file__).parent / "cases"
DEFAULT_AT = "F1"
RESULT = "RESULT"  # the named range over the formula cell (or its array area): the job's output
DEFAULT_TOLERANCE = 1e-9
ERRORS = frozenset({
    "#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A", "#GETTING_DATA", "#SPILL!",
    "#CALC!", "#FIELD!", "#BLOCKED!", "#CONNECT!", "#BUSY!", "#UNKNOWN!", "#N/IMPL!", "#ERROR!",
})

_STRING = re.compile(r'"(?:[^"]|"")*"')
_CALL = re.compile(
    r"(?<![A-Za-z0-9_.])(" + "|".join(re.escape(n) for n in sorted(XLFN | XLWS, key=len, reverse=True))
    + r")(?=\s*\()",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Case:
    function: str
    name: str
    formula: str
    excel: Any
    cells: dict = field(default_factory=dict, hash=False, compare=False)
    at: str = DEFAULT_AT
    tolerance: float = DEFAULT_TOLERANCE
    names: dict = field(default_factory=dict, hash=False, compare=False)
    array: bool = False
    known_gap: str | None = None
    source: str | None = None
    hidden_rows: tuple = ()
    filter: str | None = None
    file: str = ""
    index: int = 0

    @property
    def id(self) -> str:
        return f"{self.function}[{self.index}] {self.name}"

    @property
    def shape(self) -> tuple[int, int]:
        if isinstance(self.excel, list) and self.excel and isinstance(self.excel[0], list):
            return len(self.excel), len(self.excel[0])
        if isinstance(self.excel, list):
            return 1, len(self.excel)
        return 1, 1

    @property
    def standalone(self) -> bool:
        """Whether the case needs a workbook of its own (it names its sheet, defines names, hides
        rows or filters a list)."""
        return bool(self.names or self.hidden_rows or self.filter) or "!" in self.formula or any(
            isinstance(v, str) and "!" in v for v in _flat_cells(self.cells)
        )


def _flat_cells(cells: dict):
    for value in cells.values():
        if isinstance(value, list):
            for row in value:
                yield from (row if isinstance(row, list) else [row])
        else:
            yield value


LOAD_ERRORS: dict[str, str] = {}  # case file -> why it could not be read (a test names them)


def load_cases(directory: Path = CASES_DIR) -> list[Case]:
    """Every case of every readable case file, in file then case order; the others are kept in
    LOAD_ERRORS."""
    cases = []
    for path in sorted(directory.glob("*.yaml")):
        try:
            cases += _file_cases(path)
        except (yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as exc:
            LOAD_ERRORS[path.name] = f"{type(exc).__name__}: {exc}"
    return cases


def _file_cases(path: Path) -> list[Case]:
    document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    function = str(document.get("function") or path.stem).upper()
    return [
        Case(
            function=function, name=str(raw.get("name", f"case {index}")), formula=str(raw["formula"]),
            excel=raw.get("excel"), cells=raw.get("cells") or {}, at=str(raw.get("at") or DEFAULT_AT),
            tolerance=float(raw.get("tolerance", DEFAULT_TOLERANCE)), names=raw.get("names") or {},
            array=bool(raw.get("array", False)), known_gap=raw.get("known_gap"),
            source=raw.get("source") or document.get("source"), file=path.name, index=index,
            hidden_rows=tuple(int(r) for r in raw.get("hidden_rows") or ()), filter=raw.get("filter"),
        )
        for index, raw in enumerate(document.get("cases") or [])
    ]


def as_written(formula: str) -> str:
    """The formula as Excel writes it in the file: newer functions prefixed."""
    pieces, last = [], 0

    def prefix(match: re.Match) -> str:
        name = match.group(1).upper()
        start = match.start(1)
        before = text[max(0, start - 6):start].lower()
        if before.endswith("_xlfn.") or before.endswith("_xlws."):
            return match.group(1)
        return ("_xlfn._xlws." if name in XLWS else "_xlfn.") + match.group(1)

    text = formula
    for m in _STRING.finditer(formula):
        pieces.append(_CALL.sub(prefix, formula[last:m.start()]))
        pieces.append(m.group(0))
        last = m.end()
    pieces.append(_CALL.sub(prefix, formula[last:]))
    return "".join(pieces)


# --- building ------------------------------------------------------------------------------


def _write(sheet, case: Case) -> None:
    from openpyxl.utils.cell import coordinate_from_string, column_index_from_string
    from openpyxl.worksheet.formula import ArrayFormula

    for ref, value in case.cells.items():
        col_letters, row = coordinate_from_string(str(ref))
        col = column_index_from_string(col_letters)
        block = value if isinstance(value, list) else [[value]]
        for r, line in enumerate(block):
            for c, item in enumerate(line if isinstance(line, list) else [line]):
                if isinstance(item, str) and item.startswith("="):
                    item = as_written(item)
                sheet.cell(row + r, col + c, item)
    for row in case.hidden_rows:
        sheet.row_dimensions[row].hidden = True
    if case.filter:  # an autoFilter over the list whose first column filters: hidden rows in it are
        # what Excel reads as filtered out (hidden by a filter), the others as hidden by hand
        sheet.auto_filter.ref = case.filter
        sheet.auto_filter.add_filter_column(0, ["kept"])
    formula = as_written(case.formula if case.formula.startswith("=") else "=" + case.formula)
    rows, cols = case.shape
    if case.array or (rows, cols) != (1, 1):
        sheet[case.at] = ArrayFormula(area(case), formula)
    else:
        sheet[case.at] = formula


def area(case: Case) -> str:
    from openpyxl.utils.cell import coordinate_from_string, column_index_from_string, get_column_letter

    col_letters, row = coordinate_from_string(case.at)
    rows, cols = case.shape
    last = f"{get_column_letter(column_index_from_string(col_letters) + cols - 1)}{row + rows - 1}"
    return case.at if (rows, cols) == (1, 1) else f"{case.at}:{last}"


def build(case: Case) -> bytes:
    """The case's own workbook: sheet Sheet1, its names, RESULT over the formula's cells."""
    from openpyxl import Workbook
    from openpyxl.workbook.defined_name import DefinedName

    book = Workbook()
    sheet = book.active
    sheet.title = "Sheet1"
    _write(sheet, case)
    absolute = ":".join("$" + re.sub(r"(\d+)", r"$\1", part) for part in area(case).split(":"))
    book.defined_names[RESULT] = DefinedName(RESULT, attr_text=f"Sheet1!{absolute}")
    for name, target in case.names.items():
        text = as_written(str(target))
        book.defined_names[name] = DefinedName(name, attr_text=text[1:] if text.startswith("=") else text)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def build_batch(cases: list[Case]) -> tuple[bytes, dict[str, str]]:
    """One workbook with a sheet per case (cases that need no workbook of their own); the sheet
    name of each case id."""
    from openpyxl import Workbook

    book = Workbook()
    book.remove(book.active)
    sheets = {}
    for number, case in enumerate(cases):
        name = f"C{number}"
        _write(book.create_sheet(name), case)
        sheets[case.id] = name
    out = io.BytesIO()
    book.save(out)
    return out.getvalue(), sheets


# --- values --------------------------------------------------------------------------------


def normal(value: Any) -> tuple[str, Any]:
    """A scalar as (kind, value): ("n", float), ("s", str), ("b", bool), ("e", code), ("empty", None)."""
    if value is None:
        return ("empty", None)
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", float(value))
    if isinstance(value, str) and value.upper() in ERRORS:
        return ("e", value.upper())
    return ("s", str(value))


def grid(value: Any, shape: tuple[int, int]) -> list[list[Any]]:
    """A value as a rows x cols grid (a job's output shapes: scalar, flat list, list of rows)."""
    rows, cols = shape
    if not isinstance(value, list):
        return [[value]]
    if value and isinstance(value[0], list):
        return value
    return [value] if rows == 1 else [[v] for v in value]


def same(expected: Any, actual: Any, tolerance: float) -> bool:
    """Whether one calculated scalar equals Excel's (numbers within `tolerance`, relative)."""
    (ek, ev), (ak, av) = normal(expected), actual if isinstance(actual, tuple) else normal(actual)
    if ak == "empty":  # a formula over a blank shows 0 in Excel
        ak, av = ("n", 0.0) if ek == "n" else ("s", "")
    if ek != ak:
        return False
    if ek == "n":
        return math.isclose(ev, av, rel_tol=tolerance, abs_tol=1e-300) or (
            abs(ev) < 1e-12 and abs(av) < 1e-12 and abs(ev - av) < tolerance
        )
    if ek == "s":
        return ev == av
    return ev == av


def matches(case: Case, actual: Any) -> bool:
    """Whether a calculated result (a grid of scalars or (kind, value) pairs) equals Excel's."""
    if actual is None:
        return False
    expected = grid(case.excel, case.shape)
    if len(actual) != len(expected) or any(len(a) != len(e) for a, e in zip(actual, expected)):
        return False
    return all(same(e, a, case.tolerance) for ea, aa in zip(expected, actual) for e, a in zip(ea, aa))


def shown(actual: Any) -> Any:
    """A result as the table and failure messages show it."""
    if actual is None:
        return None
    if isinstance(actual, str):
        return actual

    def one(value):
        return value[1] if isinstance(value, tuple) else value

    cells = [[one(v) for v in row] for row in actual]
    return cells[0][0] if len(cells) == 1 and len(cells[0]) == 1 else cells


# --- the three calculations ----------------------------------------------------------------


def ironcalc_alone(case: Case, data: bytes) -> list[list[tuple]] | str:
    """The case by the ironcalc package alone (no correction layer)."""
    import os
    import tempfile

    import ironcalc
    from openpyxl.utils.cell import coordinate_from_string, column_index_from_string

    fd, path = tempfile.mkstemp(suffix=".xlsx")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        model = ironcalc.load_from_xlsx(path, "en", "UTC")
        model.evaluate()
    except BaseException as exc:  # noqa: BLE001 - pyo3 panics are BaseExceptions
        return f"failed: {type(exc).__name__}"
    finally:
        os.unlink(path)
    col_letters, row = coordinate_from_string(case.at)
    col = column_index_from_string(col_letters)
    rows, cols = case.shape
    out = []
    for r in range(rows):
        line = []
        for c in range(cols):
            value = model.get_cell_value(0, row + r, col + c)
            if isinstance(value, str) and value.startswith("#") and str(model.get_cell_type(0, row + r, col + c)).endswith("ErrorValue"):
                line.append(("e", value))
            else:
                line.append(normal(value))
        out.append(line)
    return out


def formulas_batch(data: bytes, targets: dict[str, tuple[str, str, int, int]]) -> dict[str, Any]:
    """In a child process: the formulas package alone on one workbook; `targets` maps a case id
    to (sheet, top-left cell, rows, cols). Answers each case's grid, or a failure text."""
    import logging
    import os
    import tempfile

    # A function formulas lacks is a result here (its column of the table), not a traceback to print.
    logging.getLogger("schedula").setLevel(logging.CRITICAL)
    logging.getLogger("formulas").setLevel(logging.CRITICAL)

    try:
        import formulas
        import schedula as sh
        from formulas.tokens.operand import XlError
        from openpyxl.utils.cell import coordinate_from_string, column_index_from_string
    except ImportError as exc:
        return {key: f"failed: {exc}" for key in targets}
    fd, path = tempfile.mkstemp(suffix=".xlsx", prefix="conformance")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        model = formulas.ExcelModel().loads(path).finish()
        solution = model.calculate()
    except Exception as exc:  # noqa: BLE001 - one answer for the whole workbook
        return {key: f"failed: {type(exc).__name__}" for key in targets}
    finally:
        os.unlink(path)
    cells: dict[tuple[str, int, int], Any] = {}
    for key, value in solution.items():
        match = re.fullmatch(r"'\[[^\]]+\]([^']+)'!\$?([A-Z]+)\$?(\d+)(?::\$?([A-Z]+)\$?(\d+))?", str(key))
        if match is None:
            continue
        sheet, c1, r1 = match.group(1), column_index_from_string(match.group(2)), int(match.group(3))
        array = getattr(value, "value", value)
        try:
            import numpy as np

            array = np.asarray(array, dtype=object)
            if array.ndim == 0:
                array = array.reshape(1, 1)
            elif array.ndim == 1:
                array = array.reshape(1, -1)
        except Exception:  # noqa: BLE001
            continue
        for r in range(array.shape[0]):
            for c in range(array.shape[1]):
                cells.setdefault((sheet.upper(), r1 + r, c1 + c), array[r, c])

    def one(value) -> tuple:
        if value is sh.EMPTY:
            return ("empty", None)
        if isinstance(value, XlError):
            return ("e", str(value))
        if hasattr(value, "item") and not isinstance(value, str):
            value = value.item()
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            return ("e", "#NUM!")
        return normal(value)

    answers: dict[str, Any] = {}
    for key, (sheet, at, rows, cols) in targets.items():
        col_letters, row = coordinate_from_string(at)
        col = column_index_from_string(col_letters)
        if (sheet.upper(), row, col) not in cells:
            answers[key] = "failed: no value"
            continue
        answers[key] = [
            [one(cells.get((sheet.upper(), row + r, col + c), sh.EMPTY)) for c in range(cols)]
            for r in range(rows)
        ]
    return answers


@dataclass
class ServiceAnswer:
    value: Any  # a grid, or the failure text
    engine: str
    failed: bool = False


def service(case: Case, data: bytes) -> ServiceAnswer:
    """The case as the service calculates a job of a workbook holding only it."""
    ironcalc_answer = _job(case, data, "ironcalc")
    if not ironcalc_answer.failed and matches(case, ironcalc_answer.value):
        return ironcalc_answer
    formulas_answer = _job(case, data, "formulas")
    return formulas_answer if not formulas_answer.failed and matches(case, formulas_answer.value) else ironcalc_answer


def _job(case: Case, data: bytes, engine_name: str) -> ServiceAnswer:
    from shared.calc import get_engine
    from shared.calc.fidelity import unimplemented
    from shared.errors import WorkbookError

    engine = get_engine(engine_name)
    try:
        workbook = engine.load_serialized(engine.load_xlsx(data).serialize())
        outputs = workbook.calculate({}, outputs=[RESULT])
    except WorkbookError as exc:
        return ServiceAnswer(f"failed: {exc.message}", engine_name, failed=True)
    except Exception as exc:  # noqa: BLE001 - a failed job, whatever raised
        return ServiceAnswer(f"failed: {type(exc).__name__}", engine_name, failed=True)
    failure = unimplemented.output_failure(unimplemented.analyse_workbook(data, engine_name), outputs)
    if failure is not None:
        return ServiceAnswer(f"failed: {failure}", engine_name, failed=True)
    value = outputs.get(RESULT)
    return ServiceAnswer([[normal(v) for v in row] for row in grid(value, case.shape)], engine_name)


@dataclass
class Outcome:
    case: Case
    ironcalc: Any
    formulas: Any
    service: ServiceAnswer

    @property
    def ironcalc_ok(self) -> bool:
        return not isinstance(self.ironcalc, str) and matches(self.case, self.ironcalc)

    @property
    def formulas_ok(self) -> bool:
        return not isinstance(self.formulas, str) and matches(self.case, self.formulas)

    @property
    def service_ok(self) -> bool:
        return not self.service.failed and matches(self.case, self.service.value)


def formulas_jobs(cases: list[Case]) -> list[tuple[bytes, dict[str, tuple[str, str, int, int]]]]:
    """The workbooks the formulas child calculates: one per case file, and one per standalone case."""
    by_file: dict[str, list[Case]] = {}
    jobs = []
    for case in cases:
        if case.standalone:
            jobs.append((build(case), {case.id: ("Sheet1", case.at, *case.shape)}))
        else:
            by_file.setdefault(case.file, []).append(case)
    for group in by_file.values():
        data, sheets = build_batch(group)
        jobs.append((data, {c.id: (sheets[c.id], c.at, *c.shape) for c in group}))
    return jobs


def run_formulas_alone(cases: list[Case], executor=None) -> dict[str, Any]:
    """formulas alone for every case, in a child process (submitted to `executor` when given:
    the futures' results are merged when read)."""
    jobs = formulas_jobs(cases)
    if executor is None:
        import concurrent.futures
        import multiprocessing

        with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            return _merge([pool.submit(formulas_batch, *job) for job in jobs])
    return {"futures": [executor.submit(formulas_batch, *job) for job in jobs]}


def _merge(futures) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    for future in futures:
        try:
            answers.update(future.result())
        except Exception:  # noqa: BLE001 - a crashed child fails its cases (not answered), not the run
            continue
    return answers


def run_all(cases: list[Case]) -> dict[str, Outcome]:
    """Every case's three calculations (the support table's and the differential's entry point)."""
    formulas_answers = run_formulas_alone(cases)
    outcomes = {}
    for case in cases:
        data = build(case)
        outcomes[case.id] = Outcome(
            case, ironcalc_alone(case, data), formulas_answers.get(case.id, "failed: not run"), service(case, data)
        )
    return outcomes


def per_function(outcomes: dict[str, Outcome]) -> dict[str, dict[str, int]]:
    """{function: {cases, ironcalc, formulas, service, known_gap}} counted over the outcomes."""
    table: dict[str, dict[str, int]] = {}
    for outcome in outcomes.values():
        row = table.setdefault(outcome.case.function, {"cases": 0, "ironcalc": 0, "formulas": 0, "service": 0, "known_gap": 0})
        row["cases"] += 1
        row["ironcalc"] += outcome.ironcalc_ok
        row["formulas"] += outcome.formulas_ok
        row["service"] += outcome.service_ok
        row["known_gap"] += bool(outcome.case.known_gap)
    return dict(sorted(table.items()))
