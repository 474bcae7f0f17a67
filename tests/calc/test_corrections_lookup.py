"""The correction layer's lookup rewrite: approximate-match lookups over whole columns or
blank-tailed ranges give Excel's answer with IronCalc, on every path.

Expected values are Excel's, from the issue's table (data in A1:B10, blank below), which follow
Excel's documented rule (Microsoft, WorksheetFunction.VLookup / MATCH / LOOKUP; ECMA-376 Part 4
VLOOKUP): an approximate match answers the largest value less than or equal to the lookup value
in data sorted ascending, and #N/A when the lookup value is below the first one. IronCalc 0.9.1
alone answers 0, 100, 0, 0 and 0 for the five (ENGINE-NOTES.md).
"""

import io

import openpyxl
import pytest
from openpyxl.worksheet.formula import ArrayFormula

from shared.calc import get_engine
from shared.calc.fidelity.check import check
from shared.calc.fidelity.choice import choose_engine
from tests.corpus import corpus_file

from .conftest import add_name, to_bytes
from .test_fidelity import excel_saved

# (cell, formula, Excel's value): the issue's table, plus MATCH over a whole column
ISSUE_TABLE = [
    ("E1", "=VLOOKUP(2.5,A:B,2,TRUE)", 20),
    ("E2", "=MATCH(7,A1:A100,1)", 7),
    ("E3", "=LOOKUP(5.5,A1:A50,B1:B50)", 50),
    ("E4", "=VLOOKUP(0.5,A1:B100,2,TRUE)", ("e", "#N/A")),
    ("E5", "=HLOOKUP(3.5,H!1:2,2,TRUE)", 30),
    ("E6", "=MATCH(100,A:A,1)", 10),
]


def table_workbook(cached: bool) -> bytes:
    """Data 1..10 in A1:A10 with 10..100 beside them, the same across H!1:2; one named output
    per lookup cell (lookup_e1 ...), with Excel's values cached when `cached`."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Data"
    across = wb.create_sheet("H")
    for i in range(1, 11):
        ws.cell(i, 1, i)
        ws.cell(i, 2, i * 10)
        across.cell(1, i, i)
        across.cell(2, i, i * 10)
    for cell, formula, _ in ISSUE_TABLE:
        ws[cell] = formula
        add_name(wb, f"lookup_{cell.lower()}", f"Data!${cell[0]}${cell[1:]}")
    if not cached:
        return to_bytes(wb)
    return excel_saved(wb, {f"Data!{cell}": value for cell, _, value in ISSUE_TABLE})


def excel_value(value):
    return value[1] if isinstance(value, tuple) else value


@pytest.mark.parametrize("cached", [False, True], ids=["no cached values", "Excel's values cached"])
def test_every_case_of_the_issue_table_calculates_as_excel_in_a_job(cached):
    # GIVEN the issue's workbook, uploaded (IronCalc model) and stored for jobs
    workbook = get_engine("ironcalc").load_xlsx(table_workbook(cached))
    stored = get_engine("ironcalc").load_serialized(workbook.serialize())

    # WHEN a job calculates it
    for loaded in (workbook, stored):
        outputs = loaded.calculate({})

        # THEN every lookup answers Excel's value
        assert outputs == {f"lookup_{c.lower()}": excel_value(v) for c, _, v in ISSUE_TABLE}


def test_the_upload_check_finds_every_lookup_matching_excel_and_keeps_ironcalc():
    # GIVEN the issue's workbook as Excel saved it
    data = table_workbook(cached=True)

    # WHEN it is checked with IronCalc and the service chooses an engine
    report = check(data, "ironcalc")
    choice = choose_engine(data, engines=("ironcalc",))

    # THEN IronCalc matches every lookup, so IronCalc serves it with no warning
    assert report.cells_compared == len(ISSUE_TABLE)
    assert report.cells_matching == len(ISSUE_TABLE), report.mismatches
    assert choice.engine == "ironcalc" and choice.warnings == []


def test_the_filled_workbook_keeps_the_formulas_as_written():
    # GIVEN a job calculated on the issue's workbook
    workbook = get_engine("ironcalc").load_xlsx(table_workbook(cached=False))
    workbook.calculate({})

    # WHEN it is exported
    exported = workbook.to_xlsx()

    # THEN each lookup cell shows the user's formula (not the bounded one) and Excel's value
    formulas = openpyxl.load_workbook(io.BytesIO(exported))["Data"]
    values = openpyxl.load_workbook(io.BytesIO(exported), data_only=True)["Data"]
    for cell, formula, value in ISSUE_TABLE:
        assert formulas[cell].value == formula
        assert values[cell].value == excel_value(value)


def bands_with_room_below() -> openpyxl.Workbook:
    """Rate bands in Rates!A1:B3, an input range `extra_bands` A4:B5 (blank at upload) for more
    bands, and E1 looking D1 = 760 up over the whole columns A:B."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Rates"
    for row, (score, rate) in enumerate([(300, 0.12), (580, 0.09), (670, 0.07)], start=1):
        ws.cell(row, 1, score)
        ws.cell(row, 2, rate)
    ws["D1"] = 760
    ws["E1"] = "=VLOOKUP(D1,$A:$B,2,TRUE)"
    add_name(wb, "extra_bands", "Rates!$A$4:$B$5")
    return wb


