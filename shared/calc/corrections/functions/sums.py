"""Excel's SUMX2MY2, SUMX2PY2 and SUMXMY2 (IronCalc 0.9.1 sums each array's squares on its own,
so a number whose partner is text or blank still counts, and answers #VALUE! for arrays of
different sizes).

Rules from Microsoft's "SUMX2MY2 function", "SUMX2PY2 function" and "SUMXMY2 function" pages
(support.microsoft.com): the arguments are numbers or names, arrays, or references that contain
numbers; text, logical values and empty cells are ignored (the pair they belong to drops out:
each term is x and y of the same position), zeros are included; arrays with a different number
of values are #N/A. An error value in either array is that error. When no pair of numbers
remains (both arrays blank, or every number's partner text, a logical value or blank), Excel
answers #DIV/0! (measured on Excel-saved workbooks by the issue that asked for it; no cell of
tests/corpus shows that form); IronCalc 0.9.1 and a plain sum answer 0.
"""

from __future__ import annotations

import math

from shared.calc.corrections.functions.errors import ExcelError

NA = "#N/A"
NO_PAIRS = "#DIV/0!"


def _term(kind: str, x: float, y: float) -> float:
    if kind == "SUMX2MY2":
        return x * x - y * y
    if kind == "SUMX2PY2":
        return x * x + y * y
    return (x - y) ** 2


def sum_of_pairs(kind: str, xs: list, ys: list) -> float:
    """xs, ys: the arrays' values in order, each ("n", float), ("e", code) or anything else
    (text, booleans, blanks), which drops its pair."""
    if len(xs) != len(ys):
        raise ExcelError(NA)
    for item in (*xs, *ys):
        if item[0] == "e":
            raise ExcelError(item[1])
    pairs = [(x[1], y[1]) for x, y in zip(xs, ys) if x[0] == "n" and y[0] == "n"]
    if not pairs:
        raise ExcelError(NO_PAIRS)
    return math.fsum(_term(kind, x, y) for x, y in pairs)
