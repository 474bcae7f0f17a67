"""Excel's TEXT function: a value under a number format code (shared/calc/numfmt/ owns the
format grammar; this module owns what TEXT does with its arguments).

Sources: Microsoft's "TEXT function" page (support.microsoft.com, Excel > Functions > TEXT).
A boolean is its text (TRUE, FALSE), a blank is 0, text that reads as a number is that number
(plain numbers with sign, decimals, exponent, percent); other text goes to the format's text
section. Text with digits in another shape (a date, a time, a currency) may be read by Excel as
a date or a number in ways that depend on its locale: Unsupported, so the correction layer keeps
the engine's value and reports the cell instead of guessing.
"""

from __future__ import annotations

import re

from shared.calc.numfmt import (
    VALUE_ERROR,
    FormatError,
    Unsupported,
    format_number,
    format_text,
)

__all__ = ["VALUE_ERROR", "FormatError", "Unsupported", "excel_text"]

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]


def excel_text(value, code: str, date1904: bool = False):
    """TEXT(value, code) for a value that is a float, str, bool or None (blank); date1904 for
    workbooks in the 1904 date system (serial 0 is 1904-01-01).

    Answers the text, or VALUE_ERROR; raises Unsupported outside the rules implemented."""
    if isinstance(value, bool):
        value = "TRUE" if value else "FALSE"
    elif value is None:
        value = 0.0
    if isinstance(value, str):
        number = _text_to_number(value)
        if number is None:
            return format_text(value, code)
        value = number
    return format_number(float(value), code, date1904)


# --- text that reads as a number -----------------------------------------------------------

_NUMBER_TEXT = re.compile(r"\s*([+-]?)\s*(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+))?\s*(%?)\s*")


def _text_to_number(text: str) -> float | None:
    """The number Excel reads in text TEXT is given, None for text that stays text.

    Plain numbers (with sign, decimals, exponent, percent) and h:m[:s] times are read; text with
    digits in any other shape (dates, currencies, thousands separators) is not reproduced."""
    match = _NUMBER_TEXT.fullmatch(text)
    if match:
        sign, digits, exponent, percent = match.groups()
        number = float(digits + (f"e{exponent}" if exponent else ""))
        if percent:
            number /= 100
        return -number if sign == "-" else number
    if not any(ch.isdigit() for ch in text):
        return None
    words = re.findall(r"[^\W\d_]+", text)
    if any(w.lower() not in _DATE_WORDS for w in words):
        return None  # a word that no number, date or time has: it stays text
    raise Unsupported("text that may read as a number or date as TEXT's value")


_DATE_WORDS = {
    *(m.lower() for m in _MONTHS), *(m[:3].lower() for m in _MONTHS), "sept",
    "am", "pm", "a", "p", "e",
}
