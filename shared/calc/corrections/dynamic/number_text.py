"""Text read as a number the way Excel reads it typed into a cell (United States English): what
VALUE, DATEVALUE and TIMEVALUE answer, and what arithmetic on text uses (`"2-Feb-2026"+0` is
46055 in Excel).

Microsoft's pages: VALUE's text "can be in any of the constant number, date, or time formats
recognized by Microsoft Excel"; DATEVALUE reads "8/22/2011", "22-MAY-2011", "2011/02/23" and
"5-JUL" (no year: the current year) and ignores a time in the text; TIMEVALUE reads "6:45 PM"
and "22-Aug-2011 6:35 AM" and ignores the date. Excel-saved cells (IronCalc's
T_VALUE_VALUETOTEXT.xlsx): VALUE("2-Feb-2026") 46055, "40-2-2023", "30/2/2010" and "12,34"
#VALUE!, "123,456.67" 123456.67. IronCalc 0.9.1 answers #VALUE! for "2-Feb-2026" in VALUE,
"Feb 2, 2026" and "2 February 2026" in DATEVALUE, "12:30" and "6 PM" in VALUE, "(100)" and
"1 1/2", which Excel reads as -100 and 1.5.

The forms read: numbers (a sign, a leading `$`, thousands in groups of three, a decimal point,
an exponent, a trailing `%`, negatives in parentheses, a whole number and a fraction `1 1/2`);
dates as month/day/year, year/month/day, month/day (this year), month/year, with `/` or `-`;
dates with a month's name or its first three letters (and `Sept`): `2-Feb-2026`, `2 February
2026`, `Feb 2, 2026`, `2-Feb` and `Feb 2` (this year), `Feb 2026` (its first day); times as
h:mm, h:mm:ss, h:mm:ss.000, mm:ss.0, each with AM or PM or not, and `6 PM`; a date followed by a
time. Two-digit years 00-29 are 2000-2029, 30-99 1930-1999. A day the month does not have, a
month over 12, a year before 1900 or after 9999 is no date (#VALUE!); 2/29/1900 is serial 60,
the day Excel keeps for Lotus 1-2-3.

Text with a word or a sign no date is written with (`v1.2.3`, `(555) 123-4567`, `Q1 2026`) or
without digits (`May`) is text, #VALUE!, as VALUE's page says of anything not in a number, date
or time format. Date-like forms whose answer neither the pages nor a saved cell settles raise
Unsupported, so that the cell is flagged rather than answered (and a job whose outputs come from
it fails): hours of 24 or more, minutes or seconds of 60 or more, a weekday's name, three-digit
years, `2/30` and `Feb-45` (month and year?), `2026-02`, `T` between date and time, mixed
separators.
"""

from __future__ import annotations

import calendar
import contextvars
import datetime
import re
from dataclasses import dataclass

from shared.calc.corrections.functions.text_format import Unsupported
from shared.calc.scoped import holding
from shared.calc.values import datetime_to_serial

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + ")"
_WEEKDAY_NAMES = tuple(n.lower() for n in (*calendar.day_name, *calendar.day_abbr))
_WEEKDAYS = re.compile(r"\b(?:" + "|".join(_WEEKDAY_NAMES) + r")\b")
_DAYS_1900_TO_1904 = 1462
_EPOCH = datetime.date(1899, 12, 30)  # today's serial counted from here (after March 1900)

_date_system_1904: contextvars.ContextVar[bool] = contextvars.ContextVar("sheetcalc_date1904", default=False)
# set while reading a text at model load, when no day of calculation is known
_undated: contextvars.ContextVar[bool] = contextvars.ContextVar("sheetcalc_undated", default=False)


def date_system(date1904: bool):
    """Dates read from text inside the block are serials of this date system."""
    return holding(_date_system_1904, date1904)


@dataclass(frozen=True)
class Reading:
    """What a text holds: a plain number (date and time None), or a date's serial in the 1900
    system and a time of day as a fraction of a day."""

    number: float | None = None
    date: int | None = None
    time: float | None = None

    @property
    def value(self) -> float:
        """The number Excel makes of it (VALUE, arithmetic): in the workbook's date system."""
        if self.number is not None:
            return self.number
        date = self.date or 0
        if self.date is not None and _date_system_1904.get():
            date -= _DAYS_1900_TO_1904
            if date < 0:
                raise Unsupported("a date before 1904 in a workbook of the 1904 date system")
        return float(date) + (self.time or 0.0)


# --- numbers ---------------------------------------------------------------------------------

