"""Student's t, F, chi-squared, beta and gamma tails and inverses to the last digit, and the
hypergeometric distribution, as Excel answers them (shared/calc/corrections/dynamic/distributions.py,
taken by dynamic.select).

Expected values: cells saved by Excel (formulas' test.xlsx STATISTICAL!X103:X104, where the
argument reads as 60: T.DIST.2T(60,60) and T.DIST.RT(60,60); IronCalc's CONFIDENCE.xlsx E8),
and otherwise the closed forms the distributions have for one or two degrees of freedom or a
shape of 1 (Student's t with one degree of freedom is Cauchy's, F(2,2)'s right tail is
1/(1+x), chi-squared with two is the exponential of mean 2, gamma with shape 1 the exponential,
beta with alpha 1 is 1-(1-x)^beta). IronCalc 0.9.1 answers each of them with fewer right digits:
its values are in the comments.
"""

import math
from fractions import Fraction

import pytest

from .conftest import (
    assert_answers,
    assert_each_answers,
    named_formulas,
    uploaded_and_stored,
)

# name -> (formula, expected)
CASES = {
    # Excel-saved
    "t_right_excel": ("=T.DIST.RT(60,60)", 1.4243034807199291e-55),  # IronCalc 0
    "t_two_excel": ("=T.DIST.2T(60,60)", 2.8486069614398582e-55),  # IronCalc 0
    "confidence_excel": ("=CONFIDENCE.T(0.999999,1,50)", 1.781519460717496e-07),  # IronCalc 1.7824e-07
    # closed forms
    "t_right_cauchy": ("=T.DIST.RT(1E+9,1)", math.atan(1e-9) / math.pi),  # IronCalc 3.1830993e-10
    "tdist_cauchy": ("=TDIST(1E+9,1,2)", 2 * math.atan(1e-9) / math.pi),
    "t_inv_cauchy": ("=T.INV(1E-10,1)", -1 / math.tan(math.pi * 1e-10)),  # IronCalc -88563319
    "t_inv_2t_cauchy": ("=T.INV.2T(1E-10,1)", 1 / math.tan(math.pi * 0.5e-10)),  # IronCalc 90265555
    "tinv_cauchy": ("=TINV(1E-10,1)", 1 / math.tan(math.pi * 0.5e-10)),
    "confidence_cauchy": ("=CONFIDENCE.T(1E-10,1,2)", 1 / math.tan(math.pi * 0.5e-10) / math.sqrt(2)),
    "chiinv_two": ("=CHIINV(1E-10,2)", -2 * math.log(1e-10)),  # IronCalc 46.0517005840
    "chisq_inv_rt_two": ("=CHISQ.INV.RT(1E-10,2)", -2 * math.log(1e-10)),
    "chisq_inv_two": ("=CHISQ.INV(0.25,2)", -2 * math.log1p(-0.25)),  # IronCalc 0.5753641443
    "f_right_two_two": ("=F.DIST.RT(1E+9,2,2)", 1 / (1 + 1e9)),  # IronCalc 9.9999997e-10
    "fdist_two_two": ("=FDIST(1E+9,2,2)", 1 / (1 + 1e9)),
    "f_inv_rt_two_two": ("=F.INV.RT(1E-9,2,2)", (1 - 1e-9) / 1e-9),  # IronCalc 999999917.26
    "finv_two_two": ("=FINV(1E-9,2,2)", (1 - 1e-9) / 1e-9),
    "f_inv_two_two": ("=F.INV(0.25,2,2)", 0.25 / 0.75),
    "gamma_inv_exponential": ("=GAMMA.INV(0.25,1,1.5)", -1.5 * math.log1p(-0.25)),  # IronCalc 0.43152310802
    "gammainv_exponential": ("=GAMMAINV(0.25,1,1.5)", -1.5 * math.log1p(-0.25)),
    "beta_inv_alpha_one": ("=BETA.INV(0.75,1,6560)", -math.expm1(math.log1p(-0.75) / 6560)),
    "betainv_alpha_one": ("=BETAINV(0.75,1,6560,10,20)", 10 - 10 * math.expm1(math.log1p(-0.75) / 6560)),
    # F(m, 2)'s density (m/2)^(m/2+1) x^(m/2-1) (1+mx/2)^-(m/2+1): IronCalc #NUM! for m = 200
    "f_density": ("=F.DIST(0.5,200,2,FALSE)", math.exp(101 * math.log(100) + 99 * math.log(0.5) - 101 * math.log(51))),
}


