"""Excel's number formats: one implementation of the format-code grammar for everything in
sheetcalc that shows a number as Excel would (TEXT, date-format detection).

ECMA-376 Part 1 §18.8.31 (numFmts) and Microsoft's "Number format codes", "Review guidelines for
customizing a number format" and "TEXT function" pages. `grammar` parses a code (cached) and
chooses the section; `numbers`, `fractions`, `dates` and `general` render a number under it.
What Excel does in ways we cannot know (other calendars, `[DBNum1]`, the sign of a negative
number in a section a condition chose) raises Unsupported, so callers report instead of guessing.
"""

from __future__ import annotations

from shared.calc.numfmt.dates import VALUE_ERROR, format_date
from shared.calc.numfmt.fractions import format_fraction
from shared.calc.numfmt.general import general
from shared.calc.numfmt.grammar import Format, FormatError, Unsupported, parse
from shared.calc.numfmt.numbers import format_decimal, format_scientific

__all__ = [
    "VALUE_ERROR", "Format", "FormatError", "Unsupported", "format_number", "format_text",
    "general", "is_date_format", "parse",
]


def format_number(value: float, code: str, date1904: bool = False) -> str:
    """A number under a format code as Excel shows it (no fill, no colour); VALUE_ERROR for a
    code Excel rejects or a date it cannot show."""
    try:
        return _render(value, parse(code), date1904)
    except FormatError:
        return VALUE_ERROR


def format_text(value: str, code: str) -> str:
    """Text under a format code: the text section with `@` replaced, or the text itself."""
    try:
        text_section = parse(code).text
    except FormatError:
        return VALUE_ERROR
    if text_section is None:
        return value
    if text_section.has("other"):
        raise _unsupported_code(text_section)
    if text_section.has("point", "comma", "percent", "slash"):
        return VALUE_ERROR  # number codes in the section that shows text
    return "".join(value if t.kind == "at" else t.text for t in text_section.tokens)


def is_date_format(code: str | None) -> bool:
    """True when the code's first section shows dates or times (a number cell holding one is
    a date or a duration). Codes we cannot parse count as not dates."""
    if not code or code.lower() == "general":
        return False
    try:
        numeric = parse(code).numeric
    except (FormatError, Unsupported):
        return False
    return bool(numeric) and numeric[0].is_date


def _unsupported_code(section) -> Unsupported:
    """Other calendars' and numeral systems' codes: `[DBNum1]` named, b/e/g as a calendar's."""
    code = next(t.text for t in section.tokens if t.kind == "other")
    return Unsupported(f"format code {code}" if code.startswith("[") else "a code of another calendar")


# month and day names, which a locale tag of another language writes in that language
_NAMES = frozenset({"mmm", "mmmm", "mmmmm", "ddd", "dddd"})


def _render(value: float, fmt: Format, date1904: bool) -> str:
    section, shown, minus = fmt.pick(value)
    if section.has("other"):
        raise _unsupported_code(section)
    if section.foreign and any(t.kind == "ampm" or t.kind == "date" and t.text in _NAMES
                               for t in section.tokens):
        raise Unsupported(f"format code {section.foreign}")
    if section.is_date:
        return format_date(-shown if minus else shown, section, date1904)
    if section.is_general:
        if section.has("digit", "point", "comma", "percent", "exp", "slash"):
            raise Unsupported("General with other codes")
        text = "".join(general(shown) if t.kind == "general" else t.text for t in section.tokens)
        return ("-" if minus else "") + text
    if section.has("slash") and section.has_digits:
        text = format_fraction(shown, section)
    elif section.has("exp"):
        text = format_scientific(shown, section)
    else:
        text, rounded_zero = format_decimal(shown, section)
        if rounded_zero and section.has_digits:
            minus = False  # Excel shows -0.001 as "0.00", not "-0.00"
    return ("-" if minus else "") + text
