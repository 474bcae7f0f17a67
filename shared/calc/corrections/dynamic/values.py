"""Values of the dynamic-array evaluator and Excel's coercions between them.

A value is a scalar (float, str, bool, Err, None for a blank cell), a Grid (a 2-D array,
rows of scalars), a Ref (a rectangle of a sheet, read when a function needs its values) or a
Lambda. Excel's rules are those of Microsoft's pages "Calculation operators and precedence"
and "Dynamic array formulas and spilled array behavior".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from shared.calc.corrections.dynamic import number_text


@dataclass(frozen=True)
class Err:
    code: str

    def __str__(self) -> str:
        return self.code


NA, VALUE, REF, DIV0, NUM, NAME, CALC, SPILL = (
    Err("#N/A"), Err("#VALUE!"), Err("#REF!"), Err("#DIV/0!"), Err("#NUM!"), Err("#NAME?"),
    Err("#CALC!"), Err("#SPILL!"),
)


class Missing:
    """An argument left out (`REDUCE(, A1:A3, ...)`)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = Missing()


@dataclass
class Grid:
    rows: list[list]

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.rows), len(self.rows[0]) if self.rows else 0

    def cells(self) -> list:
        return [v for row in self.rows for v in row]

    def columns(self) -> list[list]:
        return [list(col) for col in zip(*self.rows)]


@dataclass(frozen=True)
class Ref:
    sheet: int
    top: int
    left: int
    bottom: int
    right: int

    @property
    def shape(self) -> tuple[int, int]:
        return self.bottom - self.top + 1, self.right - self.left + 1


@dataclass
class Lambda:
    params: list[str]
    body: object  # a syntax node, or a Python callable for an eta lambda (`_xleta.SUM`)
    env: dict = field(default_factory=dict)
    name: str = "LAMBDA"


def is_number(value) -> bool:
    return isinstance(value, float) and not isinstance(value, bool)


_NUMBER_TEXT = re.compile(r"\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*%?\s*")


def to_number(value):
    """A number, or the Err Excel answers (text that does not read as a number: #VALUE!)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, float):
        return value
    if value is None or value is MISSING:
        return 0.0
    if isinstance(value, Err):
        return value
    if isinstance(value, str):
        text = value.strip()
        if _NUMBER_TEXT.fullmatch(text):
            if text.endswith("%"):
                return float(text[:-1]) / 100
            return float(text)
        number = number_text.value(text)  # a date, a time, $1,000, (100)... as Excel reads them
        return VALUE if number is None else number
    return VALUE


def to_bool(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        return value != 0
    if value is None or value is MISSING:
        return False
    if isinstance(value, Err):
        return value
    if isinstance(value, str):
        if value.upper() in ("TRUE", "FALSE"):
            return value.upper() == "TRUE"
        return VALUE
    return VALUE


def fifteen_digits(number: float) -> tuple[str, int]:
    """A nonzero number's 15 significant digits as Excel keeps them: (mantissa without trailing
    zeros, `-1.5`; its power of ten)."""
    mantissa, exponent = f"{number:.14e}".split("e")
    return mantissa.rstrip("0").rstrip("."), int(exponent)


def written_out(mantissa: str, exponent: int) -> str:
    """fifteen_digits' number without an exponent (`0.0000015`, `1500`)."""
    from decimal import Decimal

    text = format(Decimal(f"{mantissa}e{exponent}"), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def e_notation(mantissa: str, exponent: int) -> str:
    """fifteen_digits' number in E notation, two exponent digits at least (`1.5E-06`)."""
    return f"{mantissa}E{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"


def general(number: float) -> str:
    """A number as Excel turns it into text (`=1/3&""` is 0.333333333333333): 15 significant
    digits, written out from 1E-9 up to 1E+15 and in E notation beyond."""
    if number == 0:
        return "0"
    mantissa, exponent = fifteen_digits(number)
    if -9 <= exponent < 15:
        return written_out(mantissa, exponent)
    return e_notation(mantissa, exponent)


def to_text(value):
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return general(value)
    if value is None or value is MISSING:
        return ""
    if isinstance(value, Err):
        return value
    return value


def checked(number: float):
    """A calculated number, or #NUM! where it overflowed."""
    if math.isnan(number) or math.isinf(number):
        return NUM
    return number


def _rank(value) -> int:
    if isinstance(value, bool):
        return 2
    if isinstance(value, str):
        return 1
    return 0


def compare(a, b) -> int:
    """Excel's order of two scalars (numbers < text < logicals; text without case; a blank
    is 0, "" or FALSE to the other side)."""
    kind = type(a)
    if kind is type(b) and (kind is float or kind is str):  # two numbers, or two texts (without case)
        if kind is str:
            a, b = a.lower(), b.lower()
        return (a > b) - (a < b)
    if a is None:
        a = "" if isinstance(b, str) else False if isinstance(b, bool) else 0.0
    if b is None:
        b = "" if isinstance(a, str) else False if isinstance(a, bool) else 0.0
    ra, rb = _rank(a), _rank(b)
    if ra != rb:
        return -1 if ra < rb else 1
    if isinstance(a, str):
        a, b = a.lower(), b.lower()
    return (a > b) - (a < b)
