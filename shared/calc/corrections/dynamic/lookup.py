"""XLOOKUP and XMATCH in every match mode (exact, next smaller, next larger, wildcard, regular
expression) and search mode (first to last, last to first, binary ascending and descending), as
their pages on support.microsoft.com describe them.

Where the pages say nothing, the values Excel saved in formulas' test.xlsx (LOOKUP!R162:AF197,
AH162:AW170, EXTRA!H73:P94) settle it:
- Approximate matches compare across types in Excel's sort order (Microsoft's "Sort data in a
  range or table": numbers, then text, then logical values, blanks last): the next smaller item
  of a text is the largest number when no text is smaller, and a blank lookup value comes after
  everything (its next smaller item is the largest one, it has no next larger one).
- Text compares without case, and with Unicode's case folding ("ß" finds "ss"); wildcards match
  case by case ("ß" does not match "ss").
- An error as the lookup value is the answer before any mode is checked.
- match_mode and search_mode are rounded down (a search mode of -1.1 is -2), and may be arrays,
  lifted with the lookup value as any function's arguments are.

match_mode 3 searches each text item for the lookup value as a regular expression (Microsoft's
REGEXTEST page: "whether any part of supplied text matches", case-sensitive by default, PCRE2):
regex.py refuses the patterns Python's `re` would read otherwise.
"""

from __future__ import annotations

import math

from shared.calc.corrections.dynamic import values as v
from shared.calc.corrections.dynamic.functions import _arity, _opt, function
from shared.calc.corrections.dynamic.regex import compile_pattern, wildcard
from shared.calc.corrections.dynamic.values import MISSING, Err, Grid, Ref
from shared.calc.corrections.functions.text_format import Unsupported


def _rank(x) -> int:
    """Excel's sort order of types: numbers, text, logical values, errors, blanks."""
    if isinstance(x, bool):
        return 2
    if isinstance(x, str):
        return 1
    if isinstance(x, float):
        return 0
    return 4 if x is None else 3


def _order(a, b) -> int:
    """-1, 0 or 1: a before, with or after b in that order (text without case)."""
    ra, rb = _rank(a), _rank(b)
    if ra != rb:
        return -1 if ra < rb else 1
    if ra == 1:
        a, b = a.casefold(), b.casefold()
    elif ra > 2:
        return 0  # (errors are never compared, blanks only with blanks)
    return (a > b) - (a < b)


def position(value, items: list, match_mode: int, search_mode: int):
    """The 0-based position XMATCH finds, or None."""
    order = range(len(items)) if search_mode in (1, 2) else range(len(items) - 1, -1, -1)
    if value is None:  # an empty lookup value finds the first empty cell
        found = next((i for i in order if items[i] is None), None)
        if found is not None or match_mode != -1:
            return found
    if search_mode in (2, -2):
        return _binary(value, items, match_mode, search_mode == 2)
    if match_mode == 3:
        if not isinstance(value, str):
            raise Unsupported("a regular expression match for a lookup value that is not text")
        pattern = compile_pattern(value)
        return next((i for i in order if isinstance(items[i], str) and pattern.search(items[i])), None)
    if match_mode == 2 and isinstance(value, str):
        pattern = wildcard(value)
        return next((i for i in order if isinstance(items[i], str) and pattern.fullmatch(items[i])), None)
    best = None
    for i in order:
        item = items[i]
        if item is None or isinstance(item, Err):
            continue
        found = _order(item, value)
        if found == 0:
            return i
        if match_mode == -1 and found < 0 and (best is None or _order(item, items[best]) > 0) \
                or match_mode == 1 and found > 0 and (best is None or _order(item, items[best]) < 0):
            best = i
    return best if match_mode in (-1, 1) else None


def _binary(value, items, match_mode, ascending):
    low, high = 0, len(items) - 1
    below = above = None  # the last probes under and over the value
    while low <= high:
        mid = (low + high) // 2
        found = _order(items[mid], value)
        if found == 0:
            return mid
        if not ascending:
            found = -found
        if found < 0:
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


def _whole(x):
    """A mode as Excel reads it: a number rounded down, or the Err it holds."""
    if isinstance(x, Err):
        return x
    n = v.to_number(x)
    return n if isinstance(n, Err) else math.floor(n)


