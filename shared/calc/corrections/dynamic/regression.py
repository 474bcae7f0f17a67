"""TREND, LINEST, GROWTH and LOGEST in the dynamic-array evaluator, with Excel's fit and rules as
shared/calc/formulas/regression.py holds them (measured on the corpus: shapes other than a
variable per column or row of known_x's are #REF!, anything not a number among the values is
#VALUE!, collinear variables are removed).

IronCalc 0.9.1 answers #REF! for LINEST in one cell of a workbook Excel saved before dynamic
arrays (pycel's stats.xlsx Stats!G3:G29, where Excel shows the slope, the array's first item),
#NUM! for collinear variables (LinestArrayExp!F21: Excel 0) and a wrong fit without `const`
(formulas' test.xlsx STATISTICAL!AG63:AH63), so every LINEST cell is evaluated here too; and
LOGEST and GROWTH, which IronCalc answers alike (LOGEST in one cell #REF!, STATISTICAL!R59;
an error among the values passed on where Excel answers #VALUE!, AB59:AF59 and AA51:AF51).

IronCalc 0.9.1 answers #REF! for TREND(y,,new_x) (Microsoft's Excel 97 help for TREND:
`TREND(B2:B13,,{13;14;15;16;17})`), a number for new_x's of the wrong width (formulas'
test.xlsx STATISTICAL!S113, V113: Excel #REF!) and passes an error among new_x's on (AA113:
Excel #VALUE!), so every TREND cell is evaluated here (dynamic/__init__.py routes it).
"""

from __future__ import annotations

from shared.calc.corrections.dynamic.functions import _arity, _opt, function
from shared.calc.corrections.dynamic.values import Err, Grid


def _as_formulas(value):
    """One of our scalars as formulas' regression code reads it: a blank as schedula's EMPTY,
    an error as formulas' XlError (anything else that is not a number reads as #VALUE!)."""
    import schedula as sh
    from formulas.functions import Error

    if value is None:
        return sh.EMPTY
    if isinstance(value, Err):
        return Error.errors.get(value.code, Error.errors["#VALUE!"])
    return value


def _block(ev, value):
    import numpy as np

    rows = ev.grid(value).rows
    out = np.empty((len(rows), len(rows[0]) if rows else 0), dtype=object)
    for r, row in enumerate(rows):
        for c, item in enumerate(row):
            out[r, c] = _as_formulas(item)
    return out


def _ours(value):
    from formulas.functions import XlError

    if isinstance(value, XlError):
        return Err(str(value))
    return float(value)


def _fitted(ev, args, fit: str):
    """regression.trend, .linest, .logest or .growth (`fit`) of a call's four arguments, an
    omitted one MISSING."""
    from formulas.errors import FoundError

    from shared.calc.formulas import regression

    given = [_opt(args, i, None) for i in range(4)]
    blocks = [_block(ev, given[0])] + [regression.MISSING if g is None else _block(ev, g) for g in given[1:]]
    try:
        result = getattr(regression, fit)(*blocks)
    except FoundError as exc:
        return Err(str(exc.err))
    return Grid([[_ours(x) for x in row] for row in result.tolist()])


def _regression(fit: str):
    def run(ev, args):
        _arity(args, 1, 4)
        return _fitted(ev, args, fit)
    return run


for _name in ("TREND", "LINEST", "LOGEST", "GROWTH"):
    function(_name)(_regression(_name.lower()))
