"""Text functions given a number read it as the text Excel writes of it: 15 significant digits,
whole numbers from 1E+15 and numbers below 1E-9 in E notation (dynamic.TEXT_OF_NUMBER,
settle.long_value, one_value.TEXT_ARGUMENTS).

Expected values: Microsoft's "Excel specifications and limits" (number precision: 15 digits) and
"Last digits are changed to zeros when you type long numbers", as for joined text
(test_joined_text.py): 0.1+0.2 is written "0.3", 1/3 "0.333333333333333", 123456789012345678
"1.23456789012346E+17". IronCalc 0.9.1 reads them with up to 17 digits (`LEN(0.1+0.2)` 19).
"""

from shared.calc.corrections.dynamic.settle import long_value

from .conftest import named_formulas, uploaded_and_stored


def sums_book() -> bytes:
    """A sum of decimals in A1 (an input's 0.1 plus 0.2), a third in A2, a long number in A3."""
    return named_formulas(
        {
            "length": "=LEN(A1)",
            "digits": "=MID(A1,3,5)",
            "comma": '=SUBSTITUTE(A1,".",",")',
            "third": "=LEFT(A2,20)",
            "same": '=EXACT(A2,"0.333333333333333")',
            "has_four": '=ISNUMBER(SEARCH("4",A1))',
            "long_length": "=LEN(A3)",
            "label": '=UPPER("total")',
        },
        column="D",
        cells={"A1": "=B1+0.2", "B1": 0.1, "A2": "=1/3", "A3": 123456789012345678},
        names={"tenth": "$B$1"},
    )


def test_text_functions_read_a_sum_of_decimals_as_excel_writes_it():
    for workbook in uploaded_and_stored(sums_book()):
        assert workbook.calculate({}) == {
            "length": 3, "digits": "3", "comma": "0,3", "third": "0.333333333333333", "same": True,
            "has_four": False, "long_length": 20, "label": "TOTAL",
        }
        assert workbook.correction_flags() == []
        # AND a number Excel writes with its own digits is left to IronCalc: 0.5 + 0.2
        assert workbook.calculate({"tenth": 0.5}, ["length", "comma"]) == {"length": 3, "comma": "0,7"}


def test_which_numbers_excel_writes_otherwise():
    assert long_value(0.1 + 0.2) and long_value(1 / 3) and long_value(1e15) and long_value(1e-10)
    assert not long_value(0.3) and not long_value(123.456) and not long_value(0.0) and not long_value(1e14)


def test_text_made_by_text_inside_trim_keeps_every_correction():
    # TEXT is evaluated after IronCalc in every job; a text function around it (TRIM, LEN) must
    # not take it off that path, and TRIM there removes every space but single ones between
    # words (the TRIM page; the TEXT page's fraction `TRIM(TEXT(A1,"# ?/?"))`)
    from shared.calc.formulas.functions import excel_trim

    data = named_formulas({"third": '=TRIM(TEXT(0.34,"# ?/?"))', "quarter": '=TRIM(TEXT(5.25,"# ???/???"))',
                           "length": '=LEN(TEXT(0.5,"0.00"))'})
    for workbook in uploaded_and_stored(data):
        assert workbook.calculate({}) == {"third": "1/3", "quarter": "5 1/4", "length": 4}
    assert excel_trim("  First   Quarter Earnings ") == "First Quarter Earnings"
    assert excel_trim("a\u00a0 b") == "a\u00a0 b"  # a nonbreaking space is not a space to TRIM