def _modes(value, match_mode, search_mode):
    """(match_mode, search_mode) for one lookup value, or the Err Excel answers."""
    if isinstance(value, Err):
        return value
    if value is MISSING:
        raise Unsupported("an omitted lookup value")
    match_mode, search_mode = _whole(match_mode), _whole(search_mode)
    for x in (match_mode, search_mode):
        if isinstance(x, Err):
            return x
    if match_mode not in (0, -1, 1, 2, 3) or search_mode not in (1, -1, 2, -2):
        return v.VALUE
    if match_mode == 2 and search_mode in (2, -2):
        return v.VALUE  # wildcards cannot be searched by halves
    if match_mode == 3 and search_mode in (2, -2):
        raise Unsupported("a regular expression match with a binary search")
    return match_mode, search_mode


def _vector(ev, value):
    grid = ev.grid(value)
    rows, cols = grid.shape
    if rows > 1 and cols > 1:
        return None
    return grid.cells(), rows == 1 and cols > 1


def _mode_args(args, first):
    return _opt(args, first, 0.0), _opt(args, first + 1, 1.0)


@function("XMATCH")
def _xmatch(ev, args):
    _arity(args, 2, 4)
    found = _vector(ev, args[1])
    if found is None:
        return v.VALUE
    items, _ = found

    def run(value, match_mode, search_mode):
        modes = _modes(value, match_mode, search_mode)
        if isinstance(modes, Err):
            return modes
        at = position(value, items, *modes)
        return v.NA if at is None else float(at + 1)
    return ev.lift(run, args[0], *_mode_args(args, 2))


@function("XLOOKUP")
def _xlookup(ev, args):
    _arity(args, 3, 6)
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

    value, match_mode, search_mode = args[0], *_mode_args(args, 4)
    lifted = [x for x in (value, match_mode, search_mode)
              if isinstance(x, (Ref, Grid)) and ev.grid(x).shape != (1, 1)]
    if not lifted:  # one lookup: the whole row or column found may be returned
        value, match_mode, search_mode = (ev.scalar(x) for x in (value, match_mode, search_mode))
        modes = _modes(value, match_mode, search_mode)
        if isinstance(modes, Err):
            return modes
        at = position(value, items, *modes)
        if at is None:
            return missing
        result = pick(at)
        return ev.scalar(result) if ev.grid(result).shape == (1, 1) else result

    def run(x, match_mode, search_mode):
        modes = _modes(x, match_mode, search_mode)
        if isinstance(modes, Err):
            return modes
        at = position(x, items, *modes)
        if at is None:
            return ev.scalar(missing)
        result = ev.grid(pick(at))
        return result.rows[0][0] if result.shape == (1, 1) else v.CALC
    return ev.lift(run, value, match_mode, search_mode)


# --- VLOOKUP, HLOOKUP, MATCH and LOOKUP ----------------------------------------------------------
# Exact matches as their pages describe them (text without case, `?` and `*` wildcards and `~`
# before them, a number never equal to a text). Approximate matches (VLOOKUP/HLOOKUP with
# range_lookup TRUE or omitted, MATCH 1 or -1, LOOKUP always) as Excel answers them, which the
# pages leave to "sorted data": `approximate_position`.


def approximate_position(value, items: list, descending: bool = False) -> int | None:
    """The 0-based position an approximate VLOOKUP/HLOOKUP/MATCH/LOOKUP finds, or None (#N/A).

    Only items of the lookup value's own type take part (a number, a text, a logical value;
    blanks and errors never): a text looked up among numbers is #N/A, not the last number, and
    a blank lookup value is 0. Ascending (MATCH 1 and the others): the last item not greater
    than the value before the first greater one, the first item of the whole range excepted
    (a greater first item does not stop the search); an equal item stops it after the equal
    items that follow it (the last of `Delta, Delta` in IronCalc's MATCH.xlsx). Descending
    (MATCH -1): the last item not smaller before the first smaller one. Text without case.
    On sorted data this is the binary search's answer; on unsorted data and on data of mixed
    types it is the answer Excel saved for all 543 approximate lookups of formulas'
    test.xlsx (LOOKUP!R44:Y145, over array constants of numbers, texts, logical values and "")
    and the lookups of pycel's lookup.xlsx and IronCalc's MATCH.xlsx."""
    if value is None or value is MISSING:
        value = 0.0
    kind, found, equal = _rank(value), None, False
    for at, item in enumerate(items):
        if _rank(item) != kind:
            continue
        order = _order(item, value)
        if equal and order != 0:
            break  # past the run of equal items
        if descending:
            if order < 0:
                break
            found = at
            if order == 0:
                break
        elif order <= 0:
            found = at
            equal = order == 0 and at > 0
        elif at > 0:
            break
    return found


