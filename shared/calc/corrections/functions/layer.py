"""Our own evaluation of the cells whose formulas use a function IronCalc lacks or gets wrong.

Why it is sound:

- At load, `plan` reads every formula once and keeps the cells that call a corrected function
  (registry.CORRECTED). A workbook without them gets no plan, and every later step is skipped:
  it costs nothing per calculation.
- After IronCalc has evaluated, `apply` recomputes each planned cell's whole formula with the
  `formulas` package's parser and compiler (its Excel operators and functions, with the
  Excel-rule fixes of shared/calc/formulas/functions.py), the corrected functions replaced by
  ours, and the precedents' values read from the IronCalc model. Where our value differs from
  IronCalc's, it is written into the cell as a constant and IronCalc evaluates again, so every
  dependant sees it. Planned cells can depend on each other: the pass repeats until no planned
  cell changes (a fixed point: each planned cell equals its formula over its precedents'
  current values, and every other cell is IronCalc's calculation over those), at most once per
  planned cell plus one, which is the longest chain of planned cells there can be.
- A cell whose value we cannot compute as Excel would (a TEXT format code outside what
  text_format implements, a reference to a defined name or whole column, a formula the parser
  does not read) keeps IronCalc's value and is reported in `flags` as (sheet, cell, reason).
- The export writes the workbook IronCalc holds (with the corrected constants) and puts each
  corrected cell's formula back next to its value (`restore_formulas`), so the filled workbook
  keeps its formulas and carries the right cached values.
"""

from __future__ import annotations

import contextvars
import functools
import html
import io
import logging
import re
import zipfile
from dataclasses import dataclass, field
from typing import Any, Callable

from openpyxl.formula.tokenizer import Token

from shared.calc.corrections import dynamic
from shared.calc.corrections.dynamic import date_text
from shared.calc.corrections.dynamic.values import Ref
from shared.calc.corrections.formula_tokens import (
    PLAIN_REFERENCE,
    TEXT_LITERAL,
    replace_call,
    rewrite_calls,
    tokenize,
    without_spaces,
)
from shared.calc.corrections.functions import power, registry
from shared.calc.corrections.functions.text_format import Unsupported
from shared.calc.corrections.model import DefinedNames
from shared.calc.refs import MAX_COLS, MAX_ROWS, cell_name, column_number, intersected

log = logging.getLogger(__name__)

