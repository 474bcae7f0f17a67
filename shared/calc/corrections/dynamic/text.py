"""TEXTSPLIT, TEXTBEFORE, TEXTAFTER, VALUETOTEXT, ARRAYTOTEXT, FIXED and DOLLAR, as their pages
on support.microsoft.com describe them."""

from __future__ import annotations

import math
import re

from shared.calc.corrections.dynamic import values as v
from shared.calc.corrections.dynamic.functions import (
    _arity,
    _elementwise,
    _int,
    _opt,
    function,
)
from shared.calc.corrections.dynamic.values import MISSING, Err, Grid
from shared.calc.corrections.functions.text_format import Unsupported
from shared.calc.numfmt import format_number
from shared.calc.numfmt.rounding import excel_round


def _delimiters(ev, value):
    items = ev.grid(value).cells()
    for x in items:
        if isinstance(x, Err):
            return x
    return [v.to_text(x) for x in items]


def _flags(ev, args, first):
    out = []
    for i in range(first, first + 2):
        x = ev.scalar(_opt(args, i, 0.0))
        if isinstance(x, Err):
            return x
        n = v.to_number(x)
        if isinstance(n, Err):
            return n
        out.append(int(n))
    return out


def _split(text: str, delimiters: list[str], ignore_case: bool) -> list[str]:
    if not delimiters:
        return [text]
    pattern = "|".join(re.escape(d) for d in sorted(delimiters, key=len, reverse=True))
    return re.split(pattern, text, flags=re.IGNORECASE if ignore_case else 0)


@function("TEXTSPLIT")
def _textsplit(ev, args):
    _arity(args, 2, 6)
    text = ev.scalar(args[0])
    if isinstance(ev.grid(args[0]).shape, tuple) and ev.grid(args[0]).shape != (1, 1):
        from shared.calc.corrections.functions.text_format import Unsupported

        raise Unsupported("TEXTSPLIT of an array of texts")
    if isinstance(text, Err):
        return text
    text = v.to_text(text)
    cols = _delimiters(ev, args[1]) if args[1] is not MISSING else []
    rows = _delimiters(ev, args[2]) if len(args) > 2 and args[2] is not MISSING else []
    for d in (cols, rows):
        if isinstance(d, Err):
            return d
    if any(d == "" for d in cols + rows) or not cols + rows:
        return v.VALUE
    flags = _flags(ev, args, 3)
    if isinstance(flags, Err):
        return flags
    ignore_empty, match_mode = flags
    pad = ev.scalar(_opt(args, 5, v.NA))
    lines = _split(text, rows, bool(match_mode)) if rows else [text]
    table = []
    for line in lines:
        cells = _split(line, cols, bool(match_mode)) if cols else [line]
        if ignore_empty:
            cells = [c for c in cells if c != ""]
        if ignore_empty and not cells:
            continue
        table.append(cells)
    if not table:
        return v.CALC
    width = max(len(r) for r in table)
    return Grid([r + [pad] * (width - len(r)) for r in table])


def _before_after(after: bool):
    def run(ev, args):
        _arity(args, 2, 6)
        delimiters = _delimiters(ev, args[1])
        if isinstance(delimiters, Err):
            return delimiters
        values = [ev.scalar(_opt(args, i, d)) for i, d in ((2, 1.0), (3, 0.0), (4, 0.0))]
        for x in values:
            if isinstance(x, Err):
                return x
        numbers = [v.to_number(x) for x in values]
        for x in numbers:
            if isinstance(x, Err):
                return x
        instance, case, end = int(numbers[0]), int(numbers[1]), int(numbers[2])
        missing = _opt(args, 5, v.NA)

        def one(x):
            if isinstance(x, Err):
                return x
            text = v.to_text(x)
            if instance == 0 or abs(instance) > len(text) and delimiters != [""]:
                return v.VALUE
            hay = text.lower() if case else text
            spots = []  # (start, end) of each delimiter found, left to right
            for d in delimiters:
                needle = d.lower() if case else d
                if needle == "":
                    spots.append((len(text), len(text)) if instance < 0 else (0, 0))
                    continue
                at = hay.find(needle)
                while at >= 0:
                    spots.append((at, at + len(needle)))
                    at = hay.find(needle, at + 1)
            spots = sorted(set(spots))
            # match_end: the end of the text counts as a delimiter
            if end:
                spots = spots + [(len(text), len(text))] if instance > 0 else [(0, 0)] + spots
            if "" in delimiters:
                spots = [(0, 0)] if instance > 0 else [(len(text), len(text))]
                spots = spots if abs(instance) == 1 else []
            chosen = None
            if instance > 0 and len(spots) >= instance:
                chosen = spots[instance - 1]
            elif instance < 0 and len(spots) >= -instance:
                chosen = spots[instance]
            if chosen is None:
                return ev.scalar(missing)
            return text[chosen[1]:] if after else text[:chosen[0]]
        return ev.lift(one, args[0])
    return run


function("TEXTBEFORE")(_before_after(False))
function("TEXTAFTER")(_before_after(True))