def _approximate(value, items: list, descending: bool = False):
    if isinstance(value, Err):
        return value
    at = approximate_position(value, items, descending)
    return v.NA if at is None else at


def _exact_mode(ev, flag):
    """True for an exact match, False for an approximate one, or the Err Excel answers."""
    flag = ev.scalar(flag)
    if isinstance(flag, Err):
        return flag
    exact = v.to_bool(flag) if not isinstance(flag, str) else v.VALUE
    if isinstance(exact, Err):
        return exact
    return not exact  # TRUE (1, or omitted): an approximate match


def _exact_position(value, items: list):
    if isinstance(value, Err):
        return value
    if value is None or value is MISSING:
        # an exact match of a blank finds neither blank cells nor empty text (Excel-saved: IronCalc's
        # MATCH.xlsx C19 over a range holding both, formulas' test.xlsx LOOKUP!W79 and W143); whether
        # it finds a 0, as an approximate match reads it (W86), no file shows
        if any(isinstance(item, float) and item == 0 for item in items):
            raise Unsupported("a blank lookup value among values holding 0")
        return v.NA
    at = position(value, items, 2 if isinstance(value, str) else 0, 1)
    return v.NA if at is None else at


def _table_lookup(across: bool):
    def run(ev, args):
        _arity(args, 3, 4)
        if isinstance(args[1], str):  # a text for a table: IronCalc's HVLOOKUP.xlsx, saved by Excel
            return v.VALUE
        table = ev.grid(args[1])
        exact = _exact_mode(ev, args[3] if len(args) > 3 and args[3] is not MISSING else True)
        if isinstance(exact, Err):
            return exact
        lines = table.rows if across else table.columns()
        keys = lines[0]

        def one(value, index):
            n = v.to_number(index)
            if isinstance(n, Err):
                return n
            n = int(n)
            if n < 1:
                return v.VALUE
            if n > len(lines):
                return v.REF
            at = _exact_position(value, keys) if exact else _approximate(value, keys)
            return at if isinstance(at, Err) else lines[n - 1][at]
        return ev.lift(one, args[0], args[2])
    return run


function("VLOOKUP")(_table_lookup(across=False))
function("HLOOKUP")(_table_lookup(across=True))


@function("MATCH")
def _match(ev, args):
    _arity(args, 2, 3)
    found = _vector(ev, args[1])
    if found is None:
        return v.NA
    items, _ = found
    flag = ev.scalar(_opt(args, 2, 1.0))
    if isinstance(flag, Err):
        return flag
    kind = v.to_number(flag)
    if isinstance(kind, Err):
        return kind

    def one(value):
        if kind == 0:
            at = _exact_position(value, items)
        else:
            at = _approximate(value, items, descending=kind < 0)
        return at if isinstance(at, Err) else float(at + 1)
    return ev.lift(one, args[0])


@function("LOOKUP")
def _lookup(ev, args):
    """Microsoft's "LOOKUP function": the vector form searches lookup_vector and answers the
    result_vector's item at the same position; the array form (two arguments) searches the
    first row of an array wider than tall, else its first column, and answers the last row's
    or column's item. A lookup_vector of several rows and columns is searched as the array form
    would search it (pycel's lookup.xlsx, Lookup!B28:I30); a result_vector of several rows and
    columns is #N/A."""
    _arity(args, 2, 3)
    table = ev.grid(args[1])
    rows, cols = table.shape
    across = cols > rows
    lines = table.rows if across else table.columns()
    if len(args) == 3:
        result = ev.grid(args[2])
        if min(result.shape) > 1:
            return v.NA
        answers = result.cells()
    else:
        answers = lines[-1]

    def one(value):
        at = _approximate(value, lines[0])
        if isinstance(at, Err):
            return at
        if at >= len(answers):
            raise Unsupported("a LOOKUP result_vector shorter than its lookup_vector")
        return answers[at]
    return ev.lift(one, args[0])