# A sheet-qualified or plain A1 reference as formulas names its inputs.
_INPUT = re.compile(
    r"(?:(?:'((?:[^']|'')+)'|([^'!]+))!)?"
    r"\$?([A-Z]{1,3})\$?(\d{1,7})(?::\$?([A-Z]{1,3})\$?(\d{1,7}))?",
    re.IGNORECASE,
)
_WHOLE = re.compile(
    r"(?:(?:'((?:[^']|'')+)'|([^'!]+))!)?"
    r"(?:\$?([A-Z]{1,3}):\$?([A-Z]{1,3})|\$?(\d{1,7}):\$?(\d{1,7}))",
    re.IGNORECASE,
)
# AGGREGATE with only numbers and references as arguments: every function it offers ignores
# blank cells, so a whole column or row can be read up to the sheet's last used row or column.
_BARE_AGGREGATE = re.compile(r"=\s*(?:_xlfn\.)?AGGREGATE\((.*)\)\s*", re.IGNORECASE)
_ARGUMENT = re.compile(
    r"\s*(?:-?\d+(?:\.\d+)?|(?:(?:'[^',]+'|[^'!,()\s\"+*/&=<>^-]+)!)?\$?[A-Z]{0,3}\$?\d{0,7}"
    r"(?::\$?[A-Z]{0,3}\$?\d{0,7})?)\s*",
    re.IGNORECASE,
)
_NAME = re.compile(r"[A-Za-z_\\][\w.]*")  # a defined name as formulas gives it as an input key
_MAX_CELLS = 100_000  # a precedent range larger than this is not read cell by cell
_NESTED = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(SUBTOTAL|AGGREGATE)\s*\(", re.IGNORECASE)

# The cell being evaluated and what its corrected functions reported, for the wrappers.
current: contextvars.ContextVar["_Evaluation | None"] = contextvars.ContextVar(
    "sheetcalc_correction", default=None
)


@dataclass
class _Evaluation:
    model: Any
    date1904: bool = False
    ranges: dict[int, tuple[int, int, int, int, int]] = field(default_factory=dict)
    unsupported: str | None = None
    cell: tuple[int, int, int] | None = None  # (sheet, row, col): what RAND's draws are keyed by
    # planned cells whose formula calls SUBTOTAL or AGGREGATE: the model holds their corrected
    # value, not their formula, once written back, and they stay nested subtotals
    nested: frozenset = frozenset()


@dataclass
class Target:
    sheet: int
    row: int
    col: int
    formula: str  # IronCalc's text, with "="
    compiled: Callable
    # sheet, top, left, bottom, right; bottom (right) None: a whole column (row), read up to the
    # sheet's last used row (column) when the cell is evaluated
    inputs: list[tuple[int, int, int, int | None, int | None]]

    @property
    def address(self) -> str:
        return cell_name(self.row, self.col)


@dataclass
class Watched(Target):
    """A cell calling POWER or using `^` (power.py): evaluated only while IronCalc's value is
    #DIV/0!, compiled the first time it is (`prepare` answers the compiled Target); one that
    also calls ERROR.TYPE (`always`) is compiled at load and evaluated in every calculation."""

    prepare: Callable[[], Target] | None = None
    refused: str | None = None  # why formulas could not read it, once it was tried
    always: bool = False

    def reason(self, why: str) -> str:
        return (power.INSPECTED_REASON if self.always else power.OVERFLOW_REASON).format(why)


@dataclass
class Flag:
    sheet: str
    cell: str
    reason: str  # starts with the function(s): "TEXT: format code [DBNum1]"

    def __str__(self) -> str:
        return f"{self.reason.split(':')[0]} at {_quoted(self.sheet)}!{self.cell}" + (
            f" ({self.reason.split(':', 1)[1].strip()})" if ":" in self.reason else ""
        )


def _quoted(sheet: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", sheet):
        return sheet
    return "'" + sheet.replace("'", "''") + "'"


@dataclass
class Plan:
    sheets: list[str]
    targets: list[Target]
    flags: list[Flag]  # found at load; apply adds the ones that depend on values
    date1904: bool = False  # the workbook's date system (IronCalc does not read it)
    occupied: set = field(default_factory=set)  # cells a dynamic array cannot spill into (dynamic/)
    spill_anchors: set = field(default_factory=set)  # the file's dynamic arrays' anchors (dynamic/)


_DATE1904 = re.compile(rb"<(?:\w+:)?workbookPr\b[^>]*\bdate1904=\"(?:1|true)\"")


def may_need_plan(xlsx: bytes) -> bool:
    """False when no worksheet of the package can call a corrected function (no name holds the
    text) and no text in it may be a date (dynamic/date_text.py): `plan` is then skipped without
    reading every formula back from IronCalc."""
    try:
        with zipfile.ZipFile(io.BytesIO(xlsx)) as package:
            for name in package.namelist():
                if name.startswith("xl/") and name.endswith(".xml") and (
                    "worksheets/" in name or name == "xl/workbook.xml"
                ):
                    part = package.read(name).upper()
                    if any(hint in part for hint in registry.HINTS + dynamic.HINTS + power.HINTS):
                        return True
                    if dynamic.may_hold_legacy_arrays(part) or dynamic.may_hold_criteria_arrays(part):
                        return True
                    if date_text.may_hold(part):
                        return True  # a date held as text (an inline string) formulas may read
                elif name == "xl/sharedStrings.xml" and date_text.may_hold(package.read(name)):
                    return True
    except zipfile.BadZipFile:
        return True
    return False


def uses_1904_dates(xlsx: bytes) -> bool:
    """Whether an .xlsx package is in Excel's 1904 date system (workbookPr date1904)."""
    try:
        with zipfile.ZipFile(io.BytesIO(xlsx)) as package:
            return bool(_DATE1904.search(package.read("xl/workbook.xml")))
    except (KeyError, zipfile.BadZipFile):
        return False


def plan(model, date1904: bool = False, spill_areas: list | None = None) -> Plan | None:
    """The cells to correct in an IronCalc model, or None when there are none; `spill_areas`
    are the file's dynamic arrays (dynamic.spill_areas), the model read before any calculation."""
    sheets = [p["name"] for p in model.get_worksheets_properties()]
    index_of = {name.upper(): i for i, name in enumerate(sheets)}
    found, arrays, watched = [], [], []
    anchors = {(s, r, c) for s, r, c, *_ in spill_areas or []}  # the file's array formulas
    # its legacy array formulas over several cells (their areas are watched: dynamic.area_watch)
    legacy_areas = {(s, r, c) for s, r, c, b, rt, d in spill_areas or [] if not d and (b, rt) != (r, c)}
    # the formulas, the cells holding a date or time as text and their addresses as a formula
    # may write them
    formulas, text_cells = date_text.formulas_and_text_cells(model)
    text_addresses = {cell_name(r, c) for _, r, c in text_cells}
    for sheet, row, col, formula in formulas:
        selected = dynamic.select(formula, (sheet, row, col) in anchors)
        corrected = registry.mentions(formula)
        if selected is not None and selected.watched and corrected:
            selected = None  # a function evaluated after IronCalc in every job (TEXT...): that
            # evaluation reads the whole formula, a watch would leave it IronCalc's in most jobs
        if (sheet, row, col) in legacy_areas:
            if selected is None:
                selected = dynamic.area_watch(formula)
            elif selected.watched:
                selected.when_area = True  # watched for its errors and for its area alike
        if selected is None and text_addresses and not corrected and date_text.may_read(formula, text_addresses):
            selected = dynamic.date_text_watch(formula)
        if selected is not None:
            arrays.append((sheet, row, col, selected))
        elif corrected:
            found.append((sheet, row, col, formula))
        elif power.mentions(formula) and not formula.startswith("{"):
            watched.append((sheet, row, col, formula))
    if not found and not arrays and not watched:
        return None
    targets, flags = [], []
    occupied: set = set()
    spill_anchors: set = set()
    context = _Context(model, date1904)
    if arrays:  # Excel 365's array functions: evaluated whole by the dynamic package
        planned, refused = dynamic.targets(model, arrays, spill_areas, context.resolve, text_cells)
        targets.extend(planned)
        for sheet, row, col, reason in refused:
            names = dynamic.called(model.get_cell_formula(sheet, row, col))
            flags.append(Flag(sheets[sheet], cell_name(row, col), f"{names}: {reason}"))
        found_cells = dynamic.Occupied(model, spill_areas or [])
        # a spill the layer did not make this calculation is IronCalc's (settle.EngineSpills)
        occupied, spill_anchors = found_cells.cells, found_cells.anchors
    for sheet, row, col, formula in found:
        try:
            targets.append(_target(sheet, row, col, formula, index_of, context))
        except Unsupported as exc:
            names = "/".join(registry.called(formula))
            flags.append(Flag(sheets[sheet], cell_name(row, col), f"{names}: {exc}"))
    for sheet, row, col, formula in watched:
        prepare = functools.partial(_target, sheet, row, col, formula, index_of, context)
        always = power.inspects(formula)
        target = Watched(sheet, row, col, formula, None, [], prepare, always=always)
        if target.always and _prepared(target) is not None:  # flagged at load, left to IronCalc
            flags.append(Flag(sheets[sheet], cell_name(row, col), target.refused))
            continue
        targets.append(target)
    if not targets and not flags:
        return None
    return Plan(sheets, targets, flags, date1904, occupied, spill_anchors)


class _Context:
    """What planning a model shares between cells: the defined names that are plain ranges
    (`Rate` -> Calc!$B$2), read once when first needed
    (IronCalc's name list is slow on workbooks with thousands of names)."""

    def __init__(self, model, date1904: bool = False):
        self.resolve = DefinedNames(model)  # (name, sheet) -> the name's formula, or None
        self.compiled: dict[str, Callable] = {}  # formulas' compiled functions by formula text
        self.date1904 = date1904


def _target(
    sheet: int, row: int, col: int, formula: str, index_of: dict[str, int], context: "_Context"
) -> Target:
    if formula.startswith("{"):
        raise Unsupported("an array formula")
    compiled = _simple_call(formula) or _compiled(
        _positions_folded(_intersections_folded(formula, sheet, row, col, context), row, col),
        context.compiled, context.date1904)
    inputs = []
    for key in compiled.inputs:
        whole = _WHOLE.fullmatch(key)
        if whole is not None:
            inputs.append(_whole_input(whole, key, formula, sheet, index_of))
            continue
        match = _INPUT.fullmatch(key)
        if match is None and _NAME.fullmatch(key):
            defined = context.resolve(key, sheet)
            match = _INPUT.fullmatch(defined.lstrip("=")) if defined else None
            if match is not None and match.group(1) is None and match.group(2) is None:
                match = None  # a name must say its sheet
        if match is None:
            raise Unsupported(f"reference {key} (a name or whole row/column)")
        quoted, plain = match.group(1), match.group(2)
        name = (quoted.replace("''", "'") if quoted else plain)
        index = sheet if name is None else index_of.get(name.upper())
        if index is None:
            raise Unsupported(f"reference {key} to another workbook or a missing sheet")
        top, left, bottom, right = _corners(match)
        if (bottom - top + 1) * (right - left + 1) > _MAX_CELLS:
            raise Unsupported(f"reference {key} larger than {_MAX_CELLS} cells")
        inputs.append((index, top, left, bottom, right))
    return Target(sheet, row, col, formula, compiled, inputs)


def _intersections_folded(formula: str, sheet: int, row: int, col: int, context: _Context) -> str:
    """The formula with each range marked with `@` (IronCalc's implicit intersection, shown in
    its text where a plain formula takes one value: `SUM(TAN(@A1:A4))`) written as the cell it
    stands for in this cell's row or column, or #VALUE! where there is none ("Implicit
    intersection operator: @"). formulas is given values, not the cell a formula sits in, and
    read the whole range: `SUM(TAN(A1:A4))` in row 3 summed four tangents."""
    if "@" not in TEXT_LITERAL.sub('""', formula):
        return formula
    tokens = tokenize(formula)
    if tokens is None:
        return formula
    values = [t.value for t in tokens]
    for index, token in enumerate(tokens):
        if token.type != Token.OPERAND or token.subtype != Token.RANGE or not token.value.startswith("@"):
            continue
        text = token.value[1:]
        if _INPUT.fullmatch(text) is None and _WHOLE.fullmatch(text) is None:
            defined = context.resolve(text, sheet) if _NAME.fullmatch(text) else None
            if not defined or (_INPUT.fullmatch(defined.lstrip("=")) is None
                               and _WHOLE.fullmatch(defined.lstrip("=")) is None):
                continue  # a name to a formula or a constant: left to formulas
            text = defined.lstrip("=")
        values[index] = _intersected(text, row, col)
    return "=" + "".join(values).lstrip("=")


def _intersected(reference: str, row: int, col: int) -> str:
    """The cell of `reference` (a range or whole columns or rows, maybe on another sheet) in
    row `row` or column `col`, or #VALUE!."""
    match = _INPUT.fullmatch(reference)
    prefix = reference[:reference.rfind("!") + 1]
    if match is not None:
        top, left, bottom, right = _corners(match)
    else:
        _, _, c1, c2, r1, r2 = _WHOLE.fullmatch(reference).groups()
        if c1:
            left, right = sorted((column_number(c1.upper()), column_number(c2.upper())))
            top, bottom = 1, MAX_ROWS
        else:
            top, bottom = sorted((int(r1), int(r2)))
            left, right = 1, MAX_COLS
    cell = intersected(top, left, bottom, right, row, col)
    return "#VALUE!" if cell is None else prefix + cell_name(*cell)


def _corners(match: re.Match) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) of a reference _INPUT read, its corners in either order."""
    _, _, c1, r1, c2, r2 = match.groups()
    top, left = int(r1), column_number(c1.upper())
    bottom, right = (int(r2), column_number(c2.upper())) if c2 else (top, left)
    return min(top, bottom), min(left, right), max(top, bottom), max(left, right)


_FUNCTION = re.compile(r"(?<![A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_.]*)\s*\(")
_POSITION = re.compile(r"(?<![A-Za-z0-9_.])(?:ROW|COLUMN)\s*\(", re.IGNORECASE)


def _positions_folded(formula: str, row: int, col: int) -> str:
    """The formula with ROW and COLUMN written as the numbers they are: formulas is given a
    formula's references as their values, where ROW and COLUMN answered #VALUE!. `ROW()` is the
    cell's row, `ROW(C3:C5)` {3;4;5}, `COLUMN(B1:D1)` {2,3,4}; of anything else (a name, a
    calculated reference) the cell is flagged."""
    if not _POSITION.search(TEXT_LITERAL.sub('""', formula)):
        return formula
    def fold(tokens, values, name, opened, closed, args) -> bool:
        if name not in ("ROW", "COLUMN"):
            return False
        kept = [without_spaces(tokens, arg) for arg in args]
        if not any(kept):  # ROW(): the cell's own
            replace_call(values, opened, closed, str(row if name == "ROW" else col))
            return True
        reference = "".join(values[i] for i in kept[0]).lstrip("@") if len(args) == 1 and len(kept[0]) == 1 else ""
        match = PLAIN_REFERENCE.fullmatch(reference)
        if match is None:
            raise Unsupported(f"{name} of a reference that is not written out")
        if name == "ROW":
            first, last = int(match["r1"].lstrip("$")), int((match["r2"] or match["r1"]).lstrip("$"))
            separator = ";"
        else:
            first = column_number(match["c1"].lstrip("$").upper())
            last = column_number((match["c2"] or match["c1"]).lstrip("$").upper())
            separator = ","
        first, last = min(first, last), max(first, last)
        numbers = [str(n) for n in range(first, last + 1)]
        replace_call(values, opened, closed, numbers[0] if len(numbers) == 1 else "{" + separator.join(numbers) + "}")
        return True

    folded = rewrite_calls(formula, fold)
    return formula if folded is None else "=" + folded.lstrip("=")


def _compiled(formula: str, cache: dict[str, Callable], date1904: bool = False) -> Callable:
    """formulas' compiled function of a formula, shared by the plan's cells with the same text
    (compiling is slow). Per plan, not per process: a workbook calculates one job at a time
    (ModelCache), and a compiled function is never called from two threads.

    formulas calculates the parts without inputs while compiling (`TEXT(0+0,"yyyy")` is a
    constant): they are calculated here in the workbook's date system, and a part we cannot
    compute as Excel would makes the cell Unsupported (flagged), not a silent #VALUE!."""
    compiled = cache.get(formula)
    if compiled is not None:
        return compiled
    text = registry.rename(formula)
    compiling = _Evaluation(None, date1904)
    token = current.set(compiling)
    try:
        import formulas
        import numpy as np

        registry.install()
        with np.errstate(over="ignore"):  # a constant power overflowing: #NUM!, no warning
            compiled = formulas.Parser().ast(text)[1].compile()
    except Unsupported:
        raise
    except Exception as exc:  # noqa: BLE001 - formulas' parser errors have no common base
        raise Unsupported(f"formula not read ({type(exc).__name__})") from None
    finally:
        current.reset(token)
    if compiling.unsupported:  # "TEXT: format code ...": the plan names the function itself
        prefix, _, reason = compiling.unsupported.partition(": ")
        raise Unsupported(reason if reason and prefix.isupper() else compiling.unsupported)
    from formulas.functions import get_functions, not_implemented

    table = get_functions()
    for name in _FUNCTION.findall(TEXT_LITERAL.sub('""', text)):
        if table.get(name.upper(), not_implemented) is not_implemented:
            raise Unsupported(f"{name.upper()} in the same formula (missing in formulas)")
    cache[formula] = compiled
    return compiled


