"""SIN, COS, TAN, COT, CSC and SEC as Excel answers them.

Excel reduces the angle by π as the x87 FPU holds it (FLDPI: 64 bits of mantissa, rounded up,
5.0e-20 above π), not by π itself. Near a multiple of π/2 that decides the answer: Excel's
TAN(PI()/2) is 1.6324552277619072E+16 where the exact tangent of the same double is
1.633123935319537E+16, its SIN(PI()) 1.22514845490862E-16, not 1.2246467991473532E-16. Reducing
by that constant exactly, then taking the function of the remainder, gives every such value
Excel saved in IronCalc's TAN.xlsx and TRIGONOMETRIC.xlsx to the last digit. Microsoft's pages
("TAN function", "COT function", ...) give the limits: |number| below 2^27, #NUM! beyond;
COT(0) and CSC(0) are #DIV/0!.
"""

from __future__ import annotations

import math
from fractions import Fraction

from shared.calc.corrections.functions.errors import ExcelError

_HALF_PI_X87 = Fraction(0xC90FDAA22168C235, 2**63)  # FLDPI / 2
_LIMIT = 2.0**27
NAMES = ("SIN", "COS", "TAN", "COT", "CSC", "SEC")


def _reduced(x: float) -> tuple[int, float]:
    """(quadrant, remainder): x = k·(π_x87/2) + r with |r| <= π/4, quadrant = k mod 4; the
    remainder is exact before its one rounding to a double."""
    exact = Fraction(x)
    k = round(exact / _HALF_PI_X87)
    return k % 4, float(exact - k * _HALF_PI_X87)


def _sin_cos(x: float) -> tuple[float, float]:
    quadrant, r = _reduced(x)
    s, c = math.sin(r), math.cos(r)
    return ((s, c), (c, -s), (-s, -c), (-c, s))[quadrant]


def excel_trig(name: str, x: float) -> float:
    """One of NAMES at x as Excel answers it; raises ExcelError with Excel's error code."""
    if not math.isfinite(x) or abs(x) >= _LIMIT:
        raise ExcelError("#NUM!")
    if name in ("SIN", "COS"):
        return _sin_cos(x)[0 if name == "SIN" else 1]
    quadrant, r = _reduced(x)
    if name in ("TAN", "COT"):
        if r == 0.0 and (quadrant % 2 == 0) == (name == "COT"):
            raise ExcelError("#DIV/0!")  # COT of a multiple of π (only 0 is one as a double)
        tangent = math.tan(r) if quadrant % 2 == 0 else -1.0 / math.tan(r)
        return tangent if name == "TAN" else 1.0 / tangent
    s, c = _sin_cos(x)
    value = s if name == "CSC" else c
    if value == 0.0:
        raise ExcelError("#DIV/0!")
    return 1.0 / value
