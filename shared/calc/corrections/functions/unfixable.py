"""Cells calling a function the correction layer cannot compute as Excel would, flagged at
upload (flags.py): in the version's fidelity report and warnings, whether or not the file
carries Excel's values.

- STDEV, VAR, DEVSQ, AVEDEV, SUMSQ, KURT... given typed text that may read as a number or a
  date ("50%", "1/2/2020"): the rule and the reason live in arguments.py.
- LEFT, RIGHT, MID in an array formula whose count or start may be text or a logical value
  (a typed "2" or TRUE, a reference, a comparison): the rule and the reason live in arguments.py.
- GETPIVOTDATA(data_field, pivot_table, [field1, item1], ...) that the workbook's saved pivot
  tables do not settle (pivots.py answers the others at load: the rendered cell or #REF!);
  IronCalc 0.9.1 answers #NAME? (measured). In an array formula (not rewritten) always.
- COUNT and AVERAGE given an array: "If an argument is an array or reference, only numbers in
  that array or reference are counted" (COUNT and AVERAGE pages). IronCalc 0.9.1 answers 0 for
  COUNT of any array, constant or computed (COUNT({1,2,"a",TRUE}): Excel 2;
  {=COUNT(IF(A1:A4>15,A1:A4))} over 10, 20, 30, 40: Excel 3), and AVERAGE counts the array's
  logical values ({=AVERAGE(IF(A1:A4>15,A1:A4))}: 22.5, Excel 30; AVERAGE({1,2,TRUE}): 1.333,
  Excel 1.5) (measured). Flagged: COUNT with an array constant or, in an array formula (CSE or
  a dynamic array: t="array" in the package), with a computed argument; AVERAGE with an array
  constant holding TRUE or FALSE or, in an array formula, with an IF(...) argument (the IF's
  FALSE for the rows it leaves out). An array constant of literals outside an array formula is
  rewritten at load (arguments.py), not flagged. References, names and typed values are read
  right. Outside an array formula a computed argument is one value (implicit intersection),
  read alike.
- MODE, MODE.SNGL, MODE.MULT given an error value typed in (`MODE(1,1,#N/A)`): the MODE.SNGL
  page says "arguments that are error values ... cause errors", IronCalc 0.9.1 drops the error
  (1, measured); but Excel's own file contradicts the same sentence for text (formulas'
  test.xlsx STATISTICAL!S71, arguments.py) and the corpus has no Excel-saved MODE of a typed
  error, so the cell is flagged rather than rewritten on an unverified reading. Likewise a
  MODE argument that is a comparison or a concatenation (`MODE(A1>0,1,2)`, `MODE(A1&"",...)`):
  the page does not say whether such a logical value or text counts, and IronCalc drops it.
- SUBTOTAL whose references hold a cell calling AGGREGATE: the SUBTOTAL page says only that
  "other subtotals within ref1, ref2,... (or nested subtotals) ... are ignored"; whether an
  AGGREGATE cell is such a subtotal it does not say (the AGGREGATE page speaks of "nested
  SUBTOTAL and AGGREGATE functions" for AGGREGATE's own options only), and no Excel-saved file
  of ours shows it. IronCalc 0.9.1 counts the AGGREGATE's value (the layer writes it into the
  cell as a constant: SUBTOTAL(9,A1:A5) over 10, 20, 30, 40 and AGGREGATE(9,0,A1:A4) is 200),
  so the cell is flagged. SUBTOTAL over SUBTOTAL cells IronCalc ignores, as the page says
  (pinned in test_corrections_more.py).
- In an array formula, an IS function, TYPE, N or T given the reference OFFSET, INDIRECT or
  CHOOSE returns, or an INDEX of a whole row or column (`{=SUM(--ISNUMBER(OFFSET(A1,0,0,3)))}`,
  `{=ISTEXT(INDIRECT("B2"))}`): IronCalc 0.9.1 leaves the reference unread (FALSE for each
  cell, 0 for the count; N #N/IMPL!), and array formulas are not rewritten (arguments.py reads
  one cell through INDEX in plain formulas), so the cell is flagged.
- CELL with an info_type that reads the cell's formatting or layout ("format", "color",
  "parentheses", "prefix", "protect", "width": the CELL page's table): IronCalc 0.9.1 answers
  #VALUE! for each and the layer does not read number formats, alignment, protection or column
  widths into formulas, so the cell is flagged. "address", "col", "row", "contents", "type" and
  "filename" are calculated.
"""

