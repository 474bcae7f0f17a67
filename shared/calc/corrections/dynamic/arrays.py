"""FILTER, SORT, SORTBY, UNIQUE, SEQUENCE, the shape functions (VSTACK ... WRAPCOLS), MMULT and
FREQUENCY, as their pages on support.microsoft.com describe them."""

from __future__ import annotations

import functools
import math

from shared.calc.corrections.dynamic import values as v
from shared.calc.corrections.dynamic.functions import (
    FUNCTIONS,
    _arity,
    _int,
    _opt,
    function,
)
from shared.calc.corrections.dynamic.values import MISSING, Err, Grid, Ref
from shared.calc.corrections.functions.text_format import Unsupported


def _ints(ev, *values):
    out = [_int(ev, x) for x in values]
    for x in out:
        if isinstance(x, Err):
            return x
    return out


@function("SEQUENCE")
def _sequence(ev, args):
    _arity(args, 1, 4)
    dims = _ints(ev, _opt(args, 0, 1.0), _opt(args, 1, 1.0))
    if isinstance(dims, Err):
        return dims
    rows, cols = dims
    start, step = (v.to_number(ev.scalar(_opt(args, i, 1.0))) for i in (2, 3))
    for x in (start, step):
        if isinstance(x, Err):
            return x
    if rows < 0 or cols < 0 or rows * cols > 1_048_576:
        return v.VALUE
    if rows == 0 or cols == 0:
        return v.CALC  # an empty array (SEQUENCE.xlsx: SEQUENCE(0,0) and SEQUENCE(0.3) are #CALC!)
    return Grid([[start + step * (r * cols + c) for c in range(cols)] for r in range(rows)])


@function("RANDARRAY")
def _randarray(ev, args):
    raise Unsupported("RANDARRAY (random numbers: Excel's draws cannot be reproduced)")


@function("FILTER")
def _filter(ev, args):
    _arity(args, 2, 3)
    grid = ev.grid(args[0])
    include = ev.grid(args[1])
    rows, cols = grid.shape
    ir, ic = include.shape
    if ic == 1 and ir == rows:
        flags, by_row = [r[0] for r in include.rows], True
    elif ir == 1 and ic == cols:
        flags, by_row = include.rows[0], False
    else:
        return v.VALUE
    keep = []
    for flag in flags:
        if isinstance(flag, Err):
            return flag
        b = v.to_bool(flag) if not isinstance(flag, str) else v.VALUE
        if isinstance(b, Err):
            return b
        keep.append(b)
    if by_row:
        out = [row for row, k in zip(grid.rows, keep) if k]
    else:
        out = [[x for x, k in zip(row, keep) if k] for row in grid.rows]
    if not out or not out[0]:
        if len(args) > 2 and args[2] is not MISSING:
            return args[2]
        return v.CALC
    return Grid(out)


def _key(value):
    """Sort key: numbers, text (no case), logicals, errors; blanks last."""
    if value is None:
        return (4, 0)
    if isinstance(value, Err):
        return (3, 0)
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, str):
        return (1, value.lower())
    return (0, value)


def _sorted(lines: list, keys: list[tuple[list, int]]) -> list:
    """Lines (rows or columns) ordered by each key column and order (1 or -1), stably."""
    def order(a, b):
        for values, direction in keys:
            x, y = _key(values[a]), _key(values[b])
            if x != y:
                blank = (x[0] == 4) - (y[0] == 4)
                if blank:
                    return blank  # blanks last in either order
                return direction if x > y else -direction
        return 0
    indexes = sorted(range(len(lines)), key=functools.cmp_to_key(order))
    return [lines[i] for i in indexes]


