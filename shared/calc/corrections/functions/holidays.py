"""WORKDAY and WORKDAY.INTL given a range of holidays.

IronCalc 0.9.1 reads such a formula from an .xlsx with its holidays argument implicitly
intersected (`WORKDAY(A1,151,B1:B3)` becomes `WORKDAY(A1,151,@B1:B3)`, measured), so the
formula counts only the holiday in its own row or column, or none. Microsoft's WORKDAY and
WORKDAY.INTL pages define holidays as "a range of cells that contain the dates, or an array
constant": every date counts (the WORKDAY page's example, 151 workdays from 2008-10-01 with three
holidays, is 2009-05-05). The `@` IronCalc added before that argument is removed at load.
"""

from __future__ import annotations

import re

from shared.calc.corrections.model import Rewrite
from shared.calc.corrections.package import survey

MENTION = re.compile(rb"WORKDAY(?:\.INTL)?\(")
KEYWORDS = (b"WORKDAY",)
_CALL = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(WORKDAY(?:\.INTL)?)\s*\(", re.IGNORECASE)
_STRING = re.compile(r'"(?:[^"]|"")*"')
HOLIDAYS_ARGUMENT = {"WORKDAY": 2, "WORKDAY.INTL": 3}  # 0-based


def _argument_starts(text: str, start: int) -> list[int]:
    """Where each top-level argument of the call opened at text[start - 1] begins."""
    starts, depth = [start], 0
    for index in range(start, len(text)):
        ch = text[index]
        if ch in "({":
            depth += 1
        elif ch in ")}":
            if depth == 0:
                return starts
            depth -= 1
        elif ch == "," and depth == 0:
            starts.append(index + 1)
    return starts


def without_intersection(formula: str) -> str | None:
    """The formula with the `@` before each WORKDAY/WORKDAY.INTL holidays argument removed, or
    None when there is none."""
    if "@" not in formula:
        return None
    blank = _STRING.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', formula)
    drop = []
    for match in _CALL.finditer(blank):
        starts = _argument_starts(blank, match.end())
        position = HOLIDAYS_ARGUMENT[match.group(1).upper()]
        if position < len(starts):
            index = starts[position]
            while index < len(blank) and blank[index] == " ":
                index += 1
            if index < len(blank) and blank[index] == "@":
                drop.append(index)
    if not drop:
        return None
    for index in reversed(drop):
        formula = formula[:index] + formula[index + 1:]
    return formula


def correct_holidays(model, data: bytes) -> list[Rewrite]:
    """Rewrite the cells whose WORKDAY/WORKDAY.INTL holidays IronCalc intersected; a workbook
    without WORKDAY costs one scan of its sheet XML."""
    candidates, arrays = survey(data, MENTION, KEYWORDS)
    rewrites = []
    for sheet, row, col in sorted(candidates - arrays):
        formula = model.get_cell_formula(sheet, row, col)
        fixed = without_intersection(formula) if formula else None
        if fixed is None:
            continue
        model.set_user_input(sheet, row, col, fixed)
        rewrites.append(Rewrite(sheet, row, col, fixed.lstrip("=")))
    return rewrites
