"""Statistical functions to the last digit, as Excel saves them: the cumulative normal and
lognormal distributions, GAUSS, the error functions, the exponential distribution, FISHERINV,
BETA.DIST, GAMMA and GAMMALN (shared/calc/corrections/dynamic/distributions.py, always taken by
dynamic.select).

Expected values are cells saved by Excel in IronCalc's test workbooks (NORM_DIST.xlsx,
LOGNORM.xlsx, GAUSS.xlsx, ERFs.xlsx, ERF.xlsx, ERFC.xlsx, EXPONDIST.xlsx,
FISHER_FISHERINV.xlsx, BETA_GAMMA.xlsx, GAMMALN_GAMMALNPRECISE.xlsx). IronCalc 0.9.1 computes the
normal family with approximations 1e-11 to 1e-10 relative off, the exponential's cumulative
probability as 1 minus a power, which loses digits where it is small, FISHERINV as a hyperbolic
tangent where Excel takes its page's formula, BETA.DIST up to 1.3e-13 off, and GAMMA and
GAMMALN a few digits off whole numbers: its values are in the comments.
"""

import pytest

from .conftest import (
    assert_answers,
    assert_each_answers,
    named_formulas,
    uploaded_and_stored,
)

# name -> (formula, Excel's saved value)
SAVED = {
    "norm_minus_one": ("=NORM.DIST(-1,0,1,TRUE)", 0.158655253931457),  # IronCalc 0.15865525391780
    "norm_one": ("=NORM.DIST(1,0,1,TRUE)", 0.841344746068543),
    "norm_1_96": ("=NORM.DIST(-1.96,0,1,TRUE)", 0.02499789514822043),  # IronCalc 0.024997895147096
    "norm_shifted": ("=NORM.DIST(0.8,1.2,0.2,TRUE)", 0.02275013194817922),
    "norm_42": ("=NORM.DIST(42,40,1.5,TRUE)", 0.9087887802741321),
    "norm_density": ("=NORM.DIST(42,40,1.5,FALSE)", 0.10934004978399575),
    "normdist": ("=NORMDIST(1.96,0,1,TRUE)", 0.9750021048517795),
    "norm_s": ("=NORM.S.DIST(-1,TRUE)", 0.158655253931457),
    "normsdist": ("=NORMSDIST(1)", 0.841344746068543),
    "lognorm": ("=LOGNORM.DIST(4,3.5,1.2,TRUE)", 0.03908355570680048),
    "lognorm_half": ("=LOGNORM.DIST(0.5,0,1,TRUE)", 0.2441085957855827),
    "lognorm_density": ("=LOGNORM.DIST(4,3.5,1.2,FALSE)", 0.01761759668181922),
    "lognormdist": ("=LOGNORMDIST(10,2,0.5)", 0.7274670383157376),
    "gauss": ("=GAUSS(0.001)", 0.00039894221391101325),  # NORM.S.DIST(z,TRUE) - 0.5, as Excel subtracts
    "gauss_tiny": ("=GAUSS(1E-07)", 3.9894228032189005e-08),
    "erf": ("=ERF(0.5)", 0.5204998778130465),
    "erf_two": ("=ERF(1,6)", 0.1572992070502851),  # ERF(6) - ERF(1), subtracted as Excel does
    "erf_down": ("=ERF(5,4)", -1.541572047791817e-08),
    "erf_precise": ("=ERF.PRECISE(2.5)", 0.999593047982555),
    "erfc": ("=ERFC(4.5)", 1.9661604415428865e-10),
    "erfc_five": ("=ERFC(5)", 1.537459794428034e-12),
    "erfc_precise": ("=ERFC.PRECISE(1)", 0.15729920705028513),
    "erfc_negative": ("=ERFC(-1)", 1.8427007929497148),
    "expon_small": ("=EXPON.DIST(1E-05,1E-05,TRUE)", 9.999999999500002e-11),  # IronCalc 1.000000082740371e-10
    "expon_slow": ("=EXPON.DIST(1,1E-05,TRUE)", 9.999950000166666e-06),  # IronCalc 9.999950000172397e-06
    "expondist": ("=EXPONDIST(0.001,0.001,TRUE)", 9.999995000001667e-07),  # IronCalc 9.999994999843054e-07
    "expon_density": ("=EXPON.DIST(0.2,10,FALSE)", 1.353352832366127),
    # FISHER_FISHERINV.xlsx: the page's formula (e^2y - 1) / (e^2y + 1); IronCalc's tanh 9.999999999999965e-08
    "fisherinv_tiny": ("=FISHERINV(1E-07)", 1.0000000005039292e-07),
    "fisherinv_negative": ("=FISHERINV(-1E-07)", -1.0000000001086735e-07),
    "fisherinv": ("=FISHERINV(0.5493061443340549)", 0.5000000000000001),
    # BETA_GAMMA.xlsx and BETADIST_BETAINV.xlsx
    "beta_density": ("=BETA.DIST(2,8,10,FALSE,1,3)", 1.4837646484375),  # IronCalc 1.4837646484376519
    "beta_many": ("=BETA.DIST(0.555,1000,1000,TRUE,0.1,1)", 0.6903551301985376),  # IronCalc ...986247
    "betadist": ("=BETADIST(0.555,100,1,0.1,1)", 2.3817091316180232e-30),  # IronCalc 8.8e-14 off
    "gamma_five": ("=GAMMA(5)", 24),  # BETA_GAMMA.xlsx; IronCalc 24.000000000000114
    "gamma_negative": ("=GAMMA(-3.2)", 0.6890564120059791),  # IronCalc 0.689056412005978
    "gammaln_one": ("=GAMMALN(1)", 0),  # GAMMALN_GAMMALNPRECISE.xlsx; IronCalc -4.4E-16
    "gammaln_three": ("=GAMMALN.PRECISE(3)", 0.6931471805599454),  # IronCalc 0.693147180559949
}


