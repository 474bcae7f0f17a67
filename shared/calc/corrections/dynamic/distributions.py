"""Student's t, F, chi-squared, beta and gamma distributions in their tails, T.TEST, CHISQ.TEST,
F.TEST and Z.TEST, the hypergeometric distribution, the binomial, negative binomial and Poisson
ones over many trials, the exponential distribution, BETA.DIST, FISHERINV, GAMMA and GAMMALN,
and the cumulative normal family and the error functions, as Excel answers them.

Excel computes a right tail directly and an inverse to the last digit: the Excel-saved
T.DIST.RT(60,60) is 1.4243034807199291E-55 and T.DIST.2T(60,60) twice that (formulas'
test.xlsx STATISTICAL!X103:X104), CONFIDENCE.T(0.999999,1,50) 1.781519460717496E-07 (IronCalc's
CONFIDENCE.xlsx). IronCalc 0.9.1 takes a right tail as 1 minus the left one and inverts by a
search that stops early, so it loses digits wherever the answer is small or the degrees of
freedom are many (measured against scipy.special, which matches those Excel-saved cells to
1e-15):

- T.DIST.RT, T.DIST.2T and TDIST below about 1e-8 (a t-test's p-value): T.DIST.2T(15,20) is
  2.40652e-12, IronCalc 2.40651e-12; T.DIST.RT(20,30) is 3.4e-19, IronCalc 0. F.DIST.RT and FDIST
  alike (FDIST(25,30,30) off by 8e-4 relative, F.DIST.RT(6,100,100) 0 for 1.7e-17).
- T.INV, T.INV.2T, TINV and CONFIDENCE.T: T.INV(0.5001,10) off by 4e-9 relative, 2e-5 with
  100,000 degrees of freedom; T.INV.2T(1E-10,1) 9.0E+07 for 6.4E+09.
- CHISQ.INV, CHISQ.INV.RT and CHIINV (CHIINV(1E-10,1) off by 3e-8), F.INV and FINV at small
  probabilities, BETA.INV and GAMMA.INV with a small shape (BETA.INV(0.75,0.21,6560) off by 3e-7).
- F.DIST's density is #NUM! or 0 with a hundred or more degrees of freedom in the numerator
  (F.DIST(0.5,200,7,FALSE) is 0.5187).

HYPGEOM.DIST and HYPGEOMDIST have their own rules, from Excel-saved cells (`hypgeom_dist`); the
discrete distributions (COUNTS) and the normal family (`_normal`) their measurements beside them.

The argument rules are Microsoft's pages for each function: degrees of freedom are truncated to
whole numbers and below 1 (or from 10^10 for F and chi-squared) are #NUM!, as are probabilities
outside the function's range. A result beyond a double is #NUM!.
"""

from __future__ import annotations

import math

from shared.calc.corrections.dynamic import values as v
from shared.calc.corrections.dynamic.values import Err

_MAX_DF = 1e10  # F and chi-squared degrees of freedom from here on are #NUM! (Microsoft)


def _special():
    # a dependency of its own (pyproject.toml), loaded on first use
    from scipy import special

    return special


def _df(value: float, bounded: bool = False) -> float | None:
    """Degrees of freedom as Excel reads them (truncated), or None where they are #NUM!."""
    n = math.trunc(value)
    return None if n < 1 or bounded and n >= _MAX_DF else float(n)


def _answer(number: float):
    return v.checked(float(number))


def t_right(x: float, df: float):
    n = _df(df)
    return v.NUM if n is None else _answer(_special().stdtr(n, -x))


def t_two_tailed(x: float, df: float):
    n = _df(df)
    return v.NUM if n is None or x < 0 else _answer(2 * _special().stdtr(n, -x))


def tdist(x: float, df: float, tails: float):
    tails = math.trunc(tails)
    if tails not in (1, 2):
        return v.NUM
    return t_right(x, df) if x >= 0 and tails == 1 else t_two_tailed(x, df)


def _t_quantile(p: float, n: float) -> float:
    """The t value with p to its left, from the nearer tail (no digit lost to 1 - p)."""
    special = _special()
    return special.stdtrit(n, p) if p <= 0.5 else -special.stdtrit(n, 1 - p)


def t_inv(p: float, df: float):
    n = _df(df)
    if n is None or not 0 < p < 1:
        return v.NUM
    return _answer(_t_quantile(p, n))


def t_inv_two_tailed(p: float, df: float):
    n = _df(df)
    if n is None or not 0 < p <= 1:
        return v.NUM
    return _answer(-_t_quantile(p / 2, n))


