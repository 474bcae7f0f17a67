"""Values between JSON and Excel cells: a cell's typed content, dates as Excel serials, numbers,
error codes, date number formats, and the JSON shape of a range's values."""

import datetime
import math
import re
from functools import lru_cache
from collections.abc import Iterable
from typing import Any

from shared.calc import numfmt
from shared.errors import WorkbookError

# Excel's 1900 date system: serial 1 is 1900-01-01 and serial 60 is the phantom 1900-02-29
# (Lotus 1-2-3's leap-year bug), so from 1900-03-01 on the epoch is effectively 1899-12-30.
_EPOCH = datetime.datetime(1899, 12, 30)
_EPOCH_BEFORE_LEAP_BUG = datetime.datetime(1899, 12, 31)
_FIRST_REAL_MARCH = datetime.datetime(1900, 3, 1)
_PHANTOM_LEAP_DAY = 60
_MAX_SERIAL = 2958465  # 9999-12-31
_SECONDS_PER_DAY = 86400
_MAX_EXACT_INT = 2**53

# A cell's typed content, as engines read it and the fidelity check compares it: ("n", float),
# ("s", str), ("b", bool), ("e", "#N/A") or EMPTY.
CellValue = tuple[str, Any]
EMPTY: CellValue = ("empty", None)


_ISO_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?"
)


def parse_iso_datetime(text: str) -> datetime.datetime | None:
    """`2026-01-31` or `2026-01-31T12:00[:00[.ffffff]]` as a naive datetime, else None."""
    match = _ISO_RE.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction = match.groups()
    try:
        return datetime.datetime(
            int(year), int(month), int(day),
            int(hour or 0), int(minute or 0), int(second or 0),
            int((fraction or "0").ljust(6, "0")),
        )
    except ValueError:
        return None


def datetime_to_serial(value: datetime.datetime) -> float | int:
    """Excel serial number of a datetime (int when it has no time part)."""
    epoch = _EPOCH if value >= _FIRST_REAL_MARCH else _EPOCH_BEFORE_LEAP_BUG
    delta = value - epoch
    if delta.seconds == 0 and delta.microseconds == 0:
        return delta.days
    return delta.days + (delta.seconds + delta.microseconds / 1e6) / _SECONDS_PER_DAY


def iso_to_serial(text: str) -> float | int | None:
    """Excel serial of an ISO date/datetime string, or None when it is not one."""
    parsed = parse_iso_datetime(text)
    if parsed is None or parsed.year < 1900:
        return None
    return datetime_to_serial(parsed)


def serial_to_iso(serial: float, offset: int = 0) -> str | float | int:
    """ISO text of an Excel serial; serials outside Excel's date range come back as numbers.
    `offset`: days to add to reach the 1900 date system (1462 for a 1904 workbook)."""
    if not 0 <= serial < _MAX_SERIAL + 1 - offset:
        return number_out(serial)
    serial += offset
    if not 0 <= serial < _MAX_SERIAL + 1:
        return number_out(serial)
    days = math.floor(serial)
    # Round to the second as Excel displays it; carry into the next day at 23:59:59.5 and up.
    seconds = round((serial - days) * _SECONDS_PER_DAY)
    if seconds == _SECONDS_PER_DAY:
        days, seconds = days + 1, 0
    if days == _PHANTOM_LEAP_DAY:
        day_text = "1900-02-29"
    else:
        epoch = _EPOCH if days > _PHANTOM_LEAP_DAY else _EPOCH_BEFORE_LEAP_BUG
        day_text = (epoch + datetime.timedelta(days=days)).date().isoformat()
    if seconds == 0:
        return day_text
    return f"{day_text}T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def number_out(value: float) -> float | int:
    """A number as JSON wants it: int when integral (360, not 360.0), float otherwise."""
    if value.is_integer() and abs(value) < _MAX_EXACT_INT:
        return int(value)
    return value


@lru_cache(maxsize=512)
def is_date_format(num_fmt: str | None) -> bool:
    """True when an Excel number format shows dates or times: Excel's number-format grammar
    decides (shared/calc/numfmt)."""
    return numfmt.is_date_format(num_fmt)


def shape_output(rows: int, cols: int, values: list[Any]) -> Any:
    """Row-major cell values as a scalar, a flat list or a list of rows."""
    if rows == 1 and cols == 1:
        return values[0]
    if rows == 1 or cols == 1:
        return values
    return [values[r * cols : (r + 1) * cols] for r in range(rows)]


def output_value(
    rows: int, cols: int, cells: Iterable[CellValue], date_cells: list[bool], date_offset: int = 0,
) -> Any:
    """A named output's typed cells (row-major) as JSON: numbers in date-formatted cells as ISO
    dates, other numbers as int or float, errors as their text; a circular reference refuses.
    `date_offset`: 1462 for a workbook in the 1904 date system."""
    values = []
    for (kind, value), is_date in zip(cells, date_cells):
        if kind == "n":
            value = serial_to_iso(value, date_offset) if is_date else number_out(value)
        elif kind == "e" and value == "#CIRC!":
            raise WorkbookError("The workbook contains a circular reference")
        values.append(value)
    return shape_output(rows, cols, values)
