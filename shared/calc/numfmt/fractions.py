"""Fractions: `# ?/?`, `?/???`, `# ?/8`, `0 ??/100`.

The denominator is placeholders (the fraction excel_fraction finds with a denominator of at
most that many digits) or a fixed number (the numerator rounded to it, not reduced). Placeholders before the
numerator, apart from it by a literal, show the whole part; without them the fraction is
improper. Numerator placeholders pad on the left, denominator placeholders on the right (`0`
with zeros, `?` with spaces, `#` with nothing). A whole number shows its fraction as spaces.
"""

from __future__ import annotations

import math

from shared.calc.numfmt.grammar import FormatError, Section, Token, Unsupported
from shared.calc.numfmt.numbers import integer_part
from shared.calc.numfmt.rounding import decimal, round_places


def format_fraction(value: float, section: Section) -> str:
    tokens = section.tokens
    slash = next(i for i, t in enumerate(tokens) if t.kind == "slash")
    before, after = list(tokens[:slash]), list(tokens[slash + 1 :])
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
    if not den_tokens or any(t.kind != "lit" for t in tail):
        raise Unsupported("fraction layout")
    fixed = None
    if any(t.kind == "lit" for t in den_tokens):
        if not all(t.kind == "lit" or t.text == "0" for t in den_tokens):
            raise Unsupported("fraction denominator mixing digits and placeholders")
        fixed = int("".join(t.text for t in den_tokens))
    # Numerator: the run of placeholders right before /; a whole part before a literal gap.
    j = len(before)
    while j > 0 and before[j - 1].kind == "digit":
        j -= 1
    num_tokens, lead = before[j:], before[:j]
    if not num_tokens:
        raise Unsupported("fraction without numerator")
    whole_part = any(t.kind == "digit" for t in lead)
    whole, rest = (math.floor(value), value - math.floor(value)) if whole_part else (0, value)
    if fixed is not None:
        if fixed == 0:
            raise FormatError("zero denominator")
        den = fixed
        num = int(round_places(decimal(rest * fixed), 0))
    else:
        num, den = excel_fraction(value, 10 ** len(den_tokens) - 1)
        if whole_part:
            whole, num = num // den, num % den
    out = []
    if whole_part:
        roles = {i: "lit" for i, t in enumerate(lead) if t.kind == "comma"}
        shown = integer_part(lead, roles, whole, False)
        if whole == 0 and num == 0:  # zero shows one 0 even under #
            shown = integer_part(_zero_placeholder(lead), roles, 0, False)
        out.extend(shown)
        if num == 0:
            # An exact whole number: the fraction is blanked to spaces of its width.
            tail_width = sum(len(t.text) for t in tail)
            width = len(num_tokens) + 1 + len(den_tokens) + tail_width
            return "".join(out) + " " * width
    num_text = _pad(str(num), num_tokens, left=True)
    den_text = str(den) if fixed is not None else _pad(str(den), den_tokens, left=False)
    out.append(num_text + "/" + den_text)
    out.extend(t.text for t in tail)
    return "".join(out)


def _zero_placeholder(lead: list[Token]) -> list[Token]:
    """The whole part's placeholders with the last one a `0`."""
    last = max(i for i, t in enumerate(lead) if t.kind == "digit")
    return [Token("digit", "0") if i == last else t for i, t in enumerate(lead)]


def _pad(text: str, places: list[Token], left: bool) -> str:
    width = len(places)
    if len(text) >= width:
        return text
    pad = [
        "0" if t.text == "0" else " " if t.text == "?" else ""
        for t in (places[: width - len(text)] if left else places[len(text) :])
    ]
    return "".join(pad) + text if left else text + "".join(pad)


def excel_fraction(x: float, max_den: int) -> tuple[int, int]:
    """The fraction p/q (q <= max_den) Excel shows for x >= 0: the last convergent of x's
    continued fraction whose denominator fits, computed in floating point as Excel computes it
    (so 0.3 is 2/7 and 123.456 with one digit 123 1/2, not the closer 123 4/9: Microsoft's
    "Display numbers as fractions" shows 123 1/2, 123 26/57 and 123 57/125 for up to one, two
    and three digits). The algorithm is the one SheetJS's SSF derived from Excel's output."""
    b = x
    p2, p1, p = 0, 1, 0
    q2, q1, q = 1, 0, 0
    while q1 < max_den:
        a = math.floor(b)
        p, q = a * p1 + p2, a * q1 + q2
        if b - a < 0.00000005:
            break
        b = 1 / (b - a)
        p2, p1, q2, q1 = p1, p, q1, q
    if q > max_den:
        p, q = (p2, q2) if q1 > max_den else (p1, q1)
    return p, q