_CALL = re.compile(r"=\s*(?:_xlfn\.)?([A-Z0-9.]+)\((.*)\)\s*", re.IGNORECASE | re.DOTALL)
_NUMBER = re.compile(r"\s*-?(?:\d+\.?\d*|\.\d+)(?:E[+-]?\d+)?\s*", re.IGNORECASE)


class _SimpleCall:
    """A formula that is one call of a corrected function with literals and references as
    arguments (`=TEXT($A19,B$2)`, `=BIN2DEC("1111")`): evaluated without formulas' compiler,
    which costs tens of milliseconds per formula to build and a millisecond per call."""

    def __init__(self, name: str, arguments: list[tuple[str, Any]]):
        self.name = name
        self.arguments = arguments
        self.inputs = [value for kind, value in arguments if kind == "ref"]

    def __call__(self, *arrays):
        values, refs = [], iter(arrays)
        for kind, value in self.arguments:
            values.append(next(refs) if kind == "ref" else value)
        return registry.call(self.name, values)


def _simple_call(formula: str) -> _SimpleCall | None:
    match = _CALL.fullmatch(formula)
    if match is None or match.group(1).upper() not in registry.CORRECTED:
        return None
    name = match.group(1).upper()
    pieces = _split_arguments(match.group(2))
    if pieces is None:
        return None
    if pieces == [""] or [p.strip() for p in pieces] == [""]:
        pieces = []  # NOW(), TODAY(), RAND(): no arguments
    arguments: list[tuple[str, Any]] = []
    for piece in pieces:
        text = piece.strip()
        if TEXT_LITERAL.fullmatch(text):  # one literal, not `"0"&".00"`
            arguments.append(("lit", text[1:-1].replace('""', '"')))
        elif _NUMBER.fullmatch(text):
            arguments.append(("lit", float(text)))
        elif text.upper() in ("TRUE", "FALSE"):
            arguments.append(("lit", text.upper() == "TRUE"))
        elif _WHOLE.fullmatch(text) or (
            _INPUT.fullmatch(text) and (name in registry.RANGE_ARGUMENTS or ":" not in text)
        ):
            arguments.append(("ref", text))
        else:
            return None
    return _SimpleCall(name, arguments)


