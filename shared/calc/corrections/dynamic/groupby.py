"""GROUPBY and PIVOTBY for the common forms their pages on support.microsoft.com describe:
one row field (and, for PIVOTBY, one column field), a function given by name (`_xleta.SUM`) or
as a one-parameter LAMBDA, the grand totals ("Total") at the end or at the top, headers
0/1/3 (and the automatic choice), sorting by the field or a value column, a filter.

What the pages leave open raises Unsupported (the cell is flagged, never given a guessed
value): several field levels and subtotals, field_relationship, relative_to, PERCENTOF, a
vector of functions, generated headers (2), blank or error field values, text groups that
differ only in case, ties when sorting by a value, an empty result.
"""

from __future__ import annotations

from shared.calc.corrections.dynamic import values as v
from shared.calc.corrections.dynamic.arrays import _key
from shared.calc.corrections.dynamic.functions import FUNCTIONS, _aggregate, function
from shared.calc.corrections.dynamic.values import MISSING, Err, Grid, Lambda, Ref
from shared.calc.corrections.functions.text_format import Unsupported

TOTAL = "Total"
# the names IronCalc does not know that this module evaluates (as written, with and without prefix)
EVALUATED = frozenset({"GROUPBY", "PIVOTBY", "_XLFN.GROUPBY", "_XLFN.PIVOTBY"})


def _median(numbers):
    if not numbers:
        return v.NUM
    s = sorted(numbers)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


FUNCTIONS.setdefault("MEDIAN", _aggregate(_median))


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
        raise Unsupported(f"{what} of {cols} columns (several levels)")
    return [r[0] for r in grid.rows]


def _aggregator(ev, value):
    """The function argument as a callable over a list of values -> scalar."""
    if not isinstance(value, Lambda):
        raise Unsupported("a function argument that is not one LAMBDA (a vector of functions?)")
    if value.name == "PERCENTOF" or (not callable(value.body) and len(value.params) != 1):
        raise Unsupported("an aggregation of two arguments (PERCENTOF, relative_to)")

    def run(items: list):
        result = ev.call_lambda(value, [Grid([[x] for x in items])])
        if isinstance(result, (Ref, Grid)):
            grid = ev.grid(result)
            if grid.shape != (1, 1):
                raise Unsupported("an aggregation that returns an array")
            result = grid.rows[0][0]
        if isinstance(result, Lambda):
            raise Unsupported("an aggregation that returns a LAMBDA")
        return result
    return run


def _headers(ev, args, i, first_values: list) -> int:
    """field_headers: 0 no, 1 yes (hidden), 3 yes (shown); missing is automatic (the values
    start with text over a number: headers, hidden for one level)."""
    mode = _number(ev, args, i, None, (0, 1, 2, 3), "field_headers")
    if mode == 2:
        raise Unsupported("field_headers 2 (generated header names)")
    if mode is None:
        auto = (len(first_values) >= 2 and isinstance(first_values[0], str)
                and v.is_number(first_values[1]))
        mode = 1 if auto else 0
    return mode


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


def _ordered(keys: list, direction: int) -> list:
    return sorted(keys, reverse=direction < 0)


def _no_blanks(items):
    if any(x is None for x in items):
        raise Unsupported("blank cells among the values to aggregate")


