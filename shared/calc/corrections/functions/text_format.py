"""Excel's TEXT function: a number format code applied to a value, as Excel documents it.

Sources: Microsoft's "TEXT function" page (support.microsoft.com, Excel > Functions > TEXT)
and "Review guidelines for customizing a number format" / "Number format codes" pages. The
rules implemented here:

- Sections are split on `;` (outside quotes, escapes and brackets): one section serves every
  number (negatives get a leading minus), two are positive-or-zero;negative (the negative
  section shows the absolute value), three add zero, a fourth is for text. A section holding the
  text placeholder `@` is the text section wherever it stands; text without one is returned as
  it is. Conditions (`[<100]`, `[>=1E6]`) pick the section instead of the sign.
- Digit placeholders `0` (shows insignificant zeros), `#` (does not) and `?` (a space instead);
  `.` the decimal point; a `,` between digit placeholders groups thousands, a `,` right after the
  last integer placeholder scales by 1,000; `%` multiplies by 100; `E+`/`E-` scientific
  notation; `?/?` and `#/8` fractions (best approximation with at most that many denominator
  digits, or the fixed denominator). Integer digits fill the placeholders from the right, extra
  digits go to the leftmost one, so literals between placeholders stay where they are
  (`##0° 00' 00''` of 123456 is `12° 34' 56''`). Rounding is half away from zero.
- Literals: `"quoted"`, `\\x`, and any character that is not a code; `_x` is a space, `*x`
  (repeat to fill the column) is dropped by TEXT; `[Red]`/`[Color7]` colours are ignored;
  `[$€-407]` shows its currency text and `[$-409]` nothing.
- Dates and times: `y yy yyyy`, `m mm mmm mmmm mmmmm` (minutes right after `h` or before `s`),
  `d dd ddd dddd`, `h hh`, `s ss` with `.0`-`.000` fractions, `AM/PM` and `A/P` (12-hour
  clock), elapsed `[h] [m] [s]`. Serials follow Excel's 1900 date system (serial 60 is
  1900-02-29, serial 0 is 1900-01-00); negative serials and serials past 9999-12-31 are
  #VALUE!, except in an elapsed-time-only format (`[h]` of -1 is -24).
- `General`: up to 11 characters (the point counted, the sign not), rounded to fit; numbers
  of 12 or more integer digits in exponential notation (`1.23457E+11`).

What is outside these rules (other calendars, `[DBNum1]`, a condition with a negative value,
`General` of a small number that does not fit in 11 characters, text that reads as a date) raises Unsupported: the correction layer
then keeps the engine's value and reports the cell instead of guessing.
"""

from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

VALUE_ERROR = "#VALUE!"


class Unsupported(Exception):
    """A format or value this implementation does not reproduce as Excel does."""


class FormatError(Exception):
    """A format code Excel rejects: TEXT answers #VALUE!."""


# --- tokens --------------------------------------------------------------------------------

_DATE_CODES = re.compile(
    r"(?i)(am/pm|a/p|y+|m+|d+|h+|s+)"
)
_CONDITION = re.compile(r"\[(<=|>=|<>|<|>|=)\s*(-?[0-9.]+(?:E[+-]?[0-9]+)?)\]", re.IGNORECASE)
_ELAPSED = re.compile(r"\[(h+|m+|s+)\]", re.IGNORECASE)
_COLOR = re.compile(r"\[(black|white|red|green|blue|yellow|magenta|cyan|color\s*\d{1,2})\]", re.I)
_LOCALE = re.compile(r"\[\$([^\]-]*)(?:-[0-9A-Fa-f]+)?\]")


@dataclass
class Token:
    kind: str  # lit, digit, point, comma, percent, exp, slash, at, date, elapsed, ampm, general
    text: str


@dataclass
class Section:
    tokens: list[Token] = field(default_factory=list)
    condition: tuple[str, float] | None = None

    @property
    def is_text(self) -> bool:
        return any(t.kind == "at" for t in self.tokens)

    @property
    def is_date(self) -> bool:
        return any(t.kind in ("date", "elapsed", "ampm") for t in self.tokens)

    @property
    def is_general(self) -> bool:
        return any(t.kind == "general" for t in self.tokens)

    @property
    def has_digits(self) -> bool:
        return any(t.kind == "digit" for t in self.tokens)


