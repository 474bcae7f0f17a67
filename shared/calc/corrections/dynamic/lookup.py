"""XLOOKUP and XMATCH in every match mode (exact, next smaller, next larger, wildcard) and
search mode (first to last, last to first, binary ascending and descending), as their pages on
support.microsoft.com describe them."""

from __future__ import annotations

import re

from shared.calc.corrections.dynamic import values as v
from shared.calc.corrections.dynamic.functions import _arity, _int, _opt, function
from shared.calc.corrections.dynamic.values import Err, Grid, Ref
from shared.calc.corrections.functions.text_format import Unsupported


def _wildcard(pattern: str) -> re.Pattern:
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "~" and i + 1 < len(pattern) and pattern[i + 1] in "*?~":
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "*" else "." if ch == "?" else re.escape(ch))
        i += 1
    return re.compile("".join(out), re.IGNORECASE | re.DOTALL)


def _kind(x):
    return 2 if isinstance(x, bool) else 1 if isinstance(x, str) else 0 if isinstance(x, float) else 3


def _cmp(a, b) -> int:
    return v.compare(a, b)


def position(value, items: list, match_mode: int, search_mode: int):
    """The 0-based position XMATCH finds, or None."""
    if value is None:  # an empty lookup value finds the first empty cell
        order = range(len(items)) if search_mode >= 0 else range(len(items) - 1, -1, -1)
        return next((i for i in order if items[i] is None), None)
    if search_mode in (2, -2):
        return _binary(value, items, match_mode, search_mode == 2)
    order = range(len(items)) if search_mode == 1 else range(len(items) - 1, -1, -1)
    if match_mode == 2 and isinstance(value, str):
        pattern = _wildcard(value)
        for i in order:
            if isinstance(items[i], str) and pattern.fullmatch(items[i]):
                return i
        return None
    best = None
    for i in order:
        item = items[i]
        if _kind(item) != _kind(value):
            continue
        order_ = _cmp(item, value)
        if order_ == 0:
            return i
        if match_mode == -1 and order_ < 0 and (best is None or _cmp(item, items[best]) > 0) or match_mode == 1 and order_ > 0 and (best is None or _cmp(item, items[best]) < 0):
            best = i
    return best if match_mode in (-1, 1) else None


def _binary(value, items, match_mode, ascending):
    low, high = 0, len(items) - 1
    below = above = None  # the last probes under and over the value
    while low <= high:
        mid = (low + high) // 2
        item = items[mid]
        order = _cmp(item, value) if _kind(item) == _kind(value) else (
            -1 if _kind(item) < _kind(value) else 1)
        if not ascending:
            order = -order
        if order == 0 and _kind(item) == _kind(value):
            return mid
        if order < 0:
            below = mid
            low = mid + 1
        else:
            above = mid
            high = mid - 1
    if match_mode == -1:
        return below if ascending else above
    if match_mode == 1:
        return above if ascending else below
    return None


def _modes(ev, args, first):
    match_mode = _int(ev, _opt(args, first, 0.0))
    search_mode = _int(ev, _opt(args, first + 1, 1.0))
    for x in (match_mode, search_mode):
        if isinstance(x, Err):
            return x
    if match_mode == 3:
        raise Unsupported("match mode 3 (a regular expression)")
    if match_mode not in (0, -1, 1, 2) or search_mode not in (1, -1, 2, -2):
        return v.VALUE
    if match_mode == 2 and search_mode in (2, -2):
        return v.VALUE  # wildcards cannot be searched by halves
    return match_mode, search_mode


def _vector(ev, value):
    grid = ev.grid(value)
    rows, cols = grid.shape
    if rows > 1 and cols > 1:
        return None
    return grid.cells(), rows == 1 and cols > 1


@function("XMATCH")
def _xmatch(ev, args):
    _arity(args, 2, 4)
    modes = _modes(ev, args, 2)
    if isinstance(modes, Err):
        return modes
    found = _vector(ev, args[1])
    if found is None:
        return v.VALUE
    items, _ = found

    def run(value):
        if isinstance(value, Err):
            return value
        at = position(value, items, *modes)
        return v.NA if at is None else float(at + 1)
    return ev.lift(run, args[0])


@function("XLOOKUP")
def _xlookup(ev, args):
    _arity(args, 3, 6)
    modes = _modes(ev, args, 4)
    if isinstance(modes, Err):
        return modes
    found = _vector(ev, args[1])
    if found is None:
        return v.VALUE
    items, across = found
    returned = args[2]
    shape = returned.shape if isinstance(returned, (Ref, Grid)) else (1, 1)
    if (shape[1] if across else shape[0]) != len(items):
        return v.VALUE
    missing = _opt(args, 3, v.NA)

    def pick(at: int):
        if isinstance(returned, Ref):
            if across:
                return Ref(returned.sheet, returned.top, returned.left + at, returned.bottom, returned.left + at)
            return Ref(returned.sheet, returned.top + at, returned.left, returned.top + at, returned.right)
        grid = ev.grid(returned)
        return Grid([[row[at]] for row in grid.rows]) if across else Grid([grid.rows[at]])

    value = args[0]
    if not isinstance(value, (Ref, Grid)) or ev.grid(value).shape == (1, 1):
        value = ev.scalar(value)
        if isinstance(value, Err):
            return value
        at = position(value, items, *modes)
        if at is None:
            return missing
        result = pick(at)
        return ev.scalar(result) if ev.grid(result).shape == (1, 1) else result

    def run(x):
        if isinstance(x, Err):
            return x
        at = position(x, items, *modes)
        if at is None:
            return ev.scalar(missing)
        result = ev.grid(pick(at))
        return result.rows[0][0] if result.shape == (1, 1) else v.CALC
    return ev.lift(run, value)
