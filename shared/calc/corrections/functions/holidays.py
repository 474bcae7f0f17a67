"""WORKDAY, NETWORKDAYS and their .INTL forms given their holidays.

IronCalc 0.9.1 reads such a formula from an .xlsx with its holidays argument implicitly
intersected (`WORKDAY(A1,151,B1:B3)` becomes `WORKDAY(A1,151,@B1:B3)`, measured), so the
formula counts only the holiday in its own row or column, or none. Microsoft's WORKDAY and
WORKDAY.INTL pages define holidays as "a range of cells that contain the dates, or an array
constant": every date counts (the WORKDAY page's example, 151 workdays from 2008-10-01 with three
holidays, is 2009-05-05). The `@` IronCalc added before that argument is removed at load.

Holidays given as an array constant of dates written as text (the NETWORKDAYS.INTL page's
examples, `{"2006/1/2","2006/1/16"}`: 22 and 20 working days in January 2006) are read by Excel
as those dates; IronCalc 0.9.1 answers #VALUE! for all four functions. The array is written
`--{...}` at load, which IronCalc reads as the dates (a text that is no date stays #VALUE!, as
in Excel).
"""

from __future__ import annotations

import re

from shared.calc.corrections.formula_tokens import TEXT_LITERAL
from shared.calc.corrections.model import Rewrite
from shared.calc.corrections.package import survey

MENTION = re.compile(rb"(?:WORKDAY|NETWORKDAYS)(?:\.INTL)?\(")
KEYWORDS = (b"WORKDAY", b"NETWORKDAYS")
_CALL = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?((?:WORKDAY|NETWORKDAYS)(?:\.INTL)?)\s*\(", re.IGNORECASE)
HOLIDAYS_ARGUMENT = {"WORKDAY": 2, "WORKDAY.INTL": 3, "NETWORKDAYS": 2, "NETWORKDAYS.INTL": 3}  # 0-based


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


def _holidays_at(formula: str) -> tuple[str, list[int]]:
    """The formula with its strings blanked out (same length), and where each holidays argument
    begins in it (after its spaces)."""
    blank = TEXT_LITERAL.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', formula)
    found = []
    for match in _CALL.finditer(blank):
        starts = _argument_starts(blank, match.end())
        position = HOLIDAYS_ARGUMENT[match.group(1).upper()]
        if position < len(starts):
            index = starts[position]
            while index < len(blank) and blank[index] == " ":
                index += 1
            found.append(index)
    return blank, found


def _text_array(blank: str, index: int) -> bool:
    """Whether an array constant holding a text begins at `index`."""
    if not blank.startswith("{", index):
        return False
    end = blank.find("}", index)
    return end > 0 and '"' in blank[index:end]


def corrected(formula: str, text_arrays: bool = True) -> str | None:
    """The formula with the `@` before each holidays argument removed and (`text_arrays`) each
    array constant of texts there written `--{...}`, or None when neither is there. Without
    `text_arrays` it is the formula as the file writes it (IronCalc adds the `@`)."""
    if "@" not in formula and ("{" not in formula or not text_arrays):
        return None
    blank, starts = _holidays_at(formula)
    edits = []  # (index, characters to drop, text to insert)
    for index in starts:
        if blank.startswith("@", index):
            edits.append((index, 1, ""))
        elif text_arrays and _text_array(blank, index):
            edits.append((index, 0, "--"))
    if not edits:
        return None
    for index, drop, insert in sorted(edits, reverse=True):
        formula = formula[:index] + insert + formula[index + drop:]
    return formula


def correct_holidays(model, data: bytes) -> list[Rewrite]:
    """Rewrite the cells whose holidays IronCalc intersected or reads as text; a workbook
    without WORKDAY or NETWORKDAYS costs one scan of its sheet XML."""
    candidates, arrays = survey(data, MENTION, KEYWORDS)
    rewrites = []
    for sheet, row, col in sorted(candidates - arrays):
        formula = model.get_cell_formula(sheet, row, col)
        fixed = corrected(formula) if formula else None
        if fixed is None:
            continue
        model.set_user_input(sheet, row, col, fixed)
        written = corrected(formula, text_arrays=False) or formula  # the export shows it as written
        rewrites.append(Rewrite(sheet, row, col, written.lstrip("=")))
    return rewrites
