"""Student's t, F, chi-squared, beta and gamma distributions in their tails, T.TEST, and the
hypergeometric distribution, as Excel answers them.

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

HYPGEOM.DIST and HYPGEOMDIST have their own rules, from Excel-saved cells (`hypgeom_dist`).

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
        mean = math.fsum(differences) / n
        variance = math.fsum((d - mean) ** 2 for d in differences) / (n - 1)
        if variance == 0:
            return v.DIV0
        t, df = mean / math.sqrt(variance / n), n - 1.0
    else:
        xs = [x for x in first if v.is_number(x)]
        ys = [y for y in second if v.is_number(y)]
        nx, ny = len(xs), len(ys)
        if nx < 2 or ny < 2:
            return v.DIV0
        mx, my = math.fsum(xs) / nx, math.fsum(ys) / ny
        vx = math.fsum((x - mx) ** 2 for x in xs) / (nx - 1)
        vy = math.fsum((y - my) ** 2 for y in ys) / (ny - 1)
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
}
# the argument read as a logical value, not a number (the cumulative flag), by its position
LOGICAL = {"F.DIST": 3, "HYPGEOM.DIST": 4}


def call(name: str, values: list):
    """One of FUNCTIONS on its arguments' values (numbers, text, logical values, None for a
    blank or an omitted argument that has no default); the first error among them is the answer."""
    function, _, _ = FUNCTIONS[name]
    numbers = []
    for i, value in enumerate(values):
        read = v.to_bool(value) if LOGICAL.get(name) == i else v.to_number(value)
        if isinstance(read, Err):
            return read
        numbers.append(read)
    return function(*numbers)


# every function of this module, as dynamic.select takes them (T.TEST's arrays are read in functions.py)
ROUTED = (*FUNCTIONS, "T.TEST", "TTEST")
