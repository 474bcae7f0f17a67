"""Functions of one value given an array: applied to each element, as Excel applies them.

Microsoft ("Guidelines and examples of array formulas"; "Dynamic array formulas and spilled
array behavior"): in an array formula, a dynamic array or a LAMBDA, a function whose parameter
takes one value is calculated once per element of an array given there. IronCalc 0.9.1 does so
for a few functions and reads a range as one cell for the others (`{=SUM(TRUNC(A1:A4))}` is
the truncation of one cell), answering #N/IMPL! for an array constant. The Analysis ToolPak's
functions (EDATE, ISEVEN, ...) answer #VALUE! for a range of several cells and take each element
of an array (`EDATE(A1:A3+0,1)`).

Expected values are worked from the data by those rules and the functions' documented examples:
NORM.S.DIST(1.333333,TRUE) is 0.908788726 to the nine decimals the page shows, EDATE of 15-Jan-2011 (40558) and 1 month is
15-Feb-2011 (40589) (Microsoft's NORM.S.DIST and EDATE pages).
"""

import os
import tempfile

import ironcalc
import openpyxl
import pytest
from openpyxl.worksheet.formula import ArrayFormula

from shared.calc.corrections.dynamic import one_value, select

from .conftest import add_name, to_bytes, uploaded_and_stored


def book() -> bytes:
    """Four numbers in A1:A4 (an input), three dates in C1:C3 (an input), and formulas over them
    in column E, each with a name."""
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, x in enumerate([1.9, -2.9, 0.5, 7.25], start=1):
        ws.cell(row, 1, x)
    for row, serial in enumerate([40558, 40569, 40587], start=1):  # 15, 26 Jan and 13 Feb 2011
        ws.cell(row, 3, serial)
    formulas = {
        "truncated": ArrayFormula("E1", "=SUM(TRUNC(A1:A4))"),
        "probabilities": ArrayFormula("E2", "=SUM(NORM.S.DIST(A1:A2*0+1.333333,TRUE))"),
        "months_of_range": ArrayFormula("E3", "=SUM(EDATE(C1:C3,1))"),
        "months_of_array": ArrayFormula("E4", "=SUM(EDATE(C1:C3+0,1))"),
        "constants": "=SUM(TRUNC({1.9,-2.9}))",
        "top_two": ArrayFormula("E6", "=SUM(LARGE(A1:A4,{1,2}))"),
        "mapped": "=SUM(_xlfn.MAP(A1:A4,_xlfn.LAMBDA(_xlpm.x,TRUNC(_xlpm.x))))",
    }
    for row, (name, formula) in enumerate(formulas.items(), start=1):
        ws.cell(row, 5).value = formula
        add_name(wb, name, f"Sheet!$E${row}")
    add_name(wb, "numbers", "Sheet!$A$1:$A$4")
    add_name(wb, "dates", "Sheet!$C$1:$C$3")
    return to_bytes(wb)


@pytest.fixture(scope="module", params=["uploaded", "stored"])
def workbook(request):
    return dict(zip(("uploaded", "stored"), uploaded_and_stored(book())))[request.param]


def test_an_array_formula_applies_a_function_of_one_value_to_each_cell(workbook):
    # WHEN a job reads TRUNC over the range, in an array formula
    # THEN each cell is truncated: 1 - 2 + 0 + 7 (IronCalc alone: one cell's truncation)
    assert workbook.calculate({}, ["truncated"])["truncated"] == 6
    # AND new inputs are read the same way
    assert workbook.calculate({"numbers": [[0.5], [1.5], [2.5], [-3.5]]}, ["truncated"])["truncated"] == 0
    # AND a distribution is evaluated once per element
    out = workbook.calculate({}, ["probabilities"])
    assert out["probabilities"] == pytest.approx(2 * 0.908788726, abs=2 * 6e-10)


def test_an_analysis_toolpak_function_refuses_a_range_but_takes_an_array(workbook):
    out = workbook.calculate({}, ["months_of_range", "months_of_array"])
    assert out["months_of_range"] == "#VALUE!"
    # 15 Feb, 26 Feb and 13 Mar 2011
    assert out["months_of_array"] == 40589 + 40600 + 40615


def test_an_array_constant_outside_an_array_formula_is_applied_to_each_element(workbook):
    # IronCalc alone: #N/IMPL!, which failed the job
    assert workbook.calculate({}, ["constants"])["constants"] == 1 - 2


def test_a_parameter_taking_an_array_is_passed_whole_while_k_is_lifted(workbook):
    assert workbook.calculate({}, ["top_two"])["top_two"] == 7.25 + 1.9
    assert workbook.calculate({"numbers": [[4], [3], [9], [8]]}, ["top_two"])["top_two"] == 17