def confidence_t(alpha: float, sd: float, size: float):
    n = math.trunc(size)
    if not 0 < alpha < 1 or sd <= 0 or n < 1:
        return v.NUM
    if n == 1:
        return v.DIV0
    return _answer(-_t_quantile(alpha / 2, n - 1.0) * sd / math.sqrt(n))


def _f_dfs(d1: float, d2: float):
    return _df(d1, bounded=True), _df(d2, bounded=True)


def f_dist(x: float, d1: float, d2: float, cumulative):
    m, n = _f_dfs(d1, d2)
    if m is None or n is None or x < 0:
        return v.NUM
    special = _special()
    if cumulative:
        return _answer(special.fdtr(m, n, x))
    if x == 0:
        return v.NUM if m < 2 else _answer(1.0 if m == 2 else 0.0)
    log_density = (0.5 * (m * math.log(m) + n * math.log(n)) + (m / 2 - 1) * math.log(x)
                   - (m + n) / 2 * math.log(n + m * x) - special.betaln(m / 2, n / 2))
    return _answer(math.exp(log_density))


def f_right(x: float, d1: float, d2: float):
    m, n = _f_dfs(d1, d2)
    if m is None or n is None or x < 0:
        return v.NUM
    return _answer(_special().fdtrc(m, n, x))


def _f_quantile(p: float, m: float, n: float, right: bool) -> float:
    """The F value with p to its left (or right): from the beta quantile and its complement,
    each computed directly, x = (n / m) * u / (1 - u)."""
    special = _special()
    a, b = m / 2, n / 2
    if right:
        u, rest = special.betainccinv(a, b, p), special.betaincinv(b, a, p)
    else:
        u, rest = special.betaincinv(a, b, p), special.betainccinv(b, a, p)
    return n * u / (m * rest) if rest else math.inf


def f_inv(p: float, d1: float, d2: float, right: bool = False):
    m, n = _f_dfs(d1, d2)
    if m is None or n is None or not 0 <= p <= 1:
        return v.NUM
    return _answer(_f_quantile(p, m, n, right))


def f_inv_right(p: float, d1: float, d2: float):
    return f_inv(p, d1, d2, right=True)


def chisq_inv(p: float, df: float, right: bool = False):
    n = _df(df, bounded=True)
    if n is None or not 0 <= p <= 1:
        return v.NUM
    special = _special()
    return _answer(2 * (special.gammainccinv(n / 2, p) if right else special.gammaincinv(n / 2, p)))


def chisq_inv_right(p: float, df: float):
    return chisq_inv(p, df, right=True)


def gamma_inv(p: float, alpha: float, beta: float):
    if not 0 <= p <= 1 or alpha <= 0 or beta <= 0:
        return v.NUM
    return _answer(_special().gammaincinv(alpha, p) * beta)


def beta_inv(p: float, alpha: float, beta: float, low: float = 0.0, high: float = 1.0):
    if not 0 < p < 1 or alpha <= 0 or beta <= 0 or low >= high:
        return v.NUM
    return _answer(low + (high - low) * _special().betaincinv(alpha, beta, p))


_EXACT_POPULATION = 20_000  # up to here a probability is the exact ratio of whole numbers (under 1 ms)


def _hypergeometric(k: int, n: int, successes: int, population: int) -> float:
    """P(X = k): the exact ratio of the three binomial coefficients, correctly rounded, for a
    population up to _EXACT_POPULATION; above it, where those take from milliseconds to seconds,
    scipy.stats' (Boost's hypergeometric distribution, within 1e-15 of the exact ratio where
    measured; logarithms of factorials would lose digits there)."""
    if population <= _EXACT_POPULATION:
        return math.comb(successes, k) * math.comb(population - successes, n - k) / math.comb(population, n)
    from scipy import stats  # about 0.7 s to load, once in a calculation process

    return float(stats.hypergeom.pmf(k, population, successes, n))


