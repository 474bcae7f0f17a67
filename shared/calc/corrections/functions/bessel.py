"""Excel's BESSELJ, BESSELY, BESSELI and BESSELK: Excel's own approximations, not the exact functions.

Excel does not answer the exact Bessel functions. Its saved values (BESSELJ(0,0) is
1.00000000283141, not 1; IronCalc's BESSEL.xlsx and formulas' test.xlsx in tests/corpus) are,
to 1e-12 relative for every such cell with |x| < 8, those of the rational approximations of
Hart's "Computer Approximations" (1968) as Numerical Recipes in C (2nd ed., section 6.5) gives
them: J0, J1, Y0 and Y1 from a ratio of polynomials below 8 and from the asymptotic form above;
Jn upward from J0 and J1 where |x| > n and by Miller's downward recurrence, started at order
2*((n + int(sqrt(40 n))) / 2), where |x| <= n; Yn upward from Y0 and Y1. IronCalc and
`formulas` answer the exact functions, 1e-9 to 1e-8 away (and up to 3e-7 where Miller's
recurrence starts low: BESSELJ(1.9,2) is 0.329925829 here and in this recurrence, 0.329925728
exactly and in Microsoft's example, which the Excel-saved BESSELJ(1,2) and BESSELJ(10,10)
contradict: they are this recurrence's answers to 1e-12, not the exact function's).

From |x| >= 8 Excel's values are not those of the asymptotic form either (BESSELJ(10,1) is
0.04347224965, 1.1e-5 below the exact 0.04347274617 and this form's 0.04347274634; BESSELJ(10,0)
is 4e-11 away from both): the form is kept there, as close to Excel as the exact functions are.

BESSELI and BESSELK are the same book's polynomial approximations (Abramowitz and Stegun
9.8.1-9.8.8), In by Miller's recurrence from 2*(n + int(sqrt(40 n))), Kn upward: all 164
Excel-saved values of the corpus to 1e-12. IronCalc answers exactly these; `formulas` answers
the exact functions, so the formulas engine is given all four.

Argument rules from Microsoft's four pages and the Excel-saved cells: a blank is 0, numeric
text is its number, a logical value or other text is #VALUE!, n is truncated to an integer and
n < 0 is #NUM!; BESSELY and BESSELK of x <= 0 are #NUM!; a result beyond a double is #NUM!.
"""

from __future__ import annotations

import math

from shared.calc.corrections.functions.errors import ExcelError
from shared.calc.corrections.functions.text_format import Unsupported

NUM, VALUE = "#NUM!", "#VALUE!"
# Miller's recurrence starts about sqrt(ACC * n) terms above n (Numerical Recipes' ACC)
_ACC = 40.0
_BIG, _SMALL = 1.0e10, 1.0e-10
# Past this many steps of a recurrence the cell is reported rather than computed (a budget)
MAX_STEPS = 1_000_000


def _poly(coefficients: tuple[float, ...], y: float) -> float:
    result = 0.0
    for c in reversed(coefficients):
        result = result * y + c
    return result


# J0 and Y0 share the asymptotic form's P and Q; J1 and Y1 theirs (Y0's Q differs from J0's in
# its last coefficient as Excel's values show: -0.934945152e-7 against -0.934935152e-7).
_P0 = (1.0, -0.1098628627e-2, 0.2734510407e-4, -0.2073370639e-5, 0.2093887211e-6)
_Q0_J = (-0.1562499995e-1, 0.1430488765e-3, -0.6911147651e-5, 0.7621095161e-6, -0.934935152e-7)
_Q0_Y = (-0.1562499995e-1, 0.1430488765e-3, -0.6911147651e-5, 0.7621095161e-6, -0.934945152e-7)
_P1 = (1.0, 0.183105e-2, -0.3516396496e-4, 0.2457520174e-5, -0.240337019e-6)
_Q1 = (0.04687499995, -0.2002690873e-3, 0.8449199096e-5, -0.88228987e-6, 0.105787412e-6)
_TWO_OVER_PI = 0.636619772


def _j0(x: float) -> float:
    ax = abs(x)
    if ax < 8.0:
        y = x * x
        return _poly((57568490574.0, -13362590354.0, 651619640.7, -11214424.18, 77392.33017, -184.9052456), y) / \
            _poly((57568490411.0, 1029532985.0, 9494680.718, 59272.64853, 267.8532712, 1.0), y)
    z = 8.0 / ax
    y, xx = z * z, ax - 0.785398164
    return math.sqrt(_TWO_OVER_PI / ax) * (math.cos(xx) * _poly(_P0, y) - z * math.sin(xx) * _poly(_Q0_J, y))


