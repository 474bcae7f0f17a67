"""The functions we supply to `formulas` where it disagreed with Excel (shared/calc/formulas/functions.py).

Every expected value below is one Excel saved in a workbook of the corpus (formulas' test.xlsx,
pycel's yearfrac.xlsx, logical.xlsx and date-time.xlsx, IronCalc's COMPLEX and VALUETOTEXT tests), not one we worked out.
"""

import openpyxl
import pytest
from openpyxl.worksheet.formula import ArrayFormula

from shared.calc.fidelity.check import check
from shared.calc.fidelity.choice import choose_engine
from shared.calc.formulas.engine import FormulasEngine
from shared.calc.formulas.functions import excel_number_text
from shared.calc.xlsx.cells import read_excel_cells
from tests.corpus import corpus_file

from .conftest import add_name
from .test_fidelity import excel_saved


@pytest.mark.parametrize("number, text", [
    (6.924426746138675e-05, "0.0000692442674613868"),  # 19 decimals: still written out
    (1.2823399588845422e-06, "1.28233995888454E-06"),  # 20 decimals: scientific
    (3.821267573376839e-22, "3.82126757337684E-22"),
    (27142327967.108967, "27142327967.109"),  # 15 significant digits
    (30.300000000000004, "30.3"),
    (1e-18, "0.000000000000000001"),
    (1e-20, "1E-20"),
    (1.2e-45, "1.2E-45"),
    (7.123456e-09, "0.000000007123456"),
    (-2.5e-09, "-0.0000000025"),
    (123456789012345.0, "123456789012345"),
    (1e16, "1E+16"),
    (-0.0, "0"),
])
def test_numbers_are_written_as_excel_writes_them_in_text(number, text):
    assert excel_number_text(number) == text


def _workbook_excel_calculated() -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Fixes"
    ws["A1"], ws["A2"], ws["A3"] = "13+5j", "3.1+2j", "-13+25j"
    ws["B1"] = "=_xlfn.IMCOT(A1)"
    ws["B2"] = "=IMPRODUCT(A2,A1)"
    ws["B3"] = "=IMPRODUCT(A4,A3)"  # A4 is empty: Excel answers "0", not "-0"
    ws["B4"] = "=_xlfn.IMCSCH(A1)"
    ws["C1"], ws["C2"] = "=DATE(2004,2,29)", "=DATE(2005,2,28)"
    ws["D1"] = "=YEARFRAC(C1,C2,0)"  # both the last day of February: a whole 30/360 year
    ws["D2"] = "=YEARFRAC(C1,C2,1)"  # the span holds 29 February 2004: a 366-day year
    ws["D3"] = "=YEARFRAC(1987,345,1)"  # six years 1900-1905 average 365.1667 days
    ws["D4"] = '=YEARFRAC(1,200,"plugh")'
    ws["D5"] = "=YEARFRAC(1/0,200,-1)"  # the basis is checked before the dates
    ws["D6"] = "=YEARFRAC(C1:C2,C1:C2,1)"  # YEARFRAC does not take ranges
    ws["E1"] = "=N(TRUE)"
    ws["E2"] = "=BAHTTEXT(157)"
    ws["E3"] = '=_xlfn.SWITCH("UPPER","Upper","match")'  # text compares without case
    ws["E4"] = '=TIMEVALUE("1.25")'  # a number in text is not a time
    ws["F1"] = "=1/0"
    ws["G1"] = ArrayFormula(
        "G1:G2", "=_xlfn.SCAN(F1,{1;3},_xlfn.LAMBDA(_xlpm.a,_xlpm.b,_xlpm.a+_xlpm.b^2))"
    )
    table = wb.create_sheet("Lookup")  # as in pycel's lookup.xlsx
    for col, (number, letter) in enumerate(zip(range(5), "aeiou"), start=1):
        table.cell(1, col, number)  # A1:E1 0..4, A2:E2 a..u: a range wider than tall
        table.cell(2, col, letter)
        table.cell(col, 7, number)  # G1:G5 0..4, H1:H5 a..u, I1:I5 blank, plugh, TRUE, ...
        table.cell(col, 8, letter)
    table["I2"], table["I3"], table["I4"], table["I5"] = "plugh", True, 3, 4
    table["J1"] = 1
    table["A4"] = "=LOOKUP(0.5,A1:E2)"  # searches the first row, answers from the last
    table["A5"] = '=LOOKUP("plugh",A1:E2)'  # no text in the row searched
    table["A6"] = "=LOOKUP(2,G1:H5,I1:I5)"  # searches G (the first column), answers from I
    table["A7"] = "=LOOKUP(2,G1:H5,I1:J5)"  # an answer range of two columns
    table["A8"] = "=LOOKUP(0.5,G1:I5)"  # the answer cell is blank
    return excel_saved(wb, {
        "Lookup!A4": "a", "Lookup!A5": ("e", "#N/A"), "Lookup!A6": True,
        "Lookup!A7": ("e", "#N/A"), "Lookup!A8": 0,
        "Fixes!B1": "0.0000692442674613868-1.00005873951153j",
        "Fixes!B2": "30.3+41.5j",
        "Fixes!B3": "0",
        "Fixes!B4": "1.28233995888454E-06+4.33496947416312E-06j",
        "Fixes!C1": 38046, "Fixes!C2": 38411,
        "Fixes!D1": 1, "Fixes!D2": 0.9972677595628415, "Fixes!D3": 4.496576905522592,
        "Fixes!D4": ("e", "#VALUE!"), "Fixes!D5": ("e", "#NUM!"), "Fixes!D6": ("e", "#VALUE!"),
        "Fixes!E1": 1,
        "Fixes!E2": "หนึ่งร้อยห้าสิบเจ็ดบาทถ้วน",
        "Fixes!E3": "match", "Fixes!E4": ("e", "#VALUE!"),
        "Fixes!F1": ("e", "#DIV/0!"),
        "Fixes!G1": ("e", "#DIV/0!"),
    })


