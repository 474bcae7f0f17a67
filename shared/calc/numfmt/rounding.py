"""Numbers as Excel holds them for display: 15 significant digits, rounded half away from zero."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def decimal(value: float) -> Decimal:
    """The number as Excel holds it for display: 15 significant digits."""
    if value == 0:
        return Decimal(0)
    return Decimal(f"{value:.15g}") if abs(value) >= 1e-300 else Decimal(repr(value))


def round_places(value: Decimal, places: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