def hypgeom_dist(sample_s: float, number_sample: float, population_s: float, number_pop: float,
                 cumulative=False):
    """HYPGEOM.DIST and HYPGEOMDIST. IronCalc 0.9.1 answers #NUM! for the probability of a
    sample of 1,000 from 10,000 (its binomial coefficients overflow; Excel answers 0.0307 for
    250 of 2,500), and #NUM! where the cumulative probability is 0 or 1. The rules follow the
    Excel-saved cells of formulas' test.xlsx STATISTICAL row 54: every argument truncated, a
    negative one or a sample or successes above the population #NUM!, zeros allowed
    (HYPGEOM.DIST(0,0,0,0,FALSE) is 1); the cumulative probability is 0 below the smallest
    possible count and 1 from the largest (HYPGEOM.DIST(0,2,3,3,TRUE) is 0,
    HYPGEOM.DIST(5,3,2,30,TRUE) 1), while the probability of an impossible count is #NUM!, as
    Microsoft's page states."""
    k, n, successes, population = (math.trunc(x) for x in (sample_s, number_sample, population_s, number_pop))
    if min(k, n, successes, population) < 0 or n > population or successes > population:
        return v.NUM
    low, high = max(0, n - population + successes), min(n, successes)
    if not cumulative:
        return v.NUM if not low <= k <= high else _answer(_hypergeometric(k, n, successes, population))
    if k < low:
        return 0.0
    if k >= high:
        return 1.0
    # from P(X = k), the terms on the side of k away from the mode, each from the one before
    mode = (n + 1) * (successes + 1) // (population + 2)
    term = _hypergeometric(k, n, successes, population)
    failures = population - successes
    total, j = term, k
    if k <= mode:
        while j > low and term > total * 1e-17:
            term *= j * (failures - n + j) / ((successes - j + 1) * (n - j + 1))
            total += term
            j -= 1
        return _answer(min(total, 1.0))
    total, j = 0.0, k
    while j < high and (not total or term > total * 1e-17):
        term *= (successes - j) * (n - j) / ((j + 1) * (failures - n + j + 1))
        total += term
        j += 1
    return _answer(1.0 - total)


# Discrete distributions over many trials or a large count. IronCalc 0.9.1 sums their terms one by
# one, and loses about one digit in 1e15 a term (measured against scipy.special and mpmath):
# within 3e-13 up to 100 trials, 1.5e-12 at 1,000, 1e-9 at 100,000, and
# BINOM.DIST(500000,1000000,0.5,TRUE) 0.49921 for 0.50040, NEGBINOM.DIST's cumulative 2% off at
# 1,000,000 failures. BINOM.DIST.RANGE subtracts two cumulative probabilities, whatever the
# trials: BINOM.DIST.RANGE(10,1E-06,2,3) is 4.4999760000420E-11 in IronCalc's Excel-saved
# BINOM.xlsx, 4.49997817E-11 in IronCalc (5e-7 off), and negative with 10,000,000 trials.
# Here a cumulative probability is the regularized incomplete beta or gamma function
# (scipy.special, Boost's for beta: its bdtr and nbdtr lose 1e-9 and 1e-6 at a million), and the
# probability of one count or of up to _FEW_TERMS counts the sum of its terms in 40-digit
# arithmetic (mpmath), where logarithms of 1e8 leave 30 digits.
# Each function's arguments that count terms, by position: a cell is ours where one is above
# EXACT_COUNT (dynamic.watched_values). BINOM.DIST.RANGE is always ours (ROUTED).
EXACT_COUNT = 100
_MOST = 2.0**64  # trials, failures and x above this are #NUM!, as in IronCalc 0.9.1 (its whole numbers)
COUNTS = {
    "BINOM.DIST": (1,), "BINOMDIST": (1,),
    "NEGBINOM.DIST": (0, 1), "NEGBINOMDIST": (0, 1), "POISSON.DIST": (0, 1), "POISSON": (0, 1),
}


_DIGITS = 40  # mpmath's working precision for terms and densities: logarithms of 1e8 leave 30 digits


def _mpmath():
    import mpmath  # declared in pyproject.toml

    return mpmath


def _binomial_terms(n: int, p: float, low: int, high: int) -> float:
    """P(low <= X <= high) for X binomial(n, p), 0 <= low <= high <= n: the first term from
    logarithms, each next one from the one before."""
    if p in (0, 1):
        certain = 0 if p == 0 else n
        return 1.0 if low <= certain <= high else 0.0
    mp = _mpmath()
    with mp.workdps(_DIGITS):
        q = 1 - mp.mpf(p)
        term = mp.exp(mp.loggamma(n + 1) - mp.loggamma(low + 1) - mp.loggamma(n - low + 1)
                      + low * mp.log(p) + (n - low) * mp.log(q))
        total, ratio = term, mp.mpf(p) / q
        for k in range(low, high):
            term *= ratio * (n - k) / (k + 1)
            total += term
        return float(total)


_FEW_TERMS = 200  # a cumulative probability of up to this many successes is the sum of its terms


def _binomial_at_most(k: int, n: int, p: float) -> float:
    """P(X <= k): the sum of its terms for few successes (Boost's incomplete beta is 2.5e-14 off
    the Excel-saved BINOM.DIST(1,1000000,1E-05,TRUE) of IronCalc's BINOM.xlsx, the sum within
    1e-15), the incomplete beta function otherwise."""
    if k >= n:
        return 1.0
    if k < _FEW_TERMS:
        return _binomial_terms(n, p, 0, k)
    return float(_special().betaincc(k + 1, n - k, p))