def test_formulas_now_matches_excel_where_it_used_to_differ():
    # GIVEN cells where formulas 1.3.4's own functions disagree with Excel's saved values
    data = _workbook_excel_calculated()

    # WHEN the workbook is checked with formulas
    report = check(data, "formulas")

    # THEN every one of them matches
    assert report.status == "ok"
    assert report.cells_compared == 23
    assert report.mismatches == []


def test_yearfrac_workbooks_are_answered_by_both_engines():
    # GIVEN a day-count workbook: actual/actual YEARFRAC over a leap day, and European 30/360
    # from serial 0 (1900-01-00, which IronCalc alone refuses: #NUM!), with the values Excel
    # saved for them (pycel's yearfrac.xlsx rows 6 and 5)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Accrual"
    ws["A1"], ws["A2"], ws["A3"] = 38046, 38411, 1  # 2004-02-29, 2005-02-28, basis
    ws["B1"] = "=YEARFRAC(A1,A2,A3)"
    ws["B2"] = "=YEARFRAC(0,200,4)"
    add_name(wb, "start", "Accrual!$A$1")
    add_name(wb, "basis", "Accrual!$A$3")
    add_name(wb, "fraction", "Accrual!$B$1")
    data = excel_saved(wb, {"Accrual!B1": 0.9972677595628415, "Accrual!B2": 0.55})

    # WHEN the service chooses its engine
    choice = choose_engine(data, timeout_s=3600)  # a guard, not a verdict on speed

    # THEN formulas, with our YEARFRAC, and IronCalc, with the correction layer's, match both
    # cells, and IronCalc is kept
    assert choice.engine == "ironcalc"
    assert choice.report["engines"]["ironcalc"]["cells_matching"] == 2
    assert check(data, "formulas").cells_matching == 2

    # AND a job on formulas answers Excel's day count for new inputs
    book = FormulasEngine().load_xlsx(data)
    assert book.calculate({"basis": 0})["fraction"] == 1  # 30/360: both ends the last of February
    assert book.calculate({"start": 38047, "basis": 1})["fraction"] == pytest.approx(364 / 365)