def split_sections(code: str) -> list[str]:
    sections, current, i = [], [], 0
    while i < len(code):
        ch = code[i]
        if ch == '"':
            end = code.find('"', i + 1)
            end = len(code) if end < 0 else end + 1
            current.append(code[i:end])
            i = end
            continue
        if ch in "\\_*" and i + 1 < len(code):
            current.append(code[i : i + 2])
            i += 2
            continue
        if ch == "[":
            end = code.find("]", i)
            end = len(code) if end < 0 else end + 1
            current.append(code[i:end])
            i = end
            continue
        if ch == ";":
            sections.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    sections.append("".join(current))
    return sections


# Codes of one character, each its own token ("/" cannot start a date code such as a/p here:
# those begin with a letter).
_ONE_CHARACTER = {
    "0": "digit", "#": "digit", "?": "digit", ".": "point", ",": "comma", "%": "percent", "@": "at", "/": "slash",
}


def tokenize(text: str) -> Section:
    section = Section()
    tokens = section.tokens
    i = 0
    while i < len(text):
        ch = text[i]
        rest = text[i:]
        if ch == '"':
            end = text.find('"', i + 1)
            if end < 0:
                raise FormatError("unterminated quote")
            tokens.append(Token("lit", text[i + 1 : end]))
            i = end + 1
        elif ch == "\\":
            tokens.append(Token("lit", text[i + 1 : i + 2]))
            i += 2
        elif ch == "_":
            tokens.append(Token("lit", " "))
            i += 2
        elif ch == "*":
            i += 2  # fill characters do not appear in TEXT's result
        elif ch == "[":
            end = text.find("]", i)
            if end < 0:
                raise FormatError("unterminated bracket")
            inner = text[i : end + 1]
            i = end + 1
            cond = _CONDITION.fullmatch(inner)
            if cond:
                if section.condition is not None:
                    raise FormatError("two conditions")
                section.condition = (cond.group(1), float(cond.group(2)))
            elif _ELAPSED.fullmatch(inner):
                tokens.append(Token("elapsed", inner[1:-1].lower()))
            elif _COLOR.fullmatch(inner):
                pass
            elif _LOCALE.fullmatch(inner):
                symbol = _LOCALE.fullmatch(inner).group(1)
                if symbol:
                    tokens.append(Token("lit", symbol))
            else:
                raise Unsupported(f"format code {inner}")
        elif rest[:7].lower() == "general":
            tokens.append(Token("general", rest[:7]))
            i += 7
        elif ch in _ONE_CHARACTER:
            tokens.append(Token(_ONE_CHARACTER[ch], ch))
            i += 1
        elif ch in "Ee" and i + 1 < len(text) and text[i + 1] in "+-":
            tokens.append(Token("exp", text[i : i + 2]))
            i += 2
        else:
            match = _DATE_CODES.match(text, i)
            if match:
                word = match.group(1)
                low = word.lower()
                if low in ("am/pm", "a/p"):
                    tokens.append(Token("ampm", word))
                else:
                    tokens.append(Token("date", low))
                i = match.end()
            elif ch in "bBeEgG":
                # b/e (Buddhist and era years), g (era): codes of other calendars
                tokens.append(Token("other", ch))
                i += 1
            else:
                tokens.append(Token("lit", ch))
                i += 1
    return section


# --- numbers as Excel rounds them ----------------------------------------------------------


def _decimal(value: float) -> Decimal:
    """The number as Excel holds it for display: 15 significant digits."""
    if value == 0:
        return Decimal(0)
    return Decimal(f"{value:.15g}") if abs(value) >= 1e-300 else Decimal(repr(value))


