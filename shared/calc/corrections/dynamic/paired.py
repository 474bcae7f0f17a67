"""The statistics of paired data in the dynamic-array evaluator: COVAR, COVARIANCE.P,
COVARIANCE.S, CORREL, PEARSON, RSQ, SLOPE, INTERCEPT, STEYX, FORECAST and FORECAST.LINEAR.

Excel reads the two arrays (ranges, array constants, computed arrays) row by row and pairs
their values in that order: arrays of different shapes but the same number of values are
paired (formulas' test.xlsx, saved by Excel: `RSQ(C90:D91,E88:E91)` is 0.00672, `STEYX` of the
same shapes 10), a different number of values is #N/A. A pair in which either value is text, a
logical value or an empty cell is left out ("those values are ignored; however, cells with the
value zero are included", the COVARIANCE.P and SLOPE pages): `COVARIANCE.P` of {0.1,0.2,0.3}
and {0.3,-0.1,(empty)} is -0.01 (test.xlsx STATISTICAL!S26), where IronCalc 0.9.1 answers #N/A
for COVAR and COVARIANCE.P/.S whenever a value is left out and #VALUE! for every function
given arrays of different shapes, or two single cells (`RSQ(D91,F91)`: Excel #DIV/0!).

An error among the values is the answer, the first met pair by pair, the first array's value
before the second's, except #NULL!, whose pair is left out whatever the other value is
(test.xlsx: `SLOPE` of {#NULL!,#NUM!,#REF!} and {#REF!,x,y} is #NUM!, `INTERCEPT` of
{#NULL!,#NUM!,...} and {#VALUE!,#N/A,...} #NUM!, `SLOPE` of {TRUE,#VALUE!,#N/A} and
{#N/A,#DIV/0!,#NAME?} #N/A; the same in every function here, STATISTICAL!Y20:AD120).

Too few pairs, or no spread where the function divides by it, is #DIV/0! (the pages: "If
array1 or array2 is empty", "If the standard deviation of their values equals zero", STEYX
"fewer than three data points").

Evaluated here where IronCalc answers #VALUE! (or, for the covariances, #N/A) in a
calculation (dynamic.WHEN_ERROR), and wherever the evaluator meets them.
"""

from __future__ import annotations

import math

from shared.calc.corrections.dynamic import values as v
from shared.calc.corrections.dynamic.functions import _arity, function
from shared.calc.corrections.dynamic.values import Err

_LEFT_OUT = "#NULL!"


def pairs(ev, first, second) -> tuple[list[float], list[float]] | Err:
    """The numbers paired from two arrays, in reading order, or the error Excel answers."""
    a, b = ev.grid(first).cells(), ev.grid(second).cells()
    if len(a) != len(b):
        return v.NA
    xs: list[float] = []
    ys: list[float] = []
    for p, q in zip(a, b):
        error = p if isinstance(p, Err) else q if isinstance(q, Err) else None
        if error is not None:
            if error.code == _LEFT_OUT:
                continue  # the pair is left out, whatever the other value is
            return error
        if v.is_number(p) and v.is_number(q):
            xs.append(p)
            ys.append(q)
    return xs, ys


def _spread(xs: list[float], ys: list[float]) -> tuple[float, float, float, float, float]:
    """Means and the sums of squared and crossed deviations: mx, my, sxx, syy, sxy."""
    n = len(xs)
    mx, my = math.fsum(xs) / n, math.fsum(ys) / n
    dx = [x - mx for x in xs]
    dy = [y - my for y in ys]
    return (mx, my, math.fsum(d * d for d in dx), math.fsum(d * d for d in dy),
            math.fsum(p * q for p, q in zip(dx, dy)))


def _fit(ev, known_y, known_x):
    """(mx, my, sxx, syy, sxy, n) of the pairs (x from known_x, y from known_y), or an Err;
    the pairs are read with known_y's values first, as the functions take them."""
    found = pairs(ev, known_y, known_x)
    if isinstance(found, Err):
        return found
    ys, xs = found
    if not xs:
        return v.DIV0
    return (*_spread(xs, ys), len(xs))


def _of_fit(*names):
    """A function of two arrays answering from their fit: compute(mx, my, sxx, syy, sxy, n)."""
    def register(compute):
        def run(ev, args):
            _arity(args, 2)
            fit = _fit(ev, args[0], args[1])
            return fit if isinstance(fit, Err) else compute(*fit)
        function(*names)(run)
        return compute
    return register


@_of_fit("COVAR", "COVARIANCE.P")
def _population_covariance(mx, my, sxx, syy, sxy, n):
    return sxy / n


@_of_fit("COVARIANCE.S")
def _sample_covariance(mx, my, sxx, syy, sxy, n):
    return v.DIV0 if n < 2 else sxy / (n - 1)


@_of_fit("CORREL", "PEARSON")
def _correlation(mx, my, sxx, syy, sxy, n):
    return v.DIV0 if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


@_of_fit("RSQ")
def _r_squared(mx, my, sxx, syy, sxy, n):
    return v.DIV0 if sxx == 0 or syy == 0 else sxy * sxy / (sxx * syy)


def _line(mx, my, sxx, syy, sxy, n):
    """(slope, intercept) of the least-squares line, or #DIV/0! when the x's do not spread."""
    if sxx == 0:
        return v.DIV0
    slope = sxy / sxx
    return slope, my - slope * mx


@_of_fit("SLOPE")
def _slope(*fit):
    line = _line(*fit)
    return line if isinstance(line, Err) else line[0]


@_of_fit("INTERCEPT")
def _intercept(*fit):
    line = _line(*fit)
    return line if isinstance(line, Err) else line[1]


@_of_fit("STEYX")
def _steyx(mx, my, sxx, syy, sxy, n):
    if n < 3 or sxx == 0:
        return v.DIV0
    return math.sqrt(max(syy - sxy * sxy / sxx, 0.0) / (n - 2))


@function("FORECAST", "FORECAST.LINEAR")
def _forecast(ev, args):
    """FORECAST(x, known_y's, known_x's); x one value, an array of them answered element by
    element (a dynamic array: `FORECAST(A1:A3, ...)` spills three forecasts)."""
    _arity(args, 3)
    line = []  # the line, found once, after x's own error

    def at(x):
        x = v.to_number(x)
        if isinstance(x, Err):
            return x
        if not line:
            fit = _fit(ev, args[1], args[2])
            line.append(fit if isinstance(fit, Err) else _line(*fit))
        return line[0] if isinstance(line[0], Err) else line[0][1] + line[0][0] * x

    return ev.lift(at, args[0])