def test_tails_and_inverses_to_the_last_digit():
    assert_each_answers(CASES, rel=1e-12)


@pytest.mark.parametrize("formula, excel", [
    ("=T.DIST.2T(-1,5)", "#NUM!"),  # x < 0 (Microsoft's page)
    ("=T.DIST.RT(3,0.5)", "#NUM!"),  # deg_freedom truncated below 1
    ("=TDIST(1,5,3)", "#NUM!"),  # tails neither 1 nor 2
    ("=T.INV(1,5)", "#NUM!"),
    ("=T.INV.2T(1,5)", 0.0),
    ("=CONFIDENCE.T(0.05,1,1)", "#DIV/0!"),  # a sample of one (Microsoft's page)
    ("=CHISQ.INV(1.1,5)", "#NUM!"),
    ("=CHISQ.INV.RT(1,5)", 0.0),
    ("=F.INV.RT(0,5,6)", "#NUM!"),
    ("=GAMMA.INV(0.5,0,3)", "#NUM!"),
    ("=BETA.INV(1,1,2,0,1)", "#NUM!"),  # IronCalc's Excel-saved BETADIST_BETAINV.xlsx H69
    ("=BETA.INV(0.5,2,3,2,1)", "#NUM!"),  # A above B
    ("=T.DIST.RT(\"x\",5)", "#VALUE!"),
    ("=T.DIST.RT(NA(),5)", "#N/A"),
    ('=T.DIST.RT(0.7,"1")', 0.30559988778578523),  # test.xlsx STATISTICAL!T104: numeric text
    ("=T.DIST.RT(TRUE,60)", 0.1606632516466229),  # test.xlsx Y104: a logical value is 1
])
def test_argument_rules(formula, excel):
    assert_answers(formula, excel)


def test_inside_a_formula_and_from_inputs():
    """A p-value from inputs, compared in an IF: the tail decides the branch."""
    book = named_formulas({
        "p": "=T.DIST.2T(ABS(A1),A2)",
        "verdict": '=IF(T.DIST.2T(ABS(A1),A2)>0,"a p-value","underflow")',
        "critical": "=T.INV.2T(A3,A2)",
    }, column="D", cells={"A1": -60, "A2": 60, "A3": 0.546449}, names={"t": "$A$1", "df": "$A$2", "alpha": "$A$3"})
    for workbook in uploaded_and_stored(book):
        outputs = workbook.calculate({})
        assert outputs["p"] == pytest.approx(2.8486069614398582e-55, rel=1e-12, abs=0)
        assert outputs["verdict"] == "a p-value"  # IronCalc alone: "underflow"
        # Microsoft's example on the T.INV.2T page: 0.606533 for 0.546449 and 60 degrees
        assert outputs["critical"] == pytest.approx(0.606533, rel=1e-6)
        outputs = workbook.calculate({"t": 1e9, "df": 1}, ["p"])
        assert outputs["p"] == pytest.approx(2 * math.atan(1e-9) / math.pi, rel=1e-12, abs=0)


@pytest.mark.parametrize("formula, excel", [
    # formulas' test.xlsx STATISTICAL row 54, saved by Excel (IronCalc 0.9.1: #NUM! for the first three)
    ("=HYPGEOM.DIST(0,0,0,0,FALSE)", 1.0),  # R54: zeros are allowed
    ("=HYPGEOM.DIST(0,0,4,4,TRUE)", 1.0),  # W54
    ("=HYPGEOM.DIST(0,2,3,3,TRUE)", 0.0),  # AG54: below the smallest possible count
    ("=HYPGEOM.DIST(5,3,2,30,TRUE)", 1.0),  # AI54: above the largest
    ("=HYPGEOM.DIST(0,3,2,30,TRUE)", 0.806896551724138),  # AH54
    ("=HYPGEOM.DIST(1,3,2,30,TRUE)", 0.993103448275862),  # AO54
    ('=HYPGEOM.DIST(0.7,"1",5,8,3)', 0.37500000000000006),  # T54: truncated, text and 3 read
    ("=HYPGEOM.DIST(5,10,30,7,FALSE)", "#NUM!"),  # S54: a sample above the population
    ("=HYPGEOM.DIST(3,-1,3,5,TRUE)", "#NUM!"),  # U54
    ("=HYPGEOM.DIST(4,3,7,4,TRUE)", "#NUM!"),  # V54: successes above the population
    # IronCalc's HYPERGEOM_DIST.xlsx, saved by Excel
    ("=HYPGEOM.DIST(1.8,4.2,8.2,22,TRUE)", 0.5349282296650714),
    ("=HYPGEOM.DIST(1.8,4.2,8.2,18.34,FALSE)", 0.31372549019607815),
    ("=HYPGEOMDIST(1,4,8,20)", 1760 / 4845),  # Microsoft's HYPGEOMDIST example (0.3633), exactly
])
def test_hypergeometric_as_excel_saves_it(formula, excel):
    assert_answers(formula, excel)


