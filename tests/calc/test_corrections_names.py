"""The correction layer's defined-name rewrite: names that are formulas or constants, relative
names, and implicit intersection of multi-cell names calculate as Excel with IronCalc.

Expected values follow Excel's documented rules, worked by hand from the cells' contents
(Microsoft support, "Define and use names in formulas": a name can stand for a formula or a
constant; "Implicit intersection operator: @": a range where one value is expected is the cell
of the range in the formula's row or column, #VALUE! when there is none; ECMA-376 Part 1,
18.2.5: relative references in a name are relative to A1) or were saved by Excel (the corpus
cells at the end). IronCalc 0.9.1 alone answers #NAME? for the formula and constant names,
#VALUE! for every intersected name, and the absolute cell for the relative name.
"""

import io

import openpyxl
from openpyxl.utils.cell import coordinate_from_string
from openpyxl.worksheet.formula import ArrayFormula

import shared.calc.fidelity.check as check_module
from shared.calc import get_engine
from shared.calc.fidelity.check import check
from shared.calc.fidelity.choice import choose_engine
from tests.corpus import corpus_file

from .conftest import add_name, to_bytes, uploaded_and_stored
from .test_fidelity import excel_saved

# (cell, formula, Excel's value); B2 = 10, E1:E5 = 1.5, 3, 4.5, 6, 7.5, G1:H1 = 1, 2,
# J1:J5 = E1:E5 and K1:K5 = 10, 20, ... 50
CASES = [
    ("A1", "=DAILY_CHARGE", 240),  # a name to the formula Sheet1!$B$2*24
    ("A2", "=TAX_RATE*100", 5),  # a name to the constant 0.05
    ("A3", "=Rate*100", 450),  # Rate = E1:E5, row 3: E3*100
    ("A4", "=SUM(Rate)", 22.5),  # a function taking a range: no intersection
    ("A5", "=IF(Rate>5,1,0)", 1),  # row 5: E5 = 7.5
    ("AA6", "=LEFT_CELL", 666),  # relative name (Sheet1!XFD1: the cell to the left): Z6
    ("A7", "=Rate*100", ("e", "#VALUE!")),  # row 7 is outside E1:E5
    ("A8", "=DAILY_CHARGE/TAX_RATE", 4800),
    ("A9", '=LABEL&"!"', "net!"),  # a name to a text constant
    ("A10", "=PER_DAY_TAX", 12),  # a name to a formula of names: DAILY_CHARGE*TAX_RATE
    # a dynamic range: Prices = OFFSET($E$1,0,0,COUNTA($E:$E),1), E1:E5 as the column holds 5
    ("A11", "=SUM(Prices)", 22.5),
    ("A12", "=COUNT(Prices)*10", 50),
    ("H3", "=Across*10", 20),  # Across = G1:H1, column H: H1*10
    # a function's single-value argument intersects too (J1:K5 keys 1.5..7.5, values 10..50)
    ("L3", "=VLOOKUP(Rate,$J$1:$K$5,2,FALSE)", 30),  # E3 = 4.5
    ("L4", "=SUMIF($J$1:$J$5,Rate,$K$1:$K$5)", 40),  # E4 = 6
    ("L5", "=INDEX($K$1:$K$5,Rate/1.5)", 50),  # E5 = 7.5
]