def _binomial_above(k: int, n: int, p: float) -> float:
    """P(X > k), the incomplete beta function: the right tail, small above the mean."""
    return 0.0 if k >= n else float(_special().betainc(k + 1, n - k, p))


def binom_dist(number_s: float, trials: float, p: float, cumulative):
    """BINOM.DIST and BINOMDIST (Microsoft's pages): number_s and trials truncated; number_s
    below 0 or above trials, or a probability outside 0..1, #NUM!."""
    k, n = math.trunc(number_s), math.trunc(trials)
    if not 0 <= k <= n or not 0 <= p <= 1 or n > _MOST:
        return v.NUM
    return _answer(_binomial_at_most(k, n, p) if cumulative else _binomial_terms(n, p, k, k))


def binom_dist_range(trials: float, p: float, number_s: float, number_s2: float | None = None):
    """BINOM.DIST.RANGE (Microsoft's page): the probability of number_s to number_s2 successes
    (number_s alone when it is omitted), every count truncated; trials below 0, a probability
    outside 0..1, number_s below 0 or above trials, number_s2 below number_s or above trials
    #NUM!. A short range is the sum of its terms; a long one the difference of two tails, taken
    on the side of the mean where they are small."""
    n, low = math.trunc(trials), math.trunc(number_s)
    high = low if number_s2 is None else math.trunc(number_s2)
    if n < 0 or not 0 <= p <= 1 or not 0 <= low <= n or not low <= high <= n or n > _MOST:
        return v.NUM
    if high - low < _FEW_TERMS:
        return _answer(_binomial_terms(n, p, low, high))
    if low > n * p:  # both bounds above the mean: right tails, 1 - P(X <= k) each
        return _answer(_binomial_above(low - 1, n, p) - _binomial_above(high, n, p))
    return _answer(_binomial_at_most(high, n, p) - (_binomial_at_most(low - 1, n, p) if low else 0.0))


def negbinom_dist(number_f: float, number_s: float, p: float, cumulative=False):
    """NEGBINOM.DIST and NEGBINOMDIST (Microsoft's pages): the counts truncated; failures below
    0 or successes below 1 #NUM!, and a probability of 0 or 1 too, as IronCalc 0.9.1 answers
    (the pages name only those outside 0..1; a probability of 1 leaves no failure to count)."""
    f, s = math.trunc(number_f), math.trunc(number_s)
    if f < 0 or s < 1 or not 0 < p < 1 or f > _MOST:
        return v.NUM
    if cumulative:  # at least s successes in f + s trials
        return _answer(_special().betainc(s, f + 1, p))
    # the f+s-1 trials before the last success hold s-1 successes
    return _answer(_binomial_terms(f + s - 1, p, s - 1, s - 1) * p)


def poisson_dist(x: float, mean: float, cumulative):
    """POISSON.DIST and POISSON (Microsoft's pages): x or the mean below 0 #NUM! (the Excel-saved
    POISSON.DIST(-1E-06,5,TRUE) of IronCalc's POISSON.xlsx), x then truncated."""
    if x < 0 or mean < 0 or x > _MOST:
        return v.NUM
    k = math.trunc(x)
    if cumulative:
        return _answer(_special().gammaincc(k + 1, mean))
    if mean == 0:
        return 1.0 if k == 0 else 0.0
    mp = _mpmath()
    with mp.workdps(_DIGITS):
        return _answer(float(mp.exp(k * mp.log(mean) - mean - mp.loggamma(k + 1))))


def expon_dist(x: float, rate: float, cumulative):
    """EXPON.DIST and EXPONDIST (Microsoft's pages): x below 0 or a rate of 0 or below #NUM!. The
    cumulative probability is 1 - e^(-rate*x) computed without the subtraction (expm1), as Excel
    saves it: EXPON.DIST(1E-05,1E-05,TRUE) is 9.999999999500002E-11 in IronCalc's Excel-saved
    EXPONDIST.xlsx, 1.000000082740371E-10 (8e-8 off) in IronCalc 0.9.1."""
    if x < 0 or rate <= 0:
        return v.NUM
    return _answer(-math.expm1(-rate * x) if cumulative else rate * math.exp(-rate * x))


