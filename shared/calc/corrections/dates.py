"""Date functions IronCalc 0.9.1 gets wrong, rewritten at model load.

Excel's rules (Microsoft support, "Excel incorrectly assumes that the year 1900 is a leap year";
"DATE function"; "Date systems in Excel"; ECMA-376 Part 1, 18.17.4.1):

- In the 1900 date system serial 1 is 1900-01-01 and serial 60 is 1900-02-29, a day that never
  was, kept for compatibility with Lotus 1-2-3; serial 0 shows as 1900-01-00. So YEAR of 0-60
  is 1900, MONTH is 1 up to 31 and 2 from 32, DAY is the serial (0 for 0) up to 31 and the
  serial less 31 from 32 (29 for 60); WEEKDAY counts days from serial 1, a Sunday, straight
  through the phantom day, so serial 0 is a Saturday. IronCalc reads serials 1-60 one day
  early (DAY(60) 28, MONTH(1) 12, YEAR(1) 1899) and answers #NUM! for 0; its WEEKDAY of 1-60
  is Excel's. The rewrite gives those arguments Excel's answer and leaves every other value to
  IronCalc, and DATE's answer before 1900-03-01 is Excel's (IronCalc's is one day late and
  has no 1900-02-29): `DAY(A1)` becomes
  `IF(AND(NOT(ISTEXT(A1)),N(A1)>=0,N(A1)<61),INT(N(A1))-IF(N(A1)<32,0,31),DAY(A1))` (a blank
  and FALSE are serial 0, TRUE 1, as in Excel).
  Only where the argument is one value: constants and single cells joined by operators (used
  as they are) or passed to functions answering one value such as DATE (computed once, with
  LET); an argument that may be an array (a range, a name) is left alone.
- EDATE, EOMONTH, WEEKNUM and ISOWEEKNUM of serials 0-60 count on Excel's calendar too (a
  blank date cell is serial 0, so `EOMONTH(A1,0)` of an empty A1 is common): January 1900 has
  days 0-31, February 29 days (serial 60 the phantom 29th), 1 January 1900 is a Sunday and
  serial 0 the Saturday before. EOMONTH(0,0) is 31, EOMONTH(8,"2") 91, EDATE(0,0) 0,
  EDATE(8,"2") 68, WEEKNUM(0,1) 0, ISOWEEKNUM of 0, 1 and TRUE 52 (formulas' Excel-saved
  test.xlsx 'DATE & TIME' rows 9, 10, 12 and 23); IronCalc answers #NUM! for serial 0 and counts
  1-60 a day early (EOMONTH(31,0) 32). A day beyond the target month's last is its last day
  (EDATE's page), a day 0 the day before the month's first; WEEKNUM's week 1 holds 1 January
  and weeks begin on the return type's day (WEEKNUM's page), ISO weeks on Monday with week 1
  holding the year's first Thursday (ISOWEEKNUM's page). A logical start date is IronCalc's
  (#VALUE!, as Excel answers for EDATE, EOMONTH and WEEKNUM), text too.
- In the 1904 date system (workbookPr date1904) serial 0 is 1904-01-01, 1,462 days after the
  1900 system's serial of that day. IronCalc ignores the setting. The rewrite moves each date
  function across: the arguments that are dates get +1462 (the first of YEAR, MONTH, DAY,
  WEEKDAY, EDATE, EOMONTH, WEEKNUM and ISOWEEKNUM; start and end of YEARFRAC, DAYS360,
  DATEDIF and NETWORKDAYS(.INTL); WORKDAY(.INTL)'s start; the holidays of both, a range
  included, which IronCalc reads as an array there), the results of DATE, DATEVALUE, TODAY,
  NOW, EDATE, EOMONTH and WORKDAY(.INTL) -1462. Each date argument then names the same
  calendar day in IronCalc's 1900 system, so weekdays, leap years and month lengths are
  Excel's (NETWORKDAYS(0,6) of a 1904 workbook, Friday 1 to Thursday 7 January 1904, is 5;
  IronCalc alone #NUM!).
- DATEDIF's "MD" where the end's day comes before the start's counts from that day in the month
  before the end's as DATE makes it, `INT(end)-DATE(YEAR(end),MONTH(end)-1,DAY(start))`, so a
  start day that month lacks runs on into the next (31 October to 21 March 2000 is 19, to 1
  March -1: the page warns "MD" may be negative); IronCalc takes that month's last day instead
  (21 and 1). Dates that are constants and cells; an error stays IronCalc's.
- HOUR, MINUTE and SECOND read the time of day rounded to the nearest second: SECOND(PI()) is
  54 (3.14159265 days is 3:23:53.6), MINUTE(0.675) 12 and SECOND(0.675) 0 (0.675 days is
  16:12:00 held as 16:11:59.99999); IronCalc drops the fraction of a second (SECOND(PI()) 53).
  Every value Excel saved for them in the corpus (27 cells of formulas' test.xlsx and pycel's
  date-time.xlsx) follows the rounding, 5 of them not a plain truncation. A number from 0 to the
  last day of 9999 is answered with integer arithmetic on the rounded seconds,
  `MOD(INT(ROUND(x*86400,0)/3600),24)` for HOUR; anything else (text, a negative number)
  is left to IronCalc's own function. Both date systems: the time of day is the same.
- YEARFRAC counts the same fraction whichever date comes first: Excel answers YEARFRAC(end,
  start, basis) as YEARFRAC(start, end, basis) in every basis (all 1,850 values of pycel's
  Excel-saved yearfrac.xlsx, 370 pairs of dates by 5 bases, follow it; 152 of them have the later
  date first). IronCalc 0.9.1 answers #NUM! for basis 1 with the later date first and differs
  in basis 0. The rewrite puts the earlier one first when both are one value:
  `IF(N(s)>N(e),YEARFRAC(e,s,b),YEARFRAC(s,e,b))` (computed once with LET unless constants and
  cells); text dates (N gives 0) and errors are left in their order, to IronCalc. In the 1900
  system the basis is read first, as Excel-saved cells show (pycel's yearfrac.xlsx row 3,
  formulas' test.xlsx 'DATE & TIME'!U27:AE27): an error in it is the answer whatever the dates
  hold, a logical value #VALUE!, a number outside 0-4 #NUM! (IronCalc answered the date's error
  first); and for US 30/360 (basis 0, the default) a date among serials 0-59 is moved one day on,
  to the calendar day Excel means by it (YEARFRAC(1,200,0) 0.5472, IronCalc alone 0.55;
  YEARFRAC(0,200,0) 0.55, IronCalc #NUM!), a blank cell there being the date 0. The other bases
  already answer Excel's fraction there, but for serial 0 with European 30/360, which IronCalc
  refuses (#NUM!): Excel reads it as 1899-12-31, the 30th in that method, one day before the
  date 1 (YEARFRAC(0,200,4) 0.55, YEARFRAC(1,0,4) 1/360).

Array formulas are left alone, as by every rewrite of the layer.
"""

