"""AVERAGEA given an array constant and a range of deleted references, on IronCalc with the
correction layer (shared/calc/corrections/functions/array_constants.py and ref_ranges.py).
Values from Microsoft's pages: AVERAGEA's example (10, 7, 9, 2 and the text "Not available",
which an array argument counts as 0: 5.6); "How to correct a #REF! error" (a range of deleted
references is #REF!, which ERROR.TYPE numbers 4)."""

from __future__ import annotations

import pytest

from shared.calc import get_engine
from shared.calc.corrections.functions.array_constants import expanded
from shared.calc.corrections.functions.ref_ranges import collapsed
from tests.calc.conftest import named_formulas, saved_sheet_xml

FORMULAS = {
    "averagea": ('=AVERAGEA({10,7,9,2,"Not available"})', 5.6),
    "averagea_guarded": ('=IFERROR(AVERAGEA({10,7,9,2,"Not available"}),0)', 5.6),
    "deleted": ("=SUM(#REF!:#REF!)", "#REF!"),
    "deleted_type": ("=ERROR.TYPE(SUM(#REF!:#REF!))", 4),
}


@pytest.fixture(scope="module")
def workbook():
    formulas = {name: formula for name, (formula, _) in FORMULAS.items()}
    return get_engine("ironcalc").load_xlsx(named_formulas(formulas))


def test_averagea_counts_an_array_text_element_as_zero():
    assert expanded('=AVERAGEA({10,"x";#N/A,2})') == "=AVERAGEA(10,0,#N/A,2)"
    assert expanded("=AVERAGEA({1,TRUE})") is None  # a logical element: left as it is
    assert expanded("=AVERAGE({1,2})") is None  # not AVERAGEA


def test_a_range_of_deleted_references_is_one_deleted_reference():
    assert collapsed("=SUM(#REF!:#REF!)") == "=SUM(#REF!)"
    assert collapsed('="#REF!:#REF!"&SUM(1,#REF!:#REF!)') == '="#REF!:#REF!"&SUM(1,#REF!)'
    assert collapsed("=SUM(A1:B2)") is None
    assert collapsed("=SUM(#REF!)") is None


def test_ironcalc_with_the_layer_answers_as_excel(workbook):
    outputs = workbook.calculate({})
    assert outputs == {name: value for name, (_, value) in FORMULAS.items()}


def test_the_filled_workbook_keeps_the_formulas_as_written(workbook):
    workbook.calculate({})
    sheet = saved_sheet_xml(workbook)
    assert "SUM(#REF!:#REF!)" in sheet
    assert "AVERAGEA({10,7,9,2," in sheet