def test_hypergeometric_of_an_audit_sample():
    """250 of 1,000 sampled from 10,000 holding 2,500: Microsoft's definition,
    C(2500,250) C(7500,750) / C(10000,1000), where IronCalc 0.9.1's coefficients overflow (#NUM!);
    the cumulative probability the sum of those terms."""
    def exact(k):
        return Fraction(math.comb(2500, k) * math.comb(7500, 1000 - k), math.comb(10000, 1000))

    book = named_formulas({"p": "=HYPGEOM.DIST(A1,1000,2500,10000,FALSE)",
                           "cdf": "=HYPGEOM.DIST(A1,1000,2500,10000,TRUE)"},
                          column="D", cells={"A1": 250}, names={"k": "$A$1"})
    for workbook in uploaded_and_stored(book):
        outputs = workbook.calculate({})
        assert outputs["p"] == pytest.approx(float(exact(250)), rel=1e-14, abs=0)
        assert outputs["cdf"] == pytest.approx(float(sum(exact(k) for k in range(251))), rel=1e-12)
        outputs = workbook.calculate({"k": 300})
        assert outputs["cdf"] == pytest.approx(float(sum(exact(k) for k in range(301))), rel=1e-12)


def test_hypergeometric_of_a_large_population():
    """A population of 100,000 (beyond the exact ratio the layer computes itself): still within
    1e-12 of Microsoft's definition."""
    exact = Fraction(math.comb(25000, 2500) * math.comb(75000, 7500), math.comb(100000, 10000))
    book = named_formulas({"p": "=HYPGEOM.DIST(2500,10000,25000,100000,FALSE)"})
    for workbook in uploaded_and_stored(book):
        assert workbook.calculate({})["p"] == pytest.approx(float(exact), rel=1e-12, abs=0)


def t_test_book() -> bytes:
    """IronCalc's T_TEST.xlsx, saved by Excel: two columns with logical values, text and blanks
    among the numbers, tested with every tails and type; and paired differences 2^30, 2^30 + 1 and
    2^30 + 2 (t = (2^30 + 1) sqrt(3) on two degrees of freedom, whose right tail is
    1 / (sqrt(t^2 + 2) (sqrt(t^2 + 2) + t)): 1.4E-19, where IronCalc 0.9.1 answers 0)."""
    first = [1, 2, 3, 4, -3, True, "hello"]
    second = [2, -3.3, 0, True, "no", 2, 2]
    cells = {f"A{row}": value for row, value in enumerate(first, start=1)}
    cells.update({f"B{row}": value for row, value in enumerate(second, start=1)})
    cells.update({"H1": 2.0 ** 30, "H2": 2.0 ** 30 + 1, "H3": 2.0 ** 30 + 2, "I1": 0, "I2": 0, "I3": 0})
    formulas = {f"t{tails}{kind}": f"=T.TEST($A$1:$A$7,$B$1:$B$7,{tails},{kind})"
                for tails in (1, 2) for kind in (1, 2, 3)}
    formulas.update({
        "rounded": "=T.TEST($A$1:$A$7,$B$1:$B$7,2.2,3.3)",
        "tails_below_1": "=T.TEST($A$1:$A$7,$B$1:$B$7,0.6,1)",
        "type_4": "=T.TEST($A$1:$A$7,$B$1:$B$7,1,4)",
        "two_degrees": "=T.TEST(H1:H3,I1:I3,2,1)",
        "legacy": "=TTEST(H1:H3,I1:I3,1,1)",
        "pairs_of_other_sizes": "=T.TEST(H1:H3,I1:I2,2,1)",
    })
    return named_formulas(formulas, column="F", cells=cells)