@function("GROUPBY")
def _groupby(ev, args):
    if not 3 <= len(args) <= 8:
        raise Unsupported("GROUPBY with the wrong number of arguments")
    if _given(args, 7):
        raise Unsupported("GROUPBY field_relationship")
    fields = _column(ev, args[0], "GROUPBY row_fields")
    grid = ev.grid(args[1])
    columns = grid.columns()
    if grid.shape[0] != len(fields) or not columns:
        raise Unsupported("GROUPBY values not as long as the row fields")
    aggregate = _aggregator(ev, args[2])
    mode = _headers(ev, args, 3, columns[0])
    depth = _number(ev, args, 4, 1, (0, 1, -1), "GROUPBY total_depth")
    sort_by = _number(ev, args, 5, 1, [n for k in range(1, len(columns) + 2) for n in (k, -k)],
                      "GROUPBY sort_order")
    start = 1 if mode else 0
    kept = _kept(ev, args, 6, len(fields), start)
    heads = [fields[0]] + [c[0] for c in columns] if mode else None
    rows = [i for i in range(start, len(fields)) if kept[i]]
    if not rows:
        raise Unsupported("GROUPBY with no rows to group")
    for c in columns:
        _no_blanks([c[i] for i in rows])
    shown = _groups([fields[i] for i in rows])
    members: dict = {key: [] for key in shown}
    for i in rows:
        members[_key(fields[i])].append(i)
    lines = {key: [shown[key]] + [aggregate([c[i] for i in members[key]]) for c in columns]
             for key in shown}
    if abs(sort_by) == 1:
        order = _ordered(list(shown), sort_by)
    else:
        by = {key: lines[key][abs(sort_by) - 1] for key in shown}
        if any(isinstance(x, Err) or x is None for x in by.values()):
            raise Unsupported("GROUPBY sorted by a value column holding errors")
        if len({_key(x) for x in by.values()}) != len(by):
            raise Unsupported("GROUPBY sorted by a value column with ties")
        order = sorted(shown, key=lambda k: _key(by[k]), reverse=sort_by < 0)
    out = [lines[key] for key in order]
    if depth:
        total = [TOTAL] + [aggregate([c[i] for i in rows]) for c in columns]
        out = out + [total] if depth > 0 else [total] + out
    if mode == 3:
        out = [heads] + out
    return Grid(out)


@function("PIVOTBY")
def _pivotby(ev, args):
    if not 4 <= len(args) <= 11:
        raise Unsupported("PIVOTBY with the wrong number of arguments")
    if _given(args, 10):
        raise Unsupported("PIVOTBY relative_to")
    row_keys = _column(ev, args[0], "PIVOTBY row_fields")
    col_keys = _column(ev, args[1], "PIVOTBY col_fields")
    values = _column(ev, args[2], "PIVOTBY values")
    if not len(row_keys) == len(col_keys) == len(values):
        raise Unsupported("PIVOTBY fields and values of different lengths")
    aggregate = _aggregator(ev, args[3])
    mode = _headers(ev, args, 4, values)
    if mode == 3:
        raise Unsupported("PIVOTBY field_headers 3 (headers shown)")
    row_depth = _number(ev, args, 5, 1, (0, 1, -1), "PIVOTBY row_total_depth")
    row_order = _number(ev, args, 6, 1, (1, -1), "PIVOTBY row_sort_order")
    col_depth = _number(ev, args, 7, 1, (0, 1), "PIVOTBY col_total_depth")
    col_order = _number(ev, args, 8, 1, (1, -1), "PIVOTBY col_sort_order")
    start = 1 if mode else 0
    kept = _kept(ev, args, 9, len(values), start)
    rows = [i for i in range(start, len(values)) if kept[i]]
    if not rows:
        raise Unsupported("PIVOTBY with no rows to group")
    _no_blanks([values[i] for i in rows])
    row_shown = _groups([row_keys[i] for i in rows])
    col_shown = _groups([col_keys[i] for i in rows])
    row_list = _ordered(list(row_shown), row_order)
    col_list = _ordered(list(col_shown), col_order)

    def cell(rk, ck):
        items = [values[i] for i in rows
                 if (rk is None or _key(row_keys[i]) == rk) and (ck is None or _key(col_keys[i]) == ck)]
        return aggregate(items) if items else ""  # shown empty

    columns = col_list + ([None] if col_depth else [])
    header = [""] + [col_shown[ck] for ck in col_list] + ([TOTAL] if col_depth else [])
    body = [[row_shown[rk]] + [cell(rk, ck) for ck in columns] for rk in row_list]
    if row_depth:
        total = [TOTAL] + [cell(None, ck) for ck in columns]
        body = body + [total] if row_depth > 0 else [total] + body
    return Grid([header] + body)