@function("SORT")
def _sort(ev, args):
    _arity(args, 1, 4)
    grid = ev.grid(args[0])
    by_col = v.to_bool(ev.scalar(_opt(args, 3, False)))
    if isinstance(by_col, Err):
        return by_col
    indexes = ev.grid(_opt(args, 1, 1.0)).cells()
    orders = ev.grid(_opt(args, 2, 1.0)).cells()
    lines = grid.columns() if by_col else grid.rows
    width = len(lines[0]) if lines else 0
    keys = []
    for n, index in enumerate(indexes):
        i = v.to_number(index)
        order = v.to_number(orders[n] if n < len(orders) else orders[-1] if len(orders) == 1 else 1.0)
        for x in (i, order):
            if isinstance(x, Err):
                return x
        if not 1 <= int(i) <= width or order not in (1.0, -1.0):
            return v.VALUE
        keys.append(([line[int(i) - 1] for line in lines], int(order)))
    ordered = _sorted(lines, keys)
    return Grid([list(c) for c in zip(*ordered)]) if by_col else Grid(ordered)


@function("SORTBY")
def _sortby(ev, args):
    if len(args) < 2:
        return v.VALUE
    grid = ev.grid(args[0])
    rows, cols = grid.shape
    keys, by_col = [], None
    i = 1
    while i < len(args):
        by = ev.grid(args[i])
        order = v.to_number(ev.scalar(_opt(args, i + 1, 1.0)))
        if isinstance(order, Err):
            return order
        if order not in (1.0, -1.0):
            return v.VALUE
        br, bc = by.shape
        if bc == 1 and br == rows and by_col is not True:
            by_col, values = False, [r[0] for r in by.rows]
        elif br == 1 and bc == cols and by_col is not False:
            by_col, values = True, by.rows[0]
        else:
            return v.VALUE
        keys.append((values, int(order)))
        i += 2
    lines = grid.columns() if by_col else grid.rows
    ordered = _sorted(lines, keys)
    return Grid([list(c) for c in zip(*ordered)]) if by_col else Grid(ordered)


def _same_key(line):
    return tuple(_key(x) for x in line)


@function("UNIQUE")
def _unique(ev, args):
    _arity(args, 1, 3)
    grid = ev.grid(args[0])
    by_col = v.to_bool(ev.scalar(_opt(args, 1, False)))
    once = v.to_bool(ev.scalar(_opt(args, 2, False)))
    for x in (by_col, once):
        if isinstance(x, Err):
            return x
    lines = grid.columns() if by_col else grid.rows
    counts: dict = {}
    order = []
    for line in lines:
        key = _same_key(line)
        if key not in counts:
            counts[key] = 0
            order.append(line)
        counts[key] += 1
    kept = [line for line in order if not once or counts[_same_key(line)] == 1]
    if not kept:
        return v.CALC
    return Grid([list(c) for c in zip(*kept)]) if by_col else Grid(kept)


def _stack(ev, args, vertical: bool):
    if not args:
        return v.VALUE
    grids = [ev.grid(a) for a in args]
    if vertical:
        width = max(g.shape[1] for g in grids)
        return Grid([row + [v.NA] * (width - len(row)) for g in grids for row in g.rows])
    height = max(g.shape[0] for g in grids)
    out = [[] for _ in range(height)]
    for g in grids:
        rows, cols = g.shape
        for r in range(height):
            out[r] += g.rows[r] if r < rows else [v.NA] * cols
    return Grid(out)


FUNCTIONS["VSTACK"] = lambda ev, args: _stack(ev, args, True)
FUNCTIONS["HSTACK"] = lambda ev, args: _stack(ev, args, False)


def _take_drop(take: bool):
    def run(ev, args):
        _arity(args, 2, 3)
        grid = ev.grid(args[0])
        rows, cols = grid.shape
        counts = _ints(ev, _opt(args, 1, MISSING) if args[1] is not MISSING else 0.0, _opt(args, 2, 0.0))
        if isinstance(counts, Err):
            return counts
        r, c = counts
        r_given = args[1] is not MISSING
        c_given = len(args) > 2 and args[2] is not MISSING

        def span(n, size, given):
            if not given:
                return 0, size
            if take:
                if n == 0:
                    return None
                return (0, min(n, size)) if n > 0 else (max(size + n, 0), size)
            if abs(n) >= size:
                return None
            return (n, size) if n >= 0 else (0, size + n)
        rs, cs = span(r, rows, r_given), span(c, cols, c_given)
        if rs is None or cs is None:
            return v.CALC
        out = [row[cs[0]:cs[1]] for row in grid.rows[rs[0]:rs[1]]]
        return Grid(out) if out and out[0] else v.CALC
    return run