from __future__ import annotations

import datetime
import math
import re

from openpyxl.formula.tokenizer import Token

from shared.calc.corrections.formula_tokens import (
    function_name,
    is_single_cell,
    neighbour,
    pure,
    replace_call,
    rewrite_calls,
    without_spaces,
)
from shared.calc.corrections.model import Rewrite, rewrite_cells

MENTION = re.compile(
    rb"(?i)(?:YEAR|MONTH|DAY|WEEKDAY|DATE|DATEVALUE|TODAY|NOW|EDATE|EOMONTH|HOUR|MINUTE|SECOND|YEARFRAC"
    rb"|WEEKNUM|ISOWEEKNUM|DATEDIF)\("
)
KEYWORDS = (b"YEAR(", b"MONTH(", b"DAY(", b"DATE(", b"DATEVALUE(", b"TODAY(", b"NOW(", b"EOMONTH(",
            b"HOUR(", b"MINUTE(", b"SECOND(", b"YEARFRAC(", b"EDATE(", b"WEEKNUM(", b"DATEDIF(")
# what the 1904 system also rewrites (the survey of a 1904 workbook looks for these too)
MENTION_1904 = re.compile(
    rb"(?i)(?:YEAR|MONTH|DAY|WEEKDAY|DATE|DATEVALUE|TODAY|NOW|EDATE|EOMONTH|WEEKNUM|YEARFRAC"
    rb"|DAYS360|DATEDIF|NETWORKDAYS|WORKDAY|HOUR|MINUTE|SECOND)(?:\.INTL)?\("
)
KEYWORDS_1904 = (*KEYWORDS, b"WEEKNUM(", b"YEARFRAC(", b"DAYS360(", b"DATEDIF(", b"DAYS(", b"INTL(")
OFFSET_1904 = 1462
# the arguments (0-based) that are dates, by function
_SERIAL_ARGUMENTS = {
    "YEAR": (0,), "MONTH": (0,), "DAY": (0,), "WEEKDAY": (0,), "EDATE": (0,), "EOMONTH": (0,),
    "WEEKNUM": (0,), "ISOWEEKNUM": (0,), "YEARFRAC": (0, 1), "DAYS360": (0, 1),
    "DATEDIF": (0, 1), "NETWORKDAYS": (0, 1, 2), "NETWORKDAYS.INTL": (0, 1, 3),
    "WORKDAY": (0, 2), "WORKDAY.INTL": (0, 3),
}
_SERIAL_RESULT = {
    "DATE", "DATEVALUE", "TODAY", "NOW", "EDATE", "EOMONTH", "WORKDAY", "WORKDAY.INTL",
}
# a blank is 0 and FALSE/TRUE are 0/1 (N); text is IronCalc's to read as a date
_EARLY = "AND(NOT(ISTEXT({x})),N({x})>=0,N({x})<61)"
# Excel's answer for serials 0-60 (1900 system), by function; {x} the argument, {rest} the
# other arguments with their leading comma
_LEAP_BUG = {
    "YEAR": "IF(" + _EARLY + ",1900,YEAR({x}))",
    "MONTH": "IF(" + _EARLY + ",IF(N({x})<32,1,2),MONTH({x}))",
    "DAY": "IF(" + _EARLY + ",INT(N({x}))-IF(N({x})<32,0,31),DAY({x}))",
    "WEEKDAY": "IF(AND(NOT(ISTEXT({x})),N({x})>=0,N({x})<1),WEEKDAY(N({x})+7{rest}),WEEKDAY({x}{rest}))",
}

