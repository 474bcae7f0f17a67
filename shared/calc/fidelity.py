"""The fidelity check: recalculate every formula cell with an engine, compare with Excel's cache.

Excel's cached values are read straight from the package XML (no date conversion, errors kept
as errors). Numbers match within a relative tolerance of 1e-9, text and booleans exactly,
errors by their code. Volatile functions, the cells that depend on them and references to
other workbooks are left out. `check_isolated` runs a check in a child process with a
deadline and an address-space limit, for engines that can take minutes or gigabytes.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import subprocess
import sys
import time
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from xml.etree import ElementTree

from openpyxl.formula.tokenizer import Token, Tokenizer
from openpyxl.formula.translate import Translator

from shared.calc.refs import MAX_COLS, MAX_ROWS, cell_name, column_number
from shared.errors import WorkbookError

REL_TOL = 1e-9
# Below this magnitude a difference is floating-point noise Excel itself rounds away
# (Excel shows 0 where an engine computes 1e-17 for 0.1+0.2-0.3).
ABS_TOL = 1e-12
VOLATILE_FUNCTIONS = frozenset({"RAND", "RANDBETWEEN", "NOW", "TODAY", "CELL", "INFO"})
MISMATCH_LIMIT = 1000  # per report; the counts stay exact

# A cell value as the check sees it: ("n", float), ("s", str), ("b", bool), ("e", "#N/A"),
# or ("empty", None) for a formula that an engine left without a value.
Value = tuple[str, Any]
EMPTY: Value = ("empty", None)

_REL_NS = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_FUNC_PREFIX = re.compile(r"^(?:_xlfn\.|_xlws\.|_xll\.)+", re.IGNORECASE)
_CELL_REF = re.compile(r"^\$?([A-Za-z]{1,3})\$?(\d{1,7})$")
_COL_REF = re.compile(r"^\$?([A-Za-z]{1,3})$")
_ROW_REF = re.compile(r"^\$?(\d{1,7})$")


@dataclass
class FormulaCell:
    """A formula cell (or a cell an array formula fills) with the value Excel cached."""

    sheet: str
    row: int
    col: int
    formula: str
    expected: Value | None  # None when the file carries no cached value
    array_area: bool = False  # filled by another cell's array formula, no formula of its own

    @property
    def address(self) -> str:
        return cell_name(self.row, self.col)


@dataclass
class ExcelBook:
    """What the check needs from a package: sheets, formula cells, names, the saving program."""

    sheets: list[str]
    cells: list[FormulaCell]
    defined_names: dict[str, str]
    application: str | None


@dataclass
class FidelityReport:
    """One engine's check of one workbook."""

    engine: str
    cells_compared: int = 0
    cells_matching: int = 0
    mismatches: list[dict] = field(default_factory=list)
    mismatches_total: int = 0
    unsupported_functions: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    functions: dict[str, int] = field(default_factory=dict)  # mismatching cells per function
    status: str = "ok"  # ok | timeout | failed | not_run
    error: str | None = None
    seconds: float = 0.0
    application: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def match_rate(self) -> float | None:
        if not self.ok or not self.cells_compared:
            return None
        return self.cells_matching / self.cells_compared

    def to_dict(self, mismatch_limit: int | None = None) -> dict:
        mismatches = self.mismatches if mismatch_limit is None else self.mismatches[:mismatch_limit]
        return {
            "engine": self.engine,
            "status": self.status,
            "error": self.error,
            "cells_compared": self.cells_compared,
            "cells_matching": self.cells_matching,
            "match_rate": self.match_rate,
            "mismatches": mismatches,
            "mismatches_total": self.mismatches_total,
            "unsupported_functions": self.unsupported_functions,
            "skipped": self.skipped,
            "functions": self.functions,
            "seconds": round(self.seconds, 3),
            "application": self.application,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "FidelityReport":
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**fields)


# --- reading Excel's side -------------------------------------------------------------------


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _children(element: ElementTree.Element, name: str) -> list[ElementTree.Element]:
    return [child for child in element if _local(child.tag) == name]


_ESCAPED_CHAR = re.compile(r"_x([0-9A-Fa-f]{4})_")


def unescape_ooxml(text: str) -> str:
    """OOXML writes characters XML cannot hold as _xHHHH_ (CHAR(1) is "_x0001_")."""
    if "_x" not in text:
        return text
    return _ESCAPED_CHAR.sub(lambda m: chr(int(m.group(1), 16)), text)