_DIGITS = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+"
_PLAIN = re.compile(
    rf"(?P<sign>[-+]?)\s*(?P<currency>\$?)\s*(?P<sign2>[-+]?)\s*(?P<digits>{_DIGITS})"
    rf"(?P<exponent>e[-+]?\d+)?\s*(?P<percent>%?)"
)
_PARENTHESES = re.compile(rf"\(\s*\$?\s*(?P<digits>{_DIGITS})\s*\)")
_FRACTION = re.compile(r"(?P<sign>-?)(?P<whole>\d+) +(?P<top>\d+)/(?P<bottom>\d+)")


def _number(text: str) -> float | None:
    match = _PLAIN.fullmatch(text)
    if match and not (match["sign"] and match["sign2"]):
        number = float(match["digits"].replace(",", "") + (match["exponent"] or ""))
        if "-" in (match["sign"], match["sign2"]):
            number = -number
        return number / 100 if match["percent"] else number
    match = _PARENTHESES.fullmatch(text)
    if match:
        return -float(match["digits"].replace(",", ""))
    match = _FRACTION.fullmatch(text)
    if match:
        top, bottom = int(match["top"]), int(match["bottom"])
        if bottom == 0 or top >= bottom:
            raise Unsupported(f"the fraction {text!r}")
        number = int(match["whole"]) + top / bottom
        return -number if match["sign"] else number
    return None


# --- times -----------------------------------------------------------------------------------

_CLOCK = re.compile(
    r"(?P<h>\d{1,2}):(?P<m>\d{1,2})(?::(?P<s>\d{1,2}(?:\.\d*)?))?(?:\s*(?P<half>am|pm))?"
    r"|(?P<m2>\d{1,2}):(?P<s2>\d{1,2}\.\d*)"
    r"|(?P<h3>\d{1,2})\s*(?P<half3>am|pm)"
)
_TIME_AT_END = re.compile(r"(?:^|(?<=\s))(?:" + _CLOCK.pattern + r")$")


def _time(match: re.Match) -> float:
    if match["m2"] is not None:  # minutes:seconds.fraction
        hours, minutes, seconds, half = 0, int(match["m2"]), float(match["s2"]), None
    elif match["h3"] is not None:
        hours, minutes, seconds, half = int(match["h3"]), 0, 0.0, match["half3"]
    else:
        hours, minutes, seconds, half = int(match["h"]), int(match["m"]), float(match["s"] or 0), match["half"]
    if minutes >= 60 or seconds >= 60:
        raise Unsupported(f"minutes or seconds of 60 or more in {match.group(0)!r}")
    if half is not None:
        if not 0 <= hours <= 12:
            raise Unsupported(f"an hour over 12 with AM or PM in {match.group(0)!r}")
        hours = hours % 12 + (12 if half == "pm" else 0)
    elif hours >= 24:
        raise Unsupported(f"an hour of 24 or more in {match.group(0)!r}")
    return (hours * 3600 + minutes * 60 + seconds) / 86400


# --- dates -----------------------------------------------------------------------------------

_NUMERIC_DATE = re.compile(r"(?P<a>\d{1,4})(?P<sep>[/-])(?P<b>\d{1,4})(?:(?P=sep)(?P<c>\d+))?")
_DAY_MONTH = re.compile(rf"(?P<d>\d{{1,2}})(?:[-/ ]+|(?=[a-z])){_MONTH}(?:[-/ ]+(?P<y>\d+))?")
_MONTH_DAY = re.compile(
    rf"{_MONTH}(?:[-/ ]*(?P<d>\d{{1,2}}))(?:(?:\s*,\s*|[-/ ]+)(?P<y>\d+))?"
)
_MONTH_YEAR = re.compile(rf"{_MONTH}[-/ ,]+(?P<y>\d{{4,}})")


def _year(text: str) -> int | None:
    """A written year as Excel reads it; None: no year Excel has (#VALUE!)."""
    if len(text) == 2:
        number = int(text)
        return 2000 + number if number < 30 else 1900 + number
    if len(text) >= 4:
        number = int(text)
        return number if 1900 <= number <= 9999 else None  # DATEVALUE's page
    raise Unsupported(f"a year written with {len(text)} digits")


class _ThisYear(Exception):
    """A date written without its year, read while no day of calculation is known."""


def _this_year() -> int:
    from shared.calc import run_context

    if _undated.get():
        raise _ThisYear

    return (_EPOCH + datetime.timedelta(days=run_context.today_serial())).year