# the time of day rounded to the nearest second (module docstring); {x} the argument
_WHOLE_SECONDS = "ROUND({x}*86400,0)"
_TIME_OF_DAY = {
    name: "IF(AND(ISNUMBER({x}),{x}>=0,{x}<2958466)," + part.format(s=_WHOLE_SECONDS) + "," + name + "({x}))"
    for name, part in {
        "HOUR": "MOD(INT({s}/3600),24)",
        "MINUTE": "MOD(INT({s}/60),60)",
        "SECOND": "MOD({s},60)",
    }.items()
}

# DATE(y,m,d) is the month's first day plus d-1 (Microsoft: "DATE function", day beyond or
# below the month's days counts on from its first day; each argument truncated). Excel's first
# days of January, February and March 1900 are serials 1, 32 and 61; IronCalc's 2, 33 and 61,
# so before March 1900 one less: DATE(1900,2,29) is 60, DATE(1900,1,0) 0.
# IronCalc's own DATE first: its errors are Excel's (in Excel's order of the arguments), and
# from 1900-03-02 on (IronCalc serial 62) so is its value.
_EXCEL_DATE = (
    "LET(sheetcalc_date,DATE({y},{m},{d}),"
    "IF(sheetcalc_date>61,sheetcalc_date,DATE({y},{m},1)-IF(DATE({y},{m},1)<61,1,0)+TRUNC({d})-1))"
)


_LET_NAME = "sheetcalc_serial"
# functions that answer one value whatever their arguments, when no argument is a range
_SCALAR_CALLS = frozenset({
    "DATE", "DATEVALUE", "TODAY", "NOW", "EDATE", "EOMONTH", "INT", "TRUNC", "ROUND", "ROUNDDOWN",
    "ROUNDUP", "VALUE", "MOD", "ABS", "MIN", "MAX", "IF", "WORKDAY",
})


