"""The last known gaps of the correction layer (issue 11): each fixed from Microsoft's
documented rule, or flagged at upload where no page or Excel-saved file settles Excel's answer.

Expected values are Microsoft's rules worked by hand (said where used): "SUBTOTAL function",
"AGGREGATE function", "COUNT function", "AVERAGE function", "STDEV.S function" (and the other
statistical pages' "logical values and text representations of numbers that you type directly
into the list of arguments are counted"), "MODE.SNGL function", "Define and use names in
formulas" (a name's scope: a worksheet or the workbook). The workbooks carry no cached values
unless said, so nothing routes them to `formulas` by comparing.
"""

import math

import openpyxl
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.formula import ArrayFormula

from shared.calc.corrections.functions.unfixable import (
    CELL_LAYOUT_REASON,
    MODE_ERROR_REASON,
    reasons,
)
from shared.calc.fidelity.check import check

from .conftest import add_name, to_bytes, uploaded_and_stored
from .test_corrections_documented import assert_cases, workbook
from .test_fidelity import excel_saved


def flagged(data: bytes) -> dict[str, str]:
    """{cell: reason} the upload check names."""
    return {f["cell"]: f["reason"] for f in check(data, "ironcalc").flagged}


# --- 1. SUBTOTAL over AGGREGATE and SUBTOTAL cells --------------------------------------------


def subtotals_sheet(ws) -> None:
    for row, value in enumerate([10, 20, 30, 40], start=1):
        ws.cell(row, 1, value)
    ws["A5"] = "=AGGREGATE(9,0,A1:A4)"  # 100
    ws["A6"] = "=SUBTOTAL(9,A1:A4)"  # 100


def test_subtotal_over_an_aggregate_cell_is_flagged_not_guessed():
    # GIVEN SUBTOTALs over 10, 20, 30, 40 with an AGGREGATE (A5) and a SUBTOTAL (A6) below:
    # the SUBTOTAL page says nested subtotals are ignored, and is silent on AGGREGATE cells;
    # IronCalc with the layer counts A5's 100
    wb = workbook(
        ["=SUBTOTAL(9,A1:A5)", "=SUBTOTAL(2,Doc!A1:A6)", "=SUBTOTAL(9,A5)", "=SUBTOTAL(9,A1:A4,A6)"],
        subtotals_sheet,
    )

    # WHEN the upload is checked
    names = flagged(to_bytes(wb))

    # THEN each SUBTOTAL whose references hold A5 is named with the cell; the one over the
    # data and the nested SUBTOTAL only is not
    assert sorted(names) == ["H1", "H2", "H3"]
    assert all("SUBTOTAL over a cell calling AGGREGATE (Doc!A5)" in r for r in names.values())


def test_subtotal_ignores_a_nested_subtotal_and_aggregate_ignores_both():
    # SUBTOTAL page: nested subtotals are ignored; AGGREGATE page: option 0 ignores "nested
    # SUBTOTAL and AGGREGATE functions". Over 10, 20, 30, 40 each total is 100.
    assert_cases({
        "=SUBTOTAL(9,A1:A4,A6)": 100, "=SUBTOTAL(2,A1:A4,A6)": 4,
        "=AGGREGATE(9,0,A1:A6)": 100, "=AGGREGATE(2,0,A1:A6)": 4,
    }, subtotals_sheet)


# --- 2. COUNT/AVERAGE of a name to an array constant, in an array formula ----------------------