def _text(element: ElementTree.Element | None) -> str:
    """All <t> text under an element, leaving out phonetic runs (<rPh>)."""
    parts: list[str] = []

    def walk(node: ElementTree.Element) -> None:
        for child in node:
            name = _local(child.tag)
            if name == "t":
                parts.append(child.text or "")
            elif name != "rPh":
                walk(child)

    if element is not None:
        walk(element)
    return unescape_ooxml("".join(parts))


def _part_path(base: str, target: str) -> str:
    if target.startswith("/"):
        return target.lstrip("/")
    parts = base.split("/")[:-1] + target.split("/")
    out: list[str] = []
    for part in parts:
        if part == "..":
            if out:
                out.pop()
        elif part and part != ".":
            out.append(part)
    return "/".join(out)


def _shared_strings(package: zipfile.ZipFile, path: str | None) -> list[str]:
    if path is None or path not in package.namelist():
        return []
    root = ElementTree.fromstring(package.read(path))
    return [_text(si) for si in _children(root, "si")]


def _cached(kind: str | None, raw: str | None, inline: str | None, strings: list[str]) -> Value | None:
    """Excel's cached value of a cell from its t attribute and <v>/<is> content."""
    if kind == "inlineStr":
        return ("s", inline or "")
    if raw is None:
        return ("s", "") if kind == "str" else None
    if kind == "str":
        return ("s", unescape_ooxml(raw))
    if kind == "s":
        index = int(raw)
        return ("s", strings[index] if index < len(strings) else "")
    if kind == "b":
        return ("b", raw.strip() in ("1", "true", "TRUE"))
    if kind == "e":
        return ("e", raw.strip())
    try:
        return ("n", float(raw))
    except ValueError:
        return ("s", raw)


def _sheet_cells(
    data: bytes, sheet: str, strings: list[str]
) -> list[FormulaCell]:
    """Formula cells of one worksheet part, shared formulas expanded, array areas included."""
    cells: list[FormulaCell] = []
    shared: dict[str, tuple[str, str]] = {}  # si -> (formula, origin address)
    arrays: list[tuple[int, int, int, int, str]] = []
    plain_values: dict[tuple[int, int], Value | None] = {}
    row_number, col_number = 0, 0
    for event, element in ElementTree.iterparse(io.BytesIO(data), events=("start", "end")):
        tag = _local(element.tag)
        if tag == "row":
            if event == "start":  # cells may omit r: count from the row's own number
                row_number = int(element.get("r") or row_number + 1)
                col_number = 0
            else:
                element.clear()
            continue
        if tag != "c" or event != "end":
            continue
        ref = element.get("r")
        if ref:
            match = _CELL_REF.match(ref)
            col_number, row_number = column_number(match.group(1)), int(match.group(2))
        else:  # some writers omit r: the next column of the current row
            col_number += 1
        kind = element.get("t")
        f_element = v_element = is_element = None
        for child in element:
            name = _local(child.tag)
            if name == "f":
                f_element = child
            elif name == "v":
                v_element = child
            elif name == "is":
                is_element = child
        raw = v_element.text if v_element is not None else None
        inline = _text(is_element) if is_element is not None else None
        expected = _cached(kind, raw, inline, strings)
        if f_element is None:
            if arrays:
                plain_values[(row_number, col_number)] = expected
            element.clear()
            continue
        text = f_element.text or ""
        f_kind = f_element.get("t")
        address = cell_name(row_number, col_number)
        if f_kind == "shared":
            si = f_element.get("si", "")
            if text:
                shared[si] = (text, address)
            elif si in shared:
                master, origin = shared[si]
                try:
                    text = Translator("=" + master, origin=origin).translate_formula(address)[1:]
                except Exception:  # noqa: BLE001 - an untranslatable formula is still a formula
                    text = master
        elif f_kind == "array" and f_element.get("ref"):
            box = _parse_box(f_element.get("ref"))
            if box is not None and (box[0], box[1]) != (box[2], box[3]):
                arrays.append((*box, text))
        if not text and f_kind != "shared" and arrays:
            # Excel writes an empty <f/> in some cells of a dynamic array's spill area
            plain_values[(row_number, col_number)] = expected
            element.clear()
            continue
        cells.append(FormulaCell(sheet, row_number, col_number, text, expected))
        element.clear()
    # Cells an array formula fills carry only a <v>: they are formula results too.
    for top, left, bottom, right, text in arrays:
        for (row, col), expected in plain_values.items():
            if top <= row <= bottom and left <= col <= right and (row, col) != (top, left):
                cells.append(FormulaCell(sheet, row, col, "{=" + text + "}", expected, True))
    return cells