def _scalar(tokens: list[Token], positions: list[int]) -> bool:
    """An argument that is one value: constants and single cells, joined by operators or
    passed to functions that answer one value; no range, name or array constant anywhere."""
    if not positions:
        return False
    for i in positions:
        token = tokens[i]
        if token.type == Token.FUNC:
            if token.subtype == Token.OPEN and re.sub(r"^@?(?:_xlfn\.)*", "", token.value[:-1], flags=re.I).upper() not in _SCALAR_CALLS:
                return False
            continue
        if token.type == Token.OPERAND and token.subtype == Token.RANGE:
            if not is_single_cell(token):
                return False
            continue
        if token.type == Token.ARRAY:
            return False
    return True


def rewrite_formula(formula: str, date1904: bool) -> str | None:
    """The formula with Excel's date rules (module docstring), or None when nothing changes."""
    return rewrite_calls(formula, _in_1904 if date1904 else _in_1900)


def _single_value_rule(rules: dict[str, str], tokens, values, name, opened, closed, args, arity: int) -> bool:
    """Replace the call by its rule in `rules` when its first argument is one value (computed
    once, with LET, unless it is constants and single cells joined by operators)."""
    if name not in rules or not args or len(args) > arity or not _scalar(tokens, args[0]):
        return False
    x = "".join(values[i] for i in args[0]).strip()  # inner calls already rewritten
    rest = "".join("," + "".join(values[i] for i in arg) for arg in args[1:])
    if pure(tokens, args[0]):
        text = rules[name].format(x=x if len(args[0]) == 1 else "(" + x + ")", rest=rest)
    else:  # computed once
        text = f"LET({_LET_NAME},{x}," + rules[name].format(x=_LET_NAME, rest=rest) + ")"
    replace_call(values, opened, closed, text)
    return True


# YEARFRAC in the 1900 system (module docstring): the basis read first (an error in it, a
# logical value or a number outside 0-4 is the answer whatever the dates), then, for US 30/360
# (basis 0, the default), a date among serials 0-59 moved one day on, to the calendar day Excel
# means by it (IronCalc reads serials 1-60 one day early; its other bases already answer Excel's
# fraction there); the earlier date first. {s} {e} the dates and {b} the basis (0 when omitted),
# each a constant or a cell (or a LET name); {call} `YEARFRAC(` as written, {basis} `,b` or ""
_BASIS_FIRST = (
    "IF(ISLOGICAL({b}),#VALUE!,IF(ISERROR({b}+0),{b}+0,IF(OR({b}+0<=-1,{b}+0>=5),#NUM!,{dates})))"
)
_DATE_OR_BLANK = "OR(ISNUMBER({x}),ISBLANK({x}))"  # a blank cell is the date 0, as Excel reads it
_EARLY_DAY = "IF(AND(TRUNC({b}+0)=0," + _DATE_OR_BLANK + ",N({x})>=0,N({x})<60),{x}+1,{x})"
_IN_ORDER = "IF(N({s})>N({e}),{call}{e},{s}{basis}),{call}{s},{e}{basis}))"
# European 30/360 (basis 4) from the date 0, 1899-12-31 read as the 30th: one day of 360 more
# than from the date 1 (the method adds up day by day), 0 to itself
_ZERO_4 = (
    "IF(AND(TRUNC({b}+0)=4," + _DATE_OR_BLANK.format(x="{s}") + "," + _DATE_OR_BLANK.format(x="{e}")
    + ",MIN(N({s}),N({e}))>=0,MIN(N({s}),N({e}))<1),"
    "IF(MAX(N({s}),N({e}))<1,0,{call}1,MAX(N({s}),N({e})),4)+1/360),"
)
# IronCalc evaluates LET slowly (26 µs a cell against 1 µs for this IF): plain for the usual
# dates in cells, the moved dates only where one is before 1900-03-01
_YEARFRAC_1900 = "IF(MIN(N({s}),N({e}))>=60," + _IN_ORDER + "," + _ZERO_4 + _IN_ORDER.format(
    s=_EARLY_DAY.format(x="{s}", b="{b}"), e=_EARLY_DAY.format(x="{e}", b="{b}"), call="{call}", basis="{basis}"
) + "))"


