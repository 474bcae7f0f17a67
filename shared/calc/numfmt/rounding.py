"""Numbers as Excel holds them for display: 15 significant digits, rounded half away from zero."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Context, Decimal


def decimal(value: float) -> Decimal:
    """The number as Excel holds it for display: 15 significant digits."""
    if value == 0:
        return Decimal(0)
    return Decimal(f"{value:.15g}") if abs(value) >= 1e-300 else Decimal(repr(value))


def shown(value: float) -> float:
    """The float nearest the number as Excel shows it: 15 significant digits."""
    return float(f"{value:.15g}")


# Enough digits for any double written out with Excel's most decimals (FIXED's 127): the
# default context's 28 would refuse `10001` to 127 places
_WIDE = Context(prec=800)


def round_places(value: Decimal, places: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP, context=_WIDE)


def excel_round(x: float, digits: float, mode: str = "round") -> float:
    """ROUND (half away from zero), ROUNDUP ("up", away from zero) or ROUNDDOWN ("down") to
    `digits` places (truncated; negative: left of the point), on the number as Excel shows it
    (15 significant digits) rather than its binary value: ROUND(1.005,2) is 1.01 and
    ROUND(-1.475,2) -1.48 (Microsoft: ROUND function's examples), though 1.005 is
    1.00499999999999989... in binary; ROUNDUP(2.55,-255) is 1E+255 (formulas' Excel-saved
    test.xlsx MATH & TRIG!AH61)."""
    d = math.trunc(digits)
    factor = 10.0 ** d if d < 309 else math.inf
    scaled = abs(x) * factor
    if not math.isfinite(scaled):
        return x  # more places than the number holds: itself
    on_show = shown(scaled)
    if mode == "round":
        r = math.floor(on_show + 0.5)
    elif mode == "up":
        r = math.ceil(on_show)
    else:
        r = math.floor(on_show)
    if not r:
        return 0.0
    # to places left of the point by multiplying: 1/1E-5 is 99999.99999999999, 1*1E+5 exact
    return math.copysign(r / factor if d >= 0 else r * 10.0 ** -d, x)