def names_workbook() -> openpyxl.Workbook:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    ws["B2"] = 10
    ws["Z6"] = 666
    for row in range(1, 6):
        ws.cell(row, 5, row * 1.5)
    ws["G1"], ws["H1"] = 1, 2
    for row in range(1, 6):
        ws.cell(row, 10, row * 1.5)
        ws.cell(row, 11, row * 10)
    for cell, formula, _ in CASES:
        ws[cell] = formula
        column, row = coordinate_from_string(cell)
        add_name(wb, f"out_{cell.lower()}", f"Sheet1!${column}${row}")
    add_name(wb, "DAILY_CHARGE", "Sheet1!$B$2*24")
    add_name(wb, "TAX_RATE", "0.05")
    add_name(wb, "Rate", "Sheet1!$E$1:$E$5")
    add_name(wb, "Across", "Sheet1!$G$1:$H$1")
    add_name(wb, "LEFT_CELL", "Sheet1!XFD1")
    add_name(wb, "LABEL", '"net"')
    add_name(wb, "PER_DAY_TAX", "DAILY_CHARGE*TAX_RATE")
    add_name(wb, "Prices", "OFFSET(Sheet1!$E$1,0,0,COUNTA(Sheet1!$E:$E),1)")
    return wb


def excel(value):
    return value[1] if isinstance(value, tuple) else value


def test_every_name_case_calculates_as_excel_in_a_job_and_from_the_stored_model():
    # GIVEN the workbook uploaded (IronCalc model) and stored for jobs
    workbook, stored = uploaded_and_stored(to_bytes(names_workbook()))

    for loaded in (workbook, stored):
        # WHEN a job calculates it
        outputs = loaded.calculate({})

        # THEN every cell answers Excel's value
        assert outputs == {f"out_{c.lower()}": excel(v) for c, _, v in CASES}


def test_a_job_input_reaches_a_cell_through_a_name_to_a_formula():
    # GIVEN B2 an input, used through DAILY_CHARGE = B2*24
    wb = names_workbook()
    add_name(wb, "daily", "Sheet1!$B$2")
    workbook = get_engine("ironcalc").load_xlsx(to_bytes(wb))

    # WHEN a job sets it to 2
    outputs = workbook.calculate({"daily": 2}, ["out_a1", "out_a8"])

    # THEN the cells using the name follow
    assert outputs == {"out_a1": 48, "out_a8": 960}


def test_the_upload_check_matches_excel_on_every_case_and_keeps_ironcalc():
    # GIVEN the workbook with Excel's values saved
    data = excel_saved(names_workbook(), {f"Sheet1!{c}": v for c, _, v in CASES})

    # WHEN it is checked and the engine chosen
    report = check(data, "ironcalc")
    choice = choose_engine(data, engines=("ironcalc",))

    # THEN every cell matches and nothing is flagged
    assert report.cells_matching == report.cells_compared == len(CASES), report.mismatches
    assert choice.engine == "ironcalc" and choice.report["flagged"] == []


def test_the_filled_workbook_shows_the_formulas_as_written():
    # GIVEN a job calculated
    workbook = get_engine("ironcalc").load_xlsx(to_bytes(names_workbook()))
    workbook.calculate({})

    # WHEN it is exported
    exported = workbook.to_xlsx()

    # THEN the cells show the user's formulas with Excel's values
    formulas = openpyxl.load_workbook(io.BytesIO(exported))["Sheet1"]
    values = openpyxl.load_workbook(io.BytesIO(exported), data_only=True)["Sheet1"]
    for cell, formula, value in CASES:
        assert formulas[cell].value == formula
        assert values[cell].value == excel(value)


def test_array_formulas_and_functions_taking_ranges_are_left_alone():
    # GIVEN a multi-cell name in an array formula and inside SUMPRODUCT
    wb = names_workbook()
    ws = wb["Sheet1"]
    ws["C1"] = ArrayFormula("C1:C2", "=Rate*2")
    ws["C3"] = "=SUMPRODUCT(Rate*2)"

    # WHEN it is loaded
    _, _, fixes = get_engine("ironcalc")._load(to_bytes(wb))

    # THEN neither is rewritten
    rewritten = {(w.row, w.col) for w in fixes.rewrites}
    assert (1, 3) not in rewritten and (3, 3) not in rewritten


