"""GROUPBY, PIVOTBY and PERCENTOF, by the rules of their pages on support.microsoft.com and the
results Excel saved in tests/corpus/formulas/test/test_files/test.xlsx (LOOKUP!M25:AI41,
LOOKUP!N93:AW111, EXTRA!H96:Q103, 'MATH & TRIG'!R49:AF49).

Evaluated: row fields of one or several columns (levels, each shown in its own column, every row
carrying the labels of all its levels), for PIVOTBY column fields likewise (one header row per
level); a function given by name (`_xleta.SUM`) or as a LAMBDA of one parameter (the group's
values) or two (the group's values and the whole set: PERCENTOF); the grand total ("Total")
at the end or at the top, and row subtotals (total_depth 2 and more, or -2 and less: a subtotal
row carries the labels of its group and blanks below, the grand total is then "Grand Total");
headers 0/1/3 (and the automatic choice for one level); sorting by the fields (a number, or one
per level) or, for one level, by a value column; a filter; GROUPBY's field_relationship in the
forms where table and hierarchy agree; PIVOTBY's relative_to 0-4 (the set given as a two-
parameter function's second argument: the column's, the row's, the grand, the parent column's
or the parent row's values).

What neither the pages nor the saved results settle raises Unsupported (the cell is flagged,
never given a guessed value): automatic headers or totals with several levels (the pages and
Excel's saved results disagree), sorting several levels by a value or in one direction only,
column subtotals, PIVOTBY with several value columns or headers shown, a vector of functions,
generated headers (2), blank or error field values, text groups that differ only in case, ties
when sorting by a value, an empty result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shared.calc.corrections.dynamic import values as v
from shared.calc.corrections.dynamic.arrays import _key
from shared.calc.corrections.dynamic.functions import (
    FUNCTIONS,
    _aggregate,
    _numbers,
    function,
)
from shared.calc.corrections.dynamic.values import MISSING, Err, Grid, Lambda, Ref
from shared.calc.corrections.functions.text_format import Unsupported

TOTAL = "Total"
GRAND_TOTAL = "Grand Total"  # the grand total's label when subtotals are shown (LOOKUP!M39)


def _median(numbers):
    if not numbers:
        return v.NUM
    s = sorted(numbers)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


FUNCTIONS.setdefault("MEDIAN", _aggregate(_median))


@function("PERCENTOF")
def _percentof(ev, args):
    """SUM(data_subset)/SUM(data_all) (the page's note); an error among the values gives #NUM!,
    not the error ('MATH & TRIG'!W49:AF49 of the corpus workbook)."""
    if len(args) != 2:
        raise Unsupported("PERCENTOF with the wrong number of arguments")
    sums = []
    for a in args:
        if not isinstance(a, (Ref, Grid)):
            raise Unsupported("PERCENTOF of a value that is not a range or an array")
        numbers = _numbers(ev, [a])
        if isinstance(numbers, Err):
            return v.NUM
        sums.append(math.fsum(numbers))
    if sums[1] == 0:
        return v.DIV0
    return v.checked(sums[0] / sums[1])


def _given(args, i) -> bool:
    return i < len(args) and args[i] is not MISSING


def _number(ev, args, i, default, allowed, what):
    """An optional whole-number argument out of `allowed`; anything else is Unsupported."""
    if not _given(args, i):
        return default
    value = ev.scalar(args[i])
    n = v.to_number(value) if not isinstance(value, str) else v.VALUE
    if isinstance(n, Err) or n != int(n) or int(n) not in allowed:
        raise Unsupported(f"{what} {value!r}")
    return int(n)


def _column(ev, value, what) -> list:
    grid = ev.grid(value)
    _, cols = grid.shape
    if cols != 1:
        raise Unsupported(f"{what} of {cols} columns")
    return [r[0] for r in grid.rows]


def _fields(ev, value) -> tuple[list[tuple], int]:
    """Row or column fields: one tuple per data row, and the number of levels (columns)."""
    grid = ev.grid(value)
    return [tuple(r) for r in grid.rows], grid.shape[1]


def _aggregator(ev, value):
    """The function argument as run(items, whole) -> scalar, and its number of parameters: 1
    (given the group's values) or 2 (PERCENTOF, a two-parameter LAMBDA: also the whole set)."""
    if not isinstance(value, Lambda):
        raise Unsupported("a function argument that is not one LAMBDA (a vector of functions?)")
    if callable(value.body):
        params = 2 if value.name == "PERCENTOF" else 1
    else:
        params = len(value.params)
    if params not in (1, 2):
        raise Unsupported(f"an aggregation of {params} arguments")

    def run(items: list, whole: list):
        args = [Grid([[x] for x in items])]
        if params == 2:
            args.append(Grid([[x] for x in whole]))
        result = ev.call_lambda(value, args)
        if isinstance(result, (Ref, Grid)):
            grid = ev.grid(result)
            if grid.shape != (1, 1):
                raise Unsupported("an aggregation that returns an array")
            result = grid.rows[0][0]
        if isinstance(result, Lambda):
            raise Unsupported("an aggregation that returns a LAMBDA")
        return result
    return run, params


def _headers(ev, args, i, first_values: list, levels: int) -> int:
    """field_headers: 0 no, 1 yes (hidden), 3 yes (shown); missing is automatic (the values
    start with text over a number: headers, hidden for one level)."""
    mode = _number(ev, args, i, None, (0, 1, 2, 3), "field_headers")
    if mode == 2:
        raise Unsupported("field_headers 2 (generated header names)")
    if mode is None:
        if levels > 1:
            # the pages: shown for several levels; Excel's saved LOOKUP!Y25: not shown
            raise Unsupported("automatic field headers with several levels")
        auto = (len(first_values) >= 2 and isinstance(first_values[0], str)
                and v.is_number(first_values[1]))
        mode = 1 if auto else 0
    return mode


def _depth(ev, args, i, levels: int, what: str) -> int:
    """A total depth: 0 none, 1 grand total, k >= 2 also subtotals of the first k-1 levels (k up
    to the number of levels), negative at the top."""
    if not _given(args, i):
        if levels > 1:
            # the pages: "subtotals if possible"; Excel's saved LOOKUP!Y25: the grand total only
            raise Unsupported(f"{what} left out with several levels")
        return 1
    return _number(ev, args, i, 1, range(-levels, levels + 1), what)


def _sort(ev, args, i, levels: int, count: int, what: str):
    """([direction per level], None) to sort by the fields, or ([1], (value column, direction))
    for one level sorted by a value column; a number past the columns is #VALUE! (LOOKUP!Z34)."""
    if not _given(args, i):
        return [1] * levels, None
    numbers = []
    for x in ev.grid(args[i]).cells():
        n = v.to_number(x) if not isinstance(x, str) else v.VALUE
        if isinstance(n, Err) or n != int(n) or n == 0:
            raise Unsupported(f"{what} {x!r}")
        numbers.append(int(n))
    if any(abs(n) > levels + count for n in numbers):
        return v.VALUE
    if len(numbers) == 1 and abs(numbers[0]) > levels:
        if levels > 1:
            raise Unsupported(f"{what} by a value with several levels")
        return [1], (abs(numbers[0]) - levels - 1, 1 if numbers[0] > 0 else -1)
    if numbers == [1]:
        return [1] * levels, None  # every level ascending (LOOKUP!AE25)
    if [abs(n) for n in numbers] == list(range(1, levels + 1)):
        return [1 if n > 0 else -1 for n in numbers], None
    raise Unsupported(f"{what} {numbers} with {levels} levels")


def _kept(ev, args, i, length: int, start: int) -> list[bool]:
    """filter_array, row for row with the fields (a header row's entry is not read)."""
    if not _given(args, i):
        return [True] * length
    flags = _column(ev, args[i], "filter_array")
    if len(flags) != length:
        raise Unsupported("a filter_array whose length is not that of the fields")
    out = [False] * start
    for flag in flags[start:]:
        b = v.to_bool(flag) if not isinstance(flag, str) else v.VALUE
        if isinstance(b, Err):
            raise Unsupported(f"a filter_array value {flag!r}")
        out.append(b)
    return out


def _checked_key(value):
    if value is None or isinstance(value, Err):
        raise Unsupported("a blank or error in the grouping fields")
    return _key(value)


def _groups(keys: list) -> dict:
    """Key -> the shown value (first seen); text that differs only in case is Unsupported."""
    seen: dict = {}
    for k in keys:
        key = _checked_key(k)
        if key in seen and seen[key] != k:
            raise Unsupported("group values that differ only in case")
        seen.setdefault(key, k)
    return seen


def _no_blanks(items):
    if any(x is None for x in items):
        raise Unsupported("blank cells among the values to aggregate")


@dataclass
class Heading:
    """A row (or column) of the result: the group keys it stands for (all levels: a group; fewer:
    a subtotal; none: the grand total) and the data rows it aggregates."""

    prefix: tuple
    members: list[int]


class Axis:
    """The headings of one axis, in order (LOOKUP!M25:Q39: a group's rows, then its subtotal)."""

    def __init__(self, keys: list[tuple], levels: int, rows: list[int], depth: int,
                 directions: list[int], by=None):
        self.levels, self.rows, self.depth = levels, rows, depth
        self.shown = [_groups([keys[i][level] for i in rows]) for level in range(levels)]
        self.norm = {i: tuple(_key(x) for x in keys[i]) for i in rows}
        self.directions, self.by = directions, by
        self._parents: dict = {}
        self.headings = self._build((), rows, 0)
        if depth:
            grand = Heading((), list(rows))
            self.headings = [grand] + self.headings if depth < 0 else self.headings + [grand]

    def _build(self, prefix: tuple, members: list[int], level: int) -> list[Heading]:
        groups: dict = {}
        for i in members:
            groups.setdefault(self.norm[i][level], []).append(i)
        if self.by is None:
            order = sorted(groups, reverse=self.directions[level] < 0)
        else:
            column, direction = self.by
            by = {k: column(groups[k]) for k in groups}
            if any(isinstance(x, Err) or x is None for x in by.values()):
                raise Unsupported("sorted by a value holding errors")
            if len({_key(x) for x in by.values()}) != len(by):
                raise Unsupported("sorted by a value with ties")
            order = sorted(groups, key=lambda k: _key(by[k]), reverse=direction < 0)
        out = []
        for k in order:
            here = prefix + (k,)
            if level == self.levels - 1:
                out.append(Heading(here, groups[k]))
                continue
            inner = self._build(here, groups[k], level + 1)
            if level + 1 < abs(self.depth):
                sub = Heading(here, groups[k])
                inner = [sub] + inner if self.depth < 0 else inner + [sub]
            out += inner
        return out

    def labels(self, heading: Heading) -> list:
        if not heading.prefix:
            return [GRAND_TOTAL if abs(self.depth) >= 2 else TOTAL] + [""] * (self.levels - 1)
        shown = [self.shown[level][k] for level, k in enumerate(heading.prefix)]
        return shown + [""] * (self.levels - len(shown))

    def parent(self, heading: Heading) -> list[int]:
        """The data rows of the heading's parent group (the whole set for the first level)."""
        prefix = heading.prefix[:-1]
        if prefix not in self._parents:
            self._parents[prefix] = [i for i in self.rows if self.norm[i][:len(prefix)] == prefix]
        return self._parents[prefix]


@function("GROUPBY")
def _groupby(ev, args):
    if not 3 <= len(args) <= 8:
        raise Unsupported("GROUPBY with the wrong number of arguments")
    fields, levels = _fields(ev, args[0])
    grid = ev.grid(args[1])
    columns = grid.columns()
    if not columns or not fields:
        raise Unsupported("GROUPBY of nothing")
    if grid.shape[0] != len(fields):
        return v.VALUE  # LOOKUP!Y34
    aggregate, _ = _aggregator(ev, args[2])
    mode = _headers(ev, args, 3, columns[0], levels)
    depth = _depth(ev, args, 4, levels, "GROUPBY total_depth")
    sort = _sort(ev, args, 5, levels, len(columns), "GROUPBY sort_order")
    if isinstance(sort, Err):
        return sort
    directions, by = sort
    relationship = _number(ev, args, 7, 0, (0, 1), "GROUPBY field_relationship")
    if relationship == 1 and levels > 1 and (abs(depth) >= 2 or directions != [1] * levels):
        # the page: no subtotals for a table; sorted alike both ways only all ascending (LOOKUP!AE25:AE34)
        raise Unsupported("GROUPBY field_relationship 1 with subtotals or sorted otherwise than ascending")
    start = 1 if mode else 0
    kept = _kept(ev, args, 6, len(fields), start)
    rows = [i for i in range(start, len(fields)) if kept[i]]
    if not rows:
        raise Unsupported("GROUPBY with no rows to group")
    for c in columns:
        _no_blanks([c[i] for i in rows])
    wholes = [[c[i] for i in rows] for c in columns]
    if by is not None:
        index, direction = by
        by = (lambda members: aggregate([columns[index][i] for i in members], wholes[index]), direction)
    axis = Axis(fields, levels, rows, depth, directions, by)
    out = [axis.labels(h) + [aggregate([c[i] for i in h.members], whole) for c, whole in zip(columns, wholes)]
           for h in axis.headings]
    if mode == 3:
        out = [list(fields[0]) + [c[0] for c in columns]] + out
    return Grid(out)


@function("PIVOTBY")
def _pivotby(ev, args):
    if not 4 <= len(args) <= 11:
        raise Unsupported("PIVOTBY with the wrong number of arguments")
    row_keys, row_levels = _fields(ev, args[0])
    col_keys, col_levels = _fields(ev, args[1])
    values = _column(ev, args[2], "PIVOTBY values")
    if not len(row_keys) == len(col_keys) == len(values) or not values:
        raise Unsupported("PIVOTBY fields and values of different lengths")
    aggregate, params = _aggregator(ev, args[3])
    mode = _headers(ev, args, 4, values, max(row_levels, col_levels))
    if mode == 3:
        raise Unsupported("PIVOTBY field_headers 3 (headers shown)")
    row_depth = _depth(ev, args, 5, row_levels, "PIVOTBY row_total_depth")
    row_sort = _sort(ev, args, 6, row_levels, 1, "PIVOTBY row_sort_order")
    col_depth = _depth(ev, args, 7, col_levels, "PIVOTBY col_total_depth")
    if abs(col_depth) >= 2:
        raise Unsupported("PIVOTBY col_total_depth with subtotals")
    col_sort = _sort(ev, args, 8, col_levels, 1, "PIVOTBY col_sort_order")
    if isinstance(row_sort, Err) or isinstance(col_sort, Err):
        return v.VALUE
    start = 1 if mode else 0
    kept = _kept(ev, args, 9, len(values), start)
    relative = _number(ev, args, 10, 0, range(5), "PIVOTBY relative_to")
    rows = [i for i in range(start, len(values)) if kept[i]]
    if not rows:
        raise Unsupported("PIVOTBY with no rows to group")
    _no_blanks([values[i] for i in rows])
    whole = [values[i] for i in rows]

    def ordering(sort):
        """A value sort: by the aggregate of all a heading's values (LOOKUP!AJ92:AM99)."""
        directions, by = sort
        if by is None:
            return directions, None
        if params == 2:
            raise Unsupported("PIVOTBY sorted by the values of a two-parameter aggregation")
        return directions, (lambda members: aggregate([values[i] for i in members], whole), by[1])

    row_axis = Axis(row_keys, row_levels, rows, row_depth, *ordering(row_sort))
    col_axis = Axis(col_keys, col_levels, rows, col_depth, *ordering(col_sort))

    def cell(rh: Heading, ch: Heading):
        inside = set(ch.members)
        items = [values[i] for i in rh.members if i in inside]
        if not items:
            return ""  # shown empty
        if params == 1:
            return aggregate(items, [])
        # relative_to: column totals, row totals, grand total, parent column, parent row
        if relative == 0:
            across, down = rows, ch.members
        elif relative == 1:
            across, down = rh.members, rows
        elif relative == 2:
            across, down = rows, rows
        elif relative == 3:
            across, down = rh.members, col_axis.parent(ch)
        else:
            across, down = row_axis.parent(rh), ch.members
        outer = set(down)
        return aggregate(items, [values[i] for i in across if i in outer])

    header = [[""] * row_levels + [col_axis.labels(ch)[level] for ch in col_axis.headings]
              for level in range(col_levels)]
    body = [row_axis.labels(rh) + [cell(rh, ch) for ch in col_axis.headings] for rh in row_axis.headings]
    return Grid(header + body)
