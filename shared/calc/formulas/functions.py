"""Our implementations of the functions where `formulas` disagrees with Excel.

formulas looks every function up in one table, `formulas.get_functions()` (built once and
cached), and documents adding to it as the way to supply functions. `install()` puts the ones
below into that table, once per process, before a workbook is parsed. Each is a disagreement
the Excel-saved corpus showed (docs/fidelity.md), fixed to Excel's own rules:

- COMPLEX and the IM* functions: Excel writes each part with 15 significant digits, in
  scientific notation only when the plain form would need more than 19 decimals (or the number
  reaches 1E+15), and drops a zero real part, a zero imaginary part and a coefficient of 1.
  formulas wrote Python's 17-digit repr ("30.300000000000004+41.5j", "-0").
- YEARFRAC: Excel's day counts (US 30/360 with its end-of-February rules; actual/actual with a
  365 or 366 day year for spans up to a year and the average length of the years spanned for
  longer ones), and its order of errors (the basis is checked before the dates).
- N: N(TRUE) is 1 in Excel; formulas answered the boolean.
- SCAN and MAP: an error inside the lambda stays an error; formulas turned it into the text
  "#VALUE!" when it built the result array.
- SWITCH compares text without regard to case and never takes TRUE for 1, as Excel's = does.
- LOOKUP: with one range (the array form) it searches the first row of a range wider than tall,
  else the first column, and answers from the last row or column; with a result range, that
  range must be one row or one column (#N/A otherwise), and a blank result is 0. formulas
  searched and answered from the whole range flattened.
- LINEST and TREND (shared/calc/formulas/regression.py): an empty `const` means TRUE, shapes that
  do not fit are #REF!, and collinear variables are dropped (coefficient 0) as Excel drops them.
- TIMEVALUE of text that is only a number ("1.25") is #VALUE! in Excel; formulas read it as a time.
"""

from __future__ import annotations

import datetime
import math
import threading
from typing import Any

_installed = False
_lock = threading.Lock()

MAX_SERIAL = 2958465  # 9999-12-31
_EPOCH = datetime.date(1899, 12, 31)


def install() -> None:
    """Put our implementations into formulas' function table (idempotent)."""
    global _installed
    if _installed:
        return
    with _lock:
        if _installed:
            return
        import formulas
        from formulas.functions import eng, get_error, wrap_func, wrap_ufunc

        from shared.calc.formulas import regression

        # Every COMPLEX/IM* function formats its answer through this one module function.
        eng._fmt_complex = format_complex
        table = formulas.get_functions()
        table["YEARFRAC"] = table["_XLFN.YEARFRAC"] = wrap_func(_yearfrac_cell)
        table["N"] = wrap_func(_n)
        table["SCAN"] = table["_XLFN.SCAN"] = wrap_func(_scan)
        table["MAP"] = table["_XLFN.MAP"] = wrap_func(_map)
        table["SWITCH"] = table["_XLFN.SWITCH"] = {
            "function": wrap_ufunc(
                _switch, input_parser=lambda *a: a,
                check_error=lambda first, *a: get_error(first),
            )
        }
        table["LOOKUP"] = wrap_ufunc(
            _lookup, input_parser=lambda *a: a, args_parser=_lookup_arguments,
            check_error=lambda *a: get_error(a[1]), excluded={3, 4, 5, 6, 7, 8},
        )
        table.update(regression.functions())  # LINEST, TREND
        table["TIMEVALUE"] = wrap_ufunc(
            _timevalue_text, input_parser=lambda *a: a, check_error=lambda *a: None
        )
        _installed = True


# --- numbers as Excel writes them in text ----------------------------------------------------


