"""Excel's LINEST and TREND for `formulas`, whose own (1.3.4) disagree with Excel, and LOGEST and
GROWTH on them for the correction layer (dynamic/regression.py).

`functions()` gives the entries for formulas' function table (`formulas.get_functions()`).
formulas registers these two under their plain names only (no `_XLFN.` alias), and so do we.
The rules below are Excel's, as the values it saved in the corpus show (pycel's stats.xlsx,
formulas' test.xlsx, IronCalc's LINEST_LOGEST and TREND_GROWTH tests):

- An omitted `const`, or an empty one (`LINEST(y,x,,TRUE)`), means TRUE; so an omitted or empty
  `known_x` means {1,2,...,n} and an omitted or empty `new_x` means `known_x`. formulas hands a
  function the number 0 for an empty argument, which reads as FALSE; see `functions()` for how
  we tell the two apart.
- Shapes: y a column (n x 1) with x n x k (each column a variable), y a row (1 x n) with x k x n
  (each row a variable), or x of y's own shape (one variable). Anything else is #REF!, and the
  shapes are checked before the values. A value that is not a number (text, a blank cell, a
  logical value, an error) in y, x or new_x is #VALUE!, and so is an error as const or stats.
- Collinearity: the variables are taken in order, centred on their means when const is TRUE,
  and one whose remaining length, once the directions of the variables kept before it are taken
  out, is negligible next to its own length is removed: its coefficient and standard error are
  0, it counts as a degree of freedom gained, and the others are fitted without it. A variable
  with no variation at all (constant with const TRUE, all zeros without) gets coefficient and
  standard error 0 too, but Excel keeps counting it as a parameter: for y = {1;2;3} against two
  constant columns it answers df 0, r^2 1, ss_resid 0 (stats.xlsx LinestArrayExp!F21:H25).
- LINEST's first row is m_k ... m_1, b (b = 0 when const is FALSE); with stats, the rows below
  hold the standard errors (se_b #N/A without const), r^2 and se_y, F and df, ss_reg and
  ss_resid, #N/A beyond the second column. Without const the sums of squares are uncentred
  (ss_total = sum of y^2). F is #NUM! when ss_resid is 0.
- TREND fits the same way; the answer has new_x's shape for one variable, and one value per
  row of new_x (y a column) or per column (y a row) for several.
"""

from __future__ import annotations

import collections
import math
from typing import Any

from shared.calc.formulas.functions import excel_error


class _MissingArgument(int):
    """The number 0 that marks an omitted argument.

    formulas evaluates an empty argument (`LINEST(y,x,,TRUE)`) to a data node named '' whose
    value is 0. Our table entries give that node this value instead: equal to 0 everywhere, so
    any other function of the formula reading an empty argument sees what it saw before, but
    recognisable here.
    """

    __slots__ = ()  # (no __repr__ of its own: as text it must read "0", as the 0 it stands for)

    def __reduce__(self):
        return (_missing, ())


def _missing() -> "_MissingArgument":
    return MISSING


MISSING = _MissingArgument(0)

# A variable is removed when what remains of it, once the directions of the variables kept
# before it are taken out, is shorter than this fraction of its own (centred) length. A
# variable with no variation is one whose centred length is this small next to its raw length
# (centring a constant column of 0.1s leaves rounding noise, not exact zeros).
COLLINEAR_TOLERANCE = 1e-12
# Residuals this small next to y are rounding noise: an exact fit, ss_resid 0 (Excel answers
# ss_resid 0 and F #NUM! for y = x - 1, stats.xlsx Stats!D45:E49).
EXACT_FIT_TOLERANCE = 32 * 2.0 ** -52


def functions() -> dict[str, object]:
    """{"LINEST": ..., "TREND": ...} ready to put into formulas' function table.

    Each entry is a dict, the form formulas itself uses for functions that need more than
    their arguments (ROW, COLUMN): `extra_inputs` adds data nodes to the formula and passes
    them first. Ours is the node '' where formulas puts the value of an empty argument: giving
    it MISSING as its value is how an empty `const` comes to mean TRUE. (An empty argument of
    another function later in the same formula resets that node to 0; the empty argument then
    reads as FALSE again, as it did with formulas' own LINEST.)
    """
    from formulas.functions import wrap_func

    def entry(function):
        return {
            "extra_inputs": collections.OrderedDict([("", MISSING)]),
            "function": wrap_func(function),
        }

    return {"LINEST": entry(_linest_cell), "TREND": entry(_trend_cell)}


def _linest_cell(_missing_marker, *args):
    return linest(*args)


def _trend_cell(_missing_marker, *args):
    return trend(*args)


# --- the functions ---------------------------------------------------------------------------


