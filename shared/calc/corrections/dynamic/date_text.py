"""Dates and times held as text in cells, read where Excel reads a number.

Excel reads a text as a number where an operator or a date function expects one ("Converting
values in formulas", Microsoft's "Calculation operators and precedence"; each date function's
page: "dates ... as text strings"): a cell holding the text `15-Jan-2024` or
`1/1/1987 05:00 AM` gives `A1+30` 45336 and `WEEKDAY(A1)` its weekday (formulas' test.xlsx,
saved by Excel: 'DATE & TIME'!X22 `WEEKDAY` of "1/1/1987 05:00 AM" is 5, W9 `EDATE(0.7, that
text)` 967223, X27 `YEARFRAC` of it 86.06). IronCalc 0.9.1 reads "1/15/2024" and "2024-01-15"
there but answers #VALUE! for a month's name, a date with a time, and reads a date before March
1900 a day late. The numbers it cannot read in a cell's text, a negative in parentheses
(`(1,234.50)`) and a whole number with a fraction (`3 1/2`), are read the same way.

The text forms are Excel's typed forms in United States English (number_text.py). At load, the
cells holding such a text as a constant are found (`text_cells`), and a formula that gives one
of them, as a plain reference, to an operator (`+ - * / ^`, a leading `-`, a trailing `%`) or
as the date of a date function (DATE_ARGUMENTS) is evaluated by the layer in the calculations
where that cell holds text (Selected.when_text), when the layer evaluates every function of the
formula. Other formulas, and workbooks without such text, cost nothing. A job's input written as
text is a value like any other: read here only where the uploaded cell held such a text.
"""

from __future__ import annotations

import re

from shared.calc.corrections.dynamic import number_text
from shared.calc.corrections.formula_tokens import TEXT_LITERAL

# The date (and time) parameters, by position, of the functions reading them; given a text,
# the layer's scratch calculation (one_value.py) is given the number Excel reads in it.
DATE_ARGUMENTS = {
    **dict.fromkeys(("YEAR", "MONTH", "DAY", "WEEKDAY", "HOUR", "MINUTE", "SECOND", "WEEKNUM", "ISOWEEKNUM",
                     "WORKDAY.INTL"), (0,)),
    # and EDATE's and EOMONTH's months, WORKDAY's days: any number Excel reads from text
    **dict.fromkeys(("DATEDIF", "DAYS", "DAYS360", "NETWORKDAYS", "NETWORKDAYS.INTL", "YEARFRAC", "EDATE",
                     "EOMONTH", "WORKDAY"), (0, 1)),
    # the rounding a date and time is given to keep its day (`INT(A1)`), and the rounding
    # corrections/dates.py writes around EDATE's and EOMONTH's months
    **dict.fromkeys(("INT", "ABS", "SIGN"), (0,)),
    **dict.fromkeys(("TRUNC", "ROUND", "ROUNDDOWN", "ROUNDUP", "MOD"), (0, 1)),
}
_OPERATORS = frozenset("+-*/^")
_MONTHS = rb"(?:JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC)"
# a text in a package part (shared strings, inline strings) that may be a date or a time
_HINT = re.compile(
    rb"<t(?:\s[^>]*)?>[^<]*?(?:\d\s*[/:-]\s*\d|\d[\s,.-]*" + _MONTHS + rb"|" + _MONTHS + rb"[A-Z]*[\s,.-]*\d"
    rb"|\(\s*\$?\s*[\d.])",  # and a negative number in parentheses: "(1,234.50)"
    re.IGNORECASE,
)


def may_hold(part: bytes) -> bool:
    """Whether a package part (xl/sharedStrings.xml, a worksheet's inline strings) may hold a
    date or a time as text: a quick look, for functions/layer.may_need_plan."""
    return _HINT.search(part) is not None


def formulas_and_text_cells(model) -> tuple[list[tuple[int, int, int, str]], frozenset[tuple[int, int, int]]]:
    """The model's formulas (sheet, row, col, formula), and (sheet, row, col) of the constant
    cells holding a date or time as text: one pass over the cells, for the layer's plan."""
    import ironcalc

    text, formula_of, type_of = ironcalc.CellType.Text, model.get_cell_formula, model.get_cell_type
    formulas, found = [], set()
    for cell in model.get_all_cells():
        formula = formula_of(*cell)
        if formula:
            formulas.append((*cell, formula))
        elif type_of(*cell) == text and number_text.unread_by_ironcalc(_text(model, cell)):
            found.add(cell)
    return formulas, frozenset(found)


def _text(model, cell: tuple[int, int, int]) -> str:
    """A text cell's text: IronCalc writes the text of a cell whose style has quotePrefix (text
    typed after an apostrophe, `'1/1/1987`) with the apostrophe first."""
    content = model.get_cell_content(*cell)
    if content.startswith("'") and model.get_cell_style(*cell).get("quote_prefix"):
        return content[1:]
    return content


_CELL_REFERENCE = re.compile(r"(?<![A-Za-z0-9_.$])\$?([A-Za-z]{1,3})\$?(\d+)(?![A-Za-z0-9_(])")


def may_read(formula: str, addresses: set[str]) -> bool:
    """Whether a formula writes a cell of `addresses` (`A1`, whatever its sheet or `$`s; text
    literals left out): a quick look before any parsing."""
    return any(column.upper() + row in addresses
               for column, row in _CELL_REFERENCE.findall(TEXT_LITERAL.sub('""', formula)))


def readings(node, out: list | None = None) -> list:
    """The one-cell references a parse tree gives to an operator or as a date function's date."""
    out = [] if out is None else out
    if isinstance(node, list):
        for item in node:
            readings(item, out)
        return out
    if not isinstance(node, tuple):
        return out
    kind = node[0]
    if kind == "op" and node[1] in _OPERATORS:
        out.extend(part for part in node[2:] if _one_cell(part))
    elif kind in ("neg", "percent") and _one_cell(node[1]):
        out.append(node[1])
    elif kind == "call":
        positions = DATE_ARGUMENTS.get(node[1], ())
        out.extend(arg for i, arg in enumerate(node[2]) if i in positions and _one_cell(arg))
    for part in node[1:]:
        if isinstance(part, (tuple, list)):
            readings(part, out)
    return out


def _one_cell(node) -> bool:
    return isinstance(node, tuple) and node[0] == "ref" and ":" not in node[1]


def as_number(name: str, position: int, value):
    """A date parameter's text as the number Excel reads in it; anything else as it is."""
    if isinstance(value, str) and position in DATE_ARGUMENTS.get(name, ()) \
            and number_text.date_like(value):
        number = number_text.value(value)
        return value if number is None else number
    return value