def beta_dist(x: float, alpha: float, beta: float, cumulative=True, low: float = 0.0, high: float = 1.0):
    """BETA.DIST, and BETADIST (always cumulative) (Microsoft's pages): alpha or beta of 0 or
    below, x outside low..high or low equal to high #NUM!. The cumulative probability is Boost's
    regularized incomplete beta function (scipy.special.betainc), the density computed in 40-digit
    arithmetic: IronCalc's Excel-saved BETA_GAMMA.xlsx and BETADIST_BETAINV.xlsx match them
    within 1.2e-14 (1e-15 but for one cell), IronCalc 0.9.1 within 1.3e-13
    (BETA.DIST(0.555,1000,1000,TRUE,0.1,1), BETA.DIST(2,8,10,FALSE,1,3) 1.4837646484376519 for
    Excel's 1.4837646484375)."""
    if alpha <= 0 or beta <= 0 or not low <= x <= high or low == high:
        return v.NUM
    z = (x - low) / (high - low)
    if cumulative:
        return _answer(_special().betainc(alpha, beta, z))
    if z in (0, 1):
        edge = alpha if z == 0 else beta
        if edge < 1:
            return v.NUM
        if edge > 1:
            return 0.0
    mp = _mpmath()
    with mp.workdps(_DIGITS):
        log_density = (alpha - 1) * mp.log(z) if z else mp.mpf(0)
        log_density += (beta - 1) * mp.log(1 - mp.mpf(z)) if z != 1 else 0
        log_density -= mp.loggamma(alpha) + mp.loggamma(beta) - mp.loggamma(alpha + beta)
        return _answer(float(mp.exp(log_density)) / (high - low))


def gamma(x: float):
    """GAMMA (Microsoft's page): 0 and the negative whole numbers #NUM!, as is a result beyond a
    double. The C library's gamma function, correctly rounded where it is whole: GAMMA(5) is 24
    in IronCalc's Excel-saved BETA_GAMMA.xlsx, 24.000000000000114 in IronCalc 0.9.1
    (GAMMA(10) 362880.000000002 at 15 digits), which also answers #NUM! from 170 on."""
    if x <= 0 and x == math.floor(x):
        return v.NUM
    try:
        return _answer(math.gamma(x))
    except (OverflowError, ValueError):
        return v.NUM


def gamma_ln(x: float):
    """GAMMALN and GAMMALN.PRECISE (Microsoft's pages): x of 0 or below #NUM!. GAMMALN(1) is 0 in
    IronCalc's Excel-saved GAMMALN_GAMMALNPRECISE.xlsx, -4.4E-16 in IronCalc 0.9.1, whose other
    cells there it misses by up to 1.7e-14 (the C library's lgamma: within 1.6e-15). Next to 1
    and 2 Excel's own digits differ from the exact logarithm by 5e-9 relative (GAMMALN(1.0000001)
    is -5.772155829918508E-08, exactly -5.772155869943063E-08); that is not reproduced."""
    if x <= 0:
        return v.NUM
    return _answer(math.lgamma(x))


def fisher_inv(y: float):
    """FISHERINV as Excel computes it, by the page's formula (e^(2y) - 1) / (e^(2y) + 1), not the
    hyperbolic tangent IronCalc 0.9.1 takes: the Excel-saved FISHERINV(1E-07) of IronCalc's
    FISHER_FISHERINV.xlsx is 1.0000000005039292E-07, the formula's digits, where tanh gives
    9.999999999999965E-08 (the file's FISHER cells are its formula's too, as IronCalc computes
    them). Where e^(2y) overflows the answer is tanh's, 1 or -1."""
    if abs(y) > 354:
        return _answer(math.tanh(y))
    e = math.exp(2 * y)
    return _answer((e - 1) / (e + 1))


# The normal distribution and the error function. IronCalc 0.9.1's ERF and ERFC are approximations
# 1e-11 to 1e-10 relative off from 0.5 on, and so are its cumulative normal, lognormal and GAUSS:
# NORM.DIST(-1,0,1,TRUE) is 0.158655253917... in IronCalc, 0.158655253931457 in Excel's saved
# NORM_DIST.xlsx (IronCalc's tests), whose every cumulative cell matches the exact function
# (scipy.special's ndtr and erf) within 5e-16. The densities are the same formula in both.
_SQRT_2PI = math.sqrt(2 * math.pi)


def _normal(z: float, cumulative) -> float:
    """The standard normal distribution at z, or its density."""
    return float(_special().ndtr(z)) if cumulative else math.exp(-z * z / 2) / _SQRT_2PI


def norm_dist(x: float, mean: float, sd: float, cumulative):
    """NORM.DIST and NORMDIST (Microsoft's pages): a standard deviation of 0 or below #NUM!."""
    if sd <= 0:
        return v.NUM
    value = _normal((x - mean) / sd, cumulative)
    return _answer(value if cumulative else value / sd)