def _split_arguments(text: str) -> list[str] | None:
    """Top-level arguments; None when one holds a call, an operator on a call, or an array."""
    pieces, current, quoted = [], [], False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "(){}":
            return None
        elif not quoted and ch == ",":
            pieces.append("".join(current))
            current = []
            continue
        current.append(ch)
    if quoted:
        return None
    pieces.append("".join(current))
    return pieces


def _whole_input(match, key: str, formula: str, sheet: int, index_of: dict[str, int]):
    bare = _BARE_AGGREGATE.fullmatch(formula)
    if bare is None or not all(_ARGUMENT.fullmatch(a) for a in bare.group(1).split(",")):
        raise Unsupported(f"reference {key} (a whole row or column outside a bare AGGREGATE)")
    quoted, plain, c1, c2, r1, r2 = match.groups()
    name = quoted.replace("''", "'") if quoted else plain
    index = sheet if name is None else index_of.get(name.upper())
    if index is None:
        raise Unsupported(f"reference {key} to another workbook or a missing sheet")
    if c1:
        left, right = sorted((column_number(c1.upper()), column_number(c2.upper())))
        return (index, 1, left, None, right)
    top, bottom = sorted((int(r1), int(r2)))
    return (index, top, 1, bottom, None)


@dataclass
class Outcome:
    """What apply did to one calculation's model."""

    written: list[tuple[Target, tuple]] = field(default_factory=list)  # (cell, value)
    flags: list[Flag] = field(default_factory=list)


