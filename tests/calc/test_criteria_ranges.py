"""COUNTIF and its family given a range of one cell, a sum range of another size, or a text
compared in order (shared/calc/corrections/functions/criteria_ranges.py).

Expected values are worked from Microsoft's rules: a range of one cell is a range (COUNTIF's
"range: the group of cells you want to count"); SUMIF's and AVERAGEIF's sum range is taken from
its upper leftmost cell at the size of the range (WorksheetFunction.SumIf: A1:A5 with B1:B3 adds
B1:B5); `<=` and `>=` compare texts in order without case (the criteria's comparison operators).
The fruits below are apple, banana, cherry and x, their amounts 1, 2, 4 and 8.
"""

import pytest
from openpyxl.worksheet.formula import ArrayFormula

from shared.calc.corrections.functions.criteria_ranges import rewrite_formula
from shared.calc.fidelity.check import check

from .conftest import named_formulas, saved_sheet_xml, uploaded_and_stored

FRUITS = {"A1": "apple", "A2": "banana", "A3": "cherry", "A4": "x", "B1": 1, "B2": 2, "B3": 4, "B4": 8}


def fruits(formulas: dict) -> bytes:
    return named_formulas(formulas, column="E", cells={**FRUITS, "C1": "b"}, names={"from_letter": "$C$1"})


def test_a_range_of_one_cell_is_counted_as_excel_counts_it_in_a_job():
    data = fruits({
        "contains": '=IF(COUNTIF(A1,"*pp*"),"yes","no")',  # "Check if a cell contains text"
        "missing": '=IF(COUNTIF(A2,"*pp*"),"yes","no")',
        "summed": '=SUMIF(A1,"apple",B1)',
        "several": '=SUMIFS(B2,A2,"banana",B2,">1")',
        "averaged": '=AVERAGEIF($A$3,"cherry",$B$3)',
        "largest": '=MAXIFS(B4,A4,"x")',
    })
    for workbook in uploaded_and_stored(data):  # IronCalc alone: #VALUE! for each
        assert workbook.calculate({}) == {
            "contains": "yes", "missing": "no", "summed": 1, "several": 2, "averaged": 4, "largest": 8,
        }
        assert workbook.correction_flags() == []


def test_a_sum_range_of_another_size_adds_the_cells_beside_the_range():
    data = fruits({
        "from_one_cell": '=SUMIF(A1:A4,"*a*",B1)',  # apple, banana: B1 and B2
        "shorter": '=SUMIF(A1:A4,"<>x",B1:B2)',  # B1:B4 less x's
        "average": '=AVERAGEIF(A1:A4,"*e*",B1)',  # apple and cherry
    })
    for workbook in uploaded_and_stored(data):  # IronCalc alone: 1, 3 and #VALUE!
        assert workbook.calculate({}) == {"from_one_cell": 3, "shorter": 7, "average": 2.5}


def test_texts_are_compared_in_order_by_at_least_and_at_most():
    data = fruits({
        "from_b": '=COUNTIF(A1:A4,">=b")',  # banana, cherry, x
        "up_to_banana": '=SUMIF(A1:A4,"<=BANANA",B1:B4)',  # apple, banana (no case)
        "with_star": '=COUNTIFS(A1:A4,">=b*")',  # * is a character here: banana, cherry, x
        "from_a_cell": '=SUMIFS(B1:B4,A1:A4,">="&C1)',
        "numbers_still": '=COUNTIF(B1:B4,">=2")',
        "largest_up_to_c": '=MAXIFS(B1:B4,A1:A4,"<=c")',
    })
    for workbook in uploaded_and_stored(data):  # IronCalc alone: 1, 12, 1, 1, 3, 8
        outputs = workbook.calculate({})
        assert outputs == {
            "from_b": 3, "up_to_banana": 3, "with_star": 3, "from_a_cell": 14, "numbers_still": 3,
            "largest_up_to_c": 2,
        }
        # AND a number in the criteria cell is compared as a number
        assert workbook.calculate({"from_letter": 2}, ["from_a_cell"]) == {"from_a_cell": 0}


@pytest.mark.parametrize("formula, rewritten", [
    ('=COUNTIF(A1,"x")', 'COUNTIF(A1:A1,"x")'),
    ("=SUMIF($A$1:$B$4,\"x\",Sheet2!C1:C2)", "SUMIF($A$1:$B$4,\"x\",Sheet2!C1:D4)"),
    ('=COUNTIFS(A1:A4,">=b",B1:B4,"<=5")', 'COUNTIFS(A1:A4,"<=b",B1:B4,"<=5")'),
    ('=COUNTIF(A1:A4,">=1/1/2020")', None),  # a date: the locale's, left to IronCalc
    ('=COUNTIF(A1:A4,">=TRUE")', None),
    ('=COUNTIF(A1:A4,">b")', None),  # IronCalc's > and < are Excel's
    ('=SUMIF(A1:A4,"x",B1:B4)', None),
    ('=SUM(A1)', None),
])
def test_the_calls_rewritten(formula, rewritten):
    assert rewrite_formula(formula) == rewritten


def test_the_filled_workbook_keeps_the_formula_as_written():
    workbook = uploaded_and_stored(fruits({"count": '=COUNTIF(A1,"*pp*")'}))[0]
    workbook.calculate({})
    assert 'COUNTIF(A1,"*pp*")' in saved_sheet_xml(workbook).replace("&quot;", '"')


def test_an_array_formula_is_flagged_not_rewritten():
    data = fruits({"plain": '=COUNTIF(A1:A4,">=b")', "array": ArrayFormula("E2", '=COUNTIF(A1:A4,">=b")')})
    report = check(data, "ironcalc")
    assert [flag["cell"] for flag in report.flagged] == ["E2"]


def test_the_s_forms_with_ranges_of_different_sizes_are_value_errors():
    # MAXIFS page: "The size and shape of the max_range and criteria_rangeN arguments must be the
    # same, otherwise these functions return the #VALUE! error" (IronCalc alone: 14, 3, 8)
    data = fruits({
        "sum_short": '=SUMIFS(B1:B4,A1:A3,">=b")',
        "count_row": '=COUNTIFS(A1:A4,"x",A1:D1,"apple")',
        "max_long": '=MAXIFS(B1:B3,A1:A4,"x")',
        "same": '=SUMIFS(B1:B4,A1:A4,">=b")',
    })
    for workbook in uploaded_and_stored(data):
        assert workbook.calculate({}) == {"sum_short": "#VALUE!", "count_row": "#VALUE!", "max_long": "#VALUE!",
                                          "same": 14}