def norm_s_dist(z: float, cumulative=True):
    """NORM.S.DIST, and NORMSDIST (always cumulative)."""
    return _answer(_normal(z, cumulative))


def lognorm_dist(x: float, mean: float, sd: float, cumulative=True):
    """LOGNORM.DIST, and LOGNORMDIST (always cumulative) (Microsoft's pages): x or the standard
    deviation 0 or below #NUM!."""
    if x <= 0 or sd <= 0:
        return v.NUM
    value = _normal((math.log(x) - mean) / sd, cumulative)
    return _answer(value if cumulative else value / (x * sd))


def gauss(z: float):
    """GAUSS: the probability of a standard normal value between the mean and z standard
    deviations from it, NORM.S.DIST(z,TRUE) - 0.5, subtracted as Excel does: the Excel-saved
    GAUSS(1E-07) of IronCalc's GAUSS.xlsx is 3.9894228032189005E-08, the subtraction's digits
    (the exact value is 3.98942280401e-08)."""
    return _answer(float(_special().ndtr(z)) - 0.5)


def erf(lower: float, upper: float | None = None):
    """ERF and ERF.PRECISE: the error function from 0 to lower, or from lower to upper."""
    special = _special()
    if upper is None:
        return _answer(special.erf(lower))
    return _answer(special.erf(upper) - special.erf(lower))


def erfc(x: float):
    """ERFC and ERFC.PRECISE: 1 - ERF(x), computed directly."""
    return _answer(_special().erfc(x))


def _mean_and_variance(numbers: list[float]) -> tuple[float, float]:
    """The mean and the sample variance (n - 1 in the denominator) of two or more numbers."""
    mean = math.fsum(numbers) / len(numbers)
    return mean, math.fsum((x - mean) ** 2 for x in numbers) / (len(numbers) - 1)


def t_test(first: list, second: list, tails, kind):
    """T.TEST and TTEST on the arrays' values (row by row) and the tails and type already read:
    IronCalc 0.9.1 takes the p-value as 1 minus the distribution (1.2e-13 off by 5e-4 relative,
    1.2e-18 as 0), here it is the right tail itself. Rules (Microsoft's page and formulas'
    Excel-saved test.xlsx STATISTICAL row 107): tails and type truncated, tails other than 1 or 2
    and type other than 1, 2 or 3 #NUM!; the first error met pair by pair (first[0], second[0],
    first[1], ...) is the answer; paired data (type 1) of different sizes #N/A, and a pair
    without two numbers left out; otherwise the numbers of each array; too few values or no
    spread #DIV/0!. Type 3 takes Welch's degrees of freedom as they come, not rounded."""
    for i in range(max(len(first), len(second))):
        for array in (first, second):
            if i < len(array) and isinstance(array[i], Err):
                return array[i]
    tails, kind = math.trunc(tails), math.trunc(kind)
    if tails not in (1, 2) or kind not in (1, 2, 3):
        return v.NUM
    if kind == 1:
        if len(first) != len(second):
            return v.NA
        differences = [a - b for a, b in zip(first, second) if v.is_number(a) and v.is_number(b)]
        n = len(differences)
        if n < 2:
            return v.DIV0
        mean, variance = _mean_and_variance(differences)
        if variance == 0:
            return v.DIV0
        t, df = mean / math.sqrt(variance / n), n - 1.0
    else:
        xs = [x for x in first if v.is_number(x)]
        ys = [y for y in second if v.is_number(y)]
        nx, ny = len(xs), len(ys)
        if nx < 2 or ny < 2:
            return v.DIV0
        (mx, vx), (my, vy) = _mean_and_variance(xs), _mean_and_variance(ys)
        if kind == 2:
            df = nx + ny - 2.0
            error = math.sqrt(((nx - 1) * vx + (ny - 1) * vy) / df * (1 / nx + 1 / ny))
        else:
            a, b = vx / nx, vy / ny
            error = math.sqrt(a + b)
            df = (a + b) ** 2 / (a * a / (nx - 1) + b * b / (ny - 1)) if a or b else 0.0
        if error == 0:
            return v.DIV0
        t = (mx - my) / error
    return _answer(tails * _special().stdtr(df, -abs(t)))


def _first_error(*arrays: list):
    """The first error of the arrays, each read whole (row by row) before the next: Excel's
    CHISQ.TEST and F.TEST of (TRUE, #VALUE!) and (#N/A, #DIV/0!) are #VALUE! (formulas'
    Excel-saved test.xlsx STATISTICAL!Y17 and Y34)."""
    for array in arrays:
        for value in array:
            if isinstance(value, Err):
                return value
    return None


