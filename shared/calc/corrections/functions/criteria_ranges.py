"""COUNTIF and its family (COUNTIF(S), SUMIF(S), AVERAGEIF(S), MAXIFS, MINIFS) given a range of
one cell, a sum range of another size, or a text compared in order.

- A range of one cell: `COUNTIF(A1,"*apple*")` counts A1 when it holds "apple" anywhere (the
  idiom of Microsoft's "Check if a cell contains text"); `SUMIF(A1,">0",B1)` is B1 or 0. IronCalc
  0.9.1 answers #VALUE! for every function of the family whose range, criteria range, sum range,
  average range or max/min range is one cell (measured, `$A$1` and `Sheet1!A1` alike). The cell
  is written as a range of that one cell (`A1:A1`), which IronCalc reads as Excel does.
- SUMIF's sum_range and AVERAGEIF's average_range "do not have to be the same size and shape as
  range. The actual cells that are added are determined by using the upper leftmost cell in
  sum_range as the beginning cell, and then including cells that correspond in size and shape
  to range" (the SUMIF and AVERAGEIF pages; WorksheetFunction.SumIf: A1:A5 with B1:B3 adds
  B1:B5, A1:B4 with C1:C2 adds C1:D4). IronCalc 0.9.1 adds only the cells the given range has
  (`SUMIF(A1:A3,"*a*",B1:B1)` 1 for 3). When both are plain references the sum range is written
  at the range's size from its upper leftmost cell.
- COUNTIFS, SUMIFS, AVERAGEIFS, MAXIFS and MINIFS whose ranges differ in size or shape are
  #VALUE! (`_mismatched`); IronCalc answers a number. Written `#VALUE!` when all are plain
  references.
- `">=text"` and `"<=text"` compare texts in order, without case: `COUNTIF(A1:A3,">=b")` over
  "apple", "banana", "cherry" is 2 (Microsoft: the criteria's comparison operators). IronCalc
  0.9.1 reverses the two for text (measured: its `">=b"` finds "apple", "b" and an empty text,
  the texts Excel's `"<=b"` finds, and its `"<=b"` those of Excel's `">=b"`; `">b"`, `"<b"` and
  numbers are right; `?` and `*` are plain characters in both). Such a criterion is written
  with the other operator: a typed `">=b"` becomes `"<=b"`, and `">="&B1` becomes
  `IF(<B1 holds such a text>,"<=",">=")&B1`. Which text compares as text is
  criteria.ordered_text (not a number, a logical value, an error code or a date).

Array formulas are left alone, as by every rewrite of the layer.
"""

from __future__ import annotations

import re

from openpyxl.utils.cell import column_index_from_string, get_column_letter

from shared.calc.corrections.formula_tokens import (
    PLAIN_REFERENCE,
    one_cell_range,
    plain_reference,
    replace_call,
    rewrite_calls,
    text_and_cell,
    written_arguments,
)
from shared.calc.corrections.model import Rewrite, rewrite_cells
from shared.calc.corrections.package import survey

FUNCTIONS = ("COUNTIF", "COUNTIFS", "SUMIF", "SUMIFS", "AVERAGEIF", "AVERAGEIFS", "MAXIFS", "MINIFS")
# in a sheet's upper-cased XML: a call of the family
MENTION = re.compile(rb"(?:COUNTIFS?|SUMIFS?|AVERAGEIFS?|MAXIFS|MINIFS)\(")
KEYWORDS = (b"IF(", b"IFS(")
_SWAPPED = {">=": "<=", "<=": ">="}
# a cell's text that, after the operator, IronCalc compares in reverse (criteria.ordered_text,
# at run time)
_ORDERED_CELL = (
    'AND(ISTEXT({c}),{c}<>"",ISERROR(--{c}),ISERROR(FIND("~",{c})),UPPER({c})<>"TRUE",'
    'UPPER({c})<>"FALSE",LEFT({c},1)<>"#")'
)


def range_positions(name: str, count: int) -> list[int]:
    """The arguments (0-based, of `count`) that are ranges: every one but the criteria."""
    from shared.calc.corrections.dynamic.criteria import CRITERIA_ARGUMENTS

    criteria = set(CRITERIA_ARGUMENTS[name](count))
    return [i for i in range(count) if i not in criteria]


def _shape(match: re.Match) -> tuple[int, int, int, int]:
    """(top, left, rows, columns) of a plain reference."""
    top, left = int(match["r1"].lstrip("$")), column_index_from_string(match["c1"].lstrip("$"))
    if match["c2"] is None:
        return top, left, 1, 1
    bottom, right = int(match["r2"].lstrip("$")), column_index_from_string(match["c2"].lstrip("$"))
    return min(top, bottom), min(left, right), abs(bottom - top) + 1, abs(right - left) + 1


def _resized(sum_range: re.Match, criteria_range: re.Match) -> str | None:
    """The sum range from its upper leftmost cell at the criteria range's size, or None when it
    has that size already."""
    _, _, rows, columns = _shape(criteria_range)
    top, left, own_rows, own_columns = _shape(sum_range)
    if (rows, columns) == (own_rows, own_columns):
        return None
    bottom, right = top + rows - 1, left + columns - 1
    if bottom > 1_048_576 or right > 16_384:
        return None  # beyond the sheet: left to IronCalc
    return f"{sum_range['sheet'] or ''}{get_column_letter(left)}{top}:{get_column_letter(right)}{bottom}"


