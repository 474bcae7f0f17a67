"""Fractions: `# ?/?`, `?/???`, `# ?/8`, `0 ??/100`.

The denominator is placeholders (the closest fraction whose denominator has at most that many
digits) or a fixed number (the numerator rounded to it, not reduced). Placeholders before the
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
        num, den = best_fraction(rest, 10 ** len(den_tokens) - 1)
    if whole_part and num == den and fixed is None:
        whole, num = whole + 1, 0
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


def best_fraction(x: float, max_den: int) -> tuple[int, int]:
    """The closest p/q to x with q <= max_den, the smallest q on a tie."""
    best = (round(x), 1)
    best_err = abs(x - best[0])
    for q in range(2, max_den + 1):
        p = math.floor(x * q + 0.5)
        err = abs(x - p / q)
        if err < best_err - 1e-15:
            best, best_err = (p, q), err
    return best