def test_as_excel_saves_them():
    assert_each_answers(SAVED, rel=1e-15)


def test_an_option_price_from_inputs():
    """Black and Scholes' call, the formula a pricing sheet holds: each N(d) to Excel's digits."""
    book = named_formulas({
        "n_d1": "=NORM.S.DIST(B1,TRUE)",
        "n_d2": "=NORM.S.DIST(B1-B2,TRUE)",
    }, column="D", cells={"B1": 0.5, "B2": 0.2}, names={"d1": "$B$1", "vol_root_t": "$B$2"})
    for workbook in uploaded_and_stored(book):
        outputs = workbook.calculate({"d1": -1, "vol_root_t": 0.96})
        assert outputs["n_d1"] == pytest.approx(0.158655253931457, rel=1e-15, abs=0)  # NORM_DIST.xlsx E9
        assert outputs["n_d2"] == pytest.approx(0.02499789514822043, rel=1e-15, abs=0)  # E11


@pytest.mark.parametrize("formula, excel", [
    ("=NORM.DIST(1,0,0,TRUE)", "#NUM!"),  # a standard deviation of 0 (Microsoft's page)
    ("=NORM.DIST(1,0,-1,FALSE)", "#NUM!"),
    ("=LOGNORM.DIST(0,0,1,TRUE)", "#NUM!"),  # x of 0 or below
    ("=LOGNORM.DIST(1,0,0,TRUE)", "#NUM!"),
    ("=ERF(TRUE)", "#VALUE!"),  # a logical value (ERFs.xlsx row 15 reads one from a cell)
    ("=ERFC.PRECISE(TRUE)", "#VALUE!"),
    ("=NORM.S.DIST(TRUE,TRUE)", 0.841344746068543),  # read as 1
    ("=EXPON.DIST(-1E-05,10,TRUE)", "#NUM!"),  # EXPONDIST.xlsx D18
    ("=EXPON.DIST(1,0,TRUE)", "#NUM!"),  # D25
    ("=BETA.DIST(0.5,0,2,TRUE)", "#NUM!"),  # alpha of 0 (Microsoft's page)
    ("=BETA.DIST(3,2,2,TRUE,1,3)", 1.0),  # x at the upper bound
    ("=BETA.DIST(0,0.5,2,FALSE)", "#NUM!"),  # an infinite density, as IronCalc answers
    ("=GAMMA(0)", "#NUM!"),  # 0 and the negative whole numbers (Microsoft's page)
    ("=GAMMA(-3)", "#NUM!"),
    ("=GAMMALN(-0.5)", "#NUM!"),  # x of 0 or below
])
def test_argument_rules(formula, excel):
    assert_answers(formula, excel, rel=1e-15)


def test_a_logical_value_in_a_cell_given_to_erf():
    book = named_formulas({"erf": "=ERF(A1)", "erfc": "=ERFC.PRECISE(A1)"}, column="D", cells={"A1": True})
    for workbook in uploaded_and_stored(book):
        assert workbook.calculate({}) == {"erf": "#VALUE!", "erfc": "#VALUE!"}