def apply(model, the_plan: Plan | None) -> Outcome | None:
    """Correct the planned cells of an evaluated model (see the module's docstring). A failure
    of our own never fails the calculation: the cells keep the values they have and are flagged."""
    if the_plan is None:
        return None
    outcome = Outcome(flags=list(the_plan.flags))
    from shared.calc import run_context
    from shared.calc.corrections.dynamic import number_text

    try:
        # Outside a job the volatile functions still answer once per cell per calculation; a
        # date read from text is a serial of the workbook's date system.
        with run_context.running(run_context.current_or_fresh()), number_text.date_system(the_plan.date1904):
            _apply(model, the_plan, outcome)
    except Exception:  # noqa: BLE001 - logged, and every planned cell is reported
        log.exception("correcting functions failed")
        outcome.flags.extend(
            Flag(the_plan.sheets[t.sheet], t.address, "/".join(registry.called(t.formula))
                 + ": the correction failed")
            for t in the_plan.targets
        )
    return outcome


def _apply(model, the_plan: Plan, outcome: Outcome) -> None:
    from shared.calc.ironcalc.cells import read_cell, write_cell

    written: dict[tuple[int, int, int], tuple] = {}
    unsupported: dict[tuple[int, int, int], str] = {}
    by_key = {(t.sheet, t.row, t.col): t for t in the_plan.targets}
    try:
        _settle(model, the_plan, written, unsupported, read_cell, write_cell)
    finally:  # even after a failure, the export must put back the formulas of written cells
        outcome.written = [(by_key[k], v) for k, v in written.items()]
    for key, reason in list(unsupported.items()):
        if not reason.split(":")[0].isupper():  # name the function when the reason does not
            formula = by_key[key].formula
            names = dynamic.called(formula) if isinstance(by_key[key], dynamic.DynamicTarget) \
                else "/".join(registry.called(formula))
            unsupported[key] = names + ": " + reason
    for (sheet, row, col), reason in unsupported.items():
        outcome.flags.append(Flag(the_plan.sheets[sheet], cell_name(row, col), reason))


