"""Digit placeholders: plain numbers, thousands, percentages, scientific notation.

`0` shows insignificant zeros, `#` does not, `?` shows a space instead. Integer digits fill the
placeholders from the right and the leftmost placeholder takes any extra digits; each
placeholder keeps its power of ten even when it shows nothing, so literals between placeholders
stay where they are (`##0° 00' 00''` of 123456 is `12° 34' 56''`) and a thousands separator
follows the placeholder's power, not the count of digits shown. A `,` between integer
placeholders groups thousands; a `,` right after the last integer placeholder divides by 1,000;
`%` multiplies by 100. `E+`/`E-` with digits after it is scientific notation: the exponent a
multiple of the count of integer placeholders when that count is above one and the leftmost is
`#` (engineering notation, `##0.0E+0`).
"""

from __future__ import annotations

from decimal import Decimal

from shared.calc.numfmt.grammar import Section, Token, Unsupported
from shared.calc.numfmt.rounding import decimal, round_places


def format_decimal(value: float, section: Section) -> tuple[str, bool]:
    """The text of a non-negative number, and whether it rounded to zero."""
    tokens = list(section.tokens)
    if not section.has_digits:  # only literals: the number itself is not shown
        out = []
        for t in tokens:
            if t.kind in ("lit", "percent", "comma", "point", "slash"):
                out.append(t.text)
            else:
                raise Unsupported(f"{t.kind} in a literal section")
        return "".join(out), value == 0
    percent = sum(1 for t in tokens if t.kind == "percent")
    scale = _scaling_commas(tokens)
    point_at = next((i for i, t in enumerate(tokens) if t.kind == "point"), None)
    int_tokens = tokens if point_at is None else tokens[:point_at]
    frac_tokens = [] if point_at is None else tokens[point_at + 1 :]
    roles, grouping = _comma_roles(int_tokens)
    number = decimal(value) * (Decimal(100) ** percent) / (Decimal(1000) ** scale)
    frac_places = sum(1 for t in frac_tokens if t.kind == "digit")
    rounded = round_places(number, frac_places)
    frac_text = f"{rounded:f}".split(".")[1] if frac_places else ""
    out = integer_part(int_tokens, roles, int(rounded), grouping)
    if point_at is not None:
        out.append(".")
        out.extend(fraction_part(frac_tokens, frac_text))
    return "".join(out), rounded == 0


def _scaling_commas(tokens: list[Token]) -> int:
    """Commas right after the last digit placeholder (at the end of the number, or just before
    the decimal point) divide by 1,000 each and are not shown: they become empty literals."""
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
    return scale


def _comma_roles(int_tokens: list[Token]) -> tuple[dict[int, str], bool]:
    """Commas between integer placeholders turn grouping on; right after a placeholder (before
    a literal) they vanish; after a literal they are literal."""
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
    return roles, grouping


def _next_kind(tokens: list[Token], i: int) -> str | None:
    for t in tokens[i + 1 :]:
        if t.kind != "comma":
            return t.kind
    return None


def integer_part(tokens, roles, int_part: int, grouping: bool) -> list[str]:
    digits = str(int_part) if int_part else ""
    places = [i for i, t in enumerate(tokens) if t.kind == "digit"]
    pieces: dict[int, list[tuple[int, str]]] = {}
    remaining = digits
    for power, i in enumerate(reversed(places)):
        if power == len(places) - 1:  # the leftmost placeholder takes what is left
            take, remaining = remaining, ""
        else:
            take, remaining = remaining[-1:], remaining[:-1]
        if take:
            pieces[i] = [(power + len(take) - 1 - k, ch) for k, ch in enumerate(take)]
        else:
            code = tokens[i].text
            pieces[i] = [(power, "0")] if code == "0" else [(-1, " ")] if code == "?" else []
    out = []
    if not places and digits:
        out.append(digits if not grouping else f"{int_part:,}")
    for i, t in enumerate(tokens):
        if t.kind == "digit":
            for power, ch in pieces[i]:
                out.append(ch)
                if grouping and power > 0 and power % 3 == 0:
                    out.append(",")
        elif t.kind == "comma":
            if roles.get(i) == "lit":
                out.append(",")
        elif t.kind in ("percent", "lit"):
            out.append(t.text)
        else:
            raise Unsupported(f"{t.kind} in a number")
    return out


def fraction_part(tokens: list[Token], frac_text: str) -> list[str]:
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
        elif t.kind in ("percent", "lit"):
            out.append(t.text)
        else:
            raise Unsupported(f"{t.kind} in decimals")
    return out


def format_scientific(value: float, section: Section) -> str:
    """Scientific notation: mantissa placeholders, `E+`/`E-`, exponent placeholders (`0`
    pads, `#` does not), literals before, inside and after."""
    tokens = section.tokens
    e_at = next(i for i, t in enumerate(tokens) if t.kind == "exp")
    mantissa, after = list(tokens[:e_at]), list(tokens[e_at + 1 :])
    if any(t.kind in ("comma", "percent", "exp", "slash") for t in mantissa + after):
        raise Unsupported("scientific format with , % or /")
    # The exponent's placeholders are the run right after E; what follows is literal text.
    k = 0
    while k < len(after) and after[k].kind == "digit":
        k += 1
    exp_digits, tail = after[:k], after[k:]
    if not exp_digits:
        raise Unsupported("E+ without exponent digits")
    if any(t.kind not in ("lit",) for t in tail):
        raise Unsupported("codes after the exponent")
    point_at = next((i for i, t in enumerate(mantissa) if t.kind == "point"), None)
    int_tokens = mantissa if point_at is None else mantissa[:point_at]
    frac_tokens = [] if point_at is None else mantissa[point_at + 1 :]
    int_codes = [t.text for t in int_tokens if t.kind == "digit"]
    n_frac = sum(1 for t in frac_tokens if t.kind == "digit")
    period = len(int_codes)
    if period > 1 and int_codes[0] != "#":
        raise Unsupported("scientific format with several integer zeros")
    period = max(period, 1)
    number = decimal(value)
    if number == 0:
        exponent, mant = 0, Decimal(0)
    else:
        exponent = number.adjusted()
        exponent -= exponent % period
        mant = round_places(number.scaleb(-exponent), n_frac)
        if mant.adjusted() >= period:
            exponent += period
            mant = round_places(number.scaleb(-exponent), n_frac)
    int_text, _, frac_text = f"{mant:f}".partition(".")
    if int_text == "0":
        int_text = ""
    out = integer_part(int_tokens, {}, int(int_text or 0), False) if int_codes else []
    if not int_codes and int_text:
        out = [int_text]
    if point_at is not None:
        out.append(".")
        out.extend(fraction_part(frac_tokens, frac_text.ljust(n_frac, "0")))
    sign_code = tokens[e_at].text
    out.append(sign_code[0])
    if exponent < 0:
        out.append("-")
    elif sign_code[1] == "+":
        out.append("+")
    width = sum(1 for t in exp_digits if t.text == "0")
    out.append(str(abs(exponent)).rjust(width, "0"))
    out.extend(t.text for t in tail)
    return "".join(out)
