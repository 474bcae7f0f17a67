"""Excel's YEARFRAC for `formulas`: its day counts (US 30/360 with its end-of-February rules,
actual/actual with a 365 or 366 day year for spans up to a year and the average length of the
years spanned for longer ones, European 30/360, actual/360, actual/365) and its order of errors
(the basis is checked before the dates)."""

from __future__ import annotations

import datetime
import math
from typing import Any

from shared.calc.formulas.functions import excel_error

MAX_SERIAL = 2958465  # 9999-12-31
_EPOCH = datetime.date(1899, 12, 31)


def _number_argument(value: Any) -> int:
    """A YEARFRAC argument truncated to a whole number, or the error Excel answers for it.

    Text counts as a number or a date ("1/1/1987 05:00 AM" is 31778.2); a range or array of
    more than one cell is #VALUE! (YEARFRAC does not lift arrays).
    """
    import numpy as np
    from formulas.functions import XlError

    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise excel_error("#VALUE!")
        value = value.ravel()[0]
    if isinstance(value, XlError):
        from formulas.errors import FoundError

        raise FoundError(err=value)
    if isinstance(value, (bool, np.bool_)):
        raise excel_error("#VALUE!")
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            from formulas.functions.date import xdatevalue

            try:
                value = xdatevalue(value)
            except Exception:  # noqa: BLE001 - any text that is not a date
                raise excel_error("#VALUE!") from None
    return math.floor(float(value))


def _is_leap(year: int) -> bool:
    # YEARFRAC's year lengths follow the real calendar: 1900 has 365 days here, although
    # Excel's serials count a 29 February 1900 (serial 60, kept for Lotus 1-2-3).
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _ymd(serial: int) -> tuple[int, int, int]:
    if serial == 0:
        return (1900, 1, 0)
    if serial == 60:
        return (1900, 2, 29)
    day = _EPOCH + datetime.timedelta(days=serial - (1 if serial > 60 else 0))
    return (day.year, day.month, day.day)


def _serial(year: int, month: int, day: int) -> int:
    if (year, month, day) == (1900, 2, 29):
        return 60
    serial = (datetime.date(year, month, day) - _EPOCH).days
    return serial + 1 if (year, month, day) >= (1900, 3, 1) else serial


def _last_of_february(year: int, month: int, day: int) -> bool:
    return month == 2 and day >= (29 if _is_leap(year) else 28)  # 1900-02-29 (serial 60) too


def _us_30_360(start: tuple[int, int, int], end: tuple[int, int, int]) -> float:
    (y1, m1, d1), (y2, m2, d2) = start, end
    if d1 == 31 and d2 == 31:
        d1 = d2 = 30
    elif d1 == 31:
        d1 = 30
    elif d1 == 30 and d2 == 31:
        d2 = 30
    elif _last_of_february(y1, m1, d1) and _last_of_february(y2, m2, d2):
        d1 = d2 = 30
    elif _last_of_february(y1, m1, d1):
        d1 = 30
    return ((y2 - y1) * 360 + (m2 - m1) * 30 + (d2 - d1)) / 360


def _european_30_360(start: tuple[int, int, int], end: tuple[int, int, int]) -> float:
    (y1, m1, d1), (y2, m2, d2) = start, end
    d1, d2 = min(d1, 30), min(d2, 30)
    return ((y2 - y1) * 360 + (m2 - m1) * 30 + (d2 - d1)) / 360


def _actual_actual(start_serial: int, end_serial: int) -> float:
    if start_serial == end_serial:
        return 0.0
    (y1, m1, d1), (y2, m2, d2) = _ymd(start_serial), _ymd(end_serial)
    days = end_serial - start_serial
    within_a_year = y1 == y2 or (y1 + 1 == y2 and (m1, d1) >= (m2, d2))
    if not within_a_year:
        years = range(y1, y2 + 1)
        return days / (sum(366 if _is_leap(y) else 365 for y in years) / len(years))
    if y1 == y2:
        year_length = 366 if _is_leap(y1) else 365
    else:
        year_length = 366 if _february_29_between(start_serial, end_serial, y1, y2) else 365
    return days / year_length


def _february_29_between(start_serial: int, end_serial: int, y1: int, y2: int) -> bool:
    """A 29 February after the start day and no later than the end day (within a year)."""
    if (_ymd(end_serial)[1:] == (2, 29)):
        return True
    for year in (y1, y2):
        if _is_leap(year):
            march_first = _serial(year, 3, 1)
            if start_serial < march_first <= end_serial:
                return True
    return False


def yearfrac(start: Any, end: Any, basis: Any = 0) -> float:
    """Excel's YEARFRAC of plain cell values; raises formulas' FoundError with Excel's error."""
    basis = _number_argument(basis)
    if basis not in (0, 1, 2, 3, 4):
        raise excel_error("#NUM!")
    start = _number_argument(start)
    end = _number_argument(end)
    if not (0 <= start <= MAX_SERIAL and 0 <= end <= MAX_SERIAL):
        raise excel_error("#NUM!")
    if start > end:
        start, end = end, start
    if basis == 0:
        return _us_30_360(_ymd(start), _ymd(end))
    if basis == 1:
        return _actual_actual(start, end)
    if basis == 2:
        return (end - start) / 360
    if basis == 3:
        return (end - start) / 365
    return _european_30_360(_ymd(start), _ymd(end))


def yearfrac_cell(start: Any, end: Any, basis: Any = 0) -> Any:
    from formulas.functions import replace_empty

    return yearfrac(*(replace_empty(v) for v in (start, end, basis)))
