"""Exact-match lookups over whole columns and rows are bounded at load to the cells that can
hold values, and still give Excel's answers (shared.calc.corrections.exact_lookups).

Expected values follow the definitions in Microsoft's documentation: "VLOOKUP function"
(range_lookup FALSE: the first value in the first column equal to the lookup value, #N/A when
there is none), "MATCH function" (match_type 0: the position of the first value equal to the
lookup value, counted from the range's first cell), "INDEX function", "HLOOKUP function",
"XLOOKUP function" (default match_mode 0, search from the first item).
"""

import io

import openpyxl

from shared.calc import get_engine
from shared.calc.fidelity.check import check

from .conftest import add_name, to_bytes
from .test_fidelity import excel_saved

ITEMS = [  # Key, Name, Price, Stock; P-200 twice: the first one is the answer
    ("Key", "Name", "Price", "Stock"),
    ("P-100", "Bolt", 0.25, 500),
    ("P-200", "Nut", 0.1, 800),
    ("P-300", "Washer", 0.05, 1200),
    ("P-200", "Nut (old)", 0.12, 0),
    ("P-500", "Gear", 4.5, 30),
]
FORMULAS = {  # Calc cell: (output name, formula)
    "B2": ("price", "=VLOOKUP(A2,Data!$A:$D,3,FALSE)"),
    "B3": ("position", "=MATCH(A2,Data!$A:$A,0)"),
    "B4": ("name", "=INDEX(Data!$B:$B,MATCH(A2,Data!$A:$A,0))"),
    "B5": ("missing", '=VLOOKUP("P-999",Data!$A:$D,2,FALSE)'),
    "B6": ("stock", "=_xlfn.XLOOKUP(A2,Data!$A:$A,Data!$D:$D)"),
    "B7": ("across", '=HLOOKUP("Q2",Across!$1:$2,2,FALSE)'),
    "B8": ("named", "=VLOOKUP(A2,items,2,0)"),
}
# Excel's values for key P-200, by the definitions above
EXCEL = {"price": 0.1, "position": 3, "name": "Nut", "missing": ("e", "#N/A"), "stock": 800,
         "across": 20, "named": "Nut"}


def catalogue() -> openpyxl.Workbook:
    """Items in Data!A1:D6, an input range `new_items` Data!A8:D9 (blank at upload, row 7 left
    blank) for more, the key in Calc!A2 and one named output per lookup."""
    wb = openpyxl.Workbook()
    calc = wb.active
    calc.title = "Calc"
    data = wb.create_sheet("Data")
    for row in ITEMS:
        data.append(row)
    across = wb.create_sheet("Across")
    for col, (quarter, sales) in enumerate([("Q1", 10), ("Q2", 20), ("Q3", 30)], start=1):
        across.cell(1, col, quarter)
        across.cell(2, col, sales)
    calc["A2"] = "P-200"
    add_name(wb, "key", "Calc!$A$2")
    add_name(wb, "new_items", "Data!$A$8:$D$9")
    add_name(wb, "items", "Data!$A:$D")
    for cell, (name, formula) in FORMULAS.items():
        calc[cell] = formula
        add_name(wb, name, f"Calc!${cell[0]}${cell[1:]}")
    return wb


def as_output(value):
    return value[1] if isinstance(value, tuple) else value


def test_whole_column_exact_lookups_answer_excel_and_search_only_the_data():
    # GIVEN the catalogue uploaded, and the same restored for a job
    data = to_bytes(catalogue())
    engine = get_engine("ironcalc")
    model, _, fixes = engine._load(data)
    workbook = engine.load_xlsx(data)
    stored = engine.load_serialized(workbook.serialize())

    # WHEN jobs calculate it
    for loaded in (workbook, stored):
        outputs = loaded.calculate({})

        # THEN every lookup answers Excel's value
        assert outputs == {name: as_output(EXCEL[name]) for name in EXCEL}

    # AND the searched ranges end one row after the input range (the last cell that can hold
    # a value), the whole rows one column after the data; XLOOKUP is left as written (VLOOKUP
    # and HLOOKUP are then calculated as INDEX and MATCH: index_match.py)
    assert model.get_cell_formula(0, 2, 2) == "=@INDEX(Data!$C$1:$C$10,MATCH(A2,Data!$A$1:$A$10,0))"
    assert model.get_cell_formula(0, 3, 2) == "=MATCH(A2,Data!$A$1:$A$10,0)"
    assert "MATCH(A2,Data!$A$1:$A$10,0)" in model.get_cell_formula(0, 4, 2)
    assert "Data!$B:$B" in model.get_cell_formula(0, 4, 2)
    assert model.get_cell_formula(0, 7, 2) == '=@INDEX(Across!$A$2:$D$2,MATCH("Q2",Across!$A$1:$D$1,0))'
    assert model.get_cell_formula(0, 8, 2) == "=@INDEX(Data!$B$1:$B$10,MATCH(A2,Data!$A$1:$A$10,0))"
    assert "Data!$A:$A" in model.get_cell_formula(0, 6, 2)
    assert sorted((w.row, w.col) for w in fixes.rewrites) == [(2, 2), (3, 2), (4, 2), (5, 2), (7, 2), (8, 2)]


