"""INDIRECT given a defined name reads the reference the name stands for (indirect_names.py).

Expected values come from Microsoft's "INDIRECT function" page: its example data (A2 "B2",
A3 "B3", A4 "George", A5 5; B2 1.333, B3 45, B4 10, B5 62) with B4 named George, where
`=INDIRECT(A4)` is 10 ("Because cell B4 has the defined name 'George,' the reference to that
defined name is to cell B4"), `=INDIRECT(A2)` 1.333 and `=INDIRECT("B"&A5)` 62; ref_text may be
"a name defined as a reference", and one that is not a valid reference is #REF!. Names follow
"Define and use names in formulas": not case-sensitive, a sheet's own name used on that sheet
before the workbook's, another sheet's only written with its sheet. A table's structured
reference as text reads as it does in a formula ("Using structured references with Excel
tables": `DeptSales[Sales Amount]` is the column's data cells, the table's name its data rows,
`[#All]` with the headers). IronCalc 0.9.1 alone answers #REF! for every name and structured
reference given to INDIRECT (ROWS of a table's name 1).
"""

import io

import openpyxl
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.table import Table

from shared.calc.fidelity.check import check

from .conftest import add_name, to_bytes, uploaded_and_stored

PAGE = [("B2", 1.333), ("B3", 45), ("George", 10), (5, 62)]
FORMULAS = {  # Sheet1 cell: (output, formula, Excel's value)
    "D1": ("by_address", "=INDIRECT(A2)", 1.333),
    "D2": ("by_name", "=INDIRECT(A4)", 10),
    "D3": ("built", '=INDIRECT("B"&A5)', 62),
    "D4": ("range_sum", '=SUM(INDIRECT("prices"))', 118.333),
    "D5": ("range_count", '=COUNT(INDIRECT("Prices"))', 4),
    "D6": ("lookup", '=INDEX(INDIRECT("Prices"),MATCH(45,INDIRECT("Prices"),0))', 45),
    "D7": ("picked", "=SUM(INDIRECT(E1))", 10),
    "D8": ("constant_name", '=INDIRECT("Rate")', "#REF!"),
    "D9": ("other_sheets_own", '=INDIRECT("Local")', "#REF!"),
    "D10": ("other_sheet_named", '=SUM(INDIRECT("Sheet2!Local"))', 12),
    "D11": ("whole_column", '=SUM(INDIRECT("Amounts"))', 12),
    "D13": ("through_a_name", "=SUM(Chosen)", 10),
    # where one value is expected, a range is the cell in the formula's row ("Implicit
    # intersection operator: @"): row 3 of Prices is B3, row 5 B5
    "G3": ("intersected", '=INDIRECT("Prices")*2', 90),
    "G5": ("intersected_picked", "=INDIRECT(H5)", 62),
}
SHEET2 = {  # Sheet2 cell: (output, formula, Excel's value)
    "C1": ("own_name", '=SUM(INDIRECT("Local"))', 12),
    "C2": ("own_hides_books", '=SUM(INDIRECT("Shadowed"))', 5),
    "C3": ("books_elsewhere", '=Sheet1!D12', 62),
}