def excel_number_text(value: float) -> str:
    """A number as Excel turns it into text (15 significant digits, Excel's notation rules)."""
    if value == 0:
        return "0"
    mantissa, exponent_text = f"{value:.14e}".split("e")
    exponent = int(exponent_text)
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    decimals = len(digits) - 1 - exponent
    if exponent >= 15 or decimals > 19:
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{head}E{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent < 0:
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    whole = digits[: exponent + 1].ljust(exponent + 1, "0")
    fraction = digits[exponent + 1:]
    return sign + whole + ("." + fraction if fraction else "")


def format_complex(real: float, imaginary: float, suffix: str = "i") -> str:
    """COMPLEX's text: "3+4i", "-i", "2.5", "0"."""
    from formulas.errors import FoundError
    from formulas.functions import Error

    if not (math.isfinite(real) and math.isfinite(imaginary)):
        raise FoundError(err=Error.errors["#NUM!"])
    real_text = excel_number_text(real)
    imaginary_text = excel_number_text(imaginary)
    out = "" if real_text == "0" else real_text
    if imaginary_text != "0":
        coefficient = {"1": "", "-1": "-"}.get(imaginary_text, imaginary_text)
        if out and not coefficient.startswith("-"):
            out += "+"
        out += coefficient + suffix
    return out or "0"


# --- YEARFRAC --------------------------------------------------------------------------------


def excel_error(code: str):
    """formulas' FoundError carrying Excel's error `code` ("#VALUE!"), for a function to raise."""
    from formulas.errors import FoundError
    from formulas.functions import Error

    return FoundError(err=Error.errors[code])


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


def _yearfrac_cell(start: Any, end: Any, basis: Any = 0) -> Any:
    from formulas.functions import replace_empty

    return yearfrac(*(replace_empty(v) for v in (start, end, basis)))


# --- N, SCAN, MAP ----------------------------------------------------------------------------


def _n(value: Any):
    import numpy as np
    from formulas.functions import Array, raise_errors

    value = np.asarray(value, object).ravel()[0]
    raise_errors(value)
    if isinstance(value, (bool, np.bool_)):
        value = float(value)
    elif not isinstance(value, (int, float, np.integer, np.floating)):
        value = 0
    return np.asarray([[value]], object).view(Array)


def _first(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.ndarray):
        return value.ravel()[0] if value.size else value
    return value


def _scan(initial_value: Any, array: Any, func: Any):
    import numpy as np
    from formulas.functions import Array, flatten, replace_empty

    array = np.atleast_2d(array)
    out, accumulated = [], replace_empty(initial_value)
    for item in flatten(array, None):
        accumulated = func(accumulated, item)
        out.append(_first(accumulated))
    return np.asarray(out, object).reshape(array.shape).view(Array)


def _map(array: Any, func: Any, *arrays: Any):
    import numpy as np
    from formulas.functions import Array, Error, flatten

    if arrays:  # MAP(array1, array2, ..., lambda): the lambda comes last
        arrays = (func,) + arrays
        func, arrays = arrays[-1], arrays[:-1]
    first = np.atleast_2d(array)
    every = [first] + [np.atleast_2d(a) for a in arrays]
    if any(a.shape != first.shape for a in every):
        return np.asarray([[Error.errors["#VALUE!"]]], object).view(Array)
    out = [_first(func(*args)) for args in zip(*(flatten(a, None) for a in every))]
    return np.asarray(out, object).reshape(first.shape).view(Array)


# --- SWITCH, TIMEVALUE -----------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    """Excel's = for two plain values: text ignores case, booleans are not numbers."""
    import numpy as np

    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()
    a_bool, b_bool = isinstance(a, (bool, np.bool_)), isinstance(b, (bool, np.bool_))
    if a_bool or b_bool:
        return a_bool and b_bool and bool(a) == bool(b)
    if isinstance(a, str) or isinstance(b, str):
        return False
    return a == b


def _switch(value: Any, *cases: Any) -> Any:
    from formulas.functions import Error, XlError

    for case, result in zip(cases[::2], cases[1::2]):
        if isinstance(case, XlError):
            return case
        if _same(value, case):
            return result
    return cases[-1] if len(cases) % 2 else Error.errors["#N/A"]


def _timevalue_text(text: Any) -> Any:
    from formulas.functions import Error, XlError
    from formulas.functions.date import xtimevalue

    if isinstance(text, XlError):
        return text
    if not isinstance(text, str):
        return Error.errors["#VALUE!"]
    try:
        float(text)
    except ValueError:
        return xtimevalue(text)
    return Error.errors["#VALUE!"]


# --- LOOKUP ----------------------------------------------------------------------------------


def _lookup_arguments(value: Any, lookup_range: Any, result_range: Any = None) -> tuple:
    """formulas' MATCH arguments for the row or column Excel searches, and the answers."""
    import numpy as np
    from formulas.functions.look import args_parser_lookup_array

    table = np.atleast_2d(np.asarray(lookup_range, object))
    wide = table.shape[1] > table.shape[0]
    searched = table[0] if wide else table[:, 0]
    if result_range is None:
        answers = table[-1] if wide else table[:, -1]
    else:
        answers = np.atleast_2d(np.asarray(result_range, object))
        if 1 not in answers.shape:  # several rows and columns: Excel answers #N/A
            from formulas.functions import Error

            answers = np.asarray([Error.errors["#N/A"]], object)
    return args_parser_lookup_array(value, searched, answers, 1)


def _lookup(*args: Any) -> Any:
    import numpy as np
    import schedula as sh
    from formulas.functions import Error, XlError
    from formulas.functions.look import xmatch

    *match_args, answers = args
    if not np.size(answers):
        return Error.errors["#N/A"]
    position = xmatch(*match_args)
    if isinstance(position, XlError):
        return position
    answers = np.ravel(answers)
    if position > answers.size:
        return Error.errors["#N/A"]
    answer = answers[position - 1]
    return 0 if answer is sh.EMPTY else answer
