"""The correction layer's reference rewrite: structured references to tables and 3-D
references calculate as Excel with IronCalc.

Expected values follow Excel's documented rules, worked by hand (Microsoft support, "Using
structured references with Excel tables": `Table1` / `Table1[]` the data rows, `[#All]`,
`[#Headers]`, `[#Totals]`, `[[Col1]:[Col2]]`, an unqualified `[Col]` inside the table; "Create a
3-D reference to the same cell range on multiple worksheets": every sheet from the first to the
last in the workbook's order) or were saved by Excel (pycel's excelcompiler.xlsx at the end).
IronCalc 0.9.1 alone: #NAME? for `SUM(Table1)`, #ERROR! for `[Col]` and `[#All]` over a
totals row that uses it, #ERROR! / #REF! for 3-D references.
"""

import io

import openpyxl
from openpyxl.worksheet.table import Table

import shared.calc.fidelity.check as check_module
from shared.calc import get_engine
from shared.calc.fidelity.check import check
from shared.calc.fidelity.choice import choose_engine
from tests.corpus import corpus_file

from .conftest import add_name, to_bytes, uploaded_and_stored
from .test_fidelity import excel_saved

# (sheet, cell, formula, Excel's value). Sales!A1:C5 is the table Sales (headers Item, Amount,
# Tax; data 10/1, 20/2, 30/3; a totals row with =SUBTOTAL(109,[Amount]) in B5); Jan, Feb, Mar
# hold 1, 2, 3 in A1 and 10, 20, 30 in B1.
CASES = [
    ("Sales", "E1", "=SUM(Sales)", 66),  # the data rows, every column
    ("Sales", "E2", "=SUM(Sales[Amount])", 60),
    ("Sales", "E3", "=SUM(Sales[#All])", 126),  # data 66 + totals row 60
    ("Sales", "E4", "=SUM(Sales[#Totals])", 60),
    ("Sales", "E5", "=COUNTA(Sales[#Headers])", 3),
    ("Sales", "E6", "=SUM(Sales[[Amount]:[Tax]])", 66),
    ("Sales", "E7", "=SUM(Sales[[#Data],[#Totals],[Tax]])", 6),
    ("Sales", "E8", "=ROWS(Sales[])", 3),
    ("Sheet", "A1", "=SUM(Jan:Mar!A1)", 6),
    ("Sheet", "A2", "=AVERAGE(Jan:Mar!A1:B1)", 11),
    ("Sheet", "A3", "=MAX('Jan:Feb'!B1,5)", 20),
]


def references_workbook() -> openpyxl.Workbook:
    wb = openpyxl.Workbook()
    wb.active.title = "Sheet"
    for title, (a, b) in (("Jan", (1, 10)), ("Feb", (2, 20)), ("Mar", (3, 30))):
        ws = wb.create_sheet(title)
        ws["A1"], ws["B1"] = a, b
    sales = wb.create_sheet("Sales")
    sales.append(["Item", "Amount", "Tax"])
    for row in (("a", 10, 1), ("b", 20, 2), ("c", 30, 3)):
        sales.append(list(row))
    sales.append(["Total", "=SUBTOTAL(109,[Amount])", None])
    sales.add_table(Table(displayName="Sales", ref="A1:C5", totalsRowCount=1))
    for sheet, cell, formula, _ in CASES:
        wb[sheet][cell] = formula
        add_name(wb, f"out_{sheet.lower()}_{cell.lower()}", f"{sheet}!${cell[0]}${cell[1:]}")
    return wb


def test_every_case_calculates_as_excel_in_a_job_and_from_the_stored_model():
    workbook, stored = uploaded_and_stored(to_bytes(references_workbook()))

    for loaded in (workbook, stored):
        assert loaded.calculate({}) == {f"out_{s.lower()}_{c.lower()}": v for s, c, _, v in CASES}


def test_the_upload_check_matches_excel_and_the_export_keeps_the_formulas():
    # GIVEN the workbook with Excel's values saved
    cached = {f"{s}!{c}": v for s, c, _, v in CASES} | {"Sales!B5": 60}
    data = excel_saved(references_workbook(), cached)

    # WHEN it is checked, and a job's workbook exported
    report = check(data, "ironcalc")
    workbook = get_engine("ironcalc").load_xlsx(data)
    workbook.calculate({})
    exported = openpyxl.load_workbook(io.BytesIO(workbook.to_xlsx()))

    # THEN every cell matches, and the 3-D references are shown as written
    assert report.cells_matching == report.cells_compared == len(cached), report.mismatches
    assert exported["Sheet"]["A1"].value == "=SUM(Jan:Mar!A1)"


def test_a_3d_reference_outside_the_functions_that_take_one_is_left_alone_and_flagged():
    # GIVEN a 3-D reference as an operand (Excel allows it only in SUM, AVERAGE, ...)
    wb = references_workbook()
    wb["Sheet"]["B1"] = "=INDEX(Jan:Mar!A1,1)"

    # WHEN it is loaded
    _, _, fixes = get_engine("ironcalc")._load(to_bytes(wb))

    # THEN it is not rewritten, and the upload names the cell
    assert (0, 1, 2) not in {(w.sheet, w.row, w.col) for w in fixes.rewrites}
    choice = choose_engine(to_bytes(wb), engines=("ironcalc",))
    assert [(f["sheet"], f["cell"]) for f in choice.report["flagged"]] == [("Sheet", "B1")]
    assert any("Sheet!B1" in w and "3-D reference" in w for w in choice.warnings)


def test_excel_saved_structured_references_match(monkeypatch):
    # GIVEN pycel's excelcompiler.xlsx as Excel saved it: SUM(Table1[]), SUM(Table1[#All]),
    # SUM(Table1[#Totals]) over a table whose totals row is =SUBTOTAL(109,[col3])
    monkeypatch.setattr(check_module, "MISMATCH_LIMIT", 10**9)
    report = check(corpus_file("pycel/tests/fixtures/excelcompiler.xlsx").read_bytes(), "ironcalc")

    # WHEN IronCalc with the layer checks it
    missed = {(m["sheet"], m["cell"]) for m in report.mismatches}

    # THEN those cells have Excel's saved values (21, 30, 9)
    assert not missed & {("sref", "B1"), ("sref", "B4"), ("sref", "B7")}