def test_a_lambda_may_call_any_function_of_one_value(workbook):
    # MAP's LAMBDA calls TRUNC, which the layer's evaluator computes element by element
    assert workbook.calculate({}, ["mapped"])["mapped"] == 6


def test_which_formulas_the_layer_takes():
    # an array formula applying such a function to a range
    assert select("=SUM(TRUNC(A1:A4))", array_formula=True).always
    # the same outside an array formula is Excel's implicit intersection: IronCalc's
    assert select("=SUM(TRUNC(A1:A4))") is None
    # an array constant is an array in any formula
    assert select("=SUM(TRUNC({1.9,-2.9}))").always
    # a function IronCalc applies to each element itself stays IronCalc's
    assert select("=SUM(ABS(A1:A4))", array_formula=True) is None
    # PERCENTILE of a range with one k is one value: IronCalc's
    assert select("=PERCENTILE(A1:A4,0.5)", array_formula=True) is None
    assert select("=SUM(PERCENTILE(A1:A4,{0.1,0.9}))", array_formula=True).always


# Arguments after the array for the functions IronCalc is trusted to apply to each element.
_AFTER = {"POWER": ",2", "REPT": ",2", "LEFT": ",2", "RIGHT": ",2", "MID": ",2,2", "DATE": ",1,1"}
_TEXT = {"LEN", "UPPER", "LOWER", "TRIM", "CLEAN", "PROPER", "LEFT", "RIGHT", "MID", "REPT"}
# Three different inputs per function, each giving a different value (so an answer that reads the
# range as one cell, or repeats its first element, adds up differently from the cells' own).
_INPUTS = {
    **dict.fromkeys(("ACOSH", "ACOTH", "COTH", "CSCH"), (1.5, 2.25, 3.75)),
    **dict.fromkeys(("EVEN", "ODD", "INT", "SIGN"), (1.5, -2.5, 3.7)),
    "FACT": (1.5, 2.5, 3.7),
    **dict.fromkeys(("DAY", "MONTH", "YEAR", "WEEKDAY", "ISOWEEKNUM"), (43831, 43900, 44300)),
    "DATE": (2000, 2010, 2020),
}


def test_the_functions_ironcalc_applies_to_each_element_still_are():
    # GIVEN, for each function of IRONCALC_LIFTS, three different inputs in A:C of its row, an
    # array formula adding its results over the range and a plain formula adding them cell by cell
    wb = openpyxl.Workbook()
    ws = wb.active
    names = sorted(one_value.IRONCALC_LIFTS)
    for row, name in enumerate(names, start=1):
        inputs = ("a", "b Cd", " wxyz  ") if name in _TEXT else _INPUTS.get(name, (0.125, 0.375, 0.8125))
        for col, value in enumerate(inputs, start=1):
            ws.cell(row, col, value)
        after = _AFTER.get(name, "")
        measure = "LEN" if name in _TEXT and name != "LEN" else ""  # text results by their length
        ws.cell(row, 4).value = ArrayFormula(f"D{row}", f"=SUM({measure}({name}(A{row}:C{row}{after})))")
        ws.cell(row, 5).value = "=" + "+".join(f"{measure}({name}({c}{row}{after}))" for c in "ABC")
        ws.cell(row, 6).value = "=" + "+".join(f"ABS({measure}({name}({c}{row}{after}))-{measure}({name}(A{row}{after})))"
                                               for c in "BC")
    fd, path = tempfile.mkstemp(suffix=".xlsx")
    os.close(fd)
    try:
        wb.save(path)
        model = ironcalc.load_from_xlsx(path, "en", "UTC")
    finally:
        os.unlink(path)
    # WHEN IronCalc alone calculates them
    model.evaluate()
    # THEN the two agree for every function, and the cells' own values are numbers that differ
    differ = []
    for row, name in enumerate(names, start=1):
        whole, cells, spread = (model.get_cell_value(0, row, col) for col in (4, 5, 6))
        if not isinstance(cells, float) or not isinstance(spread, float) or spread == 0:
            differ.append((name, "degenerate inputs", cells, spread))
        elif not (isinstance(whole, float) and whole == pytest.approx(cells, rel=1e-12, abs=1e-12)):
            differ.append((name, whole, cells))
    assert differ == []


