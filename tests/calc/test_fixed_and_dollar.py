"""FIXED and DOLLAR of numbers with more digits than Excel keeps (shared/calc/corrections/dynamic/
text.py, watched by dynamic.select).

Excel writes 15 significant digits and zeros after them, with up to 127 decimals (Microsoft: FIXED
function, "Numbers in Microsoft Excel can never have more than 15 significant digits, but
decimals can be as large as 127"); IronCalc 0.9.1 writes its binary value's digits, saturated at
2^64 - 1: FIXED(1E+20,2) was "18,446,744,073,709,551,615.00". Expected values are the cached
values of formulas' Excel-saved test.xlsx (TEXT row 18, EXTRA rows 4 and 5) and the pages' rules.
"""

from .conftest import named_formulas, uploaded_and_stored

LONG = '"123456789076754345682.2121234567832131341"'
FIFTEEN = "123,456,789,076,754,000,000"


def test_fifteen_significant_digits_and_zeros_after_them():
    data = named_formulas({
        "whole": f"=FIXED({LONG},0)",
        "most_decimals": f"=FIXED({LONG},127)",
        "thousands": f"=FIXED({LONG},-3)",
        "decimals_blank": f"=FIXED({LONG},A2)",
        "no_commas": f'=FIXED({LONG},"3",2)',
        "no_commas_as_text": f'=FIXED({LONG},"3","TRuE")',
        "commas_as_text": f'=FIXED({LONG},"3","FALSE")',
        "thirty_six_decimals": '=FIXED(10001,"36","FALSe")',
    }, cells={"A1": 1})
    for workbook in uploaded_and_stored(data):
        assert workbook.calculate({}) == {
            "whole": FIFTEEN,
            "most_decimals": FIFTEEN + "." + "0" * 127,
            "thousands": FIFTEEN,
            "decimals_blank": FIFTEEN,
            "no_commas": "123456789076754000000.000",
            "no_commas_as_text": "123456789076754000000.000",
            "commas_as_text": FIFTEEN + ".000",
            "thirty_six_decimals": "10,001." + "0" * 36,
        }
        assert workbook.correction_flags() == []


def test_the_arguments_excel_refuses():
    data = named_formulas({
        "too_many_decimals": f"=FIXED({LONG},128)",
        "decimals_far_left": f"=FIXED({LONG},-128000)",
        "decimals_logical": f"=FIXED({LONG},A1)",
        "no_commas_one_as_text": f'=FIXED({LONG},"3","1")',
        "decimals_error": f"=FIXED({LONG},NA())",
    }, cells={"A1": True})
    for workbook in uploaded_and_stored(data):
        assert workbook.calculate({}) == {
            "too_many_decimals": "#VALUE!", "decimals_far_left": "0", "decimals_logical": "#VALUE!",
            "no_commas_one_as_text": "#VALUE!", "decimals_error": "#N/A",
        }


def test_an_input_beyond_two_to_the_sixty_four():
    data = named_formulas({
        "fixed": "=FIXED(A1,2)",
        "dollar": "=DOLLAR(A1,2)",
        "fraction": "=FIXED(A1/1E+20*0.3,20)",
    }, column="D", cells={"A1": 1234.567}, names={"amount": "$A$1"})
    for workbook in uploaded_and_stored(data):
        # a number IronCalc writes right stays its answer
        assert workbook.calculate({}) == {"fixed": "1,234.57", "dollar": "$1,234.57", "fraction": "0.00000000000000000370"}
        assert workbook.calculate({"amount": 1e20}) == {
            "fixed": "100,000,000,000,000,000,000.00",
            "dollar": "$100,000,000,000,000,000,000.00",
            "fraction": "0.30000000000000000000",
        }
        assert workbook.calculate({"amount": -1e20}, ["dollar"]) == {"dollar": "($100,000,000,000,000,000,000.00)"}
        assert workbook.correction_flags() == []
