"""The General format as TEXT shows it: "up to 11 numeric characters, with the decimal point
counting as a numeric character" (the minus sign not counted), so up to 10 significant digits
with a point and 11 without (Microsoft KB 65903, "Number of significant digits MS Excel
retains"); "exponential notation for large numbers (12 or more digits)".

A number whose 15-digit value fits in 11 characters shows as it is (0.000000001, -0.00000001).
Otherwise it is rounded to fit, and exponential notation (`1.23457E-05`, at most 11 characters:
six significant digits for a two-digit exponent) is used when the number has 12 or more integer
digits, or when rounding to fit would show fewer significant digits than the exponential form
does (2.5E-09, not 0.000000003; 1E-10, not 0).
"""

from __future__ import annotations

from decimal import Decimal

from shared.calc.numfmt.rounding import decimal, round_places

WIDTH = 11


def general(value: float) -> str:
    if value == 0:
        return "0"
    sign, number = ("-" if value < 0 else ""), abs(decimal(value))
    plain = _plain(number)
    if len(plain) <= WIDTH:
        return sign + plain
    if number.adjusted() >= WIDTH:  # 12 or more integer digits
        return sign + _exponential(number)
    whole = number.adjusted() + 1 if number >= 1 else 1
    rounded = round_places(number, max(WIDTH - whole - 1, 0))
    if rounded.adjusted() >= WIDTH:  # 99999999999.5 rounds to 12 digits
        return sign + _exponential(number)
    fitted = _plain(rounded)
    exponential = _exponential(number)
    if rounded == 0 or _significant(fitted) < min(_significant(_plain(number)), _significant(exponential)):
        return sign + exponential
    return sign + fitted


def _plain(number: Decimal) -> str:
    text = format(number, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _exponential(number: Decimal) -> str:
    exponent = number.adjusted()
    for _ in range(2):  # once more when rounding carries the mantissa to 10
        suffix = f"E{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
        places = max(WIDTH - len(suffix) - 2, 0)
        mantissa = round_places(number.scaleb(-exponent), places)
        if mantissa < 10:
            break
        exponent += 1
    return _plain(mantissa) + suffix


def _significant(text: str) -> int:
    digits = text.split("E")[0].replace(".", "").lstrip("0")
    return len(digits.rstrip("0")) if digits else 0