def test_a_job_writing_items_below_the_data_finds_them():
    # GIVEN the catalogue, stored for jobs
    workbook = get_engine("ironcalc").load_xlsx(to_bytes(catalogue()))
    stored = get_engine("ironcalc").load_serialized(workbook.serialize())

    # WHEN a job adds P-900 in the second row of the input range (row 9) and looks it up
    outputs = stored.calculate({"new_items": [[None] * 4, ["P-900", "Spring", 0.75, 60]], "key": "P-900"})

    # THEN it is found where Excel finds it: price 0.75, the 9th cell of A:A
    assert (outputs["price"], outputs["position"], outputs["name"], outputs["stock"]) == (0.75, 9, "Spring", 60)


def test_the_upload_check_matches_excel_and_the_export_keeps_the_formulas():
    # GIVEN the catalogue as Excel saved it
    data = excel_saved(catalogue(), {f"Calc!{cell}": EXCEL[name] for cell, (name, _) in FORMULAS.items()})

    # WHEN it is checked, and a job's filled workbook is exported
    report = check(data, "ironcalc")
    workbook = get_engine("ironcalc").load_xlsx(data)
    workbook.calculate({})
    exported = openpyxl.load_workbook(io.BytesIO(workbook.to_xlsx()))["Calc"]

    # THEN every lookup matches Excel, and the user's formulas are the ones exported
    assert (report.cells_compared, report.cells_matching) == (len(FORMULAS), len(FORMULAS)), report.mismatches
    for cell, (_, formula) in FORMULAS.items():
        assert exported[cell].value == formula


def test_a_range_a_dynamic_array_can_spill_into_is_left_whole():
    # GIVEN a dynamic array in Data!A20 (it may spill down column A), and one in Data!F1,
    # right of the searched columns A:D of the other sheet's lookup
    wb = catalogue()
    wb["Data"]["A20"] = "=_xlfn._xlws.SORT(A2:A6)"
    wb["Across"]["E1"] = '=_xlfn.SEQUENCE(1,3)'

    # WHEN it is loaded
    model, _, _ = get_engine("ironcalc")._load(to_bytes(wb))

    # THEN the lookups over Data!A:A stay whole, those over Across!1:2 too (E1 is left of
    # the row's end), so whatever spills is searched
    assert model.get_cell_formula(0, 2, 2) == "=@INDEX(Data!$C:$C,MATCH(A2,Data!$A:$A,0))"
    assert model.get_cell_formula(0, 7, 2) == '=@INDEX(Across!$2:$2,MATCH("Q2",Across!$1:$1,0))'


def test_ranges_written_to_their_data_and_approximate_lookups_keep_their_own_rules():
    # GIVEN an exact lookup over a range sized to its data, and an approximate one beside an
    # exact one in the same formula
    wb = catalogue()
    calc = wb["Calc"]
    calc["C2"] = "=VLOOKUP(A2,Data!$A$1:$D$6,2,FALSE)"
    bands = wb.create_sheet("Bands")
    for row, (score, rate) in enumerate([(300, 0.12), (580, 0.09), (670, 0.07)], start=1):
        bands.cell(row, 1, score)
        bands.cell(row, 2, rate)
    calc["C3"] = "=VLOOKUP(600,Bands!$A:$B,2,TRUE)&MATCH(A2,Data!$A:$A,0)"

    # WHEN it is loaded and calculated
    model, _, _ = get_engine("ironcalc")._load(to_bytes(wb))
    model.evaluate()

    # THEN the sized range is searched as written (as INDEX and MATCH); in the mixed formula
    # both ranges are bounded, each by its rule, and the answer is Excel's: 0.09 (largest band
    # <= 600) then 3
    assert model.get_cell_formula(0, 2, 3) == "=@INDEX(Data!$B$1:$B$6,MATCH(A2,Data!$A$1:$A$6,0))"
    assert model.get_cell_formula(0, 3, 3) == "=VLOOKUP(600,Bands!$A$1:$B$3,2,TRUE)&MATCH(A2,Data!$A$1:$A$10,0)"
    assert model.get_formatted_cell_value(0, 3, 3) == "0.093"


def test_an_approximate_lookup_or_convert_on_the_sheet_does_not_keep_a_range_whole():
    # GIVEN approximate lookups (evaluated by the layer when their lookup value is a text) and
    # CONVERT (when IronCalc lacks a unit) on the sheet the whole-column lookups search: such
    # cells answer one value in their own cell and never spill
    wb = catalogue()
    wb["Data"]["B12"] = "=VLOOKUP(A2,A1:C6,3)"
    wb["Data"]["C12"] = '=CONVERT(B12,"g","kg")'

    # WHEN it is loaded
    model, _, _ = get_engine("ironcalc")._load(to_bytes(wb))

    # THEN the exact lookups over Data!A:D are bounded as before
    assert model.get_cell_formula(0, 2, 2) == "=@INDEX(Data!$C$1:$C$10,MATCH(A2,Data!$A$1:$A$10,0))"