def _reference(tokens, positions: list[int]) -> tuple[int, re.Match] | None:
    """(token, match) when an argument is one plain reference (not a name)."""
    found = plain_reference(tokens, positions)
    return found if found is not None and found[1] is not None else None


def _swapped_criterion(tokens, values, positions: list[int]) -> bool:
    """Write a `">=text"`/`"<=text"` criterion (typed, or an operator joined to one cell) with
    the other operator; whether it changed."""
    from shared.calc.corrections.dynamic.criteria import ordered_text

    form = text_and_cell(tokens, positions)
    if form is None:
        return False
    index, text, cell = form
    operator, rest = text[:2], text[2:]
    if operator not in _SWAPPED:
        return False
    if cell is None:
        if not ordered_text(rest):
            return False
        values[index] = '"' + (_SWAPPED[operator] + rest).replace('"', '""') + '"'
        return True
    if rest:
        return False
    values[index] = f'IF({_ORDERED_CELL.format(c=cell)},"{_SWAPPED[operator]}","{operator}")'
    return True


def _rewrite_call(tokens, values, name, opened, closed, args) -> bool:
    if name not in FUNCTIONS:
        return False
    from shared.calc.corrections.dynamic.criteria import CRITERIA_ARGUMENTS

    changed = False
    references = {i: _reference(tokens, args[i]) for i in range_positions(name, len(args))}
    if _mismatched(name, [found[1] if found else None for found in references.values()]):
        replace_call(values, opened, closed, "#VALUE!")
        return True
    if name in ("SUMIF", "AVERAGEIF") and len(args) == 3 and references.get(0) and references.get(2):
        resized = _resized(references[2][1], references[0][1])
        if resized is not None:
            values[references[2][0]] = resized
            changed = True
    for found in references.values():
        if found is not None and values[found[0]] == tokens[found[0]].value and one_cell_range(found[1]):
            values[found[0]] = one_cell_range(found[1])
            changed = True
    for position in CRITERIA_ARGUMENTS[name](len(args)):
        if position < len(args):
            changed |= _swapped_criterion(tokens, values, args[position])
    return changed


_CALL = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(COUNTIFS?|SUMIFS?|AVERAGEIFS?|MAXIFS|MINIFS)\(", re.IGNORECASE)


def _mismatched(name: str, ranges: list) -> bool:
    """Whether an S form's ranges, all plain references, differ in size or shape: "The size and
    shape of the max_range and criteria_rangeN arguments must be the same, otherwise these
    functions return the #VALUE! error" (MAXIFS page; MS-OI29500 for SUMIFS: "each
    cell-range-1...cell-range-n shall have the same size and shape as sum-range"). IronCalc
    0.9.1 answers a number (`SUMIFS(B1:B4,A1:A3,"a")` adds row 4 too)."""
    if not name.endswith("S") or len(ranges) < 2 or any(match is None for match in ranges):
        return False
    return len({_shape(match)[2:] for match in ranges}) > 1


def _may_change(formula: str) -> bool:
    """A quick look (no tokenizing: the family is common in large workbooks) at whether the
    rewrite has anything to do: an ordered text criterion, a range of one cell, a SUMIF or
    AVERAGEIF sum range of another size."""
    if '">=' in formula or '"<=' in formula:
        return True
    for call in _CALL.finditer(formula):
        args = written_arguments(formula, call.end())
        name = call.group(1).upper()
        plain = {i: PLAIN_REFERENCE.fullmatch(args[i].strip().lstrip("@")) for i in range_positions(name, len(args))}
        if any(match is not None and one_cell_range(match) for match in plain.values()):
            return True
        if name in ("SUMIF", "AVERAGEIF") and len(args) == 3 and plain.get(0) and plain.get(2) \
                and _shape(plain[0])[2:] != _shape(plain[2])[2:]:
            return True
        if _mismatched(name, list(plain.values())):
            return True
    return False


def rewrite_formula(formula: str) -> str | None:
    """The formula with the family's ranges and ordered text criteria as Excel reads them, or
    None when nothing changes."""
    if not _may_change(formula):
        return None
    return rewrite_calls(formula, _rewrite_call)


def correct_criteria_ranges(model, data: bytes) -> list[Rewrite]:
    """Rewrite the family's calls (module docstring); a workbook without them costs one scan of
    its sheet XML."""
    candidates, arrays = survey(data, MENTION, KEYWORDS)
    if not candidates:
        return []
    return rewrite_cells(model, sorted(candidates - arrays), lambda formula, *_: rewrite_formula(formula))


def unfixable_criteria_ranges(book) -> list[tuple[object, str]]:
    """(cell, reason) of the array formulas (not rewritten) that the rewrite would change."""
    found = []
    for cell in book.cells:
        if cell.array_formula and MENTION.search(cell.formula.upper().encode()) and rewrite_formula(cell.formula):
            found.append((cell, (
                "COUNTIF, SUMIF, AVERAGEIF or their S forms in an array formula with a range of one cell, a sum "
                "range of another size or a \">=\"/\"<=\" text criterion: IronCalc 0.9.1 answers #VALUE!, adds "
                "other cells or reverses the comparison there")))
    return found