def _as_text(value, strict: bool) -> str | Err:
    if isinstance(value, Err):
        return value.code
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"' if strict else value
    return v.to_text(value)


@function("VALUETOTEXT")
def _valuetotext(ev, args):
    _arity(args, 1, 2)
    form = _int(ev, _opt(args, 1, 0.0))
    if isinstance(form, Err):
        return form
    if form not in (0, 1):
        return v.VALUE
    return ev.lift(lambda x: _as_text(x, bool(form)), args[0])


@function("ARRAYTOTEXT")
def _arraytotext(ev, args):
    _arity(args, 1, 2)
    form = _int(ev, _opt(args, 1, 0.0))
    if isinstance(form, Err):
        return form
    if form not in (0, 1):
        return v.VALUE
    grid = ev.grid(args[0])
    if not form:
        return ", ".join(_as_text(x, False) for x in grid.cells())
    return "{" + ";".join(",".join(_as_text(x, True) for x in row) for row in grid.rows) + "}"


@function("BAHTTEXT")
def _bahttext(ev, args):
    """Microsoft's "BAHTTEXT function": a number as Thai text with "Baht", by the bahttext
    package (PyPI, as the formulas package uses it); IronCalc 0.9.1 lacks the function. A logical
    value is its number and a blank 0, text that is not a number #VALUE! (formulas' test.xlsx
    TEXT!R6:AH6, saved by Excel)."""
    _arity(args, 1)
    from bahttext import bahttext

    def one(x):
        if isinstance(x, str) and not x.strip():
            return v.VALUE
        n = v.to_number(0.0 if x is None else x)
        return n if isinstance(n, Err) else bahttext(n)
    return ev.lift(one, args[0])


# --- FIXED and DOLLAR ------------------------------------------------------------------------

_MOST_DECIMALS = 127  # FIXED's page: "decimals can be as large as 127"


def _rounded_for_text(number, decimals):
    """FIXED's and DOLLAR's number rounded to their decimals, and the places written: (number,
    places), or the Err Excel answers. Microsoft: FIXED function ("Rounds a number to the
    specified number of decimals ... Numbers in Microsoft Excel can never have more than 15
    significant digits, but decimals can be as large as 127"; decimals negative round left of
    the point, omitted 2). As formulas' Excel-saved test.xlsx shows (TEXT!R18:AF18, EXTRA!N4:Q5):
    the number may be numeric text or a logical value (TRUE in a cell "1.00", TEXT!AO18), the
    decimals numeric text ("3"); decimals blank are 0, a text or a logical value in a cell
    #VALUE!, 128 #VALUE!, -128000 the text "0"; the first error met is the answer."""
    for value in (number, decimals):
        if isinstance(value, Err):
            return value
    if isinstance(decimals, bool):
        return v.VALUE
    x = v.to_number(number)
    places = v.to_number(decimals)
    if isinstance(x, Err) or isinstance(places, Err):
        return x if isinstance(x, Err) else places
    places = math.trunc(places)
    if places > _MOST_DECIMALS:
        return v.VALUE
    return excel_round(x, places), max(places, 0)


def _decimal_places(places: int) -> str:
    """The format code's part after the integer digits: a period and `places` zeros, or nothing."""
    return "." + "0" * places if places else ""


def _fixed(number, decimals=2.0, no_commas=False):
    """FIXED(number, [decimals], [no_commas]): the rounded number with a period and, unless
    no_commas, commas (`#,##0.00`), 15 significant digits and zeros after them (test.xlsx TEXT!R18
    FIXED of 123456789076754345682.2 "123,456,789,076,754,000,000"). no_commas is a logical value
    as Excel reads one: a number (nonzero TRUE), "TRUE" or "FALSE" in any case; other text (even
    "1" and "0") #VALUE! (test.xlsx EXTRA!Q3, O4, Q4)."""
    rounded = _rounded_for_text(number, decimals)
    if isinstance(rounded, Err):
        return rounded
    plain = v.to_bool(no_commas)
    if isinstance(plain, Err):
        return plain
    x, places = rounded
    return format_number(x, ("0" if plain else "#,##0") + _decimal_places(places))


def _dollar(number, decimals=2.0):
    """DOLLAR(number, [decimals]): the rounded number in the format `$#,##0.00_);($#,##0.00)`
    (its page), as DOLLAR writes it: no space after a positive amount (`$1,234.57`), a negative
    one in parentheses. Decimals beyond FIXED's 127 are left to the engine (no Excel evidence)."""
    places = None if isinstance(decimals, bool) else v.to_number(decimals)
    if isinstance(places, float) and math.trunc(places) > _MOST_DECIMALS:
        raise Unsupported("DOLLAR with more than 127 decimals")
    rounded = _rounded_for_text(number, decimals)
    if isinstance(rounded, Err):
        return rounded
    x, places = rounded
    shape = "$#,##0" + _decimal_places(places)
    return format_number(x, f"{shape};({shape})")


_elementwise("FIXED", _fixed, 1, 3)
_elementwise("DOLLAR", _dollar, 1, 2)
