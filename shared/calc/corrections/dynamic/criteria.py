"""COUNTIF, COUNTIFS, SUMIF, SUMIFS, AVERAGEIF, AVERAGEIFS, MAXIFS and MINIFS with their
criteria, as their pages on support.microsoft.com describe them, for the cells the layer
evaluates: a criteria argument that is an array (`SUM(COUNTIF(A:A,{"x","y"}))`), which IronCalc
0.9.1 answers 0 for, and AVERAGEIF(S), MAXIFS and MINIFS given a criterion "not equal to a
text", whose blank, numeric and logical cells IronCalc leaves out (functions/not_equal.py).

A criterion is a value, or text starting with a comparison operator (=, <>, <, >, <=, >=):
- a number (or text that reads as one, "32", ">32") compares with the numbers of the range; with
  "=" a number typed as text in the range counts too, as Excel reads it (COUNTIF(A1:A3,1) counts
  a cell holding the text "1");
- TRUE and FALSE compare with logical values (in order for <, >, <= and >=: FALSE before TRUE),
  an error value (#N/A) finds that error;
- other text matches text without case, with `?`, `*` and `~` as wildcards for = and <>, and
  compares in order for < and >;
- "" (or "=") finds blank cells ("" also empty text), "<>" cells that are not blank; "<>x"
  every cell but those "x" finds, blanks included.
A blank criteria cell is the number 0. Text that may read as a date or a time (">1/1/2020",
"12:00") depends on the reader's locale: refused, not guessed.
"""

from __future__ import annotations

import math
import re

from shared.calc.corrections.dynamic import values as v
from shared.calc.corrections.dynamic.functions import function
from shared.calc.corrections.dynamic.regex import wildcard
from shared.calc.corrections.dynamic.values import Err, Grid, Ref
from shared.calc.corrections.functions.text_format import Unsupported

_OPERATORS = ("<=", ">=", "<>", "<", ">", "=")
_ERRORS = {"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A"}
_DATE_LIKE = re.compile(r"\d\s*[/:-]\s*\d|\d\s*(?:am|pm)\b", re.IGNORECASE)
_COMPARE = {
    "=": lambda a, b: a == b, "<>": lambda a, b: a != b, "<": lambda a, b: a < b,
    ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b,
}


def _number_text(text: str):
    if v._NUMBER_TEXT.fullmatch(text):
        number = v.to_number(text)
        return None if isinstance(number, Err) else number
    return None


def _text_operand(rest: str) -> bool:
    return bool(rest) and _number_text(rest) is None and rest.upper() not in ("TRUE", "FALSE") \
        and rest.upper() not in _ERRORS and not _DATE_LIKE.search(rest)


def plain_text(rest: str) -> bool:
    """Whether a criterion's text after its operator is compared as text, without wildcards:
    not empty, not a number, a logical value, an error code or a date or time (the rules above;
    functions/not_equal.py and dynamic._not_equal_text decide by it)."""
    return _text_operand(rest) and not any(ch in rest for ch in "*?~")


def ordered_text(rest: str) -> bool:
    """Whether a criterion's text after <, >, <= or >= is compared with texts in order (the
    rules above: `?` and `*` are plain characters there; a `~`, whose role there no page states,
    is left out; functions/criteria_ranges.py decides by it)."""
    return _text_operand(rest) and "~" not in rest


def criterion(value):
    """A test of one cell's value for a criteria value."""
    if value is None:
        # a blank criteria cell is the number 0: it counts the cells holding 0, not blank cells,
        # empty text or FALSE (Excel-saved: IronCalc's COUNTIF.xlsx Rows!AA6, 2 over a column
        # holding two zeros, two "" and blanks; AI2, 1 beside TRUE, FALSE and blanks)
        return _numeric("=", 0.0)
    if isinstance(value, Err):
        return lambda x: isinstance(x, Err) and x.code == value.code
    if isinstance(value, bool):
        return lambda x: isinstance(x, bool) and x == value
    if isinstance(value, float):
        return _numeric("=", value)
    text = str(value)
    op = next((o for o in _OPERATORS if text.startswith(o)), "=")
    rest = text[len(op):] if text.startswith(op) else text
    number = _number_text(rest)
    if number is not None:
        return _numeric(op, number)
    if rest.upper() in ("TRUE", "FALSE"):
        flag = rest.upper() == "TRUE"
        same = lambda x: isinstance(x, bool) and x == flag  # noqa: E731
        if op not in ("=", "<>"):  # logical values in order, FALSE before TRUE (test.xlsx
            compare = _COMPARE[op]  # STATISTICAL!Y24: COUNTIF(...,"<=TRUE") counts a TRUE)
            return lambda x: isinstance(x, bool) and compare(int(x), int(flag))
        return same if op == "=" else (lambda x: not same(x))
    if rest.upper() in _ERRORS:
        same = lambda x: isinstance(x, Err) and x.code == rest.upper()  # noqa: E731
        return same if op == "=" else (lambda x: not same(x)) if op == "<>" else _never
    if _DATE_LIKE.search(rest):
        raise Unsupported(f"criteria {text!r} (a date or time read by the locale)")
    if rest == "":
        if op == "=":
            return (lambda x: x is None or x == "") if not text.startswith("=") else (lambda x: x is None)
        if op == "<>":
            return lambda x: x is not None
        return _never
    if op in ("=", "<>"):
        pattern = wildcard(rest)
        same = lambda x: isinstance(x, str) and bool(pattern.fullmatch(x))  # noqa: E731
        return same if op == "=" else (lambda x: not same(x))
    folded, compare = rest.casefold(), _COMPARE[op]
    return lambda x: isinstance(x, str) and compare(x.casefold(), folded)