@pytest.mark.parametrize("workbook, empty_arrays", [("DROP_TAKE.xlsx", 5), ("FILTER_ERRORS.xlsx", 1)])
def test_an_empty_array_from_formulas_is_calc_as_excel_365_saved_it(workbook, empty_arrays):
    # GIVEN a workbook Excel saved with FILTER, TAKE or DROP leaving nothing (#CALC!, an empty
    # array, held as Excel 365 holds it: #VALUE! with a rich value saying which error it shows)
    data = corpus_file(f"ironcalc/xlsx/tests/calc_tests/LOOKUP_AND_REFERENCE/{workbook}").read_bytes()

    # WHEN it is checked with formulas
    report = check(data, "formulas")

    # THEN every cell matches Excel, the empty arrays as #CALC! (formulas alone answers #VALUE! or 0)
    assert sum(1 for cell in read_excel_cells(data).cells if cell.expected == ("e", "#CALC!")) == empty_arrays
    assert report.mismatches == []


def test_formulas_calculates_the_functions_it_had_wrong_as_their_pages_state():
    # GIVEN the examples of Microsoft's pages formulas 1.3.4 answered otherwise: ROUND (-1.475 to
    # two places is -1.48), CEILING.MATH/FLOOR.MATH of negative numbers, IPMT of a loan (positive
    # interest), XNPV with a date before the first (#NUM!), `--` on logical values, VALUE of a
    # number with a group separator, criteria with wildcards after "<>" and in order over TRUE,
    # DATEDIF
    from .conftest import named_formulas

    data = named_formulas({
        "round": "=ROUND(-1.475,2)", "roundup": "=ROUNDUP(2.55,-1)", "fixed": "=FIXED(1.005,2)",
        "hundred_thousands": "=ROUNDUP(64256.79,-5)",
        "ceiling": "=CEILING.MATH(-8.1,2)", "ceiling_mode": "=CEILING.MATH(-5.5,2,-1)",
        "floor": "=FLOOR.MATH(-8.1,2)", "floor_mode": "=FLOOR.MATH(-5.5,2,-1)",
        "interest": "=ROUND(IPMT(0.1/12,1,36,8000),2)",
        "xnpv": "=XNPV(0.09,{-10000,2750,4250},{39448,39508,39400})",
        "negation": '=SUMPRODUCT(--(A1:A4="x"),B1:B4)', "value": '=VALUE("1,234.5")',
        "not_text": '=COUNTIF(A1:A4,"<>*")', "wildcard": '=COUNTIF(A1:A4,"?")', "logical": '=COUNTIF(A1:A4,"<=TRUE")',
        # DATEDIF: the page's units in any case; "md" the days since the start's day in the month
        # before the end's (18 Dec 2023 to 15 Jan 2024)
        "days": '=DATEDIF(DATE(2024,1,1),DATE(2024,3,1),"d")', "md": '=DATEDIF(DATE(2020,6,18),DATE(2024,1,15),"md")',
    }, column="D", cells={"A1": "x", "A2": 5, "A3": "X", "A4": True, "B1": 10, "B2": 20, "B3": 30, "B4": 40})
    outputs = FormulasEngine().load_xlsx(data).calculate({})

    assert outputs == {
        "round": -1.48, "roundup": 10, "fixed": "1.01", "hundred_thousands": 100000, "ceiling": -8, "ceiling_mode": -6, "floor": -10,
        "floor_mode": -4, "interest": -66.67, "xnpv": "#NUM!", "negation": 40, "value": 1234.5,
        "not_text": 2, "wildcard": 2, "logical": 1, "days": 60, "md": 28,
    }