def test_a_name_inside_an_array_formula_is_read_as_its_formula_or_flagged():
    # GIVEN Arr = {1,2,"a",TRUE}: Excel's COUNT(Arr) is 2 and AVERAGE(Arr) 1.5 (only the
    # array's numbers count, COUNT and AVERAGE pages), where IronCalc 0.9.1 answers 0 and counts
    # TRUE for an array; Rate = 0.5, a name to a constant ("Define and use names in formulas":
    # the name calculates as its formula written in its place)
    wb = workbook([])
    wb.defined_names["Arr"] = DefinedName("Arr", attr_text='{1,2,"a",TRUE}')
    wb.defined_names["Rate"] = DefinedName("Rate", attr_text="0.5")
    wb.defined_names["Cells"] = DefinedName("Cells", attr_text="Doc!$A$1:$A$2")
    ws = wb["Doc"]
    ws["A1"], ws["A2"] = 10, 30
    ws["H1"] = ArrayFormula("H1", "=COUNT(Arr)")
    ws["H2"] = ArrayFormula("H2", "=AVERAGE(Arr)")
    ws["H3"] = ArrayFormula("H3", "=SUM(Rate*A1:A2)")
    ws["H4"] = ArrayFormula("H4", "=SUM(Cells*2)")  # a name to cells: read right
    ws["H5"] = "=COUNT(Arr)"  # not an array formula: rewritten at load (arguments.py)
    ws["J1"] = ArrayFormula("J1:J2", "=Rate*A1:A2")  # a legacy array formula of two cells
    add_name(wb, "rated", "Doc!$H$3")

    # WHEN the upload is checked
    names = flagged(to_bytes(wb))

    # THEN COUNT and AVERAGE of the name's array are named as COUNT and AVERAGE of an array
    # are, the legacy array formula of two cells (left as it is) with the name
    assert sorted(names) == ["H1", "H2", "J1"]
    assert names["H1"].startswith("COUNT given an array")
    assert names["H2"].startswith("AVERAGE given an array holding logical values")
    assert "the defined name Rate stands for a formula or constant" in names["J1"]
    # AND the one-cell array formula reads Rate as 0.5: (10 + 30) * 0.5
    for loaded in uploaded_and_stored(to_bytes(wb)):
        assert loaded.calculate({}, ["rated"]) == {"rated": 20}


def test_count_and_average_of_a_name_to_an_array_constant_outside_array_formulas():
    def setup(ws):
        ws.parent.defined_names["Arr"] = DefinedName("Arr", attr_text='{1,2,"a",TRUE}')

    assert_cases({"=COUNT(Arr)": 2, "=AVERAGE(Arr)": 1.5, "=COUNT(Arr,1)": 3}, setup)


# --- 3. sheet-scoped names shadowing workbook-scoped ones -------------------------------------


def scoped_names() -> openpyxl.Workbook:
    """`Rate` for the workbook (Doc!A1, 1) and for the sheet Other (Other!A1, 2); `K` = 5 for
    the workbook and 7 for Other."""
    wb = openpyxl.Workbook()
    doc = wb.active
    doc.title = "Doc"
    other = wb.create_sheet("Other")
    doc["A1"], other["A1"] = 1, 2
    add_name(wb, "Rate", "Doc!$A$1")
    add_name(wb, "Rate", "Other!$A$1", sheet="Other")
    add_name(wb, "K", "5")
    add_name(wb, "K", "7", sheet="Other")
    doc["C1"] = "=Rate*10"  # the workbook's: 10
    other["C1"] = "=Rate*10"  # Other's own, which shadows the workbook's there: 20
    doc["C2"] = "=Other!Rate*10"  # Other's, qualified by its sheet: 20
    doc["C3"] = "=K"  # 5
    other["C3"] = "=K"  # 7
    other["C4"] = "=Other!K+Rate"  # 7 + 2
    for n, where in enumerate(["Doc!$C$1", "Other!$C$1", "Doc!$C$2", "Doc!$C$3", "Other!$C$3",
                               "Other!$C$4"], start=1):
        add_name(wb, f"out{n}", where)
    return wb


EXCEL_SCOPED = {"Doc!C1": 10, "Other!C1": 20, "Doc!C2": 20, "Doc!C3": 5, "Other!C3": 7,
                "Other!C4": 9}


def test_a_sheet_scoped_name_shadows_the_workbooks_on_its_sheet_and_is_reachable_qualified():
    # GIVEN names defined for the workbook and, under the same name, for the sheet Other:
    # "Define and use names in formulas": a worksheet-scoped name is recognised on its sheet
    # (there it wins), elsewhere only qualified by its sheet's name. IronCalc 0.9.1 alone
    # answers #ERROR! for `Other!Rate`.
    # WHEN a job calculates it, from the upload's model and the stored one
    for book in uploaded_and_stored(to_bytes(scoped_names())):
        outputs = book.calculate({})

        # THEN each name is the one of its scope
        assert [outputs[f"out{n}"] for n in range(1, 7)] == list(EXCEL_SCOPED.values())


