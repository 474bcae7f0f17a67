"""Complex numbers written as Excel writes them: each part with 15 significant digits, a part
below 1 in E notation when written out it would take more than 21 characters.

Excel-saved cells of formulas' test.xlsx (ENGINEERING rows 35-53) and IronCalc's COMPLEXs.xlsx:
`IMCSCH(...)` is "1.28233995888454E-06+4.33496947416312E-06j", `IMEXP(...)`
"2.24044486393732E-06-2.99158552811404E-07j", `IMCSC(...)` "1.82483860060804E-11-...", `COMPLEX`
"1.2E-45-3i", while `IMCOT(...)` is "0.0000692442674613868-1.00005873951153j" and
`COMPLEX(1E-16,...)` "0.0000000000000001": written out, 0.00000128233995888454 would take 22
characters, 0.0000692442674613868 takes 21 and 0.0000000000000001 18 (the sign not counted).
A part of 1 or more is written out with its 15 significant digits, as IronCalc writes it (no
saved cell shows a larger part).

IronCalc 0.9.1 writes out parts Excel writes in E notation ("0.00000128233995888454"). The text is the function's
answer: a cell whose formula is one call of an IM function returning a complex number (nested
calls inside it read their arguments' numbers, whatever their form) gets its text written in
Excel's form (`excel_form`), with the same numbers; the digits IronCalc calculated are kept.
"""

from __future__ import annotations

import re

from shared.calc.corrections.dynamic import values as v
from shared.calc.corrections.formula_tokens import calls, tokenize

# The functions answering a complex number as text
FUNCTIONS = frozenset({
    "COMPLEX", "IMCONJUGATE", "IMCOS", "IMCOSH", "IMCOT", "IMCSC", "IMCSCH", "IMDIV", "IMEXP",
    "IMLN", "IMLOG10", "IMLOG2", "IMPOWER", "IMPRODUCT", "IMSEC", "IMSECH", "IMSIN", "IMSINH",
    "IMSQRT", "IMSUB", "IMSUM", "IMTAN",
})
HINTS = tuple(name.encode() + b"(" for name in sorted(FUNCTIONS))
_CALL = re.compile(r"=?\s*(?:_xlfn\.)?(" + "|".join(sorted(FUNCTIONS, key=len, reverse=True)) + r")\s*\(",
                   re.IGNORECASE)
_PART = r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_IMAGINARY = re.compile(rf"(?P<im>[+-]?(?:{_PART})?)(?P<unit>[ij])")
_COMPLEX = re.compile(rf"(?P<re>[+-]?{_PART})(?:(?P<im>[+-](?:{_PART})?)(?P<unit>[ij]))?")
_WIDTH = 21  # the longest part below 1 written out, sign aside (0.0000692442674613868)


# arguments.py's guard of a function without a value at complex 0 (COMPLEX_POLES): its answer is
# the call's or #NUM!
POLE_GUARD = "IF(ISERROR(1/IMABS("


def whole_call(formula: str) -> bool:
    """Whether a formula is one call of such a function, from its first character to its last
    (or that call behind arguments.py's guard of a pole)."""
    body = formula.lstrip("=").lstrip()
    if body.upper().startswith(POLE_GUARD):
        return bool(_CALL.search(body))
    if _CALL.match(formula) is None:  # most formulas stop here, untokenized
        return False
    tokens = tokenize(formula.rstrip())
    # calls() lists inner calls first: the outermost is the last
    return bool(tokens) and calls(tokens)[-1][1:3] == (0, len(tokens) - 1)


def _part(number: float) -> str:
    """One part with 15 significant digits, written out or in E notation as Excel does."""
    mantissa, exponent = v.fifteen_digits(number)
    text = v.written_out(mantissa, exponent)
    if exponent >= 0 or len(text.lstrip("-")) <= _WIDTH:
        return text
    return v.e_notation(mantissa, exponent)


def excel_form(text: str) -> str | None:
    """The complex number `text` (IronCalc's answer) as Excel writes it, or None when it is not
    a complex number or is already so written."""
    match = _IMAGINARY.fullmatch(text) or _COMPLEX.fullmatch(text)
    if match is None:
        return None
    real = float(match.group("re")) if "re" in match.re.groupindex and match.group("re") else 0.0
    written = match.group("im")
    imaginary = 0.0
    if match.group("unit"):
        imaginary = -1.0 if written == "-" else 1.0 if written in ("", "+") else float(written)
    unit = match.group("unit") or "i"
    if imaginary == 0:
        shown = _part(real)
    else:
        coefficient = "" if abs(imaginary) == 1 else _part(abs(imaginary))
        sign = "-" if imaginary < 0 else "+"
        shown = (_part(real) + sign if real != 0 else ("-" if imaginary < 0 else "")) + coefficient + unit
    return None if shown == text else shown
