"""Older one-value functions the evaluator applies to each cell of an array, as Excel does inside
SUMPRODUCT and dynamic arrays: FIND, SEARCH, EXACT, YEAR, MONTH, DAY, WEEKDAY, DATEVALUE,
TIMEVALUE and NUMBERVALUE, as their pages on support.microsoft.com describe them; NOW, TODAY,
RAND and RANDBETWEEN from the calculation's run context; and CONVERT, for the units IronCalc
lacks.

Dates are 1900-system serials as Excel counts them (Microsoft: "Excel incorrectly assumes that
the year 1900 is a leap year"): serial 1 is 1900-01-01, 60 the phantom 1900-02-29, 0 is
1900-01-00. A 1904 workbook's formulas reach here with their dates already moved across by the
correction layer (corrections/dates.py), so the 1900 count is the right one for them too.
"""

from __future__ import annotations

import datetime
import math
import re

from shared.calc import run_context
from shared.calc.corrections.dynamic import number_text
from shared.calc.corrections.dynamic import values as v
from shared.calc.corrections.dynamic.functions import (
    ELEMENTWISE,
    _arity,
    _opt,
    function,
)
from shared.calc.corrections.dynamic.regex import wildcard
from shared.calc.corrections.dynamic.values import MISSING, Err, Grid, Ref
from shared.calc.corrections.functions.text_format import Unsupported

_LAST_SERIAL = 2958465  # 9999-12-31
ELEMENTWISE.update({
    "FIND", "SEARCH", "EXACT", "YEAR", "MONTH", "DAY", "WEEKDAY", "DATEVALUE", "TIMEVALUE", "NUMBERVALUE",
})


def _start(value) -> int | Err:
    n = v.to_number(value)
    if isinstance(n, Err):
        return n
    return int(math.trunc(n))


def _find(find, within, start, *, wildcards: bool, case: bool):
    """FIND's and SEARCH's rule: the 1-based position of `find` in `within` from `start`."""
    for x in (find, within, start):
        if isinstance(x, Err):
            return x
    needle, text = v.to_text(find), v.to_text(within)
    at = _start(start)
    if isinstance(at, Err):
        return at
    if at < 1 or at > len(text):
        # "If start_num is greater than the length of within_text": #VALUE!; an empty
        # find_text matches at start_num
        if not (needle == "" and 1 <= at <= len(text) + 1):
            return v.VALUE
    if needle == "":
        return float(at)
    if wildcards:
        found = wildcard(needle).search(text, at - 1)
        return float(found.start() + 1) if found else v.VALUE
    index = (text if case else text.lower()).find(needle if case else needle.lower(), at - 1)
    return float(index + 1) if index >= 0 else v.VALUE


def _finder(wildcards: bool, case: bool):
    def run(ev, args):
        _arity(args, 2, 3)
        find, within, start = args[0], args[1], _opt(args, 2, 1.0)
        if not isinstance(find, (Ref, Grid)) and not isinstance(start, (Ref, Grid)) \
                and not isinstance(find, Err) and not isinstance(start, Err):
            # one text sought from one start in each cell (the usual form over a range): the
            # pattern and the start are worked out once
            needle, at = v.to_text(find), _start(start)
            if needle and not isinstance(at, Err) and at >= 1:
                pattern = wildcard(needle) if wildcards else re.compile(
                    re.escape(needle), 0 if case else re.IGNORECASE)

                def each(text):
                    if isinstance(text, Err):
                        return text
                    text = v.to_text(text)
                    if at > len(text):
                        return v.VALUE
                    found = pattern.search(text, at - 1)
                    return float(found.start() + 1) if found else v.VALUE
                return ev.lift(each, within)
        return ev.lift(lambda f, w, s: _find(f, w, s, wildcards=wildcards, case=case), find, within, start)
    return run


function("FIND")(_finder(wildcards=False, case=True))
function("SEARCH")(_finder(wildcards=True, case=False))


@function("NOW")
def _now(ev, args):
    """NOW(): the calculation's clock (run_context: a job's creation time, the same in every
    cell and every run of the job), the time of day as the fraction."""
    _arity(args, 0)
    return run_context.now_serial()


@function("TODAY")
def _today(ev, args):
    """TODAY(): NOW()'s date, an integer serial."""
    _arity(args, 0)
    return float(run_context.today_serial())


@function("RAND")
def _rand(ev, args):
    """RAND(): the calculation's next draw for the cell (run_context: seeded by the job and the
    cell, as the layer's RAND elsewhere)."""
    _arity(args, 0)
    return run_context.rand((ev.sheet, ev.row, ev.col))


@function("RANDBETWEEN")
def _randbetween(ev, args):
    """RANDBETWEEN(bottom, top): an integer drawn between them (bottom rounded up, top down;
    none between them #NUM!)."""
    _arity(args, 2)
    bounds = []
    for arg in args:
        number = v.to_number(ev.scalar(arg))
        if isinstance(number, Err):
            return number
        bounds.append(number)
    drawn = run_context.randbetween(*bounds, (ev.sheet, ev.row, ev.col))
    return v.NUM if drawn is None else float(drawn)


@function("EXACT")
def _exact(ev, args):
    _arity(args, 2)

    def same(a, b):
        for x in (a, b):
            if isinstance(x, Err):
                return x
        return v.to_text(a) == v.to_text(b)
    return ev.lift(same, args[0], args[1])


