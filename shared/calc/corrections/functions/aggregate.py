"""Excel's AGGREGATE function (IronCalc 0.9.1 does not implement it: #NAME?).

Rules from Microsoft's "AGGREGATE function" page (support.microsoft.com):

- AGGREGATE(function_num, options, ref1, [ref2], ...) for function_num 1-13 (AVERAGE, COUNT,
  COUNTA, MAX, MIN, PRODUCT, STDEV.S, STDEV.P, SUM, VAR.S, VAR.P, MEDIAN, MODE.SNGL) and
  AGGREGATE(function_num, options, array, k) for 14-19 (LARGE, SMALL, PERCENTILE.INC,
  QUARTILE.INC, PERCENTILE.EXC, QUARTILE.EXC); the array form without k is #VALUE!.
- options: 0 or omitted ignore nested SUBTOTAL and AGGREGATE; 1 also hidden rows; 2 also
  error values; 3 hidden rows and errors (and nested); 4 nothing; 5 hidden rows; 6 error
  values; 7 hidden rows and errors.
- "If the array argument includes a calculation ... the function does not ignore hidden rows,
  nested subtotals or nested aggregates": only a range passed as it is carries that knowledge.
- Each underlying function keeps its own rules: numbers in references count, text and
  booleans there do not (COUNTA counts every non-empty value); no numbers is #DIV/0! for the
  averages and deviations, #NUM! for MEDIAN/LARGE/SMALL/percentiles, #N/A for MODE.SNGL, 0 for
  MAX/MIN/SUM/PRODUCT/COUNT.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from shared.calc.corrections.functions.errors import ExcelError

VALUE, NUM, DIV0, NA = "#VALUE!", "#NUM!", "#DIV/0!", "#N/A"


@dataclass
class Item:
    """One value of an argument: kind is "n", "s", "b", "e" or "empty"."""

    kind: str
    value: object
    hidden: bool = False  # in a hidden row of a referenced range
    nested: bool = False  # a SUBTOTAL or AGGREGATE formula cell of a referenced range


def aggregate(function_num, options, arguments: list[list[Item]]):
    """AGGREGATE's value (float) or raises ExcelError. arguments: each argument's items; the
    array form's k is the last argument, a list of one item."""
    fn = _integer(function_num)
    opt = 0 if options is None else _integer(options)
    if not 1 <= fn <= 19 or not 0 <= opt <= 7:
        raise ExcelError(VALUE)
    ignore_nested = opt <= 3
    ignore_hidden = opt in (1, 3, 5, 7)
    ignore_errors = opt in (2, 3, 6, 7)
    if fn >= 14:
        if len(arguments) != 2:
            raise ExcelError(VALUE)
        data_args, k_arg = arguments[:1], arguments[1]
        if len(k_arg) != 1:
            raise ExcelError(VALUE)
        k_item = k_arg[0]
        if k_item.kind == "e":
            raise ExcelError(k_item.value)
        k = _number(k_item)
    else:
        if not arguments:
            raise ExcelError(VALUE)
        data_args, k = arguments, None
    values, count_all = [], 0
    for items in data_args:
        for item in items:
            if (ignore_nested and item.nested) or (ignore_hidden and item.hidden):
                continue
            if item.kind == "e":
                if ignore_errors:
                    continue
                raise ExcelError(item.value)
            if item.kind != "empty":
                count_all += 1
            if item.kind == "n":
                values.append(float(item.value))
    return _compute(fn, values, count_all, k)


def _integer(value) -> int:
    if isinstance(value, bool) or value is None:
        raise ExcelError(VALUE)
    try:
        return math.trunc(float(value))
    except (TypeError, ValueError):
        raise ExcelError(VALUE) from None


def _number(item: Item) -> float:
    if item.kind == "n":
        return float(item.value)
    if item.kind == "b":
        return 1.0 if item.value else 0.0
    if item.kind == "empty":
        return 0.0
    try:
        return float(str(item.value).strip())
    except ValueError:
        raise ExcelError(VALUE) from None


def _compute(fn: int, xs: list[float], count_all: int, k: float | None) -> float:
    n = len(xs)
    if fn == 1:
        if not n:
            raise ExcelError(DIV0)
        return math.fsum(xs) / n
    if fn == 2:
        return float(n)
    if fn == 3:
        return float(count_all)
    if fn == 4:
        return max(xs) if xs else 0.0
    if fn == 5:
        return min(xs) if xs else 0.0
    if fn == 6:
        return math.prod(xs) if xs else 0.0
    if fn in (7, 10):
        if n < 2:
            raise ExcelError(DIV0)
        var = statistics.variance(xs)
        return math.sqrt(var) if fn == 7 else var
    if fn in (8, 11):
        if n < 1:
            raise ExcelError(DIV0)
        var = statistics.pvariance(xs)
        return math.sqrt(var) if fn == 8 else var
    if fn == 9:
        return math.fsum(xs)
    if fn == 12:
        if not n:
            raise ExcelError(NUM)
        return float(statistics.median(xs))
    if fn == 13:
        best, best_count = None, 1
        counts: dict[float, int] = {}
        for x in xs:  # the first value to reach the highest count wins, as in MODE.SNGL
            counts[x] = counts.get(x, 0) + 1
        for x in xs:
            if counts[x] > best_count:
                best, best_count = x, counts[x]
        if best is None:
            raise ExcelError(NA)
        return best
    assert k is not None
    ordered = sorted(xs)
    if fn in (14, 15):
        if k != int(k):
            from shared.calc.corrections.functions.text_format import Unsupported

            raise Unsupported("AGGREGATE LARGE/SMALL with a fractional k")
        rank = int(k)
        if not n or rank < 1 or rank > n:
            raise ExcelError(NUM)
        return ordered[-rank] if fn == 14 else ordered[rank - 1]
    if fn in (17, 19):
        quart = math.trunc(k)
        if fn == 17 and not 0 <= quart <= 4:
            raise ExcelError(NUM)
        if fn == 19 and not 1 <= quart <= 3:
            raise ExcelError(NUM)
        k = quart / 4
    if not n:
        raise ExcelError(NUM)
    if fn in (16, 17):
        if not 0 <= k <= 1:
            raise ExcelError(NUM)
        position = k * (n - 1)
    else:
        position = k * (n + 1) - 1
        if not 0 <= position <= n - 1:
            raise ExcelError(NUM)
    low = math.floor(position)
    high = min(low + 1, n - 1)
    return ordered[low] + (position - low) * (ordered[high] - ordered[low])
