"""Excel's base conversions: BIN2DEC, BIN2OCT, BIN2HEX, OCT2BIN, OCT2DEC, OCT2HEX, HEX2BIN,
HEX2DEC, HEX2OCT, DEC2BIN, DEC2OCT, DEC2HEX.

Rules from Microsoft's pages for each function (support.microsoft.com, "BIN2DEC function" and
its eleven siblings):

- A binary, octal or hexadecimal number has at most 10 characters (10 bits, 30 bits, 40 bits);
  its most significant bit is the sign bit and negatives are in two's complement
  (BIN2DEC("1111111111") is -1, HEX2DEC("FFFFFFFFFF") is -1). More than 10 characters or a
  digit outside the base is #NUM!. An empty argument reads as 0.
- The decimal ranges: binary -512..511, octal -536,870,912..536,870,911, hexadecimal
  -549,755,813,888..549,755,813,887; outside them the conversion is #NUM!.
- `places` pads with leading zeros; it is truncated to an integer, #NUM! when zero or negative
  (or above 10) or when the result needs more characters, #VALUE! when not numeric. A negative
  number ignores `places` and gives the 10-character two's complement.
- DEC2*: the number is truncated to an integer; a non-numeric number is #VALUE!.
"""

from __future__ import annotations

import math

from shared.calc.corrections.functions.errors import ExcelError

NUM, VALUE = "#NUM!", "#VALUE!"
_BASES = {"BIN": 2, "OCT": 8, "DEC": 10, "HEX": 16}
_DIGITS = "0123456789ABCDEF"


def _limit(base: int) -> int:
    """Half the 10-character range: the first negative in two's complement."""
    return base**10 // 2


def _parse(value, base: int) -> int:
    """A base-2/8/16 argument as a signed integer (Excel reads a number argument as its digits)."""
    if isinstance(value, bool):
        raise ExcelError(VALUE)
    if value is None:
        text = "0"
    elif isinstance(value, float):
        if value != int(value) or value < 0:
            raise ExcelError(NUM)
        text = str(int(value))
    else:
        text = str(value).strip().upper()
    if text == "":
        text = "0"
    if len(text) > 10 or any(ch not in _DIGITS[:base] for ch in text):
        raise ExcelError(NUM)
    number = int(text, base)
    if len(text) == 10 and number >= _limit(base):
        number -= base**10
    return number


def _decimal_argument(value) -> int:
    if isinstance(value, bool):
        raise ExcelError(VALUE)
    if value is None:
        return 0
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ExcelError(VALUE) from None
    if math.isnan(value) or math.isinf(value):
        raise ExcelError(NUM)
    return math.trunc(value)


def _places_argument(places) -> int | None:
    if places is None:
        return None
    if isinstance(places, bool):
        raise ExcelError(VALUE)
    if isinstance(places, str):
        try:
            places = float(places.strip())
        except ValueError:
            raise ExcelError(VALUE) from None
    places = math.trunc(places)
    if places <= 0 or places > 10:
        raise ExcelError(NUM)
    return places


def _render(number: int, base: int, places: int | None) -> str:
    if not -_limit(base) <= number < _limit(base):
        raise ExcelError(NUM)
    if number < 0:
        number += base**10  # two's complement over 10 characters; places are ignored
        places = None
    digits = ""
    while True:
        number, rest = divmod(number, base)
        digits = _DIGITS[rest] + digits
        if number == 0:
            break
    if places is not None:
        if len(digits) > places:
            raise ExcelError(NUM)
        digits = digits.rjust(places, "0")
    return digits


def convert(source: str, target: str, number, places=None):
    """The conversion SOURCE2TARGET of number (float, str, bool or None): its value or an
    ExcelError code as text."""
    try:
        places_n = _places_argument(places) if target != "DEC" else None
        if source == "DEC":
            value = _decimal_argument(number)
        else:
            value = _parse(number, _BASES[source])
        if target == "DEC":
            return float(value)
        return _render(value, _BASES[target], places_n)
    except ExcelError as exc:
        return ("error", exc.code)


NAMES = [f"{a}2{b}" for a in _BASES for b in _BASES if a != b]