def test_functions_ironcalc_reads_a_range_as_one_cell_for_are_applied_to_each_element():
    # GIVEN array formulas of MINUTE, SECOND, CHAR, UNICHAR, ROMAN, NORM.S.INV, NORMSINV and
    # NORMINV over a column of inputs in rows the formulas do not share (IronCalc alone reads
    # such a range as the one cell in the formula's row: #VALUE!)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    columns = {
        # 0.44 days is 10:33:36, 0.33 is 7:55:12, 1.4 is 9:36:00 on the next day
        "MINUTE": ([0.44, 0.33, 1.4], "", [33, 55, 36]),
        "SECOND": ([0.44, 0.33, 1.4], "", [36, 12, 0]),
        "CHAR": ([65, 97, 33], "", ["A", "a", "!"]),
        "UNICHAR": ([66, 98, 32], "", ["B", "b", " "]),
        # ROMAN page: 499 is CDXCIX in the classic form
        "ROMAN": ([499, 4, 1994], "", ["CDXCIX", "IV", "MCMXCIV"]),
        # NORM.S.INV page: NORM.S.INV(0.908789) is 1.3333; the inverse is odd around 0.5
        "NORM.S.INV": ([0.908789, 0.5, 0.091211], "", [1.3333, 0.0, -1.3333]),
        "NORMSINV": ([0.908789, 0.5, 0.091211], "", [1.3333, 0.0, -1.3333]),
        # NORMINV page: NORMINV(0.908789,40,1.5) is 42.000002
        "NORMINV": ([0.908789, 0.5, 0.091211], ",40,1.5", [42.000002, 40.0, 37.999998]),
    }
    for col, (name, (inputs, after, _)) in enumerate(columns.items(), start=1):
        letter = openpyxl.utils.get_column_letter(col)
        for row, value in enumerate(inputs, start=10):
            ws.cell(row, col, value)
        prefix = "_xlfn." if name in ("UNICHAR", "NORM.S.INV") else ""
        ws[f"{letter}1"] = ArrayFormula(f"{letter}1:{letter}3", f"={prefix}{name}({letter}10:{letter}12{after})")
        add_name(wb, f"out_{col}", f"Sheet1!${letter}$1:${letter}$3")
    # WHEN the upload, and the same restored as a job gets it, are calculated
    for workbook in uploaded_and_stored(to_bytes(wb)):
        values = workbook.calculate({})
        # THEN each element is the function of its own input
        for col, (name, (_, _, expected)) in enumerate(columns.items(), start=1):
            got = [row[0] if isinstance(row, list) else row for row in values[f"out_{col}"]]
            if isinstance(expected[0], float):
                assert got == pytest.approx(expected, abs=1e-4), name
            else:
                assert got == expected, name


def test_a_large_call_leaves_no_rows_for_a_small_one_to_calculate_again():
    # GIVEN the scratch model after a call of 3,000 elements
    scratch = one_value._Scratch()
    scratch.compute_many("TRUNC", [(float(i) + 0.5,) for i in range(3000)])
    # WHEN a call of three elements of the same function follows
    answers = scratch.compute_many("TRUNC", [(1.5,), (-2.5,), (7.0,)])
    # THEN it is answered, and the earlier call's formulas are gone
    assert answers == [1.0, -2.0, 7.0]
    assert scratch.formula_rows == 3
    # AND one call larger than a chunk is answered in chunks
    values = one_value.compute_all("TRUNC", [(float(i) + 0.25,) for i in range(one_value._CHUNK + 5)])
    assert values[-1] == float(one_value._CHUNK + 4)


def test_concatenate_and_asc_are_applied_to_each_cell_of_a_range():
    # GIVEN array formulas giving CONCATENATE and ASC a row of three cells (CONCATENATE joins
    # one value per argument, "text1, text2, ...", its page; ASC changes one text; formulas'
    # Excel-saved test.xlsx TEXT!AG5:AH11 spill them over the row), and CONCAT, which joins the
    # range's cells into one text
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    for col, value in enumerate([0, "ab", 1.5], start=1):
        ws.cell(10, col, value)
    ws["A1"] = ArrayFormula("A1:C1", '=CONCATENATE(A10:C10,"-x")')
    ws["A2"] = ArrayFormula("A2:C2", "=ASC(A10:C10)")
    ws["A3"] = "=_xlfn.CONCAT(A10:C10)"
    add_name(wb, "joined", "Sheet1!$A$1:$C$1")
    add_name(wb, "asc", "Sheet1!$A$2:$C$2")
    add_name(wb, "concat", "Sheet1!$A$3")
    for workbook in uploaded_and_stored(to_bytes(wb)):
        # WHEN it is calculated THEN each cell of the range gives one text
        values = workbook.calculate({}, ["joined", "asc", "concat"])
        assert values == {"joined": ["0-x", "ab-x", "1.5-x"], "asc": ["0", "ab", "1.5"], "concat": "0ab1.5"}
