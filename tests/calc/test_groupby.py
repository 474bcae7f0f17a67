"""GROUPBY and PIVOTBY through the correction layer (shared/calc/corrections/dynamic/groupby.py):
workbooks written as Excel 365 writes them (`_xlfn.GROUPBY`, `_xleta.SUM`, dynamic-array cell
metadata), loaded as an upload is and restored as a job gets them.

Expected values follow the rules of Microsoft's pages (the forms of their examples on small data):
GROUPBY https://support.microsoft.com/en-us/office/groupby-function-5e08ae8c-6800-4b72-b623-c41773611505
PIVOTBY https://support.microsoft.com/en-us/office/pivotby-function-de86516a-90ad-4ced-8522-3a25fac389cf
"""

import openpyxl
import pytest

from shared.calc.fidelity import unimplemented

from .conftest import add_name, uploaded_and_stored
from .test_dynamic_arrays import excel365, spilled


@pytest.fixture(params=["uploaded", "stored"])
def workbook_of(request):
    """The workbook of an upload, or the same restored from its stored model as a job gets it."""
    return lambda data: uploaded_and_stored(data)[0 if request.param == "uploaded" else 1]


def sales_book(rows, formula: str, spill: str, output: str) -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    for r, line in enumerate(rows, start=1):
        for c, value in enumerate(line, start=1):
            ws.cell(r, c, value)
    spilled(ws, "F1", formula, spill)
    add_name(wb, "sales", f"Sheet1!$A$1:${chr(64 + len(rows[0]))}${len(rows)}")
    add_name(wb, "summary", output)
    return excel365(wb)


def test_groupby_sums_each_group_sorted_with_a_total_and_follows_the_inputs(workbook_of):
    # GIVEN the page's example 1 form, =GROUPBY(A2:A76,D2:D76,SUM), over four rows
    data = sales_book([["b", 1], ["a", 2], ["b", 3], ["c", 4]],
                      "=_xlfn.GROUPBY(A1:A4,B1:B4,_xleta.SUM)", "F1:G4", "Sheet1!$F$1:$G$4")
    workbook = workbook_of(data)
    # THEN groups come sorted ascending with their sums, and the grand total "Total" last
    assert workbook.calculate({})["summary"] == [["a", 2], ["b", 4], ["c", 4], ["Total", 10]]
    # WHEN the inputs change, so do the groups
    out = workbook.calculate({"sales": [["x", 5], ["x", 6], ["y", 1], ["x", 1]]})
    assert out["summary"][:3] == [["x", 12], ["y", 1], ["Total", 13]]


def test_groupby_sorted_by_the_value_column_descending(workbook_of):
    # GIVEN the page's example 2 form, =GROUPBY(C2:C76,D2:D76,SUM,,,-2)
    data = sales_book([["p", 10], ["q", 30], ["p", 5], ["r", 20]],
                      "=_xlfn.GROUPBY(A1:A4,B1:B4,_xleta.SUM,,,-2)", "F1:G4", "Sheet1!$F$1:$G$4")
    # THEN the largest sum comes first; the total stays last
    assert workbook_of(data).calculate({})["summary"] == [["q", 30], ["r", 20], ["p", 15], ["Total", 65]]


def test_groupby_with_headers_shown_a_filter_and_a_lambda(workbook_of):
    # GIVEN headers (field_headers 3), no total (0), a filter and LAMBDA(x,MAX(x)-MIN(x))
    data = sales_book([["Fruit", "Qty", "Keep"], ["a", 1, True], ["b", 2, True], ["a", 5, True], ["b", 9, False]],
                      "=_xlfn.GROUPBY(A1:A5,B1:B5,_xlfn.LAMBDA(_xlpm.x,MAX(_xlpm.x)-MIN(_xlpm.x)),3,0,,C1:C5)",
                      "F1:G3", "Sheet1!$F$1:$G$3")
    # THEN the header row leads, row 5 is left out and each group is its range
    assert workbook_of(data).calculate({})["summary"] == [["Fruit", "Qty"], ["a", 4], ["b", 0]]


def test_pivotby_cross_table_with_totals_and_empty_intersections(workbook_of):
    # GIVEN =PIVOTBY(rows, columns, values, SUM) with its default grand totals
    data = sales_book([["a", "x", 1], ["a", "y", 2], ["b", "x", 3]],
                      "=_xlfn.PIVOTBY(A1:A3,B1:B3,C1:C3,_xleta.SUM)", "F1:I4", "Sheet1!$F$1:$I$4")
    # THEN rows a, b, columns x, y, a Total row and column; b has no y (shown empty)
    assert workbook_of(data).calculate({})["summary"] == [
        ["", "x", "y", "Total"], ["a", 1, 2, 3], ["b", 3, "", 3], ["Total", 4, 2, 6]]


def test_groupby_with_two_levels_subtotals_and_percentof(workbook_of):
    # GIVEN two row levels, headers shown, total_depth 2 (LOOKUP!M25:W39 of formulas' test.xlsx, smaller)
    data = sales_book([["Kind", "Fruit", "Qty"], ["x", "b", 1], ["y", "a", 2], ["x", "a", 3], ["x", "b", 4]],
                      "=_xlfn.GROUPBY(A1:B5,C1:C5,_xleta.PERCENTOF,3,2)", "F1:H7", "Sheet1!$F$1:$H$7")
    # THEN each group carries both labels, its subtotal follows it, the grand total is "Grand Total"
    assert workbook_of(data).calculate({})["summary"] == [
        ["Kind", "Fruit", "Qty"], ["x", "a", 0.3], ["x", "b", 0.5], ["x", "", 0.8], ["y", "a", 0.2],
        ["y", "", 0.2], ["Grand Total", "", 1]]