def _earlier_first(tokens, values, name, opened, closed, args, leap_bug: bool = False) -> bool:
    """YEARFRAC with its two dates in order (module docstring); inner calls already rewritten
    (in a 1904 workbook the dates carry their +1462). `leap_bug`: the 1900 system, where the
    basis is read first and serials 0-59 are moved to Excel's calendar day (_YEARFRAC_1900)."""
    if name != "YEARFRAC" or len(args) not in (2, 3) or not all(_scalar(tokens, a) for a in args[:2]):
        return False
    start, end = ("".join(values[i] for i in a).strip() for a in args[:2])
    basis = "," + "".join(values[i] for i in args[2]) if len(args) == 3 else ""
    call = values[opened]  # YEARFRAC( as written
    if leap_bug:
        given = basis[1:].strip()
        if given and not _scalar(tokens, args[2]):
            return False
        parts = [(start, args[0]), (end, args[1])] + ([(given, args[2])] if given else [])
        if all(pure(tokens, a) and len(without_spaces(tokens, a)) == 1 for _, a in parts):
            s_, e_, b_ = start, end, given or "0"
            text = _YEARFRAC_1900.format(s=s_, e=e_, b=b_, call=call, basis="," + given if given else "")
            if given:
                text = _BASIS_FIRST.format(b=b_, dates=text)
        else:  # computed once
            text = _YEARFRAC_1900.format(
                s=f"{_LET_NAME}_start", e=f"{_LET_NAME}_end", b=f"{_LET_NAME}_basis" if given else "0",
                call=call, basis=f",{_LET_NAME}_basis" if given else "",
            )
            if given:
                text = _BASIS_FIRST.format(b=f"{_LET_NAME}_basis", dates=text)
            bound = f"{_LET_NAME}_start,{start},{_LET_NAME}_end,{end}," + (f"{_LET_NAME}_basis,{given}," if given else "")
            text = f"LET({bound}{text})"
        replace_call(values, opened, closed, text)
        return True
    rule = "IF(N({s})>N({e})," + call + "{e},{s}" + basis + ")," + call + "{s},{e}" + basis + "))"
    if all(pure(tokens, a) for a in args[:2]):
        start, end = (x if len(a) == 1 and x == tokens[a[0]].value else f"({x})" for x, a in ((start, args[0]), (end, args[1])))
        text = rule.format(s=start, e=end)
    else:  # computed once
        text = f"LET({_LET_NAME}_start,{start},{_LET_NAME}_end,{end}," + rule.format(
            s=f"{_LET_NAME}_start", e=f"{_LET_NAME}_end") + ")"
    replace_call(values, opened, closed, text)
    return True


# EDATE, EOMONTH, WEEKNUM and ISOWEEKNUM of serials 0-60 on Excel's calendar (module docstring).
# {x} the start date, {m} the months, each constants and cells; {s} the whole
# serial, {t} the target month counted from January 1900 as 1, {d} the start's day of its month.
_EARLY_START = "AND(NOT(ISTEXT({x})),NOT(ISLOGICAL({x})),N({x})>=0,N({x})<61)"
_SERIAL = "INT(N({x}))"
_TARGET = "(IF({s}<32,1,2)+TRUNC({m}))"
_DAY_OF_MONTH = "({s}-IF({s}<32,0,31))"
_EOMONTH_EARLY = "IF({t}<1,#NUM!,IF({t}=1,31,IF({t}=2,60,DATE(1900,{t}+1,1)-1)))"
_EDATE_EARLY = (
    "IF({t}<1,#NUM!,IF({t}=1,{d},IF({t}=2,IF({d}=0,31,31+MIN({d},29)),"
    "IF({d}=0,DATE(1900,{t},1)-1,MIN(DATE(1900,{t},1)+{d}-1,DATE(1900,{t}+1,1)-1)))))"
)
_LITERALS = frozenset({Token.NUMBER, Token.TEXT, Token.LOGICAL})  # `EDATE(A1,"2")` reads the text's number
# WEEKNUM's return types: the day its weeks begin on (1 Sunday ... 7 Saturday)
_WEEK_STARTS = {1: 1, 2: 2, 11: 2, 12: 3, 13: 4, 14: 5, 15: 6, 16: 7, 17: 1}


