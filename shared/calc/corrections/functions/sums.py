"""Excel's SUMX2MY2, SUMX2PY2 and SUMXMY2 (IronCalc 0.9.1 sums each array's squares on its own,
so a number whose partner is text or blank still counts, and answers #VALUE! for arrays of
different sizes).

Rules from Microsoft's "SUMX2MY2 function", "SUMX2PY2 function" and "SUMXMY2 function" pages
(support.microsoft.com): the arguments are numbers or names, arrays, or references that contain
numbers; text, logical values and empty cells are ignored (the pair they belong to drops out:
each term is x and y of the same position), zeros are included; arrays with a different number
of values are #N/A. An error value in either array is that error.
"""

from __future__ import annotations

import math

NA = "#N/A"


class ExcelError(Exception):
    def __init__(self, code: str):
        super().__init__(code)
        self.code = code


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
    return math.fsum(
        _term(kind, x[1], y[1]) for x, y in zip(xs, ys) if x[0] == "n" and y[0] == "n"
    )