def _j1(x: float) -> float:
    ax = abs(x)
    if ax < 8.0:
        y = x * x
        return x * _poly((72362614232.0, -7895059235.0, 242396853.1, -2972611.439, 15704.48260, -30.16036606), y) / \
            _poly((144725228442.0, 2300535178.0, 18583304.74, 99447.43394, 376.9991397, 1.0), y)
    z = 8.0 / ax
    y, xx = z * z, ax - 2.356194491
    answer = math.sqrt(_TWO_OVER_PI / ax) * (math.cos(xx) * _poly(_P1, y) - z * math.sin(xx) * _poly(_Q1, y))
    return -answer if x < 0.0 else answer


def _y0(x: float) -> float:
    if x < 8.0:
        y = x * x
        return _poly((-2957821389.0, 7062834065.0, -512359803.6, 10879881.29, -86327.92757, 228.4622733), y) / \
            _poly((40076544269.0, 745249964.8, 7189466.438, 47447.26470, 226.1030244, 1.0), y) + \
            _TWO_OVER_PI * _j0(x) * math.log(x)
    z = 8.0 / x
    y, xx = z * z, x - 0.785398164
    return math.sqrt(_TWO_OVER_PI / x) * (math.sin(xx) * _poly(_P0, y) + z * math.cos(xx) * _poly(_Q0_Y, y))


def _y1(x: float) -> float:
    if x < 8.0:
        y = x * x
        return x * _poly((-0.4900604943e13, 0.1275274390e13, -0.5153438139e11, 0.7349264551e9, -0.4237922726e7,
                          0.8511937935e4), y) / \
            _poly((0.2499580570e14, 0.4244419664e12, 0.3733650367e10, 0.2245904002e8, 0.1020426050e6,
                   0.3549632885e3, 1.0), y) + _TWO_OVER_PI * (_j1(x) * math.log(x) - 1.0 / x)
    z = 8.0 / x
    y, xx = z * z, x - 2.356194491
    return math.sqrt(_TWO_OVER_PI / x) * (math.sin(xx) * _poly(_P1, y) + z * math.cos(xx) * _poly(_Q1, y))