def _early_calendar(tokens, values, name, opened, closed, args) -> bool:
    """EDATE, EOMONTH, WEEKNUM and ISOWEEKNUM with Excel's answer for serials 0-60 (the rest
    IronCalc's), when their arguments are constants and cells joined by operators; WEEKNUM only
    with its return type omitted or written as a number."""
    if name not in ("EDATE", "EOMONTH", "WEEKNUM", "ISOWEEKNUM") or not args:
        return False
    texts = ["".join(values[i] for i in a).strip() for a in args]
    call = values[opened] + ",".join(texts) + ")"
    if name == "WEEKNUM":
        if len(args) > 2:
            return False
        kind = texts[1] if len(args) == 2 else "1"
        try:
            start = _WEEK_STARTS.get(int(float(kind))) if float(kind) == int(float(kind)) else None
        except ValueError:
            return False
        if start is None:
            return False
        early = _EARLY_START
        value = "INT(({s}-1+" + str((1 - start) % 7) + ")/7)+1"
        names = {"x": texts[0]}
    elif name == "ISOWEEKNUM":
        if len(args) != 1:
            return False
        early = "AND(NOT(ISTEXT({x})),N({x})>=0,N({x})<61)"
        value = "IF({s}<2,52,INT(({s}-2)/7)+1)"
        names = {"x": texts[0]}
    else:
        if len(args) != 2:
            return False
        early = "AND(" + _EARLY_START + ",NOT(ISLOGICAL({m})))"
        value = _EOMONTH_EARLY if name == "EOMONTH" else _EDATE_EARLY
        names = {"x": texts[0], "m": texts[1]}
    if not all(pure(tokens, a, literals=_LITERALS) for a in args[:len(names)]):
        # a computed date (DATE(...), ROW()...) is left to IronCalc: LET would slow every such
        # cell twentyfold for a date before March 1900, which a computed date seldom is
        return False
    bound = {key: text if len(without_spaces(tokens, args[i])) == 1 else f"({text})"
             for i, (key, text) in enumerate(names.items())}
    serial = _SERIAL.format(x=bound["x"])
    parts = {"s": serial, "x": bound["x"]}
    if "m" in bound:
        parts["t"] = _TARGET.format(s=serial, m=bound["m"])
        parts["d"] = _DAY_OF_MONTH.format(s=serial)
        parts["m"] = bound["m"]
    text = "IF(" + early.format(**parts) + "," + value.format(**parts) + "," + call + ")"
    replace_call(values, opened, closed, text)
    return True


def _in_1904(tokens, values, name, opened, closed, args) -> bool:
    if _single_value_rule(_TIME_OF_DAY, tokens, values, name, opened, closed, args, 1):
        return True
    changed = False
    for position in _SERIAL_ARGUMENTS.get(name, ()):
        if position < len(args) and args[position]:
            first, last = args[position][0], args[position][-1]
            values[first] = "(" + values[first]
            values[last] = values[last] + f")+{OFFSET_1904}"
            changed = True
    if name in _SERIAL_RESULT:
        values[opened] = "(" + values[opened]
        values[closed] = values[closed] + f"-{OFFSET_1904})"
        changed = True
    if name == "YEARFRAC":
        changed |= _earlier_first(tokens, values, name, opened, closed, args)  # the shifted dates
    return changed