def _settle(model, the_plan: Plan, written: dict, unsupported: dict, read_cell, write_cell):
    """Evaluate, write back and re-evaluate until no planned cell changes."""
    rounds = len(the_plan.targets) + 1
    nested = frozenset(
        (t.sheet, t.row, t.col) for t in the_plan.targets if _NESTED.search(t.formula)
    )
    arrays = None
    if any(isinstance(t, dynamic.DynamicTarget) for t in the_plan.targets):
        from shared.calc.corrections.dynamic import settle

        arrays = settle.new_state(model, the_plan.sheets, read_cell, the_plan.occupied, the_plan.spill_anchors)
    for _ in range(rounds):
        changed = False
        for target in the_plan.targets:
            key = (target.sheet, target.row, target.col)
            if isinstance(target, dynamic.DynamicTarget):
                settled = settle.settle(model, target, arrays, read_cell, write_cell)
                if settled.reason is not None:
                    unsupported[key] = settled.reason
                    continue
                unsupported.pop(key, None)
                if settled.written is not None:
                    written[key] = settled.written
                changed |= settled.changed
                continue
            if isinstance(target, Watched):
                if not target.always and key not in written \
                        and not _same(read_cell(model, *key), power.OVERFLOWED):
                    unsupported.pop(key, None)
                    continue
                reason = _prepared(target)
                if reason is not None:
                    unsupported[key] = reason
                    continue
            value, reason = _evaluate(model, target, read_cell, the_plan.date1904, nested)
            if reason is not None:
                if isinstance(target, Watched):
                    reason = target.reason(reason)
                unsupported[key] = reason
                continue
            if isinstance(target, Watched) and not target.always and key not in written \
                    and value != power.EXCEL:
                continue  # IronCalc's #DIV/0! is Excel's
            unsupported.pop(key, None)
            current_value = read_cell(model, *key)
            if key in written and written[key] == value:
                continue
            if key not in written and _same(current_value, value):
                continue
            style = model.get_cell_style(*key)
            write_cell(model, *key, value)
            if model.get_cell_style(*key) != style:
                model.set_cell_style(*key, style)
            written[key] = value
            changed = True
            if arrays is not None:
                arrays.book.changed(Ref(*key, *key[1:]))
        if not changed:
            break
        model.evaluate()
        if arrays is not None:
            arrays.book.changed()
    else:
        for key in written:
            unsupported[key] = "corrected values did not settle (a cycle)"