def chisq_test(actual: list[list], expected: list[list]):
    """CHISQ.TEST and CHITEST on the two arrays' rows (Microsoft's page): the right tail of the
    chi-squared statistic, computed directly (IronCalc 0.9.1 takes 1 minus the distribution: 0
    for the Excel-saved 9.66041305483331E-58 of formulas' test.xlsx STATISTICAL!R17). Rules from
    the page and that sheet's row 17: the first error is the answer; arrays of different numbers
    of values, or of one value, #N/A (IronCalc: #VALUE!), whatever their shapes (a 2x2 and a 4x1
    are compared value by value); a pair without two numbers is left out, and no pair left
    #DIV/0!; an expected value of 0 #DIV/0!, a negative value #NUM! (as IronCalc answers). The
    degrees of freedom come from the actual array's shape: (r-1)(c-1), or r-1 or c-1 for one
    column or one row."""
    first, second = [x for row in actual for x in row], [x for row in expected for x in row]
    error = _first_error(first, second)
    if error is not None:
        return error
    rows, cols = len(actual), len(actual[0])
    if len(first) != len(second) or len(first) == 1:
        return v.NA
    statistic = []
    for a, e in zip(first, second):
        if not (v.is_number(a) and v.is_number(e)):
            continue
        if a < 0 or e < 0:
            return v.NUM
        if e == 0:
            return v.DIV0
        statistic.append((a - e) ** 2 / e)
    if not statistic:
        return v.DIV0
    df = (rows - 1) * (cols - 1) if rows > 1 and cols > 1 else max(rows, cols) - 1
    return _answer(_special().chdtrc(df, math.fsum(statistic)))


def f_test(first: list, second: list):
    """F.TEST and FTEST on the two arrays' values (Microsoft's page): the two-tailed probability
    that their variances do not differ, twice the smaller tail of the F distribution at their
    ratio, each tail computed directly (IronCalc 0.9.1 answers 0 below about 1e-16). Text,
    logical values and blanks are left out; the first error is the answer; fewer than two
    numbers in an array, or no spread, #DIV/0! (the page; formulas' Excel-saved test.xlsx
    STATISTICAL!U34 for two single values, where IronCalc answers #VALUE!)."""
    error = _first_error(first, second)
    if error is not None:
        return error
    variances = []
    for array in (first, second):
        numbers = [x for x in array if v.is_number(x)]
        if len(numbers) < 2:
            return v.DIV0
        variance = _mean_and_variance(numbers)[1]
        if variance == 0:
            return v.DIV0
        variances.append((variance, len(numbers) - 1))
    (v1, d1), (v2, d2) = variances
    special, ratio = _special(), v1 / v2
    return _answer(2 * min(special.fdtr(d1, d2, ratio), special.fdtrc(d1, d2, ratio)))


def z_test(array: list, x, sigma=None):
    """Z.TEST and ZTEST on the array's values and one x and sigma (Microsoft's page): 1 minus the
    standard normal distribution at (mean - x) / (sigma / sqrt(n)), sigma the sample standard
    deviation when omitted, computed with the exact normal distribution (IronCalc 0.9.1's is
    5e-11 relative off: 0.13853080872433643 for the Excel-saved 0.13853080871747964 of formulas'
    test.xlsx STATISTICAL!R121). Rules from that sheet's row 121: x's error, then sigma's, then
    the array's first is the answer (X121:AF121); x and sigma read as numbers, a logical value
    in a cell too (W121: TRUE is 1); a sigma of 0 or below #NUM! (U121); text, logical values and
    blanks in the array left out, no number #N/A (the page), one number #DIV/0! even with sigma
    given (V121)."""
    x = v.to_number(x)
    if isinstance(x, Err):
        return x
    if sigma is not None:
        sigma = v.to_number(sigma)
        if isinstance(sigma, Err):
            return sigma
    error = _first_error(array)
    if error is not None:
        return error
    if sigma is not None and sigma <= 0:
        return v.NUM
    numbers = [a for a in array if v.is_number(a)]
    if not numbers:
        return v.NA
    if len(numbers) < 2:
        return v.DIV0
    mean, variance = _mean_and_variance(numbers)
    spread = math.sqrt(variance) if sigma is None else sigma
    if spread == 0:
        return v.DIV0
    return _answer(1 - _normal((mean - x) / (spread / math.sqrt(len(numbers))), True))