def _in_1900(tokens, values, name, opened, closed, args) -> bool:
    if _single_value_rule(_LEAP_BUG, tokens, values, name, opened, closed, args, 2):
        return True
    if _days_after_a_month(tokens, values, name, opened, closed, args):
        return True
    if _early_calendar(tokens, values, name, opened, closed, args):
        return True
    if _single_value_rule(_TIME_OF_DAY, tokens, values, name, opened, closed, args, 1):
        return True
    if _earlier_first(tokens, values, name, opened, closed, args, leap_bug=True):
        return True
    if name == "DATE" and len(args) == 3 and all(pure(tokens, a) or not without_spaces(tokens, a) for a in args) \
            and not _literal_date_from_march_1900(tokens, args) \
            and not _start_of_month_arithmetic(tokens, opened, closed):
        # an empty argument is 0 (`DATE(,1,1)` is 1900-01-01, serial 1; IronCalc 2)
        y, m, d = ("(" + ("".join(tokens[i].value for i in a).strip() or "0") + ")" for a in args)
        replace_call(values, opened, closed, _EXCEL_DATE.format(y=y, m=m, d=d))
        return True
    return False


_MONTH_DAYS = "IF(ISERROR({call}),{call},IF(DAY({e})>=DAY({s}),{call},INT({e})-DATE(YEAR({e}),MONTH({e})-1,DAY({s}))))"


def _days_after_a_month(tokens, values, name, opened, closed, args) -> bool:
    """DATEDIF's "MD" (module docstring) with its dates constants and cells."""
    if name != "DATEDIF" or len(args) != 3 or not all(_scalar(tokens, a) for a in args[:2]):
        return False
    unit = without_spaces(tokens, args[2])
    if len(unit) != 1 or tokens[unit[0]].subtype != Token.TEXT or tokens[unit[0]].value.strip('"').upper() != "MD":
        return False
    s, e = ("(" + "".join(values[i] for i in a).strip() + ")" for a in args[:2])
    replace_call(values, opened, closed, _MONTH_DAYS.format(call="".join(values[opened:closed + 1]), s=s, e=e))
    return True


def _start_of_month_arithmetic(tokens, opened: int, closed: int) -> bool:
    """Whether a DATE call is the whole start date of EDATE or EOMONTH, which are left to
    IronCalc for a computed date (_early_calendar): there IronCalc's own DATE keeps both on
    IronCalc's calendar, so `EOMONTH(DATE(1900,2,1),0)` is the end of February (60) and
    `EDATE(DATE(1900,2,15),1)` 15 March (75), as in Excel; Excel's DATE serial given to IronCalc's
    EOMONTH would be read a day early (32, 74)."""
    before, after = neighbour(tokens, opened, -1), neighbour(tokens, closed, 1)
    return before is not None and before.type == Token.FUNC and before.subtype == Token.OPEN \
        and function_name(before) in ("EDATE", "EOMONTH") \
        and after is not None and after.type == Token.SEP and after.subtype == Token.ARG


_LITERAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)")
_MARCH_2_1900 = datetime.date(1900, 3, 2).toordinal()  # IronCalc's serial 62, Excel's too


def _literal_date_from_march_1900(tokens, args) -> bool:
    """Whether DATE's three arguments are numbers written out naming a day from 1900-03-02 on,
    counted from the first day of a month from March 1900 on (IronCalc's DATE is Excel's
    there, Excel's phantom 1900-02-29 behind both: the formula is left as it is)."""
    numbers = []
    for arg in args:
        text = "".join(tokens[i].value for i in arg).strip()
        if not _LITERAL.fullmatch(text):
            return False
        numbers.append(math.trunc(float(text)))
    year, month, day = numbers
    year += 1900 if 0 <= year < 1900 else 0
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    if not 1900 <= year <= 9999 or (year, month) < (1900, 3):
        return False
    ordinal = datetime.date(year, month, 1).toordinal() + day - 1
    return _MARCH_2_1900 <= ordinal <= datetime.date(9999, 12, 31).toordinal()


def correct_dates(model, cells: list[tuple[int, int, int]], date1904: bool) -> list[Rewrite]:
    """Rewrite, in `model`, the date functions of `cells` (sheet index, row, col; array
    formulas left out by the caller). Returns what changed."""
    return rewrite_cells(model, cells, lambda formula, *_: rewrite_formula(formula, date1904))