def test_the_upload_check_matches_excel_on_scoped_names():
    report = check(excel_saved(scoped_names(), EXCEL_SCOPED), "ironcalc")
    assert report.cells_matching == report.cells_compared == len(EXCEL_SCOPED)


# --- 4. logical values and text given by expressions ------------------------------------------


def expressions_sheet(ws) -> None:
    ws["A1"], ws["A2"] = 5, "3"  # A2 holds text


# The pages: values typed (or calculated) as arguments count, TRUE as 1 and "3" as 3; text that
# cannot be a number is #VALUE!; in a reference both are ignored. 1=1 and A1>0 are TRUE.
EXPRESSION_CASES = {
    # right in IronCalc 0.9.1 already (pinned)
    "=SUM(1=1,2)": 3, '=SUM("3",2)': 5, "=AVERAGE(A1>0,3)": 2, "=MAX(1=1,0)": 1,
    "=MIN(1=1,5)": 1, "=COUNT(1=1,2)": 2, '=SUM("3"&"",2)': 5, '=AVERAGE("3"&"",1)': 2,
    "=SUM(A2,1)": 1, "=COUNT(A2,A1)": 1,
    # IronCalc 0.9.1 dropped the TRUE or the text: #DIV/0!, 4, #DIV/0!, #DIV/0!
    "=STDEV(1=1,3)": math.sqrt(2), "=SUMSQ(A1>0,2)": 5, "=VAR((1=1),3)": 2.0,
    '=STDEV("3"&"",1)': math.sqrt(2), '=_xlfn.VAR.S(A2&"",1)': 2.0,
    '=STDEV("x"&"",1)': "#VALUE!", "=DEVSQ(1<>1,2)": 2.0,
    # functions of single values giving a logical value or text (A1 is a number: ISNUMBER TRUE)
    "=STDEV(AND(1,1),3)": math.sqrt(2), "=STDEV(ISNUMBER(A1),3)": math.sqrt(2),
    '=STDEV(LEFT("3x",1),1)': math.sqrt(2), "=SUMSQ(NOT(A1>0),2)": 4, '=VAR(UPPER("x"),1)': "#VALUE!",
    # IF gives the reference A1 (a number): left to IronCalc
    "=STDEV(IF(TRUE,A1),1)": math.sqrt(8),
    # a reference or a range in the argument is left to IronCalc: A2's text is ignored
    "=STDEV(A2,1,3)": math.sqrt(2),
}


def test_logical_values_and_text_from_expressions_count_as_typed_values():
    assert_cases(EXPRESSION_CASES, expressions_sheet)


def test_the_upload_check_matches_excel_on_expression_arguments():
    # GIVEN the cells IronCalc alone got wrong, with the values the pages give as Excel's saved
    cases = {"=STDEV(1=1,3)": math.sqrt(2), "=SUMSQ(A1>0,2)": 5, '=STDEV("3"&"",1)': math.sqrt(2)}
    wb = workbook(list(cases), expressions_sheet)
    data = excel_saved(wb, {f"Doc!H{n}": v for n, v in enumerate(cases.values(), start=1)})

    # WHEN the upload is checked, THEN all match and nothing is flagged
    report = check(data, "ironcalc")
    assert report.cells_matching == report.cells_compared == 3
    assert report.flagged == []


# --- 5. MODE with an error value typed in --------------------------------------------------------


def test_mode_given_a_typed_error_is_flagged():
    # GIVEN MODE with #N/A typed in: IronCalc 0.9.1 drops it (1); the MODE.SNGL page says
    # errors "cause errors", but Excel's own file contradicts the same sentence for text and
    # no Excel-saved file shows the error case
    wb = workbook(["=MODE(1,1,#N/A)", "=_xlfn.MODE.SNGL(1,2,2,#DIV/0!)", "=MODE(1,1,2)"])

    # WHEN the upload is checked, THEN the two with a typed error are named
    names = flagged(to_bytes(wb))
    assert sorted(names) == ["H1", "H2"] and names["H1"] == MODE_ERROR_REASON
    assert reasons('MODE(1,"#N/A",1)') == []  # text, not an error
    assert reasons("MODE(A1:A3,#VALUE!)") == [MODE_ERROR_REASON]


