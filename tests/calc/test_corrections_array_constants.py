"""PRODUCT, CONCAT and TEXTJOIN given an array constant, on IronCalc with the correction layer
(shared/calc/corrections/functions/array_constants.py). Values from Microsoft's pages: PRODUCT
multiplies only the numbers of an array; CONCAT and TEXTJOIN (the TEXTJOIN page's example
`TEXTJOIN(" ",TRUE,{"The","sun","will","come","up","tomorrow."})`) join its elements."""

from __future__ import annotations

import io
import zipfile

import pytest
from openpyxl import Workbook
from openpyxl.workbook.defined_name import DefinedName

from shared.calc import get_engine
from shared.calc.corrections.functions.array_constants import elements, expanded

FORMULAS = {
    "product": ('=PRODUCT({2,"a",TRUE,3})', 6),
    "product_range": ("=PRODUCT(A1:A2,{2,3})", 60),
    "concat": ('=_xlfn.CONCAT({"a","b";"c",1})', "abc1"),
    "textjoin": ('=_xlfn.TEXTJOIN(" ",TRUE,{"The","sun","will","come","up","tomorrow."})', "The sun will come up tomorrow."),
    "guarded": ("=IFERROR(PRODUCT({4,5}),0)", 20),
}


@pytest.fixture(scope="module")
def workbook():
    book = Workbook()
    sheet = book.active
    sheet.title = "Sheet1"
    sheet["A1"], sheet["A2"] = 2, 5
    for row, (name, (formula, _)) in enumerate(FORMULAS.items(), start=1):
        sheet.cell(row, 3, formula)
        book.defined_names[name] = DefinedName(name, attr_text=f"Sheet1!$C${row}")
    out = io.BytesIO()
    book.save(out)
    engine = get_engine("ironcalc")
    return engine.load_xlsx(out.getvalue())


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
    with zipfile.ZipFile(io.BytesIO(workbook.to_xlsx())) as package:
        sheet = package.read("xl/worksheets/sheet1.xml").decode()
    assert "PRODUCT({2,&quot;a&quot;,TRUE,3})" in sheet or 'PRODUCT({2,"a",TRUE,3})' in sheet
