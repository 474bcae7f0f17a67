"""TIME's parts above 32767 and BASE's number from 2^53 on are #NUM! (arguments.BOUNDED).

Microsoft's TIME page: hour, minute and second are each "a number from 0 (zero) to 32767";
ECMA-376 (first edition, Part 4, TIME): "if hour, minute, or second are out of range, #NUM! is
returned". Microsoft's BASE page: the number "must be an integer greater than or equal to 0 and
less than 2^53". IronCalc 0.9.1 wraps TIME's parts (TIME(0,40000,0) is 18:40) and writes
BASE(2^53,36) out.
"""

import pytest

from .conftest import named_formulas, saved_sheet_xml, uploaded_and_stored


def bounded_book() -> bytes:
    return named_formulas({
        "minutes": "=TIME(0,A1,0)",
        "seconds": "=TIME(0,0,A1)",
        "typed": "=TIME(0,0,40000)",
        "base36": "=BASE(A2,36)",
    }, column="D", cells={"A1": 90, "A2": 35}, names={"count": "$A$1", "number": "$A$2"})


def test_the_largest_parts_and_numbers_are_calculated():
    for workbook in uploaded_and_stored(bounded_book()):
        outputs = workbook.calculate({"count": 32767, "number": 2 ** 53 - 1})
        # 32767 minutes are 22 days 18:07, the days dropped (TIME(0,750,0) is TIME(12,30,0));
        # 32767 seconds 9:06:07
        assert outputs["minutes"] == pytest.approx((18 * 60 + 7) / 1440, abs=1e-12)
        assert outputs["seconds"] == pytest.approx((9 * 3600 + 6 * 60 + 7) / 86400, abs=1e-12)
        assert outputs["base36"] == "2GOSA7PA2GV"  # 2^53 - 1
        assert outputs["typed"] == "#NUM!"


def test_beyond_them_excel_answers_num():
    for workbook in uploaded_and_stored(bounded_book()):
        outputs = workbook.calculate({"count": 32768, "number": 2 ** 53})
        assert outputs == {"minutes": "#NUM!", "seconds": "#NUM!", "typed": "#NUM!", "base36": "#NUM!"}


def test_text_stays_an_error_of_its_own_and_the_export_keeps_the_formulas():
    workbook, _ = uploaded_and_stored(bounded_book())
    assert workbook.calculate({"count": "abc"}, ["minutes"]) == {"minutes": "#VALUE!"}
    xml = saved_sheet_xml(workbook)
    assert "TIME(0,A1,0)" in xml and "ISNUMBER" not in xml
