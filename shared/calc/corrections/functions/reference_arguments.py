"""Arguments of ADDRESS, SHEET, SHEETS, FORMULATEXT and ARABIC, and lookup ranges of one cell,
that IronCalc 0.9.1 reads differently from Excel, rewritten at model load.

- A range of one cell given to MATCH, XMATCH, VLOOKUP, HLOOKUP, LOOKUP, XLOOKUP, INDEX, SMALL,
  LARGE or RANK (`MATCH(10,A1,0)`, `INDEX(A1,1,1)`): a range like any other (INDEX: "Reference
  ... a reference to one or more cell ranges"; MATCH: "lookup_array ... the range of cells being
  searched"); IronCalc answers #N/A, #VALUE! or #NUM!, and has no RANK of one cell. Written
  `A1:A1` (ONE_CELL_RANGES), as COUNTIF's are (criteria_ranges.py).

- ADDRESS(row, column, [abs_num], [a1], [sheet_text]) with an argument left empty: "the formula
  =ADDRESS(1,1,,,"Sheet2") returns Sheet2!$A$1" (the ADDRESS page): an empty abs_num is 1 (absolute)
  and an empty a1 is TRUE (A1 style), as when they are omitted. IronCalc answers #VALUE! for an
  empty abs_num and writes R1C1 style for an empty a1 (`ADDRESS(2,3,1,,"S")` "S!R2C3" for
  "S!$C$2"). The empty argument is written as its default.
- SHEET(value) of a reference is the number of the reference's sheet (the SHEET page: "value ...
  a reference ... for which you want the sheet number"); IronCalc answers #N/A for a reference and
  reads a sheet's name. `SHEET(Sheet2!B3)` is written `SHEET("Sheet2")`, `SHEET(B3)` (the
  formula's own sheet) `SHEET()`.
- SHEETS(reference) is the number of sheets in the reference (the SHEETS page); IronCalc
  implements only `SHEETS()`. A plain reference on one sheet is 1.
- FORMULATEXT(reference) of a range of several cells is the formula of its upper left cell (the
  FORMULATEXT page: "the Reference argument can be to ... a range of cells"; the upper left
  cell's); IronCalc answers #ERROR! or the cell intersecting its row. Written as that cell (before
  formula_text.py writes the formula of a rewritten cell).
- ARABIC(text): "Leading and trailing spaces are ignored" (the ARABIC page); IronCalc answers
  #VALUE! for `ARABIC(" LVII ")`. The text is given through TRIM (spaces inside stay an error:
  TRIM keeps one of them).

Only plain references (a cell or a range, with or without a sheet; for SHEET and SHEETS also a
defined name to one) are rewritten; 3-D references and computed references are left to IronCalc. Array formulas are left alone.
"""

from __future__ import annotations

import functools
import re

from shared.calc.corrections.formula_tokens import (
    PLAIN_REFERENCE,
    one_cell_range,
    plain_reference,
    replace_call,
    rewrite_calls,
    without_spaces,
    write_into_empty_argument,
    written_arguments,
)
from shared.calc.corrections.model import DefinedNames, Rewrite, rewrite_cells
from shared.calc.corrections.package import survey

# the ranges (by position) of the functions IronCalc 0.9.1 refuses one cell for (measured:
# MATCH, VLOOKUP, HLOOKUP, LOOKUP and XLOOKUP #N/A, XMATCH and INDEX #VALUE!, SMALL and LARGE
# #NUM!, RANK not implemented)
ONE_CELL_RANGES = {
    "MATCH": (1,), "XMATCH": (1,), "VLOOKUP": (1,), "HLOOKUP": (1,), "LOOKUP": (1, 2), "XLOOKUP": (1, 2),
    "INDEX": (0,), "SMALL": (0,), "LARGE": (0,), "RANK": (1,), "RANK.EQ": (1,), "RANK.AVG": (1,),
}
_RARE = ("ADDRESS", "SHEET", "SHEETS", "FORMULATEXT", "ARABIC")
MENTION = re.compile(
    rb"(?:ADDRESS|SHEETS?|FORMULATEXT|ARABIC|MATCH|LOOKUP|INDEX|SMALL|LARGE|RANK(?:\.EQ|\.AVG)?)\("
)
KEYWORDS = (b"ADDRESS(", b"SHEET(", b"SHEETS(", b"FORMULATEXT(", b"ARABIC(", b"MATCH(", b"LOOKUP(", b"INDEX(",
            b"SMALL(", b"LARGE(", b"RANK")