def _prepared(target: Watched) -> str | None:
    """Compile a watched cell the first time it is needed; why it cannot be, else None."""
    if target.compiled is None and target.refused is None:
        try:
            prepared = target.prepare()
        except Unsupported as exc:
            target.refused = target.reason(str(exc))
        else:
            target.compiled, target.inputs = prepared.compiled, prepared.inputs
    return target.refused


def _same(a: tuple, b: tuple) -> bool:
    if a[0] == "n" and b[0] == "n":
        return a[1] == b[1]
    return a == b


def _evaluate(model, target: Target, read_cell, date1904: bool = False, nested=frozenset()):
    """The target's value as typed content, or (None, reason) where we cannot compute it."""
    import numpy as np

    evaluation = _Evaluation(
        model, date1904, cell=(target.sheet, target.row, target.col), nested=nested
    )
    from shared.calc import run_context

    run_context.restart_cell(evaluation.cell)  # evaluated again (a later round): the same numbers drawn
    args = []
    for index, top, left, bottom, right in target.inputs:
        if bottom is None or right is None:
            _, last_row, _, last_col = model.get_sheet_dimensions(index)
            if bottom is None:
                bottom = max(last_row, top)
            else:
                right = max(last_col, left)
            if (bottom - top + 1) * (right - left + 1) > 10 * _MAX_CELLS:
                return None, f"a whole row or column with more than {10 * _MAX_CELLS} used cells"
        if index == target.sheet and top <= target.row <= bottom and left <= target.col <= right:
            return None, "a circular reference (the cell is in its own range)"
        cells = [
            [read_cell(model, index, r, c) for c in range(left, right + 1)]
            for r in range(top, bottom + 1)
        ]
        try:
            array = np.array([[registry.to_formulas(v) for v in line] for line in cells], object)
        except Unsupported as exc:
            return None, str(exc)
        if array.size > 1:
            evaluation.ranges[id(array)] = (index, top, left, bottom, right)
        args.append(array)
    token = current.set(evaluation)
    try:
        with np.errstate(over="ignore"):  # formulas answers #NUM! for an overflowed power
            result = target.compiled(*args)
    except Unsupported as exc:
        return None, str(exc)
    except Exception as exc:  # noqa: BLE001 - an evaluation failure leaves IronCalc's value
        return None, f"evaluation failed ({type(exc).__name__})"
    finally:
        current.reset(token)
    if evaluation.unsupported:
        return None, evaluation.unsupported
    try:
        return registry.from_formulas(result), None
    except Unsupported as exc:
        return None, str(exc)


