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

A formula that inspects the error in the same cell can hide the #DIV/0!: ERROR.TYPE answers 2
for #DIV/0! and 6 for #NUM! (Microsoft's ERROR.TYPE page), so `=ERROR.TYPE(POWER(100,1E13))`
is 2 in IronCalc 0.9.1 and 6 in Excel. No other function tells the two errors apart: ISERROR,
ISERR and IFERROR take both for errors, ISNA and IFNA neither for #N/A, TYPE is 16 for both
(their Microsoft pages), so IronCalc's answer there is Excel's or a #DIV/0! watched as above.
A watched formula that also calls ERROR.TYPE (`inspects`) is compiled at load and evaluated
through the bridge in every calculation; one the bridge cannot compile is flagged at load.
"""

from __future__ import annotations

import re

from shared.calc.corrections.formula_tokens import TEXT_LITERAL

# In the sheet XML of every workbook a watched cell can be in (layer.may_need_plan).
HINTS = (b"POWER", b"^")
_CALL = re.compile(r"(?<![A-Za-z0-9_.])POWER\s*\(", re.IGNORECASE)
_INSPECTS = re.compile(r"(?<![A-Za-z0-9_])(?:_xlfn\.)?ERROR\.TYPE\s*\(", re.IGNORECASE)
# Why a watched cell keeps IronCalc's value (the bridge's reason follows).
OVERFLOW_REASON = "POWER/^: #DIV/0!, which may be an overflow (#NUM! in Excel): {}"
INSPECTED_REASON = (
    "POWER/^, ERROR.TYPE: ERROR.TYPE of a power that may overflow (Excel's #NUM! is 6, "
    "IronCalc 0.9.1's #DIV/0! 2): {}"
)
# IronCalc's answer that may stand for an overflow, and the one replacing it.
OVERFLOWED = ("e", "#DIV/0!")
EXCEL = ("e", "#NUM!")


def mentions(formula: str) -> bool:
    """Whether a formula (outside text literals) calls POWER or uses `^`."""
    if "^" not in formula and "POWER" not in formula.upper():
        return False
    outside = TEXT_LITERAL.sub('""', formula)
    return "^" in outside or bool(_CALL.search(outside))


def inspects(formula: str) -> bool:
    """Whether a formula (outside text literals) calls ERROR.TYPE, which tells IronCalc's
    #DIV/0! from Excel's #NUM! of an overflowed power in the same cell."""
    if "ERROR.TYPE" not in formula.upper():
        return False
    return bool(_INSPECTS.search(TEXT_LITERAL.sub('""', formula)))