FUNCTIONS["TAKE"] = _take_drop(True)
FUNCTIONS["DROP"] = _take_drop(False)


@function("EXPAND")
def _expand(ev, args):
    _arity(args, 2, 4)
    grid = ev.grid(args[0])
    rows, cols = grid.shape
    r = rows if args[1] is MISSING else _int(ev, args[1])
    c = cols if len(args) < 3 or args[2] is MISSING else _int(ev, args[2])
    for x in (r, c):
        if isinstance(x, Err):
            return x
    if r < rows or c < cols:
        return v.VALUE
    pad = ev.scalar(_opt(args, 3, v.NA))
    return Grid([(grid.rows[i] if i < rows else []) + [pad] * (c - (cols if i < rows else 0))
                 for i in range(r)])


def _trim_mode(ev, value):
    """TRIMRANGE's trim_rows or trim_cols: 0 to 3, a text that reads as one too; a fraction or
    an array is #VALUE! (formulas' Excel-saved test.xlsx LOOKUP!W135:AD135)."""
    if value is MISSING:
        return 3
    if isinstance(value, (Ref, Grid)) and value.shape != (1, 1):
        return v.VALUE
    n = v.to_number(ev.scalar(value))
    if isinstance(n, Err):
        return n
    return int(n) if n in (0, 1, 2, 3) else v.VALUE


def trimmed(ev, target, rows_mode: int, cols_mode: int):
    """A range or array without its blank edge rows (1 leading, 2 trailing, 3 both) and columns;
    #REF! when nothing is left (test.xlsx LOOKUP!Z136, TRIMRANGE of blank cells)."""
    grid = ev.grid(target)
    rows, cols = grid.shape
    filled_rows = [r for r, row in enumerate(grid.rows) if any(x is not None for x in row)]
    filled_cols = [c for c in range(cols) if any(row[c] is not None for row in grid.rows)]
    if (rows_mode or cols_mode) and not filled_rows:
        return v.REF
    top = filled_rows[0] if rows_mode in (1, 3) else 0
    bottom = filled_rows[-1] if rows_mode in (2, 3) else rows - 1
    left = filled_cols[0] if cols_mode in (1, 3) else 0
    right = filled_cols[-1] if cols_mode in (2, 3) else cols - 1
    if isinstance(target, Ref):
        return Ref(target.sheet, target.top + top, target.left + left, target.top + bottom, target.left + right)
    return Grid([row[left:right + 1] for row in grid.rows[top:bottom + 1]])


@function("TRIMRANGE")
def _trimrange(ev, args):
    _arity(args, 1, 3)
    modes = [_trim_mode(ev, _opt(args, i, MISSING)) for i in (1, 2)]
    for mode in modes:
        if isinstance(mode, Err):
            return mode
    return trimmed(ev, args[0], *modes)


def _trim_reference(mode: int):
    """`A1:.A9` (written `_TRO_TRAILING(A1:A9)`), `A1.:A9` (`_TRO_LEADING`), `A1.:.A9`
    (`_TRO_ALL`): TRIMRANGE with that mode on both axes (Microsoft: TRIMRANGE function)."""
    def run(ev, args):
        _arity(args, 1, 1)
        return trimmed(ev, args[0], mode, mode)
    return run


for _name, _mode in (("_TRO_LEADING", 1), ("_TRO_TRAILING", 2), ("_TRO_ALL", 3)):
    FUNCTIONS[_name] = _trim_reference(_mode)


def _choose(rows: bool):
    def run(ev, args):
        if len(args) < 2:
            return v.VALUE
        grid = ev.grid(args[0])
        lines = grid.rows if rows else grid.columns()
        picked = []
        for a in args[1:]:
            for n in ev.grid(a).cells():
                k = v.to_number(n)
                if isinstance(k, Err):
                    return k
                k = int(k)
                if k == 0 or abs(k) > len(lines):
                    return v.VALUE
                picked.append(lines[k - 1] if k > 0 else lines[len(lines) + k])
        return Grid(picked) if rows else Grid([list(c) for c in zip(*picked)])
    return run