class _NoSuchDay(Exception):
    """A date's form naming a day the calendar does not have (Excel's #VALUE!)."""


def _serial(year: int | None, month: int, day: int) -> int:
    """The 1900-system serial of a day."""
    if year is None or not 1 <= month <= 12 or day < 1:
        raise _NoSuchDay
    if (year, month, day) == (1900, 2, 29):
        return 60
    if day > calendar.monthrange(year, month)[1]:
        raise _NoSuchDay
    return int(datetime_to_serial(datetime.datetime(year, month, day)))


def _date(text: str) -> int | None:
    """The serial of a date's text; None: no form of date (_NoSuchDay: a form, but no such day;
    Unsupported: a form not settled)."""
    match = _NUMERIC_DATE.fullmatch(text)
    if match:
        a, b, c = match["a"], match["b"], match["c"]
        if c is not None:
            if len(a) == 4:
                return _serial(_year(a), int(b), int(c))
            if len(a) > 2 or len(b) > 2:
                raise _NoSuchDay
            return _serial(_year(c), int(a), int(b))
        month, second = int(a), int(b)
        if len(a) == 4:
            raise Unsupported(f"the date {text!r}")  # a year and a month?
        if len(a) > 2 or not 1 <= month <= 12:
            raise _NoSuchDay  # no month first (555-1234, 13/5): text in Excel
        if len(b) <= 2 and 1 <= second <= calendar.monthrange(_this_year(), month)[1]:
            return _serial(_this_year(), month, second)
        if len(b) >= 4:
            return _serial(_year(b), month, 1)
        raise Unsupported(f"the date {text!r}")
    match = _MONTH_YEAR.fullmatch(text)
    if match:
        return _serial(_year(match["y"]), _MONTHS[match[1]], 1)
    for form in (_DAY_MONTH, _MONTH_DAY):
        match = form.fullmatch(text)
        if match:
            month, day = _MONTHS[match[2 if form is _DAY_MONTH else 1]], int(match["d"])
            if match["y"] is not None:
                return _serial(_year(match["y"]), month, day)
            if 1 <= day <= calendar.monthrange(_this_year(), month)[1]:
                return _serial(_this_year(), month, day)
            raise Unsupported(f"the date {text!r}")
    return None


# --- the whole text --------------------------------------------------------------------------

_DATE_WORDS = frozenset({*_MONTHS, *_WEEKDAY_NAMES, "am", "pm", "t"})


_DATE_SIGNS = re.compile(r"[0-9a-z ,/:-]+")
_DIGIT = re.compile(r"[0-9]")
_SEPARATOR_OR_NAME = re.compile(r"[/:-]|[a-z]")
_WORD = re.compile(r"[a-z]+")


def _date_like(folded: str) -> bool:
    """Whether a text may be a date or a time Excel reads: digits, and only the words and signs
    dates are written with (month and weekday names, AM and PM, / - : , and spaces), one of them
    a separator or a name. Anything else ("v1.2.3", "(555) 123-4567", "12,34", "May") is text."""
    return (
        _DATE_SIGNS.fullmatch(folded) is not None and _DIGIT.search(folded) is not None
        and _SEPARATOR_OR_NAME.search(folded) is not None
        and all(word in _DATE_WORDS for word in _WORD.findall(folded))
    )


def _fold(text: str) -> str:
    """A text in lower case, its runs of white space one space."""
    return " ".join(text.lower().split())


def date_like(text: str) -> bool:
    """Whether a text may be a date or a time Excel reads, not a plain number (`_date_like`)."""
    return _date_not_number(_fold(text))


def _date_not_number(folded: str) -> bool:
    return _date_like(folded) and _number(folded) is None


def unread_by_ironcalc(text: str) -> bool:
    """Whether a text is a number Excel reads where IronCalc 0.9.1 answers #VALUE!: a date or a
    time (`date_like`), a negative number in parentheses (`(1,234.50)`, `($12)`) or a whole
    number and a fraction (`3 1/2`)."""
    if _DIGIT.search(text) is None:
        return False  # each of them has a digit: most text cells stop here
    folded = _fold(text)
    return _date_not_number(folded) or bool(_PARENTHESES.fullmatch(folded) or _FRACTION.fullmatch(folded))


