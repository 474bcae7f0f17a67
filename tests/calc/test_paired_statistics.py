"""The statistics of paired data as Excel pairs two arrays (shared/calc/corrections/dynamic/paired.py).

Expected values are worked by hand from the rules of the COVARIANCE.P, SLOPE and RSQ pages and
from cells formulas' test.xlsx saved from Excel (tests/conformance/cases/COVARIANCE.P.yaml, RSQ,
STEYX): a pair with an empty cell, text or a logical value is left out; two arrays with as many
values are paired in reading order, whatever their shapes.

The series: x 1, 2, 3, 4 and y 2, 4, (the input), 8.
"""

from .conftest import named_formulas, uploaded_and_stored

SERIES = {"A1": 1, "A2": 2, "A3": 3, "A4": 4, "B1": 2, "B2": 4, "B4": 8,
          # a 2 x 2 block and a column of four: the same number of values
          "D1": 1, "E1": 2, "D2": 3, "E2": 4, "F1": 2, "F2": 4, "F3": 6, "F4": 9}


def series() -> bytes:
    return named_formulas({
        "population": "=COVARIANCE.P(A1:A4,B1:B4)",
        "sample": "=COVARIANCE.S(A1:A4,B1:B4)",
        "legacy": "=COVAR(A1:A4,B1:B4)*3",
        "slope": "=SLOPE(B1:B4,A1:A4)",
        "fit": "=RSQ(F1:F4,D1:E2)",
        "slope_across": "=SLOPE(F1:F4,D1:E2)",
    }, column="H", cells=SERIES, names={"third": "$B$3"})


def test_a_pair_with_an_empty_cell_or_text_is_left_out_of_a_covariance():
    for workbook in uploaded_and_stored(series()):  # IronCalc alone: #N/A for all three
        # pairs (1,2), (2,4), (4,8): the crossed deviations add up to 84/9
        left_out = {"population": 84 / 27, "sample": 84 / 18, "legacy": 84 / 9}
        assert _rounded(workbook.calculate({}, list(left_out))) == _rounded(left_out)
        assert _rounded(workbook.calculate({"third": "pending"}, list(left_out))) == _rounded(left_out)
        # AND a number there makes it a pair again: 10 over four pairs
        assert _rounded(workbook.calculate({"third": 6}, list(left_out))) == _rounded(
            {"population": 2.5, "sample": 10 / 3, "legacy": 7.5})


def test_arrays_of_different_shapes_with_as_many_values_are_paired_in_reading_order():
    for workbook in uploaded_and_stored(series()):  # IronCalc alone: #VALUE! for both
        outputs = workbook.calculate({}, ["fit", "slope_across", "slope"])
        # x 1, 2, 3, 4 (the block row by row), y 2, 4, 6, 9: sxy 11.5, sxx 5, syy 26.75
        assert _rounded(outputs) == _rounded({"fit": 11.5 ** 2 / (5 * 26.75), "slope_across": 2.3, "slope": 2})


def _rounded(outputs: dict) -> dict:
    return {name: round(value, 12) for name, value in outputs.items()}