def _parse_box(ref: str) -> tuple[int, int, int, int] | None:
    first, _, last = ref.partition(":")
    a, b = _CELL_REF.match(first), _CELL_REF.match(last or first)
    if a is None or b is None:
        return None
    return int(a.group(2)), column_number(a.group(1)), int(b.group(2)), column_number(b.group(1))


def open_package(data: bytes) -> zipfile.ZipFile:
    """The xlsx as a zip; WorkbookError when it is not one."""
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise WorkbookError("The file is not a readable .xlsx workbook") from exc


def workbook_parts(package: zipfile.ZipFile) -> tuple[ElementTree.Element, list[tuple[str, str]], str | None]:
    """(workbook.xml root, [(sheet name, worksheet part path)] in order, shared strings path)."""
    try:
        names = set(package.namelist())
        workbook_xml = ElementTree.fromstring(package.read("xl/workbook.xml"))
        rels = ElementTree.fromstring(package.read("xl/_rels/workbook.xml.rels"))
    except (KeyError, ElementTree.ParseError, zipfile.BadZipFile, OSError) as exc:
        raise WorkbookError("The file is not a readable .xlsx workbook") from exc
    targets, strings_path = {}, None
    for rel in rels:
        target = _part_path("xl/workbook.xml", rel.get("Target", ""))
        targets[rel.get("Id")] = target
        if rel.get("Type", "").endswith("/sharedStrings"):
            strings_path = target
    sheets = []
    for element in workbook_xml.iter():
        if _local(element.tag) != "sheet":
            continue
        target = targets.get(element.get(_REL_NS))
        if target and target in names and "worksheets/" in target:
            sheets.append((element.get("name"), target))
    return workbook_xml, sheets, strings_path


def read_excel_cells(data: bytes) -> ExcelBook:
    """Formula cells and Excel's cached values; WorkbookError when the file is not an xlsx."""
    package = open_package(data)
    workbook_xml, sheet_parts, strings_path = workbook_parts(package)
    strings = _shared_strings(package, strings_path)
    cells = []
    for name, target in sheet_parts:
        try:
            cells.extend(_sheet_cells(package.read(target), name, strings))
        except (ElementTree.ParseError, AttributeError, zipfile.BadZipFile) as exc:
            raise WorkbookError("The file is not a readable .xlsx workbook") from exc
    defined = {}
    for element in workbook_xml.iter():
        if _local(element.tag) == "definedName" and element.get("localSheetId") is None:
            defined[element.get("name", "").upper()] = element.text or ""
    application = None
    if "docProps/app.xml" in package.namelist():
        try:
            app = ElementTree.fromstring(package.read("docProps/app.xml"))
            application = next(
                (e.text for e in app.iter() if _local(e.tag) == "Application"), None
            )
        except ElementTree.ParseError:
            pass
    return ExcelBook([n for n, _ in sheet_parts], cells, defined, application)


# --- formula analysis -----------------------------------------------------------------------


def _tokens(formula: str) -> list[Token]:
    try:
        return Tokenizer("=" + formula.lstrip("{=").rstrip("}")).items
    except Exception:  # noqa: BLE001 - an unparsable formula has no usable tokens
        return []


_STRING_LITERAL = re.compile(r'"(?:[^"]|"")*"|\'(?:[^\']|\'\')*\'')
_FUNCTION_CALL = re.compile(r"(?<![A-Za-z0-9_.!$\]])([A-Za-z_][A-Za-z0-9_.]*)\(")


@lru_cache(maxsize=65536)
def function_names(formula: str) -> frozenset[str]:
    """Upper-case function names a formula calls, without _xlfn./_xlws. prefixes.

    A regular expression over the formula with its text literals and quoted sheet names
    blanked: the tokenizer is ten times slower and this runs once per formula cell.
    """
    bare = _STRING_LITERAL.sub('""', formula)
    return frozenset(_FUNC_PREFIX.sub("", name).upper() for name in _FUNCTION_CALL.findall(bare))


