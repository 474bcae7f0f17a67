"""A power beyond Excel's largest number is #NUM!, where IronCalc 0.9.1 answers #DIV/0!.

Excel: a formula whose result is "too large or too small to be shown in Excel" is #NUM!
(Microsoft's "How to correct a #NUM! error"), and "the ^ operator can be used instead of
POWER" (Microsoft's POWER page). IronCalc 0.9.1 answers #DIV/0! for any power whose result
is infinite: `POWER(100,1E13)`, `100^1E13`, `POWER(1E-200,-2)` (measured), the same answer
it gives, rightly, for zero to a negative power (an Excel-saved #DIV/0!, tests/corpus
formulas/test.xlsx MATH & TRIG!U51). Every other answer of its POWER and `^` agrees with the
Excel-saved corpus (0^0 #NUM!, a negative base to a fraction #NUM!, errors passed on).

So a cell calling POWER or using `^` is watched, not recalculated: only while IronCalc's
value is #DIV/0! is its formula evaluated through the formulas bridge (layer.py; formulas'
POWER and, with shared/calc/formulas/functions.py, its `^` follow the rules above), and only
a #NUM! answer replaces the #DIV/0!: a workbook whose powers do not overflow pays one cell
read per watched cell and calculation, and no value IronCalc had right can change. The
formula is compiled the first time the cell is #DIV/0!, not at load.
"""

from __future__ import annotations

import re

# In the sheet XML of every workbook a watched cell can be in (layer.may_need_plan).
HINTS = (b"POWER", b"^")
_CALL = re.compile(r"(?<![A-Za-z0-9_.])POWER\s*\(", re.IGNORECASE)
_STRING = re.compile(r'"(?:[^"]|"")*"')
# IronCalc's answer that may stand for an overflow, and the one replacing it.
OVERFLOWED = ("e", "#DIV/0!")
EXCEL = ("e", "#NUM!")


def mentions(formula: str) -> bool:
    """Whether a formula (outside text literals) calls POWER or uses `^`."""
    if "^" not in formula and "POWER" not in formula.upper():
        return False
    outside = _STRING.sub('""', formula)
    return "^" in outside or bool(_CALL.search(outside))