def _never(x) -> bool:
    return False


def _numeric(op: str, target: float):
    compare = _COMPARE[op]

    def test(x):
        if isinstance(x, float) and not isinstance(x, bool):
            return compare(x, target)
        if op == "=" and isinstance(x, str):
            number = _number_text(x)
            return number is not None and number == target
        return op == "<>"
    return test


def _grid(ev, value) -> Grid:
    if not isinstance(value, (Ref, Grid)):
        raise Unsupported("a criteria range that is not a range")
    return ev.grid(value)


def _matches(pairs: list, shape) -> list[list[bool]]:
    """Which cells meet every (range, criteria value) pair; `shape` the ranges' common size."""
    keep = [[True] * shape[1] for _ in range(shape[0])]
    for grid, value in pairs:
        test = criterion(value)
        for r, row in enumerate(grid.rows):
            for c, x in enumerate(row):
                if keep[r][c] and not test(x):
                    keep[r][c] = False
    return keep


def _conditional(kind: str, summed: int | None, first_pair: int, single: bool):
    """COUNTIF(S), SUMIF(S), AVERAGEIF(S): `summed` the position of the range added up (None to
    count), `first_pair` the position of the first criteria range, `single` for the IF forms
    (range, criteria[, sum_range])."""
    def run(ev, args):
        if single:
            if len(args) < 2 or len(args) > (3 if summed is not None else 2):
                raise Unsupported(f"{kind} with {len(args)} arguments")
            ranges = [_grid(ev, args[0])]
            criteria = [args[1]]
            total = _grid(ev, args[2]) if summed is not None and len(args) > 2 else ranges[0]
        else:
            rest = args[first_pair:]
            if not rest or len(rest) % 2:
                return v.VALUE
            ranges = [_grid(ev, a) for a in rest[0::2]]
            criteria = list(rest[1::2])
            total = _grid(ev, args[summed]) if summed is not None else ranges[0]
        shape = ranges[0].shape
        if any(g.shape != shape for g in ranges) or total.shape != shape:
            if single and summed is not None:
                raise Unsupported(f"{kind} with a sum range of another size")
            return v.VALUE

        def one(*values):
            keep = _matches(list(zip(ranges, values)), shape)
            picked = [x for krow, trow in zip(keep, total.rows) for k, x in zip(krow, trow) if k]
            if summed is None:
                return float(len(picked))
            for x in picked:
                if isinstance(x, Err):
                    return x
            numbers = [x for x in picked if isinstance(x, float) and not isinstance(x, bool)]
            if kind.startswith("AVERAGE"):
                return math.fsum(numbers) / len(numbers) if numbers else v.DIV0
            if kind in ("MAXIFS", "MINIFS"):  # no number kept: 0 (the MAXIFS and MINIFS pages)
                return (max if kind == "MAXIFS" else min)(numbers) if numbers else 0.0
            return v.checked(math.fsum(numbers))
        return ev.lift(one, *criteria)
    return run


function("COUNTIF")(_conditional("COUNTIF", None, 0, True))
function("SUMIF")(_conditional("SUMIF", 2, 0, True))
function("AVERAGEIF")(_conditional("AVERAGEIF", 2, 0, True))
function("COUNTIFS")(_conditional("COUNTIFS", None, 0, False))
function("SUMIFS")(_conditional("SUMIFS", 0, 1, False))
function("AVERAGEIFS")(_conditional("AVERAGEIFS", 0, 1, False))
function("MAXIFS")(_conditional("MAXIFS", 0, 1, False))
function("MINIFS")(_conditional("MINIFS", 0, 1, False))

# the criteria positions (0-based) among n arguments
CRITERIA_ARGUMENTS = {
    "COUNTIF": lambda n: [1], "SUMIF": lambda n: [1], "AVERAGEIF": lambda n: [1],
    "COUNTIFS": lambda n: list(range(1, n, 2)), "SUMIFS": lambda n: list(range(2, n, 2)),
    "AVERAGEIFS": lambda n: list(range(2, n, 2)), "MAXIFS": lambda n: list(range(2, n, 2)),
    "MINIFS": lambda n: list(range(2, n, 2)),
}
