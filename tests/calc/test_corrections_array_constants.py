"""PRODUCT, CONCAT and TEXTJOIN given an array constant, on IronCalc with the correction layer
(shared/calc/corrections/functions/array_constants.py). Values from Microsoft's pages: PRODUCT
multiplies only the numbers of an array; CONCAT and TEXTJOIN (the TEXTJOIN page's example
`TEXTJOIN(" ",TRUE,{"The","sun","will","come","up","tomorrow."})`) join its elements."""

from __future__ import annotations

import pytest

from shared.calc import get_engine
from shared.calc.corrections.functions.array_constants import elements, expanded
from tests.calc.conftest import named_formulas, saved_sheet_xml

FORMULAS = {
    "product": ('=PRODUCT({2,"a",TRUE,3})', 6),
    "product_range": ("=PRODUCT(A1:A2,{2,3})", 60),
    "concat": ('=_xlfn.CONCAT({"a","b";"c",1})', "abc1"),
    "textjoin": ('=_xlfn.TEXTJOIN(" ",TRUE,{"The","sun","will","come","up","tomorrow."})', "The sun will come up tomorrow."),
    "guarded": ("=IFERROR(PRODUCT({4,5}),0)", 20),
}


@pytest.fixture(scope="module")
def workbook():
    formulas = {name: formula for name, (formula, _) in FORMULAS.items()}
    return get_engine("ironcalc").load_xlsx(named_formulas(formulas, cells={"A1": 2, "A2": 5}))


def test_the_array_elements_become_arguments():
    assert expanded('=PRODUCT({2,"a",TRUE,3})') == "=PRODUCT(2,3)"
    assert expanded('=TEXTJOIN(",",TRUE,{"a","";"b",1})') == '=TEXTJOIN(",",TRUE,"a","","b",1)'
    assert expanded('=CONCAT("{",{"x"})') == '=CONCAT("{","x")'
    assert expanded("=SUMPRODUCT({1,2},{3,4})") is None  # not one of the three
    assert expanded('=PRODUCT({"a"})') is None  # no number in it: left as it is
    assert elements("{1,A1}") is None  # not an array constant of literals


def test_ironcalc_with_the_layer_answers_as_excel(workbook):
    outputs = workbook.calculate({})
    assert outputs == {name: value for name, (_, value) in FORMULAS.items()}


def test_the_filled_workbook_keeps_the_array_constants(workbook):
    workbook.calculate({})
    sheet = saved_sheet_xml(workbook)
    assert "PRODUCT({2,&quot;a&quot;,TRUE,3})" in sheet or 'PRODUCT({2,"a",TRUE,3})' in sheet