from __future__ import annotations

import re

from shared.calc.corrections.arguments import (
    READ_THROUGH_INDEX,
    array_count_reason,
    array_numbers,
    typed_text_reason,
)
from shared.calc.corrections.formula_tokens import TEXT_LITERAL
from shared.calc.corrections.functions.subtotal import call_arguments

_PIVOT = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?GETPIVOTDATA\s*\(", re.IGNORECASE)
_STATISTIC = re.compile(r"(?<![A-Za-z0-9_.])(AVERAGE|COUNT)\s*\(", re.IGNORECASE)
# An argument read as it is: a reference or range (sheet-qualified or not), a name, a literal.
_PLAIN = re.compile(
    r"\s*(?:(?:'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?[$A-Za-z0-9_.]+(?::[$A-Za-z0-9_.]+)?\s*"
    r"|\s*[+-]?[0-9.]+(?:[eE][+-]?\d+)?\s*|\s*\"\"\s*|\s*"
)
_IF = re.compile(r"\s*IF\s*\(", re.IGNORECASE)
_LOGICAL = re.compile(r"(?<![A-Za-z0-9_.])(?:TRUE|FALSE)(?![A-Za-z0-9_.(])", re.IGNORECASE)

PIVOT_REASON = (
    "GETPIVOTDATA that the workbook's saved pivot tables do not settle ({why}): IronCalc 0.9.1 "
    "answers #NAME?"
)
COUNT_REASON = (
    "COUNT given an array: Excel counts the array's numbers, IronCalc 0.9.1 answers 0"
)
AVERAGE_REASON = (
    "AVERAGE given an array holding logical values: Excel ignores them, IronCalc 0.9.1 counts "
    "them (TRUE 1, FALSE 0)"
)


_MODE = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?MODE(?:\.SNGL|\.MULT)?\s*\(", re.IGNORECASE)
_ERROR = re.compile(r"\s*#(?:NULL!|DIV/0!|VALUE!|REF!|NAME\?|NUM!|N/A|GETTING_DATA)\s*", re.IGNORECASE)
_SUBTOTAL = re.compile(r"(?<![A-Za-z0-9_.])SUBTOTAL\s*\(", re.IGNORECASE)
_AGGREGATE = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?AGGREGATE\s*\(", re.IGNORECASE)
_READER_OF_REFERENCE = re.compile(
    r"(?<![A-Za-z0-9_.])(" + "|".join(sorted(READ_THROUGH_INDEX, key=len, reverse=True)) + r")\s*\("
    r"(?=\s*(?:OFFSET|INDIRECT|CHOOSE|INDEX)\s*\()",
    re.IGNORECASE,
)
_CELL_OR_RANGE = re.compile(
    r"(?:(?:'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?\$?[A-Za-z]{1,3}\$?\d+(?::\$?[A-Za-z]{1,3}\$?\d+)?"
)
_REFERENCE_CALL = re.compile(r"\s*(OFFSET|INDIRECT|CHOOSE|INDEX)\s*\(", re.IGNORECASE)
_CELL_LAYOUT = re.compile(
    r'(?<![A-Za-z0-9_.])CELL\s*\(\s*"(format|color|parentheses|prefix|protect|width)"', re.IGNORECASE
)

MODE_EXPRESSION_REASON = (
    "MODE given a logical value or text calculated in its arguments ({argument}): IronCalc "
    "0.9.1 drops it, and Excel's page does not say whether it counts"
)
MODE_ERROR_REASON = (
    "MODE given an error value typed in: IronCalc 0.9.1 drops it, Excel's page says it is the "
    "answer, and no Excel-saved file confirms which"
)
SUBTOTAL_AGGREGATE_REASON = (
    "SUBTOTAL over a cell calling AGGREGATE ({cell}): IronCalc 0.9.1 with the layer counts the "
    "AGGREGATE's value, and Excel's pages do not say whether Excel ignores it as a nested "
    "subtotal"
)
ARRAY_REFERENCE_REASON = (
    "{reader} in an array formula given the reference {call} returns: IronCalc 0.9.1 leaves it "
    "unread, and array formulas are not rewritten"
)
CELL_LAYOUT_REASON = (
    'CELL("{info}", ...) reads the cell\'s formatting or layout: IronCalc 0.9.1 answers #VALUE! '
    "and the layer does not read it"
)


def _calculated_value(argument: str) -> bool:
    """Whether a MODE argument is a comparison or concatenation (arguments.expression_kind)."""
    from openpyxl.formula.tokenizer import Token

    from shared.calc.corrections.arguments import expression_kind
    from shared.calc.corrections.formula_tokens import tokenize

    if not any(op in argument for op in "=<>&("):
        return False
    tokens = tokenize("=" + argument)
    if tokens is None:
        return False
    return expression_kind(tokens, [i for i, t in enumerate(tokens) if t.type != Token.WSPACE]) \
        is not None


def _statistic_reason(function: str, arguments: list[str], array_formula: bool) -> str | None:
    for argument in arguments:
        constant = argument.strip().lstrip("(").startswith("{")  # a name's array, inlined: `({1,2})`
        if constant and not array_formula and array_numbers(argument) is not None:
            continue  # an array constant of literals: rewritten at load (arguments.py)
        if function == "COUNT":
            if constant or (array_formula and not _PLAIN.fullmatch(argument)):
                return COUNT_REASON
        elif (constant and _LOGICAL.search(argument)) or (array_formula and _IF.match(argument)):
            return AVERAGE_REASON
    return None


def reasons(formula: str, array_formula: bool = False, sheet: str | None = None, pivots=None) -> list[str]:
    """Why a formula cannot be computed as Excel would ([] when it can); `pivots` are the
    workbook's pivot tables (pivots.read_pivots), None when unknown, and `sheet` the cell's."""
    text = TEXT_LITERAL.sub('""', formula)
    found = []
    typed = typed_text_reason(formula)
    if typed is not None:
        found.append(typed)
    counted = array_count_reason(formula, array_formula)
    if counted is not None:
        found.append(counted)
    if _PIVOT.search(text):
        why = "an array formula" if array_formula else "the pivot tables were not read"
        if pivots is not None and not array_formula and sheet is not None:
            from shared.calc.corrections.functions.pivots import unresolved

            why = unresolved(formula, sheet, pivots)
        if why is not None:
            found.append(PIVOT_REASON.format(why=why))
    for match in _MODE.finditer(text):
        arguments = call_arguments(text, match.end()) or []
        if any(_ERROR.fullmatch(a) for a in arguments) and MODE_ERROR_REASON not in found:
            found.append(MODE_ERROR_REASON)
        for argument in arguments:
            if _calculated_value(argument):
                found.append(MODE_EXPRESSION_REASON.format(argument=argument.strip()))
                break
    if array_formula:
        unread = _unread_reference(text)
        if unread is not None:
            found.append(ARRAY_REFERENCE_REASON.format(reader=unread[0], call=unread[1]))
    layout = _CELL_LAYOUT.search(formula)  # the info_type is a text literal: `formula`, not `text`
    if layout is not None:
        found.append(CELL_LAYOUT_REASON.format(info=layout.group(1).lower()))
    for match in _STATISTIC.finditer(text):
        arguments = call_arguments(text, match.end())
        reason = _statistic_reason(match.group(1).upper(), arguments or [], array_formula)
        if reason is not None and reason not in found:
            found.append(reason)
    return found


def _unread_reference(text: str) -> tuple[str, str] | None:
    """(the reader, the call) of the first IS function, TYPE, N or T whose whole argument is an
    OFFSET, INDIRECT or CHOOSE call or an INDEX with a position 0 or left empty (a whole row or
    column), in a formula whose text literals are blanked; None when there is none."""
    for match in _READER_OF_REFERENCE.finditer(text):
        arguments = call_arguments(text, match.end())
        if not arguments or len(arguments) != 1:
            continue
        call = _REFERENCE_CALL.match(arguments[0])
        inner = call_arguments(arguments[0], call.end()) if call else None
        # the call's arguments and commas end at its ")": the whole argument when nothing follows
        if inner is None or arguments[0][call.end() + len(",".join(inner)) + 1:].strip():
            continue  # `OFFSET(A1,0,0)+1`: not the reference itself
        name = call.group(1).upper()
        if name == "INDEX" and not any(a.strip() in ("", "0") for a in inner[1:3]):
            continue  # one cell: IronCalc reads INDEX's
        if name == "CHOOSE" and not any(_CELL_OR_RANGE.fullmatch(a.strip()) for a in inner[1:]):
            continue  # a choice among values: no reference to read
        return match.group(1).upper(), name
    return None


def unfixable_functions(book) -> list[tuple[object, str]]:
    """[(formula cell, reason)] of an ExcelBook's cells the layer cannot compute as Excel would;
    a cell an array formula fills is its formula's cell's business."""
    found = []
    aggregates = _aggregate_cells(book)
    for cell in book.cells:
        if cell.array_area:
            continue
        found_reasons = reasons(cell.formula, cell.array_formula, cell.sheet, getattr(book, "pivots", None))
        nested = _aggregate_within(cell, aggregates) if aggregates else None
        if nested is not None:
            found_reasons.append(SUBTOTAL_AGGREGATE_REASON.format(cell=nested))
        if found_reasons:
            found.append((cell, "; ".join(found_reasons)))
    return found


def _aggregate_cells(book) -> dict[str, list[object]]:
    """{sheet in lower case: [formula cells calling AGGREGATE]}."""
    found: dict[str, list[object]] = {}
    for cell in book.cells:
        if not cell.array_area and _AGGREGATE.search(TEXT_LITERAL.sub('""', cell.formula)):
            found.setdefault(cell.sheet.lower(), []).append(cell)
    return found


def _aggregate_within(cell, aggregates: dict[str, list[object]]) -> str | None:
    """The first AGGREGATE cell (`Sheet!A5`) inside a SUBTOTAL reference of `cell`'s formula
    (ranges and single cells written in it, on its sheet or another), or None."""
    from shared.calc.corrections.lookups import parse_range
    from shared.calc.refs import parse_cell

    text = TEXT_LITERAL.sub('""', cell.formula)
    for match in _SUBTOTAL.finditer(text):
        for argument in (call_arguments(text, match.end()) or [])[1:]:
            argument = argument.strip().lstrip("@")
            sheet, _, ref = argument.rpartition("!")
            box = parse_range(argument)
            if box is None:
                found = parse_cell(ref)
                if found is None:
                    continue  # a name or an expression: not followed
                row, col = found
                top = bottom = row
                left = right = col
                sheet = sheet.strip("'").replace("''", "'") or None
            else:
                top, bottom, left, right, sheet = box.top, box.bottom, box.left, box.right, box.sheet
            for other in aggregates.get((sheet or cell.sheet).lower(), ()):
                if other is not cell and top <= other.row <= bottom and left <= other.col <= right:
                    return f"{other.sheet}!{other.address}"
    return None