def linest(known_y: Any, known_x: Any = MISSING, const: Any = MISSING, stats: Any = MISSING):
    """LINEST as an object array (formulas' Array); raises FoundError with Excel's error."""
    import numpy as np
    from formulas.functions import Array, Error

    y, x, _layout, _x_block = _regression_data(known_y, known_x)
    const = _logical(const, default=True)
    stats = _logical(stats, default=False)
    fit = _Fit(_numbers(y), _numbers(x), const)

    k = x.shape[1]
    out = np.empty((5 if stats else 1, k + 1), dtype=object)
    out[:, :] = Error.errors["#N/A"]  # (np.full would store the text, not the error)
    out[0, :k] = fit.slopes[::-1]
    out[0, k] = fit.intercept
    if stats:
        out[1, :k] = fit.slope_errors[::-1]
        out[1, k] = fit.intercept_error if const else Error.errors["#N/A"]
        out[2, 0], out[2, 1] = fit.r_squared, fit.y_error
        out[3, 0], out[3, 1] = fit.f_statistic, fit.df
        out[4, 0], out[4, 1] = fit.ss_reg, fit.ss_resid
    return _overflow_as_num(out).view(Array)


def trend(known_y: Any, known_x: Any = MISSING, new_x: Any = MISSING, const: Any = MISSING):
    """TREND as an object array (formulas' Array); raises FoundError with Excel's error."""
    import numpy as np
    from formulas.functions import Array

    y, x, layout, x_block = _regression_data(known_y, known_x)
    new = x_block if new_x is MISSING else _block(new_x)
    k = x.shape[1]
    if k == 1:  # one variable: a value for each cell of new_x, in new_x's shape
        points, shape = new.reshape(-1, 1), new.shape
    elif layout == "columns" and new.shape[1] == k:  # a row of new_x per value
        points, shape = new, (new.shape[0], 1)
    elif layout == "rows" and new.shape[0] == k:  # a column of new_x per value
        points, shape = new.T, (1, new.shape[1])
    else:
        raise excel_error("#REF!")
    const = _logical(const, default=True)
    fit = _Fit(_numbers(y), _numbers(x), const)
    values = _numbers(points) @ fit.slopes + fit.intercept
    return _overflow_as_num(np.asarray(values, dtype=object).reshape(shape)).view(Array)


def logest(known_y: Any, known_x: Any = MISSING, const: Any = MISSING, stats: Any = MISSING):
    """LOGEST: LINEST of the natural logarithms of y (Microsoft's LOGEST page: the statistics
    are those of the linear model ln y = x1 ln m1 + ... + ln b), its first row raised back:
    m_k ... m_1, b (1 when const is FALSE)."""
    import numpy as np

    out = linest(_logged(known_y, known_x), known_x, const, stats)
    out[0, :] = [np.exp(v) if isinstance(v, float) else v for v in out[0, :]]
    return _overflow_as_num(out)


def growth(known_y: Any, known_x: Any = MISSING, new_x: Any = MISSING, const: Any = MISSING):
    """GROWTH: the exponential of TREND over the natural logarithms of y."""
    import numpy as np

    out = trend(_logged(known_y, known_x), known_x, new_x, const)
    for index, value in enumerate(out.flat):
        if isinstance(value, float):
            out.flat[index] = float(np.exp(value))
    return _overflow_as_num(out)


def _logged(known_y: Any, known_x: Any):
    """y's natural logarithms, in y's shape, after the shapes are checked (#REF!): #VALUE! for a
    value that is not a number, #NUM! for a number that is 0 or negative (Microsoft's GROWTH
    and LOGEST pages)."""
    import numpy as np

    _regression_data(known_y, known_x)
    numbers = _numbers(_block(known_y))
    if (numbers <= 0).any():
        raise excel_error("#NUM!")
    return np.log(numbers).astype(object)


def _overflow_as_num(out):
    """Numbers beyond the floats (an overflow, inf - inf) become #NUM!, as Excel shows them."""
    from formulas.functions import Error

    for index, value in enumerate(out.flat):
        if isinstance(value, float) and not math.isfinite(value):
            out.flat[index] = Error.errors["#NUM!"]
    return out


# --- arguments -------------------------------------------------------------------------------


def _block(value: Any):
    """An argument as a 2-D object array (a single value is 1 x 1)."""
    import numpy as np

    block = np.asarray(value, dtype=object)
    if block.ndim == 0:
        block = block.reshape(1, 1)
    elif block.ndim == 1:
        block = block.reshape(1, -1)
    return block


def _regression_data(known_y: Any, known_x: Any):
    """(y as an n-vector, x as n x k, layout, x as given) of object arrays, or #REF!.

    layout is "columns" (y a column, a variable per column of x), "rows" (y a row, a variable
    per row of x) or "same" (x shaped like y: one variable).
    """
    import numpy as np

    y = _block(known_y)
    if known_x is MISSING:
        x = np.arange(1, y.size + 1, dtype=float).astype(object).reshape(y.shape)
    else:
        x = _block(known_x)
    if y.shape[1] == 1 and x.shape[0] == y.shape[0]:
        return y[:, 0], x, "columns", x
    if y.shape[0] == 1 and x.shape[1] == y.shape[1]:
        return y[0, :], x.T, "rows", x
    if x.shape == y.shape:
        return y.ravel(), x.reshape(-1, 1), "same", x
    raise excel_error("#REF!")