def range_flags(evaluation: _Evaluation, array) -> tuple[list[bool], list[bool]] | None:
    """For an argument that is a referenced range passed as it is: per cell (row-major), whether
    its row is hidden and whether it holds a SUBTOTAL/AGGREGATE formula."""
    box = evaluation.ranges.get(id(array))
    if box is None:
        return None
    index, top, left, bottom, right = box
    model = evaluation.model
    hidden, nested = [], []
    for r in range(top, bottom + 1):
        row_hidden = bool(model.is_row_hidden(index, r))
        for c in range(left, right + 1):
            hidden.append(row_hidden)
            nested.append(
                (index, r, c) in evaluation.nested
                or bool(_NESTED.search(model.get_cell_formula(index, r, c) or ""))
            )
    return hidden, nested


# --- export --------------------------------------------------------------------------------

_CELL_RE = r'<c r="{ref}"(?P<attrs>[^>]*?)(?:/>|>(?P<body>.*?)</c>)'
_ATTR_T = re.compile(r'\s+t="[^"]*"')


def restore_formulas(xlsx: bytes, outcome: Outcome | None) -> bytes:
    """The exported package with each corrected cell's formula put back beside its value."""
    if outcome is None or not outcome.written:
        return xlsx
    by_sheet: dict[int, list[tuple[Target, tuple]]] = {}
    for target, value in outcome.written:
        by_sheet.setdefault(target.sheet, []).append((target, value))
    src = zipfile.ZipFile(io.BytesIO(xlsx))
    parts = _sheet_parts(src)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            for sheet, cells in by_sheet.items():
                if parts.get(sheet) == info.filename:
                    data = _patch_sheet(data.decode("utf-8"), cells).encode("utf-8")
            dst.writestr(info, data)
    return out.getvalue()


def _sheet_parts(src: zipfile.ZipFile) -> dict[int, str]:
    workbook = src.read("xl/workbook.xml").decode("utf-8")
    rels = src.read("xl/_rels/workbook.xml.rels").decode("utf-8")
    targets = {
        m.group(1): m.group(2)
        for m in re.finditer(r'<Relationship[^>]*Id="([^"]+)"[^>]*Target="([^"]+)"', rels)
    }
    targets.update({
        m.group(2): m.group(1)
        for m in re.finditer(r'<Relationship[^>]*Target="([^"]+)"[^>]*Id="([^"]+)"', rels)
    })
    parts = {}
    for i, m in enumerate(re.finditer(r"<sheet\b[^>]*?r:id=\"([^\"]+)\"", workbook)):
        target = targets.get(m.group(1), "")
        parts[i] = target.lstrip("/") if target.startswith("/") else "xl/" + target
    return parts


def _patch_sheet(xml: str, cells: list[tuple[Target, tuple]]) -> str:
    for target, content in cells:
        kind, value = content[:2]
        spill = content[2] if len(content) > 2 else None  # a dynamic array's area
        pattern = re.compile(_CELL_RE.format(ref=target.address), re.DOTALL)
        match = pattern.search(xml)
        if match is None:
            log.warning("corrected cell %s not found in the export", target.address)
            continue
        attrs = _ATTR_T.sub("", match.group("attrs"))
        formula = dynamic.as_written(target.formula, target.row, target.col) \
            if isinstance(target, dynamic.DynamicTarget) \
            else registry.rename_back(target.formula)
        formula = html.escape(formula[1:], quote=False)
        if kind == "n":
            t, v = "", repr(float(value)) if not float(value).is_integer() else str(int(value))
        elif kind == "b":
            t, v = ' t="b"', "1" if value else "0"
        elif kind == "e":
            t, v = ' t="e"', value
        else:
            t, v = ' t="str"', html.escape(str(value), quote=False)
        f_attrs = f' t="array" ref="{spill}"' if spill else ""
        cell = f'<c r="{target.address}"{attrs}{t}><f{f_attrs}>{formula}</f><v>{v}</v></c>'
        xml = xml[: match.start()] + cell + xml[match.end():]
    return xml
