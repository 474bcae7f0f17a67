"""Dates, times and numbers typed as text where Excel expects a number, rewritten at model load.

Excel converts a text to a number wherever an operator or a function's argument expects one,
reading it as it reads the text typed into a cell (Microsoft, "Calculation operators and
precedence in Excel", converting values in formulas: `="6/1/2001"-"5/1/2001"` is 31, `="1"+"2"`
3; the DAYS page's example `DAYS("15-MAR-2021","1-FEB-2021")` is 42). IronCalc 0.9.1 reads
numbers and month/day/year text there, but answers #VALUE! for a date with a month's name
(`YEAR("15-Jan-2024")`, `"2 February 2026"+0`, `DAYS("15-MAR-2021","1-FEB-2021")`), a date with
a time (`"1/15/2024 10:00"+0`), `"(100)"` and `"1 1/2"`, and reads a date before March 1900 a
day late (`"1/15/1900"+0` 16, Excel 15; `YEAR("2/29/1900")` #VALUE!, Excel 1900) (measured).

A typed text (a string literal of the formula) in such a place is written as the number Excel
reads in it (dynamic/number_text.py: VALUE's forms, as Excel set to United States English reads
them), where that number does not depend on the day of calculation:

- an operand of `+ - * / ^` or of a leading `-` or a trailing `%` (not of `&`, which joins text,
  nor of a comparison, where text stays text: `"1/1/2024">1` is TRUE in Excel);
- the whole of an argument that is a date or a time: the dates of YEAR, MONTH, DAY, WEEKDAY,
  EDATE, EOMONTH, WEEKNUM, ISOWEEKNUM, YEARFRAC, DAYS360, DATEDIF, DAYS, NETWORKDAYS(.INTL) and
  WORKDAY(.INTL) (a holiday among them), the time of HOUR, MINUTE and SECOND, and TEXT's value
  (`TEXT("15-Jan-2024","yyyy-mm-dd")`; text that is no number TEXT shows as it is).

Left as typed: plain numbers (IronCalc reads them), text that is no number (#VALUE! in both), a
date without its year (`"5-Jul"`, this year's: it depends on the day), and the forms
number_text leaves unsettled. In the 1904 date system a date is that system's serial (dates.py
then moves the date functions across as for any other date); a date before 1904 there is left.
A literal inside a longer expression given to a date function (`YEAR("15-Jan-"&A1)`) is not
known at load and stays IronCalc's. Array formulas are left alone, as by every rewrite of the
layer. The filled workbook and FORMULATEXT show the formula as written.
"""

from __future__ import annotations

import re

from openpyxl.formula.tokenizer import Token

from shared.calc.corrections.dynamic.number_text import fixed_value
from shared.calc.corrections.formula_tokens import (
    calls,
    neighbour,
    tokenize,
    without_spaces,
)
from shared.calc.corrections.model import Rewrite, rewrite_cells

_DATE_FUNCTIONS = (
    "YEAR|MONTH|DAY|DAYS|WEEKDAY|EDATE|EOMONTH|WEEKNUM|ISOWEEKNUM|YEARFRAC|DAYS360|DATEDIF|NETWORKDAYS"
    "|WORKDAY|HOUR|MINUTE|SECOND|TEXT"
)
# inside a formula's text (the survey keeps only matches within <f>): a quoted text with a digit
# next to an arithmetic operator, or anywhere in a call of a date function
MENTION = re.compile(
    rb'(?<=>)[^<]*?(?:[-+*/^]\s*"[^"<]*\d|"[^"<]*\d[^"<]*"\s*(?:[-+*^%]|/(?!>))'
    rb'|\b(?:_XLFN\.)?(?:' + _DATE_FUNCTIONS.encode() + rb')(?:\.INTL)?\([^<]*"[^"<]*\d)'
)
KEYWORDS = (b'"',)

# the arguments (0-based) that are a date or a time, by function
DATE_ARGUMENTS = {
    "YEAR": (0,), "MONTH": (0,), "DAY": (0,), "WEEKDAY": (0,), "EDATE": (0,), "EOMONTH": (0,),
    "WEEKNUM": (0,), "ISOWEEKNUM": (0,), "YEARFRAC": (0, 1), "DAYS360": (0, 1), "DATEDIF": (0, 1),
    "DAYS": (0, 1), "NETWORKDAYS": (0, 1, 2), "NETWORKDAYS.INTL": (0, 1, 3), "WORKDAY": (0, 2),
    "WORKDAY.INTL": (0, 3), "HOUR": (0,), "MINUTE": (0,), "SECOND": (0,), "TEXT": (0,),
}
_ARITHMETIC = frozenset("+-*/^")
_PLAIN_NUMBER = re.compile(r"\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*")


def _operand_of_arithmetic(tokens: list[Token], index: int) -> bool:
    """Whether the token at `index` is an operand of an arithmetic operator (or a leading `-`,
    a trailing `%`), which binds tighter than `&` and the comparisons around it."""
    before, after = neighbour(tokens, index, -1), neighbour(tokens, index, 1)
    if before is not None and (
        (before.type == Token.OP_IN and before.value in _ARITHMETIC)
        or (before.type == Token.OP_PRE and before.value == "-")
    ):
        return True
    return after is not None and (
        (after.type == Token.OP_IN and after.value in _ARITHMETIC) or after.type == Token.OP_POST
    )


def _date_arguments(tokens: list[Token]) -> set[int]:
    """The text literals that are the whole of a date or time argument."""
    found = set()
    for name, _, _, args in calls(tokens):
        for position in DATE_ARGUMENTS.get(name, ()):
            if position < len(args):
                kept = without_spaces(tokens, args[position])
                if len(kept) == 1 and tokens[kept[0]].type == Token.OPERAND \
                        and tokens[kept[0]].subtype == Token.TEXT:
                    found.add(kept[0])
    return found


def _number_text(number: float) -> str:
    """The number as formula text that IronCalc reads back as the same double: it reads a
    literal to 15 significant digits, as Excel does, so a longer one (a time of day, 15:30 is
    0.6458333333333334) is written as a sum of two literals of 15 digits."""
    text = f"{number:.15g}"
    if float(text) != number:
        rest = f"{number - float(text):.15g}"
        if float(text) + float(rest) == number:
            text = f"{text}{rest}" if rest.startswith("-") else f"{text}+{rest}"
    return f"({text})" if number < 0 or not _PLAIN_NUMBER.fullmatch(text) else text


def rewrite_formula(formula: str, date1904: bool = False) -> str | None:
    """The formula with each typed text Excel reads as a number there written as that number
    (module docstring), or None when nothing changes."""
    if '"' not in formula:
        return None
    tokens = tokenize(formula)
    if tokens is None:
        return None
    values = [t.value for t in tokens]
    in_dates = _date_arguments(tokens)
    changed = False
    for index, token in enumerate(tokens):
        if token.type != Token.OPERAND or token.subtype != Token.TEXT:
            continue
        if index not in in_dates and not _operand_of_arithmetic(tokens, index):
            continue
        text = token.value[1:-1].replace('""', '"')
        if _PLAIN_NUMBER.fullmatch(text):
            continue  # IronCalc reads it as Excel does
        number = fixed_value(text, date1904)
        if number is None:
            continue
        values[index] = _number_text(number)
        changed = True
    return "".join(values) if changed else None


def correct_text_operands(model, cells: list[tuple[int, int, int]], date1904: bool) -> list[Rewrite]:
    """Rewrite the typed texts of these cells' formulas that Excel reads as numbers."""
    return rewrite_cells(model, cells, lambda formula, *_: rewrite_formula(formula, date1904))