def test_t_test_as_excel_saves_it_and_in_its_tail():
    t = (2.0 ** 30 + 1) * math.sqrt(3)
    tail = 1 / (math.sqrt(t * t + 2) * (math.sqrt(t * t + 2) + t))
    for workbook in uploaded_and_stored(t_test_book()):
        outputs = workbook.calculate({})
        excel = {"t11": 0.15855028798217946, "t12": 0.3017830576436469, "t13": 0.3019520078734871,
                 "t21": 0.3171005759643589, "t22": 0.6035661152872938, "t23": 0.6039040157469742,
                 "rounded": 0.6039040157469742}
        for name, value in excel.items():
            assert outputs[name] == pytest.approx(value, rel=1e-12), name
        assert outputs["tails_below_1"] == "#NUM!"
        assert outputs["type_4"] == "#NUM!"
        assert outputs["two_degrees"] == pytest.approx(2 * tail, rel=1e-12, abs=0)  # IronCalc 0
        assert outputs["legacy"] == pytest.approx(tail, rel=1e-12, abs=0)
        assert outputs["pairs_of_other_sizes"] == "#N/A"  # Microsoft's page, paired data
        assert workbook.correction_flags() == []


def goodness_of_fit_book() -> bytes:
    """Rows 16, 17, 33 and 34 of formulas' test.xlsx STATISTICAL sheet, saved by Excel (its
    date text left as text), with the CHISQ.TEST and F.TEST cells of rows 17 and 34; and arrays
    whose p-values have closed forms: chi-squared on two degrees of freedom is e^(-x/2)
    (200 here), F(2,2)'s left tail x/(1+x) (a variance ratio of 1E-18)."""
    # C..M of rows 17 and 34 (H blank; K, L and M hold #VALUE!, #N/A and #DIV/0!)
    row = {"C": 10, "D": 3.2, "E": 0.7, "F": 2, "G": 4, "I": "13/01/1900", "J": True,
           "K": '="a"+1', "L": "=NA()", "M": "=1/0"}
    cells = {f"{column}{number}": value for number in (17, 34) for column, value in row.items()}
    cells.update({"C16": 10, "D16": 0.1, "E16": 0.7, "F16": 100, "G16": 4, "E14": 0.7, "E15": 0.7})
    cells.update({"C33": 10, "D33": 0.1, "E33": 0.7, "F33": 100, "G33": 4})
    return named_formulas({
        "shapes_differ": "=CHISQ.TEST(C16:D17,E14:E17)",
        "tiny": "=CHISQ.TEST(C16:D17,F16:G17)",
        "counts_differ": "=CHISQ.TEST(D17:E17,E17:G17)",
        "blank_expected": "=CHISQ.TEST(E17:F17,G17:H17)",
        "one_value": "=CHISQ.TEST(D17,F17)",
        "no_pair": "=CHISQ.TEST(G17:I17,H17:J17)",
        "errors": "=CHISQ.TEST(J17:K17,L17:M17)",
        "f_two_values": "=F.TEST(D34,F34)",
        "f_counts_differ": "=F.TEST(D34:E34,E34:G34)",
        "f_tiny": "=F.TEST(C33:D34,F33:G34)",
        "f_errors": "=F.TEST(J34:K34,L34:M34)",
        "chisq_closed": "=CHISQ.TEST({200,0,100},{100,100,100})",
        "chitest_closed": "=CHITEST({200,0,100},{100,100,100})",
        "f_closed": "=F.TEST({0,1,2},{0,1E9,2E9})",
        "ftest_closed": "=FTEST({0,1E9,2E9},{0,1,2})",
    }, column="P", cells=cells)


def test_goodness_of_fit_and_variance_tests_as_excel_saves_them():
    """CHISQ.TEST and F.TEST compute their right tails directly: IronCalc 0.9.1 answers 0 below
    about 1e-16, and #VALUE! where Excel compares arrays of other shapes value by value or
    answers #N/A or #DIV/0!."""
    for workbook in uploaded_and_stored(goodness_of_fit_book()):
        outputs = workbook.calculate({})
        numbers = {
            "shapes_differ": 9.66041305483331e-58,  # test.xlsx R17; IronCalc #VALUE!
            "tiny": 2.925470139064717e-27,  # AG17; IronCalc 0
            "blank_expected": 0.09894293606729619,  # T17: the pair with a blank left out
            "f_counts_differ": 0.7979982021244996,  # S34
            "f_tiny": 0.0036510706026020258,  # AG34
            "chisq_closed": math.exp(-100),  # IronCalc 0
            "chitest_closed": math.exp(-100),
            "f_closed": 2e-18 / (1 + 1e-18),  # IronCalc 0
            "ftest_closed": 2e-18 / (1 + 1e-18),
        }
        for name, value in numbers.items():
            assert outputs[name] == pytest.approx(value, rel=1e-13, abs=0), name
        assert outputs["counts_differ"] == "#N/A"  # S17; IronCalc #VALUE!
        assert outputs["one_value"] == "#N/A"  # U17; IronCalc #VALUE!
        assert outputs["no_pair"] == "#DIV/0!"  # V17; IronCalc 1
        assert outputs["errors"] == "#VALUE!"  # Y17: the first array's error before the second's
        assert outputs["f_two_values"] == "#DIV/0!"  # U34; IronCalc #VALUE!
        assert outputs["f_errors"] == "#VALUE!"  # Y34
        assert workbook.correction_flags() == []