def _date(value):
    """(year, month, day) of a serial, or the Err Excel answers."""
    if isinstance(value, Err):
        return value
    n = v.to_number(value)  # a date typed as text as Excel reads it (number_text)
    if isinstance(n, Err):
        return n
    if n < 0 or n > _LAST_SERIAL:
        return v.NUM
    serial = int(n)
    if serial == 0:
        return 1900, 1, 0
    if serial == 60:
        return 1900, 2, 29
    day = datetime.date(1899, 12, 31 if serial < 60 else 30) + datetime.timedelta(days=serial)
    return day.year, day.month, day.day


def _part(index: int):
    def run(ev, args):
        _arity(args, 1)

        def one(x):
            parts = _date(x)
            return parts if isinstance(parts, Err) else float(parts[index])
        return ev.lift(one, args[0])
    return run


function("YEAR")(_part(0))
function("MONTH")(_part(1))
function("DAY")(_part(2))

# WEEKDAY's return types: the day of the week counted as 1, as an ISO weekday (Monday 1 ...
# Sunday 7); type 3 counts from 0
_WEEK_STARTS = {1: 7, 2: 1, 3: 1, 11: 1, 12: 2, 13: 3, 14: 4, 15: 5, 16: 6, 17: 7}


@function("WEEKDAY")
def _weekday(ev, args):
    _arity(args, 1, 2)

    def one(x, kind):
        if isinstance(kind, Err):
            return kind
        k = v.to_number(kind)
        if isinstance(k, Err):
            return k
        k = int(math.trunc(k))
        if k not in _WEEK_STARTS:
            return v.NUM
        if isinstance(x, Err):
            return x
        n = v.to_number(x)
        if isinstance(n, Err):
            return n
        if n < 0 or n > _LAST_SERIAL:
            return v.NUM
        # serial 1 (1900-01-01 in Excel's count) is a Sunday, and Excel counts straight through
        # the phantom 1900-02-29: the day of the week is the serial modulo 7
        sunday_first = (int(n) - 1) % 7 + 1  # 1 = Sunday ... 7 = Saturday (return type 1)
        iso = 7 if sunday_first == 1 else sunday_first - 1  # Monday 1 ... Sunday 7
        start = _WEEK_STARTS[k]
        number = (iso - start) % 7 + 1
        return float(number - 1 if k == 3 else number)
    return ev.lift(one, args[0], 1.0 if len(args) < 2 or args[1] is MISSING else args[1])


def _text_reader(read):
    """DATEVALUE or TIMEVALUE: a text argument read by `read` (number_text); a number, a
    logical value or a blank is #VALUE! (their pages: the argument is text)."""
    def run(ev, args):
        _arity(args, 1)

        def one(x):
            if isinstance(x, Err):
                return x
            if not isinstance(x, str):
                return v.VALUE
            number = read(x)
            return v.VALUE if number is None else number
        return ev.lift(one, args[0])
    return run


function("DATEVALUE")(_text_reader(number_text.date_value))
function("TIMEVALUE")(_text_reader(number_text.time_value))


@function("NUMBERVALUE")
def _numbervalue(ev, args):
    """NUMBERVALUE(text, decimal_separator, group_separator) by number_text.number_value: a
    blank is 0, a number itself, a logical value #VALUE! (Excel-saved formulas' test.xlsx
    TEXT!X27:AC28); a separator given by an empty cell is #VALUE! (TEXT!AB28)."""
    _arity(args, 1, 3)

    def one(text, decimal, group):
        for x in (text, decimal, group):
            if isinstance(x, Err):
                return x
        separators = []
        for x in (decimal, group):
            if x is MISSING:
                separators.append(None)
            elif isinstance(x, bool):
                raise Unsupported("NUMBERVALUE given a logical value as a separator")
            else:
                separators.append(v.to_text(x))
        if text is None or text is MISSING:
            return 0.0
        if isinstance(text, bool):
            return v.VALUE
        if isinstance(text, float):
            return text
        number = number_text.number_value(text, *separators)
        return v.VALUE if number is None else number
    return ev.lift(one, args[0], _opt(args, 1, MISSING), _opt(args, 2, MISSING))


@function("CONVERT")
def _convert(ev, args):
    """CONVERT with Excel's whole unit table: every unit of Microsoft's "CONVERT function" page
    with each prefix it allows (`Ysec`, `ms`, `hweight`, `pc`...), as the formulas package
    (PyPI) holds it; IronCalc 0.9.1 knows fewer and answers #N/A (formulas' test.xlsx
    EXTRA!U12:W12 and X41:AR59, saved by Excel). A logical value is #VALUE! once both units are
    known, a number typed as text converts."""
    _arity(args, 3)
    from formulas.functions import XlError
    from formulas.functions.eng import xconvert

    def one(number, unit_from, unit_to):
        for x in (number, unit_from, unit_to):
            if isinstance(x, Err):
                return x
        if not isinstance(unit_from, str) or not isinstance(unit_to, str):
            return v.NA
        try:
            result = xconvert(0.0 if number is None else number, unit_from, unit_to)
        except (TypeError, ValueError):  # a text that is not a number
            return v.VALUE
        if isinstance(result, XlError):
            return Err(str(result))
        return float(result)
    return ev.lift(one, *args)
