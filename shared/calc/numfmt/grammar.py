"""The number-format code grammar: sections, tokens, conditions, and which section a value takes.

ECMA-376 Part 1 §18.8.31 (numFmts) and Microsoft's "Number format codes" and "Review guidelines
for customizing a number format" pages. A code is up to four `;`-separated sections (positive;
negative; zero; text); conditions (`[<100]`, `[>=1E6]`) choose the section instead of the sign.
Parsing is cached: `parse(code)` answers the same immutable `Format` for the same code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


class Unsupported(Exception):
    """A format or value this implementation does not reproduce as Excel does."""


class FormatError(Exception):
    """A format code Excel rejects (TEXT answers #VALUE!)."""


_DATE_CODES = re.compile(r"(?i)(am/pm|a/p|y+|m+|d+|h+|s+)")
_CONDITION = re.compile(r"\[(<=|>=|<>|<|>|=)\s*(-?[0-9.]+(?:E[+-]?[0-9]+)?)\]", re.IGNORECASE)
_ELAPSED = re.compile(r"\[(h+|m+|s+)\]", re.IGNORECASE)
_COLOR = re.compile(r"\[(black|white|red|green|blue|yellow|magenta|cyan|color\s*\d{1,2})\]", re.IGNORECASE)
_LOCALE = re.compile(r"\[\$([^\]-]*)(?:-([^\]]*))?\]")
_HEX = re.compile(r"[0-9A-Fa-f]+")
_SYSTEM_FORMATS = (0xF800, 0xF400)  # the system's long date and time: the code's text is kept


def locale_kind(locale: str | None) -> str:
    """What a `[$symbol-locale]` tag's locale does to the output: "english" (names as here:
    none, a Windows LCID of the English language such as 409 or 809, `en-US`, the system
    formats F800/F400 and `x-sysdate`/`x-systime`), "foreign" (another language's month, day
    and AM/PM names) or "other" (another calendar or numeral system: the LCID's high bytes,
    a `,xxyy` suffix)."""
    if not locale:
        return "english"
    if _HEX.fullmatch(locale):
        lcid = int(locale, 16)
        if lcid in _SYSTEM_FORMATS:
            return "english"
        if lcid >> 16:
            return "other"
        return "english" if lcid == 0 or lcid & 0x3FF == 0x09 else "foreign"
    tag, _, system = locale.lower().partition(",")
    if system and not (_HEX.fullmatch(system) and int(system, 16) == 0):
        return "other"
    if tag in ("x-sysdate", "x-systime"):
        return "english"
    return "english" if tag.split("-")[0] == "en" and "-x-" not in tag else "foreign"
# Codes of one character, each its own token ("/" cannot start a date code such as a/p here:
# those begin with a letter).
_ONE_CHARACTER = {
    "0": "digit", "#": "digit", "?": "digit", ".": "point", ",": "comma", "%": "percent",
    "@": "at", "/": "slash",
}
NUMBER_KINDS = ("digit", "date", "elapsed", "ampm", "general", "exp")


@dataclass(frozen=True)
class Token:
    kind: str  # lit, digit, point, comma, percent, exp, slash, at, date, elapsed, ampm, general
    text: str


@dataclass(frozen=True)
class Section:
    tokens: tuple[Token, ...] = ()
    condition: tuple[str, float] | None = None
    foreign: str | None = None  # a locale tag of another language (`[$-407]`): its names differ
    styled: bool = False  # it has a colour or a condition

    def has(self, *kinds: str) -> bool:
        return any(t.kind in kinds for t in self.tokens)

    @property
    def is_text(self) -> bool:
        return self.has("at")

    @property
    def is_date(self) -> bool:
        return self.has("date", "elapsed", "ampm")

    @property
    def is_general(self) -> bool:
        return self.has("general")

    @property
    def has_digits(self) -> bool:
        return self.has("digit")


GENERAL = Section((Token("general", "General"),))


@dataclass(frozen=True)
class Format:
    """A parsed code: its number sections and its text section (None: text shows as it is)."""

    numeric: tuple[Section, ...]
    text: Section | None

    def pick(self, value: float) -> tuple[Section, float, bool]:
        """The section for a number, the number it shows, and whether a minus sign leads."""
        numeric = self.numeric
        if not numeric:  # only a text section: the number is shown as General shows it
            return GENERAL, abs(value), value < 0
        if any(s.condition is not None for s in numeric):
            return self._pick_by_condition(value)
        if len(numeric) == 1:
            return numeric[0], abs(value), value < 0
        if value < 0:
            return numeric[1], -value, False
        if value == 0 and len(numeric) >= 3:
            return numeric[2], value, False
        return numeric[0], value, False

    def _pick_by_condition(self, value: float) -> tuple[Section, float, bool]:
        numeric = self.numeric
        if value < 0:
            # Whether Excel shows the minus sign in a section a condition chose is not
            # documented: report rather than guess.
            raise Unsupported("a negative number with a conditional format")
        for s in numeric[:2]:
            if s.condition is not None and _holds(s.condition, value):
                return s, value, False
        if len(numeric) >= 3:
            return numeric[2], value, False
        rest = [s for s in numeric if s.condition is None]
        if rest:
            return rest[0], value, False
        raise FormatError("no section for the number")


def _holds(condition: tuple[str, float], value: float) -> bool:
    op, limit = condition
    return {
        "<": value < limit, "<=": value <= limit, ">": value > limit,
        ">=": value >= limit, "=": value == limit, "<>": value != limit,
    }[op]


@lru_cache(maxsize=1024)
def parse(code: str) -> Format:
    """The parsed code; FormatError for a code Excel rejects."""
    sections = [tokenize(s) for s in split_sections(code)]
    if len(sections) > 4:
        raise FormatError("more than four sections")
    if len(sections) == 4:
        text = sections[3]
    else:
        text = sections[-1] if sections[-1].is_text else None
    if any(s.is_text for s in sections if s is not text):
        raise FormatError("@ outside the text section")
    if text is not None and text.has(*NUMBER_KINDS):
        raise FormatError("number or date codes in the text section")
    # a number section of a colour or a condition alone shows the number as General:
    # "[Red][<=100];[Blue][>100]" displays numbers up to 100 in red and the others in blue
    # (Microsoft: Number format codes, specify conditions)
    numeric = tuple(
        Section((Token("general", "General"),), s.condition, s.foreign) if s.styled and not s.tokens else s
        for s in sections if s is not text
    )
    for s in numeric:
        if s.is_date and s.has_digits and not _digits_are_second_fractions(s):
            raise FormatError("digits and dates mixed")
    return Format(numeric, text)


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


def tokenize(text: str) -> Section:
    tokens: list[Token] = []
    condition = None
    foreign = None
    coloured = False
    i = 0
    while i < len(text):
        ch = text[i]
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
            tokens.append(Token("lit", " "))  # the width of the next character: one space
            i += 2
        elif ch == "*":
            i += 2  # fill characters repeat to the column's width: none in a text result
        elif ch == "[":
            end = text.find("]", i)
            if end < 0:
                raise FormatError("unterminated bracket")
            inner = text[i : end + 1]
            i = end + 1
            cond = _CONDITION.fullmatch(inner)
            if cond:
                if condition is not None:
                    raise FormatError("two conditions")
                condition = (cond.group(1), float(cond.group(2)))
            elif _ELAPSED.fullmatch(inner):
                tokens.append(Token("elapsed", inner[1:-1].lower()))
            elif _COLOR.fullmatch(inner):
                coloured = True
            elif tag := _LOCALE.fullmatch(inner):
                symbol, locale = tag.groups()
                if symbol:
                    tokens.append(Token("lit", symbol))
                kind = locale_kind(locale)
                if kind == "foreign":  # Unsupported only where the section shows a name
                    foreign = inner
                elif kind == "other":  # another calendar: wherever the section is used
                    tokens.append(Token("other", inner))
            else:  # [DBNum1], [$-ja-JP-x-gannen], other calendars and numeral systems: like
                # b, e and g below, Unsupported when the section is used, still a date or not
                tokens.append(Token("other", inner))
        elif text[i : i + 7].lower() == "general":
            tokens.append(Token("general", text[i : i + 7]))
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
                tokens.append(Token("ampm", word) if low in ("am/pm", "a/p") else Token("date", low))
                i = match.end()
            elif ch in "bBeEgG":
                # b/e (Buddhist and era years), g (era): other calendars' codes; a section
                # holding one is Unsupported when it is used.
                tokens.append(Token("other", ch))
                i += 1
            else:
                tokens.append(Token("lit", ch))
                i += 1
    return Section(tuple(tokens), condition, foreign, styled=coloured or condition is not None)


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