def test_a_name_giving_several_cells_where_one_value_is_expected_is_flagged():
    # GIVEN a name whose formula gives several cells, used where Excel intersects
    wb = names_workbook()
    add_name(wb, "Doubled", "Sheet1!$E$1:$E$5*2")
    wb["Sheet1"]["C3"] = "=Doubled+1"
    wb["Sheet1"]["C4"] = "=SUM(Doubled)"  # a function taking a range: nothing to intersect

    for data in (to_bytes(wb), excel_saved(wb, {"Sheet1!C4": 45})):
        # WHEN the upload is checked
        choice = choose_engine(data, engines=("ironcalc",))

        # THEN C3 is named in the report and the warnings, C4 is not
        assert [(f["sheet"], f["cell"]) for f in choice.report["flagged"]] == [("Sheet1", "C3")]
        assert any("Sheet1!C3" in w and "implicit intersection" in w for w in choice.warnings)


def test_a_workbook_without_such_names_is_not_touched():
    # GIVEN names to plain cells only
    wb = openpyxl.Workbook()
    wb.active["A1"], wb.active["A2"] = 3, "=A1*2"
    add_name(wb, "x", "Sheet!$A$1")
    add_name(wb, "y", "Sheet!$A$2")

    # WHEN it is loaded
    _, _, fixes = get_engine("ironcalc")._load(to_bytes(wb))

    # THEN nothing was rewritten
    assert not fixes


def test_excel_saved_names_to_formulas_intersections_and_constants_match(monkeypatch):
    # GIVEN formulas' test.xlsx as Excel saved it: h = CORE!$K$4:$K$6 CORE!$J$5:$L$5 (an
    # intersection), i = SUM(CORE!$M$4:$N$5,h), l = h+i, NAMEDCELL123 = "'ciao"
    monkeypatch.setattr(check_module, "MISMATCH_LIMIT", 10**9)  # every miss, to look for ours
    report = check(corpus_file("formulas/test/test_files/test.xlsx").read_bytes(), "ironcalc")

    # WHEN IronCalc with the layer checks it
    missed = {(m["sheet"], m["cell"]) for m in report.mismatches}

    # THEN the cells using those names have Excel's saved values (IronCalc alone: #VALUE!,
    # #NAME?, or right by chance for h)
    for cell in ("Q4", "Q5", "R4", "R5", "M25"):
        assert ("CORE", cell) not in missed


def test_ranges_written_into_single_value_arguments_are_intersected():
    # GIVEN ranges written (not named) where a function takes one value: Excel reads the cell
    # of the range in the formula's row (E3 = 4.5 in row 3, E4 = 6 in row 4, E5 = 7.5 in row 5)
    wb = names_workbook()
    ws = wb["Sheet1"]
    cases = {
        "M3": ("=VLOOKUP($E$1:$E$5,$J$1:$K$5,2,FALSE)", 30),
        "M4": ("=SUMIF($J$1:$J$5,$E$1:$E$5,$K$1:$K$5)", 40),
        "M5": ("=IF($E$1:$E$5>7,1,0)", 1),
        "N3": ("=SUM($E$1:$E$5)", 22.5),  # a function taking a range: the whole range
        # ranges inside an expression given to a function of one value, whole columns too
        "N4": ('=IFERROR($E$1:$E$5/($E$1:$E$5-6),"none")', "none"),  # 6/0 in row 4
        "N5": ("=ISNUMBER($E$1:$E$5*2)", True),
        "O5": ("=IFERROR(E:E*2,0)", 15),
    }
    for cell, (formula, _) in cases.items():
        ws[cell] = formula
        add_name(wb, f"x_{cell.lower()}", f"Sheet1!${cell[0]}${cell[1:]}")

    # WHEN a job calculates it (IronCalc alone: #N/A, #VALUE!, #VALUE!, and #VALUE!, FALSE,
    # #VALUE! for the expressions)
    outputs = get_engine("ironcalc").load_xlsx(to_bytes(wb)).calculate({}, [f"x_{c.lower()}" for c in cases])

    # THEN each is Excel's value
    assert outputs == {f"x_{c.lower()}": v for c, (_, v) in cases.items()}
