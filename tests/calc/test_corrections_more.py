"""VDB, SUBTOTAL over hidden and filtered rows, GETPIVOTDATA, and statistical functions over
computed arrays: what Excel answers, through the engine and the upload check.

Expected values are Excel's: the examples of Microsoft's "VDB function" page, and the rules of
its "SUBTOTAL function", "AVERAGE function", "COUNT function" and "GETPIVOTDATA function" pages
(support.microsoft.com), applied by hand to the data below.
"""

import io

import openpyxl
import pytest
from openpyxl.worksheet.formula import ArrayFormula

from shared.calc.corrections.functions.unfixable import reasons

from .conftest import add_name, to_bytes, uploaded_and_stored
from .test_fidelity import excel_saved

# --- VDB (IronCalc 0.9.1 is right: pinned so that it stays right) ---------------------------

MICROSOFT_VDB_EXAMPLES = [  # cost 2400, salvage 300, life 10 years; the page's results
    ("=VDB(2400,300,10*365,0,1)", 1.32),  # first day's depreciation
    ("=VDB(2400,300,10*12,0,1)", 40.00),  # first month's
    ("=VDB(2400,300,10,0,1)", 480.00),  # first year's
    ("=VDB(2400,300,10*12,6,18)", 396.31),  # between the sixth and the eighteenth month
    ("=VDB(2400,300,10*12,6,18,1.5)", 311.81),  # the same with factor 1.5
    ("=VDB(2400,300,10,0,0.875,1.5)", 315.00),  # first fiscal year of 0.875, factor 1.5
]


def test_vdb_follows_microsofts_examples(load):
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, (formula, _) in enumerate(MICROSOFT_VDB_EXAMPLES, start=1):
        ws.cell(row, 1, formula)
    add_name(wb, "depreciation", f"Sheet!$A$1:$A${len(MICROSOFT_VDB_EXAMPLES)}")
    got = load(wb).calculate({})["depreciation"]
    assert got == pytest.approx([expected for _, expected in MICROSOFT_VDB_EXAMPLES], abs=0.005)


# --- SUBTOTAL ------------------------------------------------------------------------------


def test_subtotal_ignores_hidden_rows_from_101_and_nested_subtotals_always(load):
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, value in enumerate([10, 20, 30, 40], start=1):
        ws.cell(row, 1, value)
    ws["A5"] = "=SUBTOTAL(9,A1:A4)"  # a nested subtotal: never counted again
    ws.row_dimensions[2].hidden = True  # hidden by hand: the 20
    ws["C1"] = "=SUBTOTAL(9,A1:A5)"  # 10 + 20 + 30 + 40
    ws["C2"] = "=SUBTOTAL(109,A1:A5)"  # without the hidden 20
    ws["C3"] = "=SUBTOTAL(101,A1:A5)"  # average of 10, 30, 40
    ws["C4"] = "=SUBTOTAL(2,A1:A5)"  # count, hidden row included
    add_name(wb, "totals", "Sheet!$C$1:$C$4")
    got = load(wb).calculate({})["totals"]
    assert got == pytest.approx([100, 80, 80 / 3, 4])