def page_workbook() -> bytes:
    """The INDIRECT page's example on Sheet1 with B4 named George, the names this file's
    formulas pick from, and E1 an input holding the name to pick."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    for row, (text, value) in enumerate(PAGE, start=2):
        ws.cell(row, 1, text)
        ws.cell(row, 2, value)
    ws["E1"] = "George"
    ws["H5"] = "Prices"
    other = wb.create_sheet("Sheet2")
    other["A1"], other["A2"] = 5, 7
    add_name(wb, "George", "Sheet1!$B$4")
    add_name(wb, "Prices", "Sheet1!$B$2:$B$5")
    add_name(wb, "Rate", "0.5")
    add_name(wb, "Amounts", "Sheet2!$A:$A")
    add_name(wb, "Shadowed", "Sheet1!$B$5")
    add_name(wb, "pick", "Sheet1!$E$1")
    add_name(wb, "Chosen", "INDIRECT(Sheet1!$E$1)")
    other.defined_names["Local"] = DefinedName("Local", attr_text="Sheet2!$A$1:$A$2")
    other.defined_names["Shadowed"] = DefinedName("Shadowed", attr_text="Sheet2!$A$1")
    ws["D12"] = '=INDIRECT("Shadowed")'
    for sheet, formulas in ((ws, FORMULAS), (other, SHEET2)):
        for cell, (output, formula, _) in formulas.items():
            sheet[cell] = formula
            add_name(wb, output, f"{sheet.title}!${cell[0]}${cell[1:]}")
    return to_bytes(wb)


def expected() -> dict:
    return {output: value for output, _, value in (*FORMULAS.values(), *SHEET2.values())}


def test_indirect_reads_the_reference_a_name_stands_for():
    # GIVEN the INDIRECT page's example and formulas giving INDIRECT names
    for workbook in uploaded_and_stored(page_workbook()):
        # WHEN it is calculated, as uploaded and as a job restores it
        values = workbook.calculate({}, list(expected()))
        # THEN each is Excel's value
        assert values == expected()


def test_the_name_can_come_from_an_input():
    # GIVEN the name INDIRECT reads held in an input cell
    for workbook in uploaded_and_stored(page_workbook()):
        # WHEN a job writes another name, a different case, or an address there
        # THEN the formula reads what that text refers to
        assert workbook.calculate({"pick": "PRICES"}, ["picked", "through_a_name"]) == {
            "picked": 118.333, "through_a_name": 118.333}
        assert workbook.calculate({"pick": "Sheet2!A1:A2"}, ["picked"]) == {"picked": 12}
        assert workbook.calculate({"pick": "Nowhere"}, ["picked"]) == {"picked": "#REF!"}


def test_the_filled_workbook_keeps_the_formulas_as_written():
    # GIVEN the workbook of an upload, calculated
    workbook = uploaded_and_stored(page_workbook())[1]
    workbook.calculate({})
    # WHEN it is exported
    sheet = openpyxl.load_workbook(io.BytesIO(workbook.to_xlsx()))["Sheet1"]
    # THEN its formulas are the upload's
    assert sheet["D4"].value == '=SUM(INDIRECT("prices"))'
    assert sheet["D7"].value == "=SUM(INDIRECT(E1))"


def test_the_fidelity_check_finds_nothing_to_flag():
    # GIVEN the workbook with Excel's values saved for its formulas
    # WHEN the upload's check runs THEN no formula cell is flagged
    report = check(page_workbook(), "ironcalc")
    assert report.flagged_total == 0


def test_indirect_reads_a_tables_structured_reference():
    # GIVEN a table DeptSales (the structured references page's name) of three sales, and
    # formulas giving INDIRECT its name and columns as text, one from an input cell
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sales"
    for row, line in enumerate([("Sales Person", "Region", "Sales Amount"), ("Joe", "North", 260),
                                ("Robert", "South", 660), ("Michelle", "East", 940)], start=1):
        for col, value in enumerate(line, start=1):
            ws.cell(row, col, value)
    ws.add_table(Table(displayName="DeptSales", ref="A1:C4"))
    ws["E1"] = "DeptSales[Region]"
    formulas = {
        "F1": ("column", '=SUM(INDIRECT("DeptSales[Sales Amount]"))', 1860),
        "F2": ("rows", '=ROWS(INDIRECT("DeptSales"))', 3),
        "F3": ("all_rows", '=ROWS(INDIRECT("deptsales[#All]"))', 4),
        "F4": ("picked", '=COUNTA(INDIRECT(E1))', 3),
        "F5": ("headers", '=INDEX(INDIRECT("DeptSales[#Headers]"),3)', "Sales Amount"),
    }
    for cell, (output, formula, _) in formulas.items():
        ws[cell] = formula
        add_name(wb, output, f"Sales!${cell[0]}${cell[1:]}")
    add_name(wb, "pick", "Sales!$E$1")
    for workbook in uploaded_and_stored(to_bytes(wb)):
        # WHEN it is calculated, and with another column's reference as the input
        values = workbook.calculate({}, [output for output, _, _ in formulas.values()])
        # THEN INDIRECT reads the table's cells as the structured reference does
        assert values == {output: value for output, _, value in formulas.values()}
        assert workbook.calculate({"pick": "DeptSales[Sales Amount]"}, ["picked"]) == {"picked": 3}