# name -> (function, required arguments, most arguments)
FUNCTIONS = {
    "T.DIST.RT": (t_right, 2, 2),
    "T.DIST.2T": (t_two_tailed, 2, 2),
    "TDIST": (tdist, 3, 3),
    "T.INV": (t_inv, 2, 2),
    "T.INV.2T": (t_inv_two_tailed, 2, 2),
    "TINV": (t_inv_two_tailed, 2, 2),
    "CONFIDENCE.T": (confidence_t, 3, 3),
    "F.DIST": (f_dist, 4, 4),
    "F.DIST.RT": (f_right, 3, 3),
    "FDIST": (f_right, 3, 3),
    "F.INV": (f_inv, 3, 3),
    "F.INV.RT": (f_inv_right, 3, 3),
    "FINV": (f_inv_right, 3, 3),
    "CHISQ.INV": (chisq_inv, 2, 2),
    "CHISQ.INV.RT": (chisq_inv_right, 2, 2),
    "CHIINV": (chisq_inv_right, 2, 2),
    "GAMMA.INV": (gamma_inv, 3, 3),
    "GAMMAINV": (gamma_inv, 3, 3),
    "BETA.INV": (beta_inv, 3, 5),
    "BETAINV": (beta_inv, 3, 5),
    "HYPGEOM.DIST": (hypgeom_dist, 5, 5),
    "HYPGEOMDIST": (hypgeom_dist, 4, 4),
    "BINOM.DIST": (binom_dist, 4, 4),
    "BINOMDIST": (binom_dist, 4, 4),
    "BINOM.DIST.RANGE": (binom_dist_range, 3, 4),
    "NEGBINOM.DIST": (negbinom_dist, 4, 4),
    "NEGBINOMDIST": (negbinom_dist, 3, 3),
    "POISSON.DIST": (poisson_dist, 3, 3),
    "POISSON": (poisson_dist, 3, 3),
    "FISHERINV": (fisher_inv, 1, 1),
    "BETA.DIST": (beta_dist, 4, 6),
    "BETADIST": (lambda x, a, b, low=0.0, high=1.0: beta_dist(x, a, b, True, low, high), 3, 5),
    "GAMMA": (gamma, 1, 1),
    "GAMMALN": (gamma_ln, 1, 1),
    "GAMMALN.PRECISE": (gamma_ln, 1, 1),
    "EXPON.DIST": (expon_dist, 3, 3),
    "EXPONDIST": (expon_dist, 3, 3),
    "NORM.DIST": (norm_dist, 4, 4),
    "NORMDIST": (norm_dist, 4, 4),
    "NORM.S.DIST": (norm_s_dist, 2, 2),
    "NORMSDIST": (norm_s_dist, 1, 1),
    "LOGNORM.DIST": (lognorm_dist, 4, 4),
    "LOGNORMDIST": (lognorm_dist, 3, 3),
    "GAUSS": (gauss, 1, 1),
    "ERF": (erf, 1, 2),
    "ERF.PRECISE": (erf, 1, 1),
    "ERFC": (erfc, 1, 1),
    "ERFC.PRECISE": (erfc, 1, 1),
}
# the argument read as a logical value, not a number (the cumulative flag), by its position
LOGICAL = {"F.DIST": 3, "HYPGEOM.DIST": 4, "BINOM.DIST": 3, "BINOMDIST": 3, "NEGBINOM.DIST": 3,
           "POISSON.DIST": 2, "POISSON": 2, "NORM.DIST": 3, "NORMDIST": 3, "NORM.S.DIST": 1,
           "LOGNORM.DIST": 3, "EXPON.DIST": 2, "EXPONDIST": 2, "BETA.DIST": 3}


# the error functions, of the Analysis ToolPak: a logical value, typed or in a cell, is #VALUE!
# (IronCalc's Excel-saved ERFs.xlsx row 15)
_NUMBERS_ONLY = frozenset({"ERF", "ERF.PRECISE", "ERFC", "ERFC.PRECISE"})


def call(name: str, values: list):
    """One of FUNCTIONS on its arguments' values (numbers, text, logical values, None for a
    blank or an omitted argument that has no default); the first error among them is the answer."""
    function, _, _ = FUNCTIONS[name]
    numbers = []
    for i, value in enumerate(values):
        if isinstance(value, bool) and name in _NUMBERS_ONLY:
            return v.VALUE
        read = v.to_bool(value) if LOGICAL.get(name) == i else v.to_number(value)
        if isinstance(read, Err):
            return read
        numbers.append(read)
    return function(*numbers)


# the functions of this module dynamic.select always takes (the arrays of T.TEST, CHISQ.TEST,
# F.TEST and Z.TEST are read in functions.py); those of COUNTS it takes where a count is large
ROUTED = (*(name for name in FUNCTIONS if name not in COUNTS), "T.TEST", "TTEST", "CHISQ.TEST", "CHITEST",
          "F.TEST", "FTEST", "Z.TEST", "ZTEST")