def z_test_book() -> bytes:
    """Row 121 of formulas' test.xlsx STATISTICAL sheet (C..Q: numbers, a blank, a date text,
    TRUE and errors; O, its #NULL!, left out) with C120:D120 above it, and IronCalc's Z_TEST.xlsx column A (a
    logical value among the numbers), both saved by Excel, with their Z.TEST cells."""
    row = {"C": 10, "D": 3.2, "E": 0.7, "F": 2, "G": 4, "I": "13/01/1900", "J": True, "K": '="a"+1',
           "L": "=NA()", "M": "=1/0", "N": "=NOT_A_FUNCTION()", "P": "=SQRT(-1)",
           "Q": "=INDIRECT(\"ZZZZ1\")"}
    cells = {f"{column}121": value for column, value in row.items()}
    cells.update({"C120": 0, "D120": -0.1})
    cells.update({f"A{r}": value for r, value in enumerate([1, 2, 3, 2, 2.2, 1.8, 2, True, 1, 2], start=1)})
    return named_formulas({
        "sample_sd": "=Z.TEST(C120:D121,E121)",
        "sigma": "=Z.TEST(E121:F121,G121, 2)",
        "sigma_zero": "=Z.TEST(D121:E121,F121,0)",
        "one_number": "=Z.TEST(G121:I121,H121,2)",
        "x_true": "=Z.TEST(F121:I121,J121)",
        "x_error_first": "=Z.TEST(J121:K121,L121)",
        "sigma_error_next": "=Z.TEST(M121:N121,3,N121)",
        "array_error_last": "=Z.TEST(P121:Q121,E121)",
        "no_number": "=Z.TEST(H121:J121,E121)",
        "saved_sd": "=Z.TEST($A$1:$A$10,2.3)",
        "saved_sigma": "=Z.TEST($A$1:$A$10,1.7,1)",
        "legacy": "=ZTEST($A$1:$A$10,1.99)",
    }, column="T", cells=cells)


def test_z_test_as_excel_saves_it():
    """Z.TEST is 1 minus the exact normal distribution (IronCalc 0.9.1's is 5e-11 off), with the
    argument rules of the Excel-saved cells."""
    for workbook in uploaded_and_stored(z_test_book()):
        outputs = workbook.calculate({})
        numbers = {
            "sample_sd": 0.13853080871747964,  # test.xlsx R121; IronCalc 0.13853080872433643
            "sigma": 0.9695232747225335,  # T121; IronCalc 0.9695232747239189
            "x_true": 0.02275013194817919,  # W121: TRUE in a cell is 1; IronCalc #VALUE!
            "saved_sd": 0.9785431996696947,  # Z_TEST.xlsx E4; IronCalc 0.9785431996706505
            "saved_sigma": 0.285470335901444,  # E3
            "legacy": 0.6907332550934567,  # E5, as Z.TEST
        }
        for name, value in numbers.items():
            assert outputs[name] == pytest.approx(value, rel=1e-14, abs=0), name
        assert outputs["sigma_zero"] == "#NUM!"  # U121
        assert outputs["one_number"] == "#DIV/0!"  # V121, sigma given; IronCalc #VALUE!
        assert outputs["x_error_first"] == "#N/A"  # Y121: x's error before the array's #VALUE!
        assert outputs["sigma_error_next"] == "#NAME?"  # AB121: sigma's before the array's #DIV/0!
        assert outputs["array_error_last"] == "#NUM!"  # AE121
        assert outputs["no_number"] == "#N/A"  # Microsoft's page: an empty array
        assert workbook.correction_flags() == []