FUNCTIONS["CHOOSEROWS"] = _choose(True)
FUNCTIONS["CHOOSECOLS"] = _choose(False)


def _to_line(column: bool):
    def run(ev, args):
        _arity(args, 1, 3)
        grid = ev.grid(args[0])
        ignore = _int(ev, _opt(args, 1, 0.0))
        by_col = v.to_bool(ev.scalar(_opt(args, 2, False)))
        for x in (ignore, by_col):
            if isinstance(x, Err):
                return x
        if ignore not in (0, 1, 2, 3):
            return v.VALUE
        items = [x for line in (grid.columns() if by_col else grid.rows) for x in line]
        items = [x for x in items
                 if not (ignore in (1, 3) and x is None) and not (ignore in (2, 3) and isinstance(x, Err))]
        if not items:
            return v.CALC
        return Grid([[x] for x in items]) if column else Grid([items])
    return run


FUNCTIONS["TOCOL"] = _to_line(True)
FUNCTIONS["TOROW"] = _to_line(False)


def _wrap(rows: bool):
    def run(ev, args):
        _arity(args, 2, 3)
        grid = ev.grid(args[0])
        if grid.shape[0] > 1 and grid.shape[1] > 1:
            return v.VALUE
        items = grid.cells()
        count = _int(ev, args[1])
        if isinstance(count, Err):
            return count
        if count < 1:
            return v.NUM
        pad = ev.scalar(_opt(args, 2, v.NA))
        lines = [items[i:i + count] for i in range(0, len(items), count)]
        lines[-1] = lines[-1] + [pad] * (count - len(lines[-1]))
        return Grid(lines) if rows else Grid([list(c) for c in zip(*lines)])
    return run


FUNCTIONS["WRAPROWS"] = _wrap(True)
FUNCTIONS["WRAPCOLS"] = _wrap(False)


# GROUPBY and PIVOTBY (their common forms; the rest is flagged) live in groupby.py.
from shared.calc.corrections.dynamic import groupby as _groupby  # noqa: F401 - registers


@function("MMULT")
def _mmult(ev, args):
    """The matrix product: as many rows as array1, columns as array2; #VALUE! when array1's
    columns are not array2's rows or a cell is empty or holds text (the MMULT page). An error
    among the values is refused (flagged): the page does not say which answer it gives."""
    _arity(args, 2)
    first, second = ev.grid(args[0]), ev.grid(args[1])
    for value in (*first.cells(), *second.cells()):
        if isinstance(value, Err):
            raise Unsupported("MMULT of an array holding an error")
        if not v.is_number(value):
            return v.VALUE
    if first.shape[1] != second.shape[0]:
        return v.VALUE
    columns = list(zip(*second.rows))
    return Grid([[math.fsum(a * b for a, b in zip(row, column)) for column in columns] for row in first.rows])


@function("FREQUENCY")
def _frequency(ev, args):
    """How many numbers of data_array fall in each interval the bins end (a number above the
    bin before it and at most the bin), and above the last bin: a column one longer than the
    bins; text and empty cells ignored; no bins at all, the count of the data's numbers (the
    FREQUENCY page). Bins out of order count as if sorted, each answered in its own place. An
    error among the values is refused (flagged)."""
    _arity(args, 2)
    values, bins = [], []
    for source, into in ((args[0], values), (args[1], bins)):
        for value in (ev.grid(source).cells() if isinstance(source, (Ref, Grid)) else [source]):
            if isinstance(value, Err):
                raise Unsupported("FREQUENCY of an array holding an error")
            if v.is_number(value):
                into.append(value)
    if not bins:
        return float(len(values))
    order = sorted(range(len(bins)), key=lambda i: bins[i])
    counts = [0.0] * (len(bins) + 1)
    for value in values:
        at = next((i for i in order if value <= bins[i]), len(bins))
        counts[at] += 1
    return Grid([[count] for count in counts])