def _references(formula: str, sheet: str, names: dict[str, str], depth: int = 0):
    """(sheet, top, left, bottom, right) boxes a formula reads; "external" for other books."""
    for token in _tokens(formula):
        if token.type != Token.OPERAND or token.subtype != Token.RANGE:
            continue
        value = token.value
        if value.startswith("[") and "]" in value and not value.startswith("[#"):
            yield "external"
            continue
        if "!" in value:
            where, _, ref = value.rpartition("!")
            where = where.strip("'").replace("''", "'")
            if where.startswith("["):
                yield "external"
                continue
        else:
            where, ref = sheet, value
        if ":" in ref:
            first, _, last = ref.partition(":")
            last = last.split("!")[-1]
        else:
            first = last = ref
        box = _box(first, last, span=":" in ref)
        if box is not None:
            yield (where.lower(), *box)
        elif ":" not in ref and ref.upper() in names and depth < 5:
            yield from _references(names[ref.upper()].lstrip("="), sheet, names, depth + 1)


def _box(first: str, last: str, span: bool = True) -> tuple[int, int, int, int] | None:
    """The box of A1, A1:B2, A:B or 1:2. Whole columns and rows are written only as spans:
    a bare `m` or `tax` is a defined name, never column M or TAX."""
    a, b = _CELL_REF.match(first), _CELL_REF.match(last)
    if a and b:
        r1, c1 = int(a.group(2)), column_number(a.group(1))
        r2, c2 = int(b.group(2)), column_number(b.group(1))
        return min(r1, r2), min(c1, c2), max(r1, r2), max(c1, c2)
    if not span:
        return None
    a, b = _COL_REF.match(first), _COL_REF.match(last)
    if a and b:
        c1, c2 = column_number(a.group(1)), column_number(b.group(1))
        return 1, min(c1, c2), MAX_ROWS, max(c1, c2)
    a, b = _ROW_REF.match(first), _ROW_REF.match(last)
    if a and b:
        r1, r2 = int(a.group(1)), int(b.group(1))
        return min(r1, r2), 1, max(r1, r2), MAX_COLS
    return None


def excluded_cells(book: ExcelBook) -> dict[int, str]:
    """Index of each cell left out of the check -> why ("volatile" or "external")."""
    reasons: dict[int, str] = {}
    refs: dict[int, list] = {}
    for index, cell in enumerate(book.cells):
        if function_names(cell.formula) & VOLATILE_FUNCTIONS:
            reasons[index] = "volatile"
            continue
        if "[" not in cell.formula and "!" not in cell.formula and not book.defined_names:
            continue
        cell_refs = list(_references(cell.formula, cell.sheet, book.defined_names))
        if "external" in cell_refs:
            reasons[index] = "external"
        refs[index] = [r for r in cell_refs if r != "external"]
    if not reasons:
        return reasons
    # Dependants of excluded cells are excluded too, until nothing changes.
    for index, cell in enumerate(book.cells):
        if index not in refs:
            refs[index] = [
                r for r in _references(cell.formula, cell.sheet, book.defined_names)
                if r != "external"
            ]
    changed = True
    while changed:
        changed = False
        tainted: dict[str, list[tuple[int, int, str]]] = {}
        for index, reason in reasons.items():
            cell = book.cells[index]
            tainted.setdefault(cell.sheet.lower(), []).append((cell.row, cell.col, reason))
        for index, boxes in refs.items():
            if index in reasons:
                continue
            for where, top, left, bottom, right in boxes:
                hit = next(
                    (reason for row, col, reason in tainted.get(where, ())
                     if top <= row <= bottom and left <= col <= right),
                    None,
                )
                if hit:
                    reasons[index] = hit
                    changed = True
                    break
    return reasons


# --- comparing ------------------------------------------------------------------------------