def _round(value: Decimal, places: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


# --- the entry point -----------------------------------------------------------------------


def excel_text(value, code: str, date1904: bool = False):
    """TEXT(value, code) for a value that is a float, str, bool or None (blank); date1904 for
    workbooks in the 1904 date system (serial 0 is 1904-01-01).

    Answers the text, or VALUE_ERROR; raises Unsupported outside the rules implemented."""
    if isinstance(value, bool):
        value = "TRUE" if value else "FALSE"
    elif value is None:
        value = 0.0
    if isinstance(value, str):
        number = _text_to_number(value)
        if number is not None:
            value = number
    try:
        sections = [tokenize(s) for s in split_sections(code)]
        if isinstance(value, str):
            return _format_text(value, sections)
        return _format_number(float(value), sections, date1904)
    except FormatError:
        return VALUE_ERROR


def _text_section(sections: list[Section]) -> Section | None:
    """The fourth section, or a last section holding @; @ anywhere else is #VALUE!."""
    if len(sections) > 4:
        raise FormatError("more than four sections")
    if len(sections) == 4:
        chosen = sections[3]
    else:
        chosen = sections[-1] if sections[-1].is_text else None
    if any(s.is_text for s in sections if s is not chosen):
        raise FormatError("@ outside the text section")
    if chosen is not None and any(
        t.kind in ("digit", "date", "elapsed", "ampm", "general", "exp") for t in chosen.tokens
    ):
        raise FormatError("number or date codes in the text section")
    return chosen


def _format_text(value: str, sections: list[Section]) -> str:
    text_section = _text_section(sections)
    if text_section is None:
        return value
    for s in sections:
        if s is not text_section:
            _check_section(s)
    out = []
    for t in text_section.tokens:
        if t.kind == "at":
            out.append(value)
        elif t.kind == "lit":
            out.append(t.text)
        elif t.kind in ("digit", "point", "comma", "percent", "exp", "slash", "date",
                        "elapsed", "ampm", "general"):
            raise FormatError("a code in the text section")
    return "".join(out)


def _check_section(section: Section) -> None:
    if section.is_date and section.has_digits and not _digits_are_second_fractions(section):
        raise FormatError("digits and dates mixed")


def _digits_are_second_fractions(section: Section) -> bool:
    tokens = section.tokens
    for i, t in enumerate(tokens):
        if t.kind == "digit":
            j = i
            while j > 0 and tokens[j - 1].kind == "digit":
                j -= 1
            if t.text != "0" or j == 0 or tokens[j - 1].kind != "point":
                return False
    return True


def _pick(value: float, sections: list[Section]) -> tuple[Section, float, bool]:
    """The section for a number, the number it shows, and whether a minus sign leads."""
    text_section = _text_section(sections)
    numeric = [s for s in sections if s is not text_section]
    if not numeric:  # only a text section: the number is shown as General shows it
        return Section([Token("general", "General")]), abs(value), value < 0
    conditional = [s for s in numeric if s.condition is not None]
    if conditional:
        if value < 0:
            raise Unsupported("a negative number with a conditional format")
        for s in numeric[:2]:
            if s.condition is not None and _holds(s.condition, value):
                return s, value, False
        rest = [s for s in numeric if s.condition is None]
        if len(numeric) >= 3:
            return numeric[2], value, False
        if rest:
            return rest[0], value, False
        raise FormatError("no section for the number")
    if len(numeric) == 1:
        return numeric[0], abs(value), value < 0
    if value < 0:
        return numeric[1], -value, False
    if value == 0 and len(numeric) >= 3:
        return numeric[2], value, False
    return numeric[0], value, False


def _holds(condition: tuple[str, float], value: float) -> bool:
    op, limit = condition
    return {
        "<": value < limit, "<=": value <= limit, ">": value > limit,
        ">=": value >= limit, "=": value == limit, "<>": value != limit,
    }[op]


def _format_number(value: float, sections: list[Section], date1904: bool = False) -> str:
    for s in sections:
        _check_section(s)
    section, shown, minus = _pick(value, sections)
    if section.is_date:
        return _format_date(value if minus else shown, section, date1904)
    if section.is_general:
        body = _general(shown)
        literal_only = [t for t in section.tokens if t.kind not in ("general", "lit")]
        if literal_only:
            raise Unsupported("General with other codes")
        text = "".join(body if t.kind == "general" else t.text for t in section.tokens)
        return ("-" if minus else "") + text
    if any(t.kind == "slash" for t in section.tokens) and section.has_digits:
        text = _format_fraction(shown, section)
    elif any(t.kind == "exp" for t in section.tokens):
        text = _format_scientific(shown, section)
    else:
        text, rounded_zero = _format_decimal(shown, section)
        if rounded_zero and section.has_digits:
            minus = False  # Excel shows -0.001 as "0.00", not "-0.00"
    return ("-" if minus else "") + text


def _general(value: float) -> str:
    """General's text: "up to 11 numeric characters, with the decimal point counting as a
    numeric character" (the sign not counted), rounded to fit; "exponential notation for large
    numbers (12 or more digits)" (Microsoft KB 65903, "Number of significant digits MS Excel
    retains"; "Available number formats in Excel"). Small numbers that do not fit (Excel turns
    them exponential at a point it does not document) are Unsupported."""
    if value == 0:
        return "0"
    sign, magnitude = ("-" if value < 0 else ""), abs(value)
    text = f"{magnitude:.15g}"
    if "e" not in text and len(text) <= 11:
        return sign + text
    exact = Decimal(repr(magnitude))
    if magnitude >= 1e11:  # 12 or more integer digits
        exponent = exact.adjusted()
        suffix = f"E+{exponent:02d}"
        mantissa = (exact.scaleb(-exponent)).quantize(
            Decimal(1).scaleb(-(11 - len(suffix) - 2)), rounding=ROUND_HALF_UP
        )
        if mantissa >= 10:
            raise Unsupported("General needing rounding or exponent")
        digits = format(mantissa, "f").rstrip("0").rstrip(".")
        return sign + digits + suffix
    if magnitude >= 0.1:
        whole = len(str(int(magnitude))) if magnitude >= 1 else 1
        rounded = exact.quantize(Decimal(1).scaleb(-(10 - whole)), rounding=ROUND_HALF_UP)
        digits = format(rounded, "f")
        digits = digits.rstrip("0").rstrip(".") if "." in digits else digits
        if len(digits) <= 11:
            return sign + digits
    raise Unsupported("General needing rounding or exponent")


# --- plain numbers -------------------------------------------------------------------------


def _format_decimal(value: float, section: Section) -> tuple[str, bool]:
    tokens = list(section.tokens)
    if not section.has_digits:  # only literals: the number itself is not shown
        out = []
        for t in tokens:
            if t.kind in ("lit",):
                out.append(t.text)
            elif t.kind in ("percent", "comma", "point", "slash"):
                out.append(t.text)
            else:
                raise Unsupported(f"{t.kind} in a literal section")
        return "".join(out), value == 0
    percent = sum(1 for t in tokens if t.kind == "percent")
    # Commas right after the last digit placeholder (at the end of the number, or just before
    # the decimal point) scale by 1,000 each and are not shown.
    scale = 0
    digit_at = [i for i, t in enumerate(tokens) if t.kind == "digit"]
    point_at = next((i for i, t in enumerate(tokens) if t.kind == "point"), None)
    ends = [digit_at[-1]]
    if point_at is not None:
        before = [i for i in digit_at if i < point_at]
        if before:
            ends.append(before[-1])
    for end in ends:
        j = end + 1
        while j < len(tokens) and tokens[j].kind == "comma":
            j += 1
        if j > end + 1 and (j == len(tokens) or tokens[j].kind != "digit"):
            scale += j - end - 1
            for k in range(end + 1, j):
                tokens[k] = Token("lit", "")
    int_tokens = tokens if point_at is None else tokens[:point_at]
    frac_tokens = [] if point_at is None else tokens[point_at + 1 :]
    # Other commas: between integer placeholders they turn grouping on; right after a
    # placeholder (before a literal) they vanish; after a literal they are literal.
    int_digits = [i for i, t in enumerate(int_tokens) if t.kind == "digit"]
    grouping = False
    roles: dict[int, str] = {}
    for i, t in enumerate(int_tokens):
        if t.kind != "comma":
            continue
        prev = int_tokens[i - 1].kind if i > 0 else None
        if int_digits and int_digits[0] < i < int_digits[-1] and prev in ("digit", "comma") and (
            _next_kind(int_tokens, i) == "digit"
        ):
            grouping = True
            roles[i] = "drop"
        elif prev in ("digit", "comma") and int_digits and i > int_digits[0]:
            roles[i] = "drop"
        else:
            roles[i] = "lit"
    number = _decimal(value) * (Decimal(100) ** percent) / (Decimal(1000) ** scale)
    frac_places = sum(1 for t in frac_tokens if t.kind == "digit")
    rounded = _round(number, frac_places)
    int_part = int(rounded)
    frac_text = f"{rounded:f}".split(".")[1] if frac_places else ""
    out = _integer_part(int_tokens, roles, int_part, grouping, point_at is not None)
    if point_at is not None:
        out.append(".")
        out.extend(_fraction_part(frac_tokens, frac_text))
    return "".join(out), rounded == 0


def _next_kind(tokens: list[Token], i: int) -> str | None:
    for t in tokens[i + 1 :]:
        if t.kind != "comma":
            return t.kind
    return None


def _only_literals_after(tokens: list[Token], i: int) -> bool:
    return all(t.kind in ("lit", "percent", "comma") for t in tokens[i + 1 :])


def _integer_part(tokens, roles, int_part: int, grouping: bool, has_point: bool) -> list[str]:
    digits = str(int_part) if int_part else ""
    places = [i for i, t in enumerate(tokens) if t.kind == "digit"]
    fill: dict[int, str] = {}
    remaining = digits
    position = 0  # power of ten of the next digit from the right
    pieces: dict[int, list[tuple[int, str]]] = {}
    for n, i in enumerate(reversed(places)):
        is_leftmost = n == len(places) - 1
        if is_leftmost:
            take, remaining = remaining, ""
        else:
            take, remaining = remaining[-1:], remaining[:-1]
        if take:
            pieces[i] = [(position + k, ch) for k, ch in enumerate(reversed(take))][::-1]
            position += len(take)
        else:
            code = tokens[i].text
            if code == "0":
                pieces[i] = [(position, "0")]
                position += 1
            elif code == "?":
                pieces[i] = [(-1, " ")]
            else:
                pieces[i] = []
    for i in places:
        text = []
        for power, ch in pieces[i]:
            text.append(ch)
            if grouping and power > 0 and power % 3 == 0:
                text.append(",")
        fill[i] = "".join(text)
    out = []
    if not places and digits:
        out.append(digits if not grouping else f"{int_part:,}")
    for i, t in enumerate(tokens):
        if t.kind == "digit":
            out.append(fill[i])
        elif t.kind == "comma":
            if roles.get(i) == "lit":
                out.append(",")
        elif t.kind == "percent":
            out.append("%")
        elif t.kind == "lit":
            out.append(t.text)
        else:
            raise Unsupported(f"{t.kind} in a number")
    return out


def _fraction_part(tokens: list[Token], frac_text: str) -> list[str]:
    places = [i for i, t in enumerate(tokens) if t.kind == "digit"]
    # Trailing zeros under # vanish, under ? become spaces (from the right, until a 0 code).
    shown = list(frac_text)
    significant = len(frac_text.rstrip("0"))
    for n in range(significant, len(places)):
        code = tokens[places[n]].text
        shown[n] = "0" if code == "0" else "" if code == "#" else " "
    out, n = [], 0
    for i, t in enumerate(tokens):
        if t.kind == "digit":
            out.append(shown[n])
            n += 1
        elif t.kind == "point":
            out.append(".")
        elif t.kind == "comma":
            # after a placeholder a comma vanishes; after a literal it is one
            if i > 0 and tokens[i - 1].kind == "lit" and tokens[i - 1].text:
                out.append(",")
        elif t.kind == "percent":
            out.append("%")
        elif t.kind == "lit":
            out.append(t.text)
        else:
            raise Unsupported(f"{t.kind} in decimals")
    return out


# --- scientific ----------------------------------------------------------------------------


def _format_scientific(value: float, section: Section) -> str:
    tokens = section.tokens
    e_at = next(i for i, t in enumerate(tokens) if t.kind == "exp")
    mantissa, exponent_tokens = tokens[:e_at], tokens[e_at + 1 :]
    if any(t.kind in ("comma", "percent", "exp", "slash") for t in mantissa + exponent_tokens):
        raise Unsupported("scientific format with , % or /")
    point_at = next((i for i, t in enumerate(mantissa) if t.kind == "point"), None)
    int_tokens = mantissa if point_at is None else mantissa[:point_at]
    frac_tokens = [] if point_at is None else mantissa[point_at + 1 :]
    n_int = sum(1 for t in int_tokens if t.kind == "digit")
    n_frac = sum(1 for t in frac_tokens if t.kind == "digit")
    exp_digits = [t for t in exponent_tokens if t.kind == "digit"]
    if n_int != 1 and not (n_int > 1 and int_tokens and int_tokens[0].text == "#"):
        raise Unsupported("scientific format with several integer zeros")
    if any(t.kind == "lit" for t in int_tokens) or any(t.kind == "lit" for t in exponent_tokens):
        raise Unsupported("literals inside a scientific number")
    number = _decimal(value)
    if number == 0:
        exponent = 0
        mant = Decimal(0)
    else:
        exponent = number.adjusted()
        if n_int > 1:
            exponent -= exponent % n_int
        mant = _round(number.scaleb(-exponent), n_frac)
        if mant.adjusted() >= (n_int if n_int > 1 else 1):
            exponent += n_int if n_int > 1 else 1
            mant = _round(number.scaleb(-exponent), n_frac)
    mant_text = f"{mant:f}"
    int_text, _, frac_text = mant_text.partition(".")
    if int_text == "0" and all(t.text == "#" for t in int_tokens if t.kind == "digit"):
        int_text = ""
    out = [int_text]
    if point_at is not None:
        out.append(".")
        out.extend(_fraction_part(frac_tokens, frac_text.ljust(n_frac, "0")))
    sign_code = tokens[e_at].text
    out.append(sign_code[0])
    if exponent < 0:
        out.append("-")
    elif sign_code[1] == "+":
        out.append("+")
    width = sum(1 for t in exp_digits if t.text == "0")
    out.append(str(abs(exponent)).rjust(width, "0"))
    return "".join(out)


# --- fractions -----------------------------------------------------------------------------


def _format_fraction(value: float, section: Section) -> str:
    tokens = section.tokens
    slash = next(i for i, t in enumerate(tokens) if t.kind == "slash")
    before, after = tokens[:slash], tokens[slash + 1 :]
    if any(t.kind in ("point", "comma", "percent", "exp") for t in tokens):
        raise Unsupported("fraction with . , % or E")
    # Denominator: placeholders, or a fixed number written as digits 1-9 (literals) after /.
    den_tokens = []
    k = 0
    while k < len(after) and (
        after[k].kind == "digit" or (after[k].kind == "lit" and after[k].text.isdigit())
    ):
        den_tokens.append(after[k])
        k += 1
    tail = after[k:]
    if not den_tokens or any(t.kind == "digit" for t in tail):
        raise Unsupported("fraction layout")
    fixed = None
    if all(t.kind == "lit" or t.text == "0" for t in den_tokens) and any(
        t.kind == "lit" for t in den_tokens
    ):
        fixed = int("".join(t.text for t in den_tokens))
    elif any(t.kind == "lit" for t in den_tokens):
        raise Unsupported("fraction denominator mixing digits and placeholders")
    # Numerator: the run of placeholders right before /; an integer part before a literal gap.
    j = len(before)
    while j > 0 and before[j - 1].kind == "digit":
        j -= 1
    num_tokens, lead = before[j:], before[:j]
    if not num_tokens:
        raise Unsupported("fraction without numerator")
    int_places = [t for t in lead if t.kind == "digit"]
    whole_part = bool(int_places)
    if whole_part:
        whole = math.floor(value)
        rest = value - whole
    else:
        whole, rest = 0, value
    if fixed is not None:
        if fixed == 0:
            raise FormatError("zero denominator")
        den = fixed
        num = int(_round(_decimal(rest * fixed), 0))
    else:
        num, den = _best_fraction(rest, 10 ** len(den_tokens) - 1)
    if whole_part and num == den and fixed is None:
        whole, num = whole + 1, 0
    out = []
    if whole_part:
        int_text = str(whole) if whole else ""
        if not int_text and num == 0:
            int_text = "0"
        places = [i for i, t in enumerate(lead) if t.kind == "digit"]
        fill = {}
        remaining = int_text
        for n, i in enumerate(reversed(places)):
            if n == len(places) - 1:
                take, remaining = remaining, ""
            else:
                take, remaining = remaining[-1:], remaining[:-1]
            code = lead[i].text
            fill[i] = take or ("0" if code == "0" else " " if code == "?" else "")
        for i, t in enumerate(lead):
            out.append(fill[i] if t.kind == "digit" else t.text if t.kind == "lit" else "")
    if whole_part and num == 0:
        # An exact whole number: the fraction is blanked to spaces of its width.
        tail_width = sum(len(t.text) for t in tail if t.kind == "lit")
        width = len(num_tokens) + 1 + len(den_tokens) + tail_width
        return "".join(out) + " " * width
    num_text = _pad(str(num), num_tokens, left=True)
    den_text = str(den) if fixed is not None else _pad(str(den), den_tokens, left=False)
    out.append(num_text + "/" + den_text)
    out.extend(t.text for t in tail if t.kind == "lit")
    return "".join(out)


def _pad(text: str, places: list[Token], left: bool) -> str:
    width = len(places)
    if len(text) >= width:
        return text
    pad = []
    for t in (places[: width - len(text)] if left else places[len(text) :]):
        pad.append("0" if t.text == "0" else " " if t.text == "?" else "")
    return "".join(pad) + text if left else text + "".join(pad)


def _best_fraction(x: float, max_den: int) -> tuple[int, int]:
    best = (round(x), 1)
    best_err = abs(x - best[0])
    for q in range(2, max_den + 1):
        p = math.floor(x * q + 0.5)
        err = abs(x - p / q)
        if err < best_err - 1e-15:
            best, best_err = (p, q), err
    return best


# --- dates and times -----------------------------------------------------------------------

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
_MAX_SERIAL = 2958465  # 9999-12-31
_MAX_SERIAL_1904 = 2957003
_EPOCH_1904 = datetime.date(1904, 1, 1)


def _serial_date(days: int, date1904: bool = False) -> tuple[int, int, int]:
    """(year, month, day) of a whole serial in Excel's 1900 system (or the 1904 one)."""
    if date1904:
        d = _EPOCH_1904 + datetime.timedelta(days=days)
        return d.year, d.month, d.day
    if days == 0:
        return 1900, 1, 0
    if days == 60:
        return 1900, 2, 29
    base = datetime.date(1899, 12, 31) if days < 60 else datetime.date(1899, 12, 30)
    d = base + datetime.timedelta(days=days)
    return d.year, d.month, d.day


def _format_date(value: float, section: Section, date1904: bool = False) -> str:
    tokens = section.tokens
    max_serial = _MAX_SERIAL_1904 if date1904 else _MAX_SERIAL
    elapsed_only = all(t.kind in ("elapsed", "lit") for t in tokens) and sum(
        1 for t in tokens if t.kind == "elapsed") == 1
    if value < 0 and not elapsed_only:
        return VALUE_ERROR
    if value >= max_serial + 1 and not any(t.kind == "elapsed" for t in tokens):
        return VALUE_ERROR
    # Fractions of seconds shown: `.0`, `.00`, `.000` after a point in a time format.
    frac_places = 0
    for i, t in enumerate(tokens):
        if t.kind == "point":
            n = 0
            while i + 1 + n < len(tokens) and tokens[i + 1 + n].kind == "digit":
                n += 1
            frac_places = max(frac_places, n)
    if frac_places > 3:
        raise FormatError("more than three decimals of a second")
    negative = value < 0
    magnitude = abs(value)
    units = 10 ** frac_places
    total = int(_round(_decimal(magnitude * 86400 * units), 0))  # in 1/units seconds
    days, part = divmod(total, 86400 * units)
    seconds_total, fraction = divmod(part, units)
    hour, minute, second = seconds_total // 3600, seconds_total // 60 % 60, seconds_total % 60
    year, month, day = _serial_date(days, date1904) if days <= max_serial else (0, 0, 0)
    if days > max_serial and any(t.kind == "date" and t.text[0] in "ymd" for t in tokens):
        return VALUE_ERROR
    twelve = any(t.kind == "ampm" for t in tokens)
    # Which m's are minutes: right after an h (or [h]) or right before an s, literals between.
    kinds = []
    for i, t in enumerate(tokens):
        if t.kind == "date" and t.text in ("m", "mm"):
            prev = next((x for x in reversed(tokens[:i]) if x.kind in ("date", "elapsed")), None)
            nxt = next((x for x in tokens[i + 1 :] if x.kind in ("date", "elapsed")), None)
            is_minute = (prev is not None and prev.text[0] == "h") or (
                nxt is not None and nxt.text[0] == "s")
            kinds.append("minute" if is_minute else "month")
        else:
            kinds.append(None)
    out = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.kind == "lit":
            out.append(t.text)
        elif t.kind == "elapsed":
            seconds_all = total // units
            unit = t.text[0]
            amount = {"h": seconds_all // 3600, "m": seconds_all // 60, "s": seconds_all}[unit]
            text = str(amount).rjust(len(t.text), "0")
            out.append(("-" if negative else "") + text)
        elif t.kind == "ampm":
            pm = hour >= 12
            word = t.text
            if word.lower() == "am/pm":
                out.append("PM" if pm else "AM")
            else:
                letter = "P" if pm else "A"
                out.append(letter if word[0].isupper() else letter.lower())
        elif t.kind == "point":
            n = 0
            while i + 1 + n < len(tokens) and tokens[i + 1 + n].kind == "digit":
                n += 1
            if n:
                out.append("." + str(fraction).rjust(frac_places, "0")[:n])
                i += n
            else:
                out.append(".")
        elif t.kind == "comma":
            out.append(",")
        elif t.kind == "date":
            code = t.text
            c = code[0]
            if c == "y":  # y and yy: two digits; three or more: four
                out.append(f"{year % 100:02d}" if len(code) <= 2 else f"{year:04d}")
            elif c == "d":  # d, dd, ddd (Mon), dddd and more (Monday)
                if len(code) == 1:
                    out.append(str(day))
                elif len(code) == 2:
                    out.append(f"{day:02d}")
                else:
                    # 1900: serial 1 is a Sunday (Excel's, across its phantom 29 February);
                    # 1904: serial 0 is Friday 1 January 1904.
                    name = _DAYS[(days + 5) % 7 if date1904 else (days + 6) % 7]
                    out.append(name[:3] if len(code) == 3 else name)
            elif c == "m" and kinds[i] == "minute":
                out.append(str(minute) if len(code) == 1 else f"{minute:02d}")
            elif c == "m":
                if len(code) == 1:
                    out.append(str(month))
                elif len(code) == 2:
                    out.append(f"{month:02d}")
                elif len(code) == 3:
                    out.append(_MONTHS[month - 1][:3])
                elif len(code) == 5:  # mmmmm: the first letter
                    out.append(_MONTHS[month - 1][0])
                else:  # mmmm, and six or more: the whole name
                    out.append(_MONTHS[month - 1])
            elif c == "h":
                h = hour
                if twelve:
                    h = hour % 12 or 12
                out.append(str(h) if len(code) == 1 else f"{h:02d}")
            elif c == "s":
                out.append(str(second) if len(code) == 1 else f"{second:02d}")
        elif t.kind == "percent":
            out.append("%")
        elif t.kind == "slash":
            out.append("/")
        else:
            raise Unsupported(f"{t.kind} in a date format")
        i += 1
    return "".join(out)


# --- text that reads as a number -----------------------------------------------------------

_NUMBER_TEXT = re.compile(r"\s*([+-]?)\s*(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+))?\s*(%?)\s*")


def _text_to_number(text: str) -> float | None:
    """The number Excel reads in text TEXT is given, None for text that stays text.

    Plain numbers (with sign, decimals, exponent, percent) and h:m[:s] times are read; text with
    digits in any other shape (dates, currencies, thousands separators) is not reproduced."""
    match = _NUMBER_TEXT.fullmatch(text)
    if match:
        sign, digits, exponent, percent = match.groups()
        number = float(digits + (f"e{exponent}" if exponent else ""))
        if percent:
            number /= 100
        return -number if sign == "-" else number
    if not any(ch.isdigit() for ch in text):
        return None
    words = re.findall(r"[^\W\d_]+", text)
    if any(w.lower() not in _DATE_WORDS for w in words):
        return None  # a word that no number, date or time has: it stays text
    raise Unsupported("text that may read as a number or date as TEXT's value")


_DATE_WORDS = {
    *(m.lower() for m in _MONTHS), *(m[:3].lower() for m in _MONTHS), "sept",
    "am", "pm", "a", "p", "e",
}
