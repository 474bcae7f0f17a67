"""Numbers as Excel holds them for display: 15 significant digits, rounded half away from zero."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal


def decimal(value: float) -> Decimal:
    """The number as Excel holds it for display: 15 significant digits."""
    if value == 0:
        return Decimal(0)
    return Decimal(f"{value:.15g}") if abs(value) >= 1e-300 else Decimal(repr(value))


def round_places(value: Decimal, places: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def excel_round(x: float, digits: float, mode: str = "round") -> float:
    """ROUND (half away from zero), ROUNDUP ("up", away from zero) or ROUNDDOWN ("down") to
    `digits` places (truncated; negative: left of the point), on the number as Excel shows it
    rather than its binary value: ROUND(1.005,2) is 1.01 and ROUND(-1.475,2) -1.48 (Microsoft:
    ROUND function's examples), though 1.005 is 1.00499999999999989... in binary."""
    d = int(math.trunc(digits))
    factor = 10.0 ** d
    scaled = abs(x) * factor
    if mode == "round":
        r = math.floor(scaled + 0.5 + 1e-9 * (scaled != 0))
    elif mode == "up":
        r = math.ceil(scaled - 1e-9)
    else:
        r = math.floor(scaled + 1e-9)
    return math.copysign(r / factor, x) if r else 0.0