_CALL = re.compile(
    r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(" + "|".join(re.escape(n) for n in (*_RARE, *ONE_CELL_RANGES)) + r")\(",
    re.IGNORECASE,
)
_ADDRESS_DEFAULTS = {2: "1", 3: "TRUE"}  # abs_num, a1


def _plain_reference(tokens, positions: list[int], names=None) -> tuple[int, re.Match, bool] | None:
    """(token, match, whether through a name) when an argument is one plain reference, written
    or the target of a defined name (`names`: a name's text -> its formula, or None)."""
    found = plain_reference(tokens, positions)
    if found is None:
        return None
    index, match = found
    if match is not None:
        return index, match, False
    target = names(tokens[index].value.lstrip("@")) if names is not None else None
    match = PLAIN_REFERENCE.fullmatch(target.lstrip("=")) if target else None
    return (index, match, True) if match else None


def _sheet_name(written: str) -> str:
    """A sheet's name as written before `!` ('It''s' -> It's)."""
    return written[1:-1].replace("''", "'") if written.startswith("'") else written


def _rewrite_call(tokens, values, name, opened, closed, args, names=None) -> bool:
    if name in ONE_CELL_RANGES:
        changed = False
        for position in ONE_CELL_RANGES[name]:
            found = plain_reference(tokens, args[position]) if position < len(args) else None
            if found is not None and found[1] is not None and one_cell_range(found[1]):
                values[found[0]] = one_cell_range(found[1])
                changed = True
        return changed
    if name == "ADDRESS":
        changed = False
        for position, default in _ADDRESS_DEFAULTS.items():
            if position < len(args) and not without_spaces(tokens, args[position]):
                # an empty argument (`ADDRESS(1,1,,,"Sheet2")`, `ADDRESS(2,3,)`): its default
                write_into_empty_argument(tokens, values, opened, args, position, default)
                changed = True
        return changed
    if name in ("SHEET", "SHEETS", "FORMULATEXT") and len(args) == 1:
        found = _plain_reference(tokens, args[0], names if name != "FORMULATEXT" else None)
        if found is None:
            return False
        index, match, named = found
        if name == "SHEET":
            sheet = match["sheet"][:-1] if match["sheet"] else None
            if named and not sheet:
                return False  # a name's reference without a sheet: left to IronCalc
            text = '"' + _sheet_name(sheet).replace('"', '""') + '"' if sheet else ""
            replace_call(values, opened, closed, f"{values[opened]}{text})")
        elif name == "SHEETS":
            replace_call(values, opened, closed, "1")
        else:
            if match["c2"] is None:
                return False
            values[index] = (match["sheet"] or "") + match["c1"] + match["r1"]
        return True
    if name == "ARABIC" and len(args) == 1 and without_spaces(tokens, args[0]):
        kept = without_spaces(tokens, args[0])
        values[kept[0]] = "TRIM(" + values[kept[0]]
        values[kept[-1]] = values[kept[-1]] + ")"
        return True
    return False


def _may_change(formula: str) -> bool:
    """A quick look without tokenizing (lookups are common in large workbooks): a call of one
    of the rarer functions, or a lookup range written as one cell."""
    for call in _CALL.finditer(formula):
        name = call.group(1).upper()
        if name in _RARE:
            return True
        args = written_arguments(formula, call.end())
        for position in ONE_CELL_RANGES[name]:
            match = PLAIN_REFERENCE.fullmatch(args[position].strip().lstrip("@")) if position < len(args) else None
            if match is not None and one_cell_range(match):
                return True
    return False


def rewrite_formula(formula: str, names=None) -> str | None:
    """The formula with these functions' arguments as Excel reads them, or None; `names` gives
    a defined name's formula (SHEET and SHEETS of a name to a plain reference)."""
    if not _may_change(formula):
        return None
    return rewrite_calls(formula, functools.partial(_rewrite_call, names=names))


def correct_reference_arguments(model, data: bytes) -> list[Rewrite]:
    """Rewrite the calls (module docstring); a workbook without them costs one scan of its
    sheet XML."""
    candidates, arrays = survey(data, MENTION, KEYWORDS)
    if not candidates:
        return []
    names = DefinedNames(model)
    return rewrite_cells(model, sorted(candidates - arrays),
                         lambda formula, sheet, *_: rewrite_formula(formula, lambda name: names(name, sheet)))