def test_pivotby_relative_to_the_row_totals(workbook_of):
    # GIVEN PERCENTOF with relative_to 1 (the row totals), no totals shown
    data = sales_book([["a", "x", 1], ["a", "y", 3], ["b", "x", 2]],
                      "=_xlfn.PIVOTBY(A1:A3,B1:B3,C1:C3,_xleta.PERCENTOF,0,0,,0,,,1)", "F1:H3", "Sheet1!$F$1:$H$3")
    # THEN each cell is its share of its row
    assert workbook_of(data).calculate({})["summary"] == [["", "x", "y"], ["a", 0.25, 0.75], ["b", 1, ""]]


def test_percentof_alone_is_ours_with_excels_num_for_errors(workbook_of):
    # GIVEN PERCENTOF over a range holding an error ('MATH & TRIG'!Y49 of formulas' test.xlsx: #NUM!;
    # IronCalc 0.9.1 answers the error itself)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    for r, value in enumerate([1, 2, 3, 4], start=1):
        ws.cell(r, 1, value)
    ws["B1"] = "=1/0"
    ws["C1"] = "=_xlfn.PERCENTOF(A1:A2,A1:A4)"
    ws["C2"] = "=_xlfn.PERCENTOF(A1:B2,A1:A4)"
    add_name(wb, "inputs", "Sheet1!$A$1:$A$4")
    add_name(wb, "share", "Sheet1!$C$1")
    add_name(wb, "broken", "Sheet1!$C$2")
    workbook = workbook_of(excel365(wb))
    out = workbook.calculate({"inputs": [[4], [4], [1], [1]]})
    assert out["share"] == 0.8
    assert out["broken"] == "#NUM!"


def test_groupby_and_pivotby_are_not_named_unimplemented():
    # GIVEN IronCalc, which does not know GROUPBY or PIVOTBY, WHEN an upload is analysed
    # THEN they are not unimplemented for the service (the layer evaluates them, or flags the cell)
    assert unimplemented.unknown_to("ironcalc", {"GROUPBY", "PIVOTBY", "SUM"}) == set()


@pytest.mark.parametrize("formula, reason", [
    ("=_xlfn.GROUPBY(A1:B3,C1:C3,_xleta.SUM)", "several levels"),
    ("=_xlfn.GROUPBY(A1:B3,C1:C3,_xleta.SUM,0)", "total_depth left out with several levels"),
    ("=_xlfn.GROUPBY(A1:A3,C1:C3,_xleta.SUM,0,2)", "total_depth"),
    ("=_xlfn.GROUPBY(A1:B3,C1:C3,_xleta.SUM,0,3)", "total_depth"),
    ("=_xlfn.GROUPBY(A1:A3,C1:C3,_xleta.SUM,2)", "field_headers 2"),
    ("=_xlfn.GROUPBY(A1:A3,C1:C3,_xlfn.LAMBDA(_xlpm.x,_xlpm.y,_xlpm.z,SUM(_xlpm.x)))", "3 arguments"),
    ("=_xlfn.GROUPBY(A1:B3,C1:C3,_xleta.SUM,0,2,,,1)", "field_relationship"),
    ("=_xlfn.GROUPBY(A1:B3,C1:C3,_xleta.SUM,0,1,-1)", "sort_order"),
    ("=_xlfn.GROUPBY(A1:B3,C1:C3,_xleta.SUM,0,1,3)", "by a value with several levels"),
    ("=_xlfn.PIVOTBY(A1:A3,B1:B3,C1:C3,_xleta.SUM,,,,,,,5)", "relative_to"),
    ("=_xlfn.PIVOTBY(A1:A3,B1:B3,C1:C3,_xleta.SUM,3)", "field_headers 3"),
    ("=_xlfn.PIVOTBY(A1:A3,A1:B3,C1:C3,_xleta.SUM,0,1,1,2)", "col_total_depth with subtotals"),
    ("=_xlfn.PIVOTBY(A1:A3,B1:B3,B1:C3,_xleta.SUM,0)", "PIVOTBY values of 2 columns"),
    ("=_xlfn.PIVOTBY(A1:A3,B1:B3,C1:C3,_xleta.PERCENTOF,0,1,2)", "two-parameter aggregation"),
])
def test_forms_left_out_are_flagged_never_answered(formula, reason):
    # GIVEN a GROUPBY or PIVOTBY in a form the layer does not evaluate
    data = sales_book([["a", "x", 1], ["b", "y", 2], ["a", "x", 3]], formula, "F1:G3", "Sheet1!$F$1:$G$3")
    workbook = uploaded_and_stored(data)[0]
    workbook.calculate({})
    # THEN the cell is named with the reason
    flags = [str(f) for f in workbook.correction_flags()]
    assert any(" at Sheet1!F1" in f and reason in f for f in flags), flags