def _jn(n: int, x: float) -> float:
    if n == 0:
        return _j0(x)
    if n == 1:
        return _j1(x)
    ax = abs(x)
    if ax == 0.0:
        return 0.0
    two_over_x = 2.0 / ax
    if ax > n:
        if n > MAX_STEPS:
            raise Unsupported(f"BESSELJ of order {n}")
        before, current = _j0(ax), _j1(ax)
        for j in range(1, n):
            before, current = current, j * two_over_x * current - before
        answer = current
    else:
        answer = _miller(n, two_over_x, 2 * ((n + int(math.sqrt(_ACC * n))) // 2))
    return -answer if x < 0.0 and n & 1 else answer


def _miller(n: int, two_over_x: float, m: int) -> float:
    """J_n by Miller's downward recurrence from order m, normalised by J0 + 2 (J2 + J4 + ...) = 1."""
    if m > MAX_STEPS:
        raise Unsupported(f"BESSELJ of order {n}")
    odd = False
    after = answer = total = 0.0
    current = 1.0
    for j in range(m, 0, -1):
        below = j * two_over_x * current - after
        after, current = current, below
        if abs(current) > _BIG:
            current *= _SMALL
            after *= _SMALL
            answer *= _SMALL
            total *= _SMALL
        if odd:
            total += current
        odd = not odd
        if j == n:
            answer = after
    return answer / (2.0 * total - current)


def _yn(n: int, x: float) -> float:
    if n == 0:
        return _y0(x)
    if n == 1:
        return _y1(x)
    if n > MAX_STEPS:
        raise Unsupported(f"BESSELY of order {n}")
    two_over_x = 2.0 / x
    before, current = _y0(x), _y1(x)
    for j in range(1, n):
        before, current = current, j * two_over_x * current - before
        if math.isinf(current):
            raise ExcelError(NUM)
    return current


def _i0(x: float) -> float:
    ax = abs(x)
    if ax < 3.75:
        y = (x / 3.75) ** 2
        return _poly((1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2), y)
    y = 3.75 / ax
    return (math.exp(ax) / math.sqrt(ax)) * _poly(
        (0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
         -0.1647633e-1, 0.392377e-2), y)


def _i1(x: float) -> float:
    ax = abs(x)
    if ax < 3.75:
        y = (x / 3.75) ** 2
        answer = ax * _poly((0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3), y)
    else:
        y = 3.75 / ax
        answer = _poly((0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1,
                        -0.2895312e-1, 0.1787654e-1, -0.420059e-2), y) * (math.exp(ax) / math.sqrt(ax))
    return -answer if x < 0.0 else answer


def _in(n: int, x: float) -> float:
    if n == 0:
        return _i0(x)
    if n == 1:
        return _i1(x)
    if x == 0.0:
        return 0.0
    m = 2 * (n + int(math.sqrt(_ACC * n)))
    if m > MAX_STEPS:
        raise Unsupported(f"BESSELI of order {n}")
    two_over_x = 2.0 / abs(x)
    after = answer = 0.0
    current = 1.0
    for j in range(m, 0, -1):
        after, current = current, after + j * two_over_x * current
        if abs(current) > _BIG:
            answer *= _SMALL
            current *= _SMALL
            after *= _SMALL
        if j == n:
            answer = after
    answer *= _i0(x) / current
    return -answer if x < 0.0 and n & 1 else answer


def _k0(x: float) -> float:
    if x <= 2.0:
        y = x * x / 4.0
        return -math.log(x / 2.0) * _i0(x) + _poly(
            (-0.57721566, 0.42278420, 0.23069756, 0.3488590e-1, 0.262698e-2, 0.10750e-3, 0.74e-5), y)
    y = 2.0 / x
    return (math.exp(-x) / math.sqrt(x)) * _poly(
        (1.25331414, -0.7832358e-1, 0.2189568e-1, -0.1062446e-1, 0.587872e-2, -0.251540e-2, 0.53208e-3), y)


def _k1(x: float) -> float:
    if x <= 2.0:
        y = x * x / 4.0
        return math.log(x / 2.0) * _i1(x) + (1.0 / x) * _poly(
            (1.0, 0.15443144, -0.67278579, -0.18156897, -0.1919402e-1, -0.110404e-2, -0.4686e-4), y)
    y = 2.0 / x
    return (math.exp(-x) / math.sqrt(x)) * _poly(
        (1.25331414, 0.23498619, -0.3655620e-1, 0.1504268e-1, -0.780353e-2, 0.325614e-2, -0.68245e-3), y)


def _kn(n: int, x: float) -> float:
    if n == 0:
        return _k0(x)
    if n == 1:
        return _k1(x)
    if n > MAX_STEPS:
        raise Unsupported(f"BESSELK of order {n}")
    two_over_x = 2.0 / x
    before, current = _k0(x), _k1(x)
    for j in range(1, n):
        before, current = current, before + j * two_over_x * current
        if math.isinf(current):
            raise ExcelError(NUM)
    return current


def _number(value) -> float:
    """An argument as Excel reads it: a blank is 0, numeric text its number, anything else #VALUE!."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        raise ExcelError(VALUE)
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        raise ExcelError(VALUE) from None


def _order(value) -> int:
    n = _number(value)
    if n < 0:
        raise ExcelError(NUM)
    return int(n)


def _answer(compute, *arguments) -> float:
    try:
        result = compute(*arguments)
    except OverflowError:
        raise ExcelError(NUM) from None
    if math.isnan(result) or math.isinf(result):
        raise ExcelError(NUM)
    return result


def besselj(x, n) -> float:
    """BESSELJ(x, n) as Excel answers it; raises ExcelError with Excel's error code."""
    x, order = _number(x), _order(n)
    return _answer(_jn, order, x)


def bessely(x, n) -> float:
    """BESSELY(x, n) as Excel answers it; raises ExcelError with Excel's error code."""
    x, order = _number(x), _order(n)
    if x <= 0.0:
        raise ExcelError(NUM)
    return _answer(_yn, order, x)


def besseli(x, n) -> float:
    """BESSELI(x, n) as Excel answers it; raises ExcelError with Excel's error code."""
    x, order = _number(x), _order(n)
    return _answer(_in, order, x)


def besselk(x, n) -> float:
    """BESSELK(x, n) as Excel answers it; raises ExcelError with Excel's error code."""
    x, order = _number(x), _order(n)
    if x <= 0.0:
        raise ExcelError(NUM)
    return _answer(_kn, order, x)