def test_a_job_writing_input_cells_below_the_data_is_still_seen():
    # GIVEN rate bands in A1:B3 and an input range A4:B5 (blank at upload) for more bands,
    # looked up over the whole columns
    wb = bands_with_room_below()
    add_name(wb, "score", "Rates!$D$1")
    add_name(wb, "rate", "Rates!$E$1")
    workbook = get_engine("ironcalc").load_xlsx(to_bytes(wb))

    # WHEN a job adds the band 740 -> 0.055 below the data
    outputs = workbook.calculate({"extra_bands": [[740, 0.055], [None, None]]})

    # THEN the lookup lands on it: the largest band <= 760 (Excel's rule)
    assert outputs["rate"] == 0.055
    # and without it, the last band of the upload
    assert workbook.calculate({})["rate"] == 0.07


def test_a_name_to_whole_columns_is_bounded_and_exact_matches_by_their_own_rule():
    # GIVEN bands through a name to whole columns, and an exact match over whole columns
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Rates"
    for row, (score, rate) in enumerate([(300, 0.12), (580, 0.09), (670, 0.07)], start=1):
        ws.cell(row, 1, score)
        ws.cell(row, 2, rate)
    add_name(wb, "bands", "Rates!$A:$B")
    ws["E1"] = "=VLOOKUP(600,bands,2)"
    ws["E2"] = "=VLOOKUP(580,$A:$B,2,FALSE)"
    add_name(wb, "approx", "Rates!$E$1")
    add_name(wb, "exact", "Rates!$E$2")
    engine = get_engine("ironcalc")
    model, _, fixes = engine._load(to_bytes(wb))

    # WHEN it is loaded and calculated
    outputs = engine.load_xlsx(to_bytes(wb)).calculate({})

    # THEN the named lookup answers Excel's 0.09 (largest band <= 600), the exact one 0.09;
    # the exact one is cut one row after the data, keeping its first match (exact_lookups.py),
    # then calculated as INDEX and MATCH (index_match.py)
    assert outputs == {"approx": 0.09, "exact": 0.09}
    assert sorted((w.row, w.col) for w in fixes.rewrites) == [(1, 5), (2, 5)]
    assert model.get_cell_formula(0, 2, 5) == "=@INDEX($B$1:$B$4,MATCH(580,$A$1:$A$4,0))"