def read(text: str) -> Reading | None:
    """What Excel reads in `text` (None: no number, Excel's #VALUE!)."""
    folded = _fold(text)
    if not folded:
        return None
    number = _number(folded)
    if number is not None:
        return Reading(number=number)
    if not _date_like(folded):
        return None
    if _WEEKDAYS.search(folded):
        raise Unsupported(f"a weekday's name in {text!r}")
    clock = _TIME_AT_END.search(folded)
    time = _time(clock) if clock else None
    rest = folded[: clock.start()].rstrip() if clock else folded
    if clock and not rest:
        return Reading(time=time)
    try:
        date = _date(rest)
    except _NoSuchDay:
        return None
    if date is not None:
        return Reading(date=date, time=time)
    raise Unsupported(f"text {text!r} read as a number (a form of date or time not known here)")


def value(text: str) -> float | None:
    """VALUE of a text, and the number arithmetic makes of it: None where Excel answers #VALUE!."""
    reading = read(text)
    return None if reading is None else reading.value


def fixed_value(text: str, date1904: bool = False) -> float | None:
    """The number Excel makes of a typed text (`value`) in a workbook of this date system, when
    that is the same whatever the day it is calculated; None for text that is no number, a form
    not settled here (Unsupported) and a date without its year (this year's, "5-Jul")."""
    try:
        with holding(_undated, True), date_system(date1904):
            reading = read(text)
            return None if reading is None else reading.value
    except (_ThisYear, Unsupported):
        return None


def date_value(text: str) -> float | None:
    """DATEVALUE of a text (the 1900 system: a 1904 workbook's formula subtracts the difference
    itself, corrections/dates.py): None where Excel answers #VALUE!."""
    reading = read(text)
    if reading is None or reading.number is not None:
        return None
    if reading.date is None:
        raise Unsupported(f"DATEVALUE of a time alone ({text!r})")
    return float(reading.date)


def time_value(text: str) -> float | None:
    """TIMEVALUE of a text: the time of day, 0 for a date alone; None where Excel answers #VALUE!."""
    reading = read(text)
    if reading is None or reading.number is not None:
        return None
    return reading.time or 0.0


# --- NUMBERVALUE -----------------------------------------------------------------------------

_NUMBERVALUE = re.compile(
    r"(?P<sign>[-+]?)(?P<open>\(?)(?P<mantissa>[0-9G]*(?:D[0-9]*)?)(?P<exponent>E[-+]?[0-9]+)?"
    r"(?P<inner>%*)(?P<close>\)?)(?P<outer>%*)"
)


def number_value(text: str, decimal: str | None = None, group: str | None = None) -> float | None:
    """NUMBERVALUE of a text with these separators (the first character of each; None where
    Excel answers #VALUE!). Microsoft's page: spaces are ignored anywhere, "" is 0, a group
    separator before the decimal one is ignored and after it is #VALUE!, two decimal separators
    are #VALUE!, trailing percent signs each divide by 100 (`9%%` is 0.0009). Excel-saved
    (formulas' test.xlsx TEXT!R27:W28): negatives in parentheses, percent signs inside and after
    them, `E + 6` an exponent, equal separators or a sign inside the parentheses #VALUE!; a
    decimal comma given without a group separator reads a point as one (`NUMBERVALUE("2,500.27",
    ",")` #VALUE!, `NUMBERVALUE("2500,27",",")` 2500.27). Omitted separators are the United
    States' (the service has no locale)."""
    if group is None:
        group = "." if decimal is not None and decimal[:1] == "," else ","
    if decimal is None:
        if group[:1] == ".":
            raise Unsupported("NUMBERVALUE with a decimal point as its group separator and no decimal separator")
        decimal = "."
    if not decimal or not group or decimal[0] == group[0]:
        return None
    decimal, group = decimal[0], group[0]
    folded = "".join(text.split())
    if not folded:
        return 0.0
    if any(c in folded for c in "$:/") and not {decimal, group} & set("$:/"):
        raise Unsupported(f"NUMBERVALUE of {text!r} (a currency, a date or a time?)")
    # the separators as D and G, so that one pattern reads every choice of them
    marked = "".join("D" if c == decimal else "G" if c == group else c.upper() if c in "eE" else c for c in folded)
    match = _NUMBERVALUE.fullmatch(marked)
    if match is None or bool(match["open"]) != bool(match["close"]) or not re.search(r"[0-9]", match["mantissa"]):
        return None
    if match["sign"] and match["open"]:
        raise Unsupported(f"NUMBERVALUE of {text!r} (a sign and parentheses)")
    number = float(match["mantissa"].replace("G", "").replace("D", ".") + (match["exponent"] or ""))
    number /= 100 ** (len(match["inner"]) + len(match["outer"]))
    return -number if match["sign"] == "-" or match["open"] else number