def _numbers(block: Any):
    """A float array of the values, or #VALUE! for anything that is not a number."""
    import numpy as np

    for value in np.asarray(block, dtype=object).flat:
        if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)
        ):
            raise excel_error("#VALUE!")
    return np.asarray(block, dtype=float)


def _logical(value: Any, default: bool) -> bool:
    """const or stats: omitted or empty -> default; a blank cell is FALSE; an error #VALUE!."""
    import numpy as np
    import schedula as sh
    from formulas.functions import XlError

    if value is MISSING:
        return default
    if isinstance(value, np.ndarray):  # a range or an array: its first value
        value = value.flat[0] if value.size else sh.EMPTY
    if value is sh.EMPTY:
        return False
    if isinstance(value, XlError):
        raise excel_error("#VALUE!")
    if isinstance(value, str):
        text = value.strip().upper()
        if text in ("TRUE", "FALSE"):
            return text == "TRUE"
        try:
            value = float(text)
        except ValueError:
            raise excel_error("#VALUE!") from None
    return bool(value)


# --- the fit ---------------------------------------------------------------------------------


class _Fit:
    """A least-squares fit of y (n) on the columns of x (n x k), with Excel's statistics.

    Excel's errors inside the statistics (0/0, F with no residual) are XlErrors in the fields.
    """

    def __init__(self, y, x, const: bool):
        import numpy as np
        from formulas.functions import Error

        n, k = x.shape
        if const:
            x_mean, y_mean = x.mean(axis=0), y.mean()
            xc, yc = x - x_mean, y - y_mean
        else:
            x_mean, y_mean = np.zeros(k), 0.0
            xc, yc = x, y
        kept, collinear = _independent_columns(x, xc)

        slopes = np.zeros(k)
        slope_errors = np.zeros(k)
        fitted = np.zeros(n)
        r_inverse = np.zeros((0, 0))
        if kept:
            q, r = np.linalg.qr(xc[:, kept])
            solution = np.linalg.solve(r, q.T @ yc)
            # One step of refinement on the residual: exact data then fits exactly
            # (y = x - 1 gives slope 1 and intercept -1, not 0.9999999999999997).
            solution += np.linalg.solve(r, q.T @ (yc - xc[:, kept] @ solution))
            slopes[kept] = solution
            fitted = xc[:, kept] @ solution
            r_inverse = np.linalg.inv(r)
        self.slopes = slopes
        self.intercept = float(y_mean - x_mean @ slopes) if const else 0.0

        # Degrees of freedom: a parameter for each variable and the intercept, less the
        # variables removed as collinear (a variable without variation still counts).
        self.df = n - k - int(const) + collinear
        total = float(yc @ yc)  # centred with const, uncentred (sum of y^2) without
        residual = yc - fitted
        exact = np.linalg.norm(residual) <= EXACT_FIT_TOLERANCE * np.linalg.norm(y)
        if self.df <= 0 or exact:
            # No residual degrees of freedom left, or an exact fit up to rounding.
            self.ss_resid = 0.0
            self.ss_reg = total if self.df <= 0 else float(fitted @ fitted)
        else:
            self.ss_resid = float(residual @ residual)
            self.ss_reg = float(fitted @ fitted)
        self.r_squared = self.ss_reg / total if total else Error.errors["#NUM!"]
        variance = self.ss_resid / self.df if self.df > 0 else 0.0
        self.y_error = math.sqrt(variance)

        # Standard errors: sqrt(variance * diag((X'X)^-1)) over the kept (centred) columns;
        # the intercept's adds 1/n and the means' share.
        if kept:
            slope_errors[kept] = np.sqrt(variance * np.sum(r_inverse ** 2, axis=1))
        self.slope_errors = slope_errors
        means_share = x_mean[kept] @ r_inverse if kept else np.zeros(0)
        self.intercept_error = math.sqrt(variance * (1 / n + float(means_share @ means_share)))

        regressors = k - collinear
        if self.ss_resid == 0 or regressors == 0:
            self.f_statistic = Error.errors["#NUM!"]
        else:
            self.f_statistic = (self.ss_reg / regressors) / (self.ss_resid / self.df)


def _independent_columns(x, xc) -> tuple[list[int], int]:
    """(columns kept, how many were removed as collinear), in Excel's order of columns.

    `x` holds the raw columns, `xc` the ones fitted (centred when const is TRUE). Gram-Schmidt
    (twice, for accuracy) takes each kept column's direction out of the columns after it.
    """
    import numpy as np

    basis: list = []
    kept: list[int] = []
    collinear = 0
    for j in range(x.shape[1]):
        column = xc[:, j]
        length = np.linalg.norm(column)
        if length <= COLLINEAR_TOLERANCE * np.linalg.norm(x[:, j]):
            continue  # no variation: coefficient 0, still a parameter
        rest = column.copy()
        for _ in range(2):
            for direction in basis:
                rest -= (direction @ rest) * direction
        rest_length = np.linalg.norm(rest)
        if rest_length <= COLLINEAR_TOLERANCE * length:
            collinear += 1
            continue
        basis.append(rest / rest_length)
        kept.append(j)
    return kept, collinear