def test_mode_given_a_calculated_logical_value_or_text_is_flagged():
    # The MODE.SNGL page does not say whether a logical value typed or calculated in its
    # arguments counts (Excel ignores typed text there, against the page: formulas' test.xlsx
    # STATISTICAL!S71); IronCalc 0.9.1 drops it, so MODE(1=1,1,2) is #N/A there
    assert reasons("MODE(1=1,1,2)")[0].startswith("MODE given a logical value or text calculated")
    assert reasons('_xlfn.MODE.SNGL(A1&"",1,2)')
    assert reasons("MODE(ISNUMBER(A1),1,1)")
    assert reasons("MODE(A1*2,1,2)") == []  # a number
    assert reasons("MODE(ABS(A1),1,2)") == []
    assert reasons("MODE(A1:A3,B1)") == []


# --- CELL of a cell's formatting or layout ---------------------------------------------------


def test_cell_of_a_cells_formatting_or_layout_is_flagged_not_guessed():
    # GIVEN CELL with each info_type the CELL page lists that reads formatting or layout (the
    # number format's code, its colour and parentheses, the label prefix, the protection, the
    # column width), and the ones read from the reference itself
    layout = ["format", "color", "parentheses", "prefix", "protect", "width"]
    wb = workbook([f'=CELL("{info}",A1)' for info in layout] + ['=CELL("row",A1)', '=CELL("address",A1)'])

    # WHEN the upload is checked
    names = flagged(to_bytes(wb))

    # THEN each of the first six is named with its info_type (IronCalc 0.9.1 answers #VALUE!),
    # the row and the address are calculated
    assert names == {f"H{row}": CELL_LAYOUT_REASON.format(info=info) for row, info in enumerate(layout, start=1)}
    assert reasons('=IF(CELL("Format",B2)="D4","date","other")') == [CELL_LAYOUT_REASON.format(info="format")]


# --- a reference a function returns, read by the IS functions in an array formula -------------


def test_a_reference_a_function_returns_read_by_an_is_function_in_an_array_formula_is_flagged():
    # GIVEN array formulas reading the cells OFFSET, INDIRECT, CHOOSE and a whole-column INDEX
    # refer to (IS functions page: "value ... can be a reference"; over 10, "x", 30 Excel counts
    # 2 numbers), where IronCalc 0.9.1 answers FALSE for each cell
    def data(ws):
        ws["A1"], ws["A2"], ws["A3"] = 10, "x", 30

    wb = workbook([], data)
    ws = wb["Doc"]
    ws["H1"] = ArrayFormula("H1", "=SUM(--ISNUMBER(OFFSET(A1,0,0,3)))")
    ws["H2"] = ArrayFormula("H2", '=ISTEXT(INDIRECT("A2"))')
    ws["H3"] = ArrayFormula("H3", "=ISTEXT(CHOOSE(2,A1,A2))")
    ws["H4"] = ArrayFormula("H4", "=SUM(--ISNUMBER(INDEX(A1:B3,0,1)))")
    ws["H5"] = ArrayFormula("H5", "=ISNUMBER(INDEX(A1:A3,1))")  # one cell: IronCalc reads it
    ws["H6"] = ArrayFormula("H6", "=SUM(LEN(OFFSET(A1,0,0,3)))")  # LEN reads each cell
    ws["H7"] = "=ISTEXT(OFFSET(A1,1,0))"  # a plain formula: read through INDEX at load

    # WHEN the upload is checked
    names = flagged(to_bytes(wb))

    # THEN the four array formulas are named with the reader and the function
    assert sorted(names) == ["H1", "H2", "H3", "H4"]
    assert names["H2"].startswith("ISTEXT in an array formula given the reference INDIRECT returns")
