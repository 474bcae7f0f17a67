"""Excel's TEXT function: a value under a number format code (shared/calc/numfmt/ owns the
format grammar; this module owns what TEXT does with its arguments).

Sources: Microsoft's "TEXT function" page (support.microsoft.com, Excel > Functions > TEXT).
A boolean is its text (TRUE, FALSE), a blank is 0, text that reads as a number is that number
(plain numbers with sign, decimals, exponent, percent), an ISO date (with a time) or a time;
other text goes to the format's text section. Text with digits in another shape (a date in a
locale's order, a currency, a 12-hour time) may be read by Excel as a date or a number in ways
that depend on its locale: Unsupported, so the correction layer keeps the engine's value and
reports the cell instead of guessing.

Times as Excel reads them in text (pycel's Excel-saved text.xlsx, sheet TextDates): `h:m` with
h <= 23 and m up to 9999 ("23:9999" is 7.90208), a trailing "." allowed; `h:m:s` with h <= 23,
m <= 59 and s up to 9999; `m:s.f` with m <= 59 and s.f below 10000. Beyond those bounds
("24:99", "23:10000", "23:60:9999", "60:9999.01") and in other shapes of digits, colons and dots
("23:59.:0", "23.:59") the text stays text; an hour above 23 with minutes or seconds within 59
(a duration such as "25:30") is not settled by those files: Unsupported.
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
        number = _text_to_number(value, date1904)
        if number is None:
            return format_text(value, code)
        value = number
    return format_number(float(value), code, date1904)


# --- text that reads as a number -----------------------------------------------------------

_NUMBER_TEXT = re.compile(r"\s*([+-]?)\s*(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+))?\s*(%?)\s*")


_TIME_TEXT = re.compile(r"[\d:.]+")
_ISO_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T]+(\d{1,2}):(\d{1,2})(?::(\d{1,2}(?:\.\d*)?))?)?")


def _text_to_number(text: str, date1904: bool = False) -> float | None:
    """The number Excel reads in text TEXT is given, None for text that stays text.

    Plain numbers (with sign, decimals, exponent, percent), times and ISO dates are read; text
    with digits in any other shape (dates in a locale's order, currencies, thousands separators)
    is not reproduced."""
    match = _NUMBER_TEXT.fullmatch(text)
    if match:
        sign, digits, exponent, percent = match.groups()
        number = float(digits + (f"e{exponent}" if exponent else ""))
        if percent:
            number /= 100
        return -number if sign == "-" else number
    if not any(ch.isdigit() for ch in text):
        return None
    stripped = text.strip()
    if _TIME_TEXT.fullmatch(stripped) and ":" in stripped:
        return _time_text(stripped)
    match = _ISO_DATE.fullmatch(stripped)
    if match:
        return _iso_date_text(match, date1904)
    words = re.findall(r"[^\W\d_]+", text)
    if any(w.lower() not in _DATE_WORDS for w in words):
        return None  # a word that no number, date or time has: it stays text
    raise Unsupported("text that may read as a number or date as TEXT's value")


def _time_text(text: str) -> float | None:
    """A time of digits, colons and dots as Excel reads it (module docstring), in days."""
    parts = text.split(":")
    if len(parts) == 2 and re.fullmatch(r"\d+", parts[0]) and re.fullmatch(r"\d+\.?", parts[1]):
        hours, minutes = int(parts[0]), int(parts[1].rstrip("."))
        if hours <= 23 and minutes <= 9999:
            return (hours * 60 + minutes) / 1440
        if minutes > 59:  # beyond 9999, or an hour above 23 with more than 59 minutes
            return None
        raise Unsupported("text that may read as a time of more than 23 hours as TEXT's value")
    if len(parts) == 2 and re.fullmatch(r"\d+", parts[0]) and re.fullmatch(r"\d+\.\d+", parts[1]):
        minutes, seconds = int(parts[0]), float(parts[1])
        if minutes <= 59 and seconds < 10000:
            return (minutes * 60 + seconds) / 86400
        if seconds >= 10000 or (minutes > 59 and seconds > 59):
            return None
        raise Unsupported("text that may read as a time of more than 59 minutes as TEXT's value")
    if len(parts) == 3 and all(re.fullmatch(r"\d+", p) for p in parts):
        hours, minutes, seconds = (int(p) for p in parts)
        if minutes > 59 or seconds > 9999:
            return None
        if hours <= 23:
            return (hours * 3600 + minutes * 60 + seconds) / 86400
        raise Unsupported("text that may read as a time of more than 23 hours as TEXT's value")
    return None  # other shapes of digits, colons and dots ("23:59.:0", "23.:59") stay text


def _iso_date_text(match: re.Match, date1904: bool) -> float:
    """yyyy-mm-dd[ hh:mm[:ss[.f]]] as a serial of the workbook's date system."""
    import datetime

    year, month, day = (int(match.group(i)) for i in (1, 2, 3))
    try:
        date = datetime.date(year, month, day)
    except ValueError:
        raise Unsupported("text that may read as a date as TEXT's value") from None
    if date1904:
        serial = (date - datetime.date(1904, 1, 1)).days
    else:
        # serial 60 is Excel's 29 February 1900: days from then on count one more
        serial = (date - datetime.date(1899, 12, 30 if date >= datetime.date(1900, 3, 1) else 31)).days
    if serial < 0 or year > 9999:
        raise Unsupported("text that may read as a date as TEXT's value")
    if match.group(4) is None:
        return float(serial)
    hours, minutes = int(match.group(4)), int(match.group(5))
    seconds = float(match.group(6) or 0)
    if hours > 23 or minutes > 59 or seconds >= 60:
        raise Unsupported("text that may read as a date and time as TEXT's value")
    return serial + (hours * 3600 + minutes * 60 + seconds) / 86400


_DATE_WORDS = {
    *(m.lower() for m in _MONTHS), *(m[:3].lower() for m in _MONTHS), "sept",
    "am", "pm", "a", "p", "e",
}