def test_array_formulas_are_not_rewritten():
    # GIVEN an approximate lookup inside an array formula
    wb = openpyxl.Workbook()
    ws = wb.active
    for i in range(1, 11):
        ws.cell(i, 1, i)
    ws["E1"] = ArrayFormula("E1:E2", "=MATCH(7,A1:A100,1)*{1;2}")

    # WHEN it is loaded
    _, _, fixes = get_engine("ironcalc")._load(to_bytes(wb))

    # THEN the layer leaves it alone (a plain formula in its place would change its meaning)
    assert not fixes


def test_a_lookup_over_a_computed_range_is_flagged_with_or_without_cached_values():
    # GIVEN approximate lookups over ranges only known when calculating
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Rates"
    for row, (score, rate) in enumerate([(300, 0.12), (580, 0.09), (670, 0.07)], start=1):
        ws.cell(row, 1, score)
        ws.cell(row, 2, rate)
    ws["E1"] = '=VLOOKUP(600,INDIRECT("A1:B20"),2,TRUE)'
    ws["E2"] = "=MATCH(600,OFFSET(A1,0,0,20,1))"
    ws["E3"] = '=VLOOKUP(600,INDIRECT("A1:B20"),2,FALSE)'  # exact: IronCalc is right
    for data in (to_bytes(wb), excel_saved(wb, {"Rates!E1": 0.09, "Rates!E2": 2, "Rates!E3": ("e", "#N/A")})):
        # WHEN the upload is checked
        choice = choose_engine(data, engines=("ironcalc",))

        # THEN the two cells are named in the report and the warnings
        flagged = [(f["sheet"], f["cell"]) for f in choice.report["flagged"]]
        assert flagged == [("Rates", "E1"), ("Rates", "E2")]
        assert any("Rates!E1" in w and "computed range" in w for w in choice.warnings)
        assert any("Rates!E2" in w for w in choice.warnings)


def test_excel_saved_lookups_over_leading_and_trailing_blanks_match_excel():
    # GIVEN pycel's lookup.xlsx as Excel saved it: sheet LookupBlanks looks up values in
    # A5:A12 (one blank inside) through A$1:A$16 with VLOOKUP, MATCH and LOOKUP
    data = corpus_file("pycel/tests/fixtures/lookup.xlsx").read_bytes()

    # WHEN IronCalc checks it with the correction layer
    report = check(data, "ironcalc")

    # THEN every cell D5:F12 matches Excel: the blank-related ones (alone IronCalc missed 15 of
    # them: 0 for VLOOKUP/LOOKUP, 16 or 4 for MATCH) and the text looked up among numbers in
    # row 12 (Excel #N/A for "Hi"; IronCalc alone sorts texts after numbers: the last row)
    missed = sorted(m["cell"] for m in report.mismatches if m["sheet"] == "LookupBlanks")
    assert missed == []

    # AND the filled workbook keeps the formulas as Excel saved them
    workbook = get_engine("ironcalc").load_xlsx(data)
    workbook.calculate({})
    exported = openpyxl.load_workbook(io.BytesIO(workbook.to_xlsx()))["LookupBlanks"]
    original = openpyxl.load_workbook(io.BytesIO(data))["LookupBlanks"]
    for row in range(5, 13):
        for col in "DEF":
            assert exported[f"{col}{row}"].value == original[f"{col}{row}"].value


def test_the_upload_check_sees_a_blank_input_range_below_the_data_as_blank():
    # GIVEN bands in A1:B3, an input range A4:B5 left blank in the file, a whole-column lookup,
    # and Excel's value for 760 (the largest band <= 760 is 670 -> 0.07)
    wb = bands_with_room_below()
    add_name(wb, "rate", "Rates!$E$1")

    # WHEN the upload is checked, THEN IronCalc matches Excel
    report = check(excel_saved(wb, {"Rates!E1": 0.07}), "ironcalc")
    assert (report.cells_compared, report.cells_matching) == (1, 1), report.mismatches
