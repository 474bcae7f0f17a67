"""Binomial, negative binomial and Poisson probabilities over many trials or a large count, and
BINOM.DIST.RANGE, to the last digit (shared/calc/corrections/dynamic/distributions.py, routed by
dynamic.watched_values where a count is above distributions.EXACT_COUNT, BINOM.DIST.RANGE always).

Expected values are the distributions' definitions, evaluated exactly or in 50-digit arithmetic
(mpmath): for a fair coin and an even number of trials n, P(X <= n/2) = 1/2 + C(n, n/2) / 2^(n+1)
by symmetry; the negative binomial's cumulative probability of f failures before s successes is
the probability of at least s successes in f + s trials; the Poisson probability is
e^-mean * mean^k / k!; BINOM.DIST.RANGE(10,1E-06,2,3) is the cell IronCalc's BINOM.xlsx saved by
Excel. IronCalc 0.9.1 sums the terms one by one and loses a digit in 1e15 a term, and takes a range
as the difference of two cumulative probabilities: its answers are in the comments. Microsoft's examples (BINOM.DIST(6,10,0.5,FALSE) and the
others) are in tests/conformance.
"""

from fractions import Fraction

import mpmath
import pytest

from .conftest import (
    assert_answers,
    assert_each_answers,
    named_formulas,
    uploaded_and_stored,
)

DIGITS = 50  # the working precision of every expected value (mpmath.workdps: no global setting)


def fair_coin_half_or_fewer(trials: int) -> float:
    """P(X <= trials/2) for a fair coin and an even number of trials."""
    with mpmath.workdps(DIGITS):
        return float(mpmath.mpf(1) / 2 + mpmath.binomial(trials, trials // 2) / mpmath.mpf(2) ** (trials + 1))


def fair_coin_exactly(trials: int, successes: int) -> float:
    with mpmath.workdps(DIGITS):
        return float(mpmath.binomial(trials, successes) / mpmath.mpf(2) ** trials)


def fair_coin_between(trials: int, low: int, high: int) -> float:
    with mpmath.workdps(DIGITS):
        return float(mpmath.fsum(mpmath.binomial(trials, k) for k in range(low, high + 1)) / mpmath.mpf(2) ** trials)


def poisson_term(k: int, mean: int) -> float:
    with mpmath.workdps(DIGITS):
        return float(mpmath.exp(-mpmath.mpf(mean)) * mpmath.mpf(mean) ** k / mpmath.factorial(k))


def poisson_at_most(k: int, mean: int) -> float:
    """The regularized upper incomplete gamma function Q(k + 1, mean)."""
    with mpmath.workdps(DIGITS):
        return float(mpmath.gammainc(k + 1, mean, mpmath.inf, regularized=True))


# name -> (formula, expected)
WRITTEN = {
    # IronCalc 0.49920633442346407
    "binomial": ("=BINOM.DIST(500000,1000000,0.5,TRUE)", fair_coin_half_or_fewer(10**6)),
    # IronCalc 0.3651241004619096
    "binomdist": ("=BINOMDIST(5000000,10000000,0.5,TRUE)", fair_coin_half_or_fewer(10**7)),
    "binomial_term": ("=BINOM.DIST(500000,1000000,0.5,FALSE)", fair_coin_exactly(10**6, 500000)),
    # IronCalc 4.499978167871177e-11
    "range_excel": ("=BINOM.DIST.RANGE(10,1E-06,2,3)", 4.499976000042004e-11),
    # IronCalc -0.22268799906269354
    "range": ("=BINOM.DIST.RANGE(10000000,0.5,4999990,5000010)", fair_coin_between(10**7, 4999990, 5000010)),
    # at least 1,000,000 successes in 2,000,000 trials; IronCalc 0.4916495513018717
    "negative_binomial": ("=NEGBINOM.DIST(1000000,1000000,0.5,TRUE)", fair_coin_half_or_fewer(2 * 10**6)),
    # IronCalc 0.5002659618281267 (the term alone is right there)
    "poisson": ("=POISSON.DIST(1000000,1000000,TRUE)", poisson_at_most(10**6, 10**6)),
    "poisson_term": ("=POISSON(10000000,10000000,FALSE)", poisson_term(10**7, 10**7)),
}


def test_large_counts_written_in_the_formula_are_exact():
    assert_each_answers(WRITTEN, rel=1e-13)


def counts_book() -> bytes:
    return named_formulas({
        "at_most": "=BINOM.DIST(A1,B1,0.5,TRUE)",
        "claims": "=POISSON.DIST(A2,B2*1,TRUE)",  # an expression: always evaluated here
    }, column="D", cells={"A1": 5, "B1": 10, "A2": 2, "B2": 5},
        names={"successes": "$A$1", "trials": "$B$1", "count": "$A$2", "mean": "$B$2"})


@pytest.mark.parametrize("successes, trials, expected", [
    (5, 10, float(Fraction(638, 1024))),  # few trials: IronCalc's own answer, exact
    (500000, 1000000, fair_coin_half_or_fewer(10**6)),  # IronCalc 0.49920633442346407
    (1000, 2000, fair_coin_half_or_fewer(2000)),
])
def test_trials_from_an_input(successes, trials, expected):
    for workbook in uploaded_and_stored(counts_book()):
        outputs = workbook.calculate({"successes": successes, "trials": trials}, ["at_most"])
        assert outputs["at_most"] == pytest.approx(expected, rel=1e-13, abs=0)


def test_a_count_given_by_an_expression():
    for workbook in uploaded_and_stored(counts_book()):
        small = workbook.calculate({"count": 2, "mean": 5}, ["claims"])
        # Microsoft's POISSON.DIST example: 0.124652
        assert small["claims"] == pytest.approx(poisson_at_most(2, 5), rel=1e-13)
        large = workbook.calculate({"count": 1000000, "mean": 1000000}, ["claims"])
        assert large["claims"] == pytest.approx(WRITTEN["poisson"][1], rel=1e-13, abs=0)


@pytest.mark.parametrize("formula, expected", [
    ("=BINOM.DIST(1001,1000,0.5,TRUE)", "#NUM!"),  # more successes than trials
    ("=BINOM.DIST(5,5000,1.5,TRUE)", "#NUM!"),
    ("=BINOM.DIST.RANGE(5000,0.5,3000,2000)", "#NUM!"),  # the range's end before its start
    ("=NEGBINOM.DIST(5000,0,0.5,TRUE)", "#NUM!"),  # no success
    ("=NEGBINOM.DIST(5000,3,1,FALSE)", "#NUM!"),  # as IronCalc answers with few failures
    ("=POISSON.DIST(-1,5000,TRUE)", "#NUM!"),
    ("=POISSON.DIST(5000,-1,FALSE)", "#NUM!"),
    ("=BINOM.DIST(2000.9,4000.9,0.5,FALSE)", fair_coin_exactly(4000, 2000)),  # counts truncated
    ("=POISSON(0,0,FALSE)", 1.0),
])
def test_argument_rules_with_large_counts(formula, expected):
    assert_answers(formula, expected, rel=1e-13)