def amounts_under_a_header() -> openpyxl.Workbook:
    """Amounts 10, 20, 30, 40 in A2:A5 under the header "Amount"."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = "Amount"
    for row, value in enumerate([10, 20, 30, 40], start=2):
        ws.cell(row, 1, value)
    return wb


def filtered_list() -> openpyxl.Workbook:
    """The amounts with an autoFilter showing all but the 20."""
    wb = amounts_under_a_header()
    ws = wb.active
    ws.auto_filter.ref = "A1:A5"
    ws.auto_filter.add_filter_column(0, ["10", "30", "40"])
    ws.row_dimensions[3].hidden = True  # filtered out: the 20
    return wb


def filtered_subtotals() -> openpyxl.Workbook:
    wb = filtered_list()
    ws = wb.active
    ws["C1"] = "=SUBTOTAL(9,A2:A5)"  # IronCalc 0.9.1 alone: 100
    ws["C2"] = "=SUBTOTAL(109,A2:A5)"
    ws["C3"] = "=SUBTOTAL(2,A2:A5)"  # IronCalc 0.9.1 alone: 4
    ws["C4"] = "=SUBTOTAL(1,$A$2:$A$5)*2"
    ws["C5"] = "=C1+1"  # a dependant sees Excel's value
    add_name(wb, "totals", "Sheet!$C$1:$C$5")
    add_name(wb, "first", "Sheet!$A$2")
    return wb


def test_subtotal_ignores_rows_a_filter_left_out_in_a_job_and_from_the_stored_model():
    workbook, stored = uploaded_and_stored(to_bytes(filtered_subtotals()))
    for book in (workbook, stored):
        assert book.calculate({}) == {"totals": [80, 80, 3, 160 / 3, 81]}
        changed = book.calculate({"first": 16}, outputs=["totals"])
        assert changed == {"totals": [86, 86, 3, 172 / 3, 87]}


def test_the_upload_check_matches_excels_subtotals_of_a_filtered_list():
    from shared.calc.fidelity.check import check

    excel = {"Sheet!C1": 80, "Sheet!C2": 80, "Sheet!C3": 3, "Sheet!C4": 160 / 3, "Sheet!C5": 81}
    report = check(excel_saved(filtered_subtotals(), excel), "ironcalc")
    assert report.cells_matching == report.cells_compared == 5, report.mismatches


def test_subtotal_ignores_rows_a_tables_filter_left_out(load):
    # IronCalc 0.9.1 reads a table's own filter right (measured): pinned, nothing rewritten
    from openpyxl.worksheet.filters import AutoFilter, FilterColumn, Filters
    from openpyxl.worksheet.table import Table

    wb = amounts_under_a_header()
    ws = wb.active
    table = Table(displayName="Amounts", ref="A1:A5")
    table.autoFilter = AutoFilter(ref="A1:A5", filterColumn=[
        FilterColumn(colId=0, filters=Filters(filter=["10", "30", "40"]))
    ])
    ws.add_table(table)
    ws.row_dimensions[3].hidden = True  # filtered out by the table's filter: the 20
    ws["C1"] = "=SUBTOTAL(9,A2:A5)"
    ws["C2"] = "=SUBTOTAL(4,Amounts[Amount])"  # MAX: 40 either way, the reference resolved
    ws["C3"] = "=SUBTOTAL(2,Amounts[Amount])"
    add_name(wb, "totals", "Sheet!$C$1:$C$3")
    assert load(wb).calculate({}) == {"totals": [80, 40, 3]}


def test_subtotal_109_ignores_filtered_rows_and_rows_hidden_by_hand_alike(load):
    wb = filtered_list()
    ws = wb.active
    ws["A7"] = 5
    ws.row_dimensions[7].hidden = True  # hidden by hand, below the filtered list: counted by 9
    ws["C1"] = "=SUBTOTAL(109,A2:A7)"  # both ignored: 80
    add_name(wb, "total", "Sheet!$C$1")
    assert load(wb).calculate({}) == {"total": 80}


def test_subtotal_9_leaves_out_filtered_rows_and_counts_rows_hidden_by_hand(load):
    wb = filtered_list()
    ws = wb.active
    ws["A7"] = 5
    ws.row_dimensions[7].hidden = True  # hidden by hand, below the filtered list
    ws["C1"] = "=SUBTOTAL(9,A2:A7)"  # the filtered-out 20 left out, the hidden 5 counted: 85
    ws["C2"] = "=SUBTOTAL(1,A2:A7)"  # 10, 30, 40 and 5 of the kept and hand-hidden rows
    add_name(wb, "totals", "Sheet!$C$1:$C$2")
    assert load(wb).calculate({}) == {"totals": [85, 21.25]}


def test_subtotal_keeps_manually_hidden_rows_without_an_active_filter(load):
    wb = amounts_under_a_header()
    ws = wb.active
    ws.auto_filter.ref = "A1:A5"  # filter buttons, nothing filtered
    ws.row_dimensions[3].hidden = True  # so the 20 is hidden by hand
    ws["C1"] = "=SUBTOTAL(9,A2:A5)"
    add_name(wb, "total", "Sheet!$C$1")
    assert load(wb).calculate({}) == {"total": 100}


def test_the_exported_workbook_keeps_the_subtotal_as_written(load):
    wb = filtered_list()
    wb.active["C1"] = "=SUBTOTAL(9,A2:A5)"
    add_name(wb, "total", "Sheet!$C$1")
    book = load(wb)
    book.calculate({})
    exported = book.to_xlsx()
    formulas = openpyxl.load_workbook(io.BytesIO(exported)).active
    values = openpyxl.load_workbook(io.BytesIO(exported), data_only=True).active
    assert (formulas["C1"].value, values["C1"].value) == ("=SUBTOTAL(9,A2:A5)", 80)


# --- flagged at upload: GETPIVOTDATA, AVERAGE/COUNT over arrays computed by IF ----------------


def test_getpivotdata_is_flagged_wherever_it_is_called():
    assert reasons('GETPIVOTDATA("Sales",$A$3)')
    assert reasons('_xlfn.GETPIVOTDATA("Sales",$A$3,"Region","East")+1')
    assert reasons('"GETPIVOTDATA("&A1') == []  # text, not a call


def test_count_and_average_given_arrays_are_flagged():
    # Over 10, 20, 30, 40 in A1:A4. Excel counts only the numbers of an array; IronCalc 0.9.1:
    # {=COUNT(IF(A1:A4>15,A1:A4))} 0 (Excel 3), COUNT({1,2,"a",TRUE}) 0 (Excel 2),
    # {=AVERAGE(IF(A1:A4>15,A1:A4))} 22.5 (Excel 30: the FALSE is ignored), AVERAGE({1,2,TRUE})
    # 1.333 (Excel 1.5).
    assert reasons("COUNT(B1, IF(A1:A4>15,A1:A4))", array_formula=True)
    assert reasons("COUNT(A1:A4*1)", array_formula=True)
    assert reasons('COUNT({1,2,"a",TRUE})', array_formula=True)
    assert reasons("COUNT({1,#N/A})")  # an array holding an error is not rewritten
    assert reasons("AVERAGE(IF(A1:A4>15,A1:A4))", array_formula=True)
    assert reasons("AVERAGE({1,2,TRUE})", array_formula=True)


def test_count_and_average_read_right_are_not_flagged():
    assert reasons("COUNT(A1:A4,Sheet2!B:B,Rate,1,\"2\",TRUE)", array_formula=True) == []
    assert reasons("AVERAGE(IF(A1:A4>15,A1:A4))") == []  # one value (implicit intersection)
    assert reasons("COUNT(A1:A4*1)") == []
    assert reasons("AVERAGE({1,2,3})+AVERAGE(A1:A4,TRUE)") == []
    # array constants of literals outside an array formula are rewritten at load (arguments.py)
    assert reasons('COUNT({1,2,"a",TRUE})') == []
    assert reasons("AVERAGE({1,2,TRUE})") == []
    assert reasons("AVERAGE(MAX(IF(A1:A4>15,A1:A4)),1)", array_formula=True) == []
    assert reasons("COUNTIF(A1:A4,IF(B1,1,2))", array_formula=True) == []


def test_the_fidelity_check_names_flagged_pivot_and_array_cells():
    from shared.calc.fidelity.check import check

    wb = openpyxl.Workbook()
    ws = wb.active
    for row, value in enumerate([10, 20, 30, 40], start=1):
        ws.cell(row, 1, value)
    # data_field from a cell: not settled by the saved pivot tables (a constant one, with no
    # pivot table there, is #REF!, answered at load: test_getpivotdata.py)
    ws["C1"] = '=GETPIVOTDATA(B1,$A$1)'
    ws["C2"] = ArrayFormula("C2", "=AVERAGE(IF(A1:A4>15,A1:A4))")
    ws["C3"] = "=AVERAGE(IF(A1>15,A1))"  # not an array formula: not flagged
    buffer = io.BytesIO()
    wb.save(buffer)
    report = check(buffer.getvalue(), "ironcalc")
    flagged = {f["cell"]: f["reason"] for f in report.flagged}
    assert sorted(flagged) == ["C1", "C2"]
    assert "pivot table" in flagged["C1"] and "AVERAGE given an array" in flagged["C2"]