def values_match(expected: Value, actual: Value) -> bool:
    """Excel's cached value against an engine's, by the corpus rules."""
    kind, want = expected
    got_kind, got = actual
    if got_kind == "empty":  # an empty result reads as 0 or "" in Excel
        got_kind, got = ("n", 0.0) if kind == "n" else ("s", "")
    if kind != got_kind:
        return False
    if kind == "n":
        return math.isclose(want, got, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return want == got


def display(value: Value | None) -> Any:
    """A value as the report shows it: numbers, text, booleans, error codes, null."""
    if value is None:
        return None
    kind, raw = value
    if kind == "n":
        if math.isfinite(raw) and raw.is_integer() and abs(raw) < 2**53:
            return int(raw)
        return raw if math.isfinite(raw) else str(raw)
    return raw


def check_book(data: bytes, engine: str) -> FidelityReport:
    """Run the check in this process (see check_isolated for engines that need a fence)."""
    from shared.calc.base import get_engine

    started = time.perf_counter()
    book = read_excel_cells(data)
    report = FidelityReport(engine=engine, application=book.application)
    excluded = excluded_cells(book)
    skipped: Counter = Counter(excluded.values())
    targets = []
    for index, cell in enumerate(book.cells):
        if index in excluded:
            continue
        if cell.array_area:
            # Only cells holding a formula count, as Excel and the corpus define them;
            # the rest of an array formula's area is left out (and counted).
            skipped["array_area"] += 1
            continue
        if cell.expected is None:
            skipped["no_cached_value"] += 1
            continue
        targets.append(cell)
    functions: set[str] = set()
    for cell in book.cells:
        functions |= function_names(cell.formula)
    # An engine's recalculate_cells answers the values in request order (as Value tuples)
    # and the functions it does not know.
    try:
        values, unsupported = get_engine(engine).recalculate_cells(
            data, [(c.sheet, c.row, c.col) for c in targets], functions
        )
    except WorkbookError as exc:  # readable xlsx, but not by this engine
        report.status, report.error = "failed", exc.message
        report.seconds = time.perf_counter() - started
        return report
    report.unsupported_functions = sorted(unsupported)
    per_function: Counter = Counter()
    for cell, actual in zip(targets, values):
        report.cells_compared += 1
        if values_match(cell.expected, actual):
            report.cells_matching += 1
            continue
        report.mismatches_total += 1
        per_function.update(function_names(cell.formula) or {"(no function)"})
        if len(report.mismatches) < MISMATCH_LIMIT:
            report.mismatches.append({
                "sheet": cell.sheet,
                "cell": cell.address,
                "formula": _shown_formula(cell.formula),
                "expected": display(cell.expected),
                "actual": display(actual),
            })
    report.functions = dict(per_function.most_common())
    report.skipped = dict(skipped)
    report.seconds = time.perf_counter() - started
    return report


_FUNC_PREFIX_ANY = re.compile(r"_xl(?:fn|ws|l)\.", re.IGNORECASE)


def _shown_formula(formula: str) -> str:
    text = _FUNC_PREFIX_ANY.sub("", formula)
    return text if text.startswith("{") else "=" + text


def check(data: bytes, engine: str = "ironcalc") -> FidelityReport:
    """The check in this process; a workbook the engine cannot read gives status "failed"."""
    try:
        return check_book(data, engine)
    except WorkbookError:
        raise
    except Exception as exc:  # noqa: BLE001 - an engine's failure is a report, not a crash
        return FidelityReport(engine=engine, status="failed", error=f"{type(exc).__name__}: {exc}")


def check_isolated(
    data: bytes, engine: str, *, timeout_s: float = 120.0, memory_mb: int = 4096
) -> FidelityReport:
    """The check in a child process, killed after timeout_s and limited to memory_mb of
    address space: a workbook that exceeds either is reported as "timeout" or "failed"."""
    started = time.perf_counter()
    command = [sys.executable, "-m", "shared.calc.fidelity", "--engine", engine,
               "--memory-mb", str(memory_mb)]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
    try:
        done = subprocess.run(
            command, input=data, capture_output=True, timeout=timeout_s, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        return FidelityReport(
            engine=engine, status="timeout", seconds=time.perf_counter() - started,
            error=f"no answer within {timeout_s:g} s",
        )
    if done.returncode == 2:
        raise WorkbookError("The file is not a readable .xlsx workbook")
    try:
        report = FidelityReport.from_dict(json.loads(done.stdout))
    except (ValueError, TypeError):
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        kind = "out of memory" if b"MemoryError" in done.stderr else tail[0][:300]
        return FidelityReport(
            engine=engine, status="failed", seconds=time.perf_counter() - started,
            error=f"exit {done.returncode}: {kind}",
        )
    report.seconds = time.perf_counter() - started
    return report


def _child(argv: list[str]) -> int:
    """Child side of check_isolated: xlsx on stdin, the report as JSON on stdout."""
    import argparse
    import resource

    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", required=True)
    parser.add_argument("--memory-mb", type=int, default=4096)
    args = parser.parse_args(argv)
    limit = args.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    data = sys.stdin.buffer.read()
    try:
        report = check(data, args.engine)
    except WorkbookError:
        return 2
    except MemoryError:
        report = FidelityReport(engine=args.engine, status="failed", error="out of memory")
    sys.stdout.write(json.dumps(report.to_dict(), default=str))
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
