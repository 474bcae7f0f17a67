"""The correction layer's argument rewrite: values typed directly into statistical functions,
and OFFSET's omitted height or width, calculate as Excel with IronCalc.

Expected values follow Excel's documented rules, worked by hand (Microsoft support, STDEV.S,
VAR.S, DEVSQ, SUMSQ, MODE.SNGL...: "Logical values and text representations of numbers that you
type directly into the list of arguments are counted", while in a reference they are ignored;
OFFSET: "If height is omitted, it is assumed to be the same height as reference", width
likewise). IronCalc 0.9.1 alone answers #DIV/0! for STDEV(1,TRUE,"3"), 1 for SUMSQ(1,TRUE,"3")
and #REF! for an empty height or width.
"""

import math

import openpyxl
import pytest

from shared.calc import get_engine
from shared.calc.fidelity.check import check

from .conftest import add_name, to_bytes, uploaded_and_stored
from .test_fidelity import excel_saved

# {1, 1, 3}: mean 5/3, squared deviations 4/9 + 4/9 + 16/9 = 8/3
CASES = {
    "B1": ('=STDEV(1,TRUE,"3")', math.sqrt(4 / 3)),
    "B2": ('=VAR.S(1,TRUE,"3")', 4 / 3),
    "B3": ('=VAR.P(1,TRUE,"3")', 8 / 9),
    "B4": ('=STDEV.P(1,TRUE,"3")', math.sqrt(8 / 9)),
    "B5": ('=DEVSQ(1,TRUE,"3")', 8 / 3),
    "B6": ('=SUMSQ(1,TRUE,"3")', 11),
    "B7": ('=MODE(1,TRUE,"3")', 1),
    "B8": ("=STDEV(A1:A4)", math.sqrt(2)),  # A1:A4 = 1, TRUE, "3", 3: only 1 and 3 count
    "B9": ("=SUM(OFFSET(A1,3,0,))", 3),  # height omitted: A1's, so A4
    "B10": ("=SUM(OFFSET(C1:C3,0,0,,1))", 60),  # C1:C3 = 10, 20, 30
    "B11": ("=ROWS(OFFSET(C1:D3,0,0,,))*10+COLUMNS(OFFSET(C1:D3,0,0,,))", 32),
    "B12": ("=AVERAGE(1,TRUE,\"3\")", 5 / 3),  # already right in IronCalc: unchanged
}


def arguments_workbook() -> openpyxl.Workbook:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Stats"
    ws["A1"], ws["A2"], ws["A3"], ws["A4"] = 1, True, "3", 3
    ws["C1"], ws["C2"], ws["C3"] = 10, 20, 30
    for cell, (formula, _) in CASES.items():
        ws[cell] = formula
        add_name(wb, f"out_{cell.lower()}", f"Stats!${cell[0]}${cell[1:]}")
    return wb


def test_every_case_calculates_as_excel_in_a_job_and_from_the_stored_model():
    workbook, stored = uploaded_and_stored(to_bytes(arguments_workbook()))

    for loaded in (workbook, stored):
        outputs = loaded.calculate({})
        for cell, (_, expected) in CASES.items():
            assert outputs[f"out_{cell.lower()}"] == pytest.approx(expected, rel=1e-12), cell


def test_the_upload_check_matches_excel_and_the_export_keeps_the_formulas():
    # GIVEN the workbook with Excel's values saved
    data = excel_saved(arguments_workbook(), {f"Stats!{c}": v for c, (_, v) in CASES.items()})

    # WHEN it is checked, and a job's workbook exported
    report = check(data, "ironcalc")
    workbook = get_engine("ironcalc").load_xlsx(data)
    workbook.calculate({})
    exported = openpyxl.load_workbook(__import__("io").BytesIO(workbook.to_xlsx()))["Stats"]

    # THEN every cell matches, and the cells show the formulas as written (newer functions
    # with the _xlfn. prefix Excel's files give them)
    assert report.cells_matching == report.cells_compared == len(CASES), report.mismatches
    for cell, (formula, _) in CASES.items():
        assert exported[cell].value.replace("_xlfn.", "") == formula


def test_references_and_other_text_are_left_to_ironcalc():
    # GIVEN statistical functions over references and with text that may read as a date
    wb = arguments_workbook()
    wb["Stats"]["D1"] = "=STDEV(A1:A4,A2)"
    wb["Stats"]["D2"] = '=STDEV("1/2/2020",1)'
    wb["Stats"]["D3"] = "=OFFSET(A1,1,1)"

    # WHEN it is loaded
    _, _, fixes = get_engine("ironcalc")._load(to_bytes(wb))

    # THEN none of them is rewritten
    rewritten = {(w.row, w.col) for w in fixes.rewrites}
    assert not rewritten & {(1, 4), (2, 4), (3, 4)}


def test_typed_text_that_cannot_be_a_number_is_an_error_except_in_mode():
    # Microsoft, STDEV.S / VAR.S / SUMSQ / STDEVPA pages: "Arguments that are error values or
    # text that cannot be translated into numbers cause errors" (and Excel saved #VALUE! for
    # STDEV(...,"") in formulas' test.xlsx); IronCalc 0.9.1 drops such text (STDEV(1,2,3,"x")
    # 1). MODE.SNGL ignores it, against its page: Excel saved 0.2 for test.xlsx STATISTICAL!S71
    # =MODE.SNGL(D71:E71,E71:F71,F71:G71,"").
    # GIVEN those formulas, and MODE's own example (MODE.SNGL page: 5.6, 4, 4, 3, 2, 4 is 4)
    cases = {
        '=STDEV(1,2,3,"x")': "#VALUE!", '=_xlfn.VAR.S(1,"")': "#VALUE!",
        '=SUMSQ(1,2,"abc")': "#VALUE!", '=STDEVPA(1,2,3,"x")': "#VALUE!",
        '=_xlfn.MODE.SNGL(1,2,2,3,"")': 2,
        "=_xlfn.MODE.SNGL(5.6,4,4,3,2,4)": 4, '=MODE(1,TRUE,"3",3)': 1,
        '=VARPA(1,TRUE,"3")': pytest.approx(8 / 9),
    }
    wb = openpyxl.Workbook()
    for row, formula in enumerate(cases, start=1):
        wb.active.cell(row, 1, formula)
    add_name(wb, "out", f"Sheet!$A$1:$A${len(cases)}")

    # WHEN a job calculates, on the upload's model and on the stored one
    for loaded in uploaded_and_stored(to_bytes(wb)):
        # THEN each is Excel's answer
        assert loaded.calculate({})["out"] == list(cases.values())



def test_left_right_mid_counts_typed_as_text_or_logical_are_numbers():
    from shared.calc.corrections.arguments import rewrite_formula

    assert rewrite_formula('=LEFT("abc","2")') == 'LEFT("abc",2)'
    assert rewrite_formula('=MID("abcd","2",TRUE)') == 'MID("abcd",2,1)'
    assert rewrite_formula('=RIGHT("12","1")') == 'RIGHT("12",1)'  # the text argument stays text
    assert rewrite_formula('=LEFT("abc","x")') is None  # IronCalc's #VALUE! is Excel's
    assert rewrite_formula('=LEFT("123",2)') is None
