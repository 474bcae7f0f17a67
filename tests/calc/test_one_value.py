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
_AFTER = {"POWER": ",2", "REPT": ",2", "LEFT": ",1", "RIGHT": ",1", "MID": ",1,1", "DATE": ",1,1",
          "ROMAN": ""}
_TEXT = {"LEN", "UPPER", "LOWER", "TRIM", "CLEAN", "PROPER", "LEFT", "RIGHT", "MID", "REPT"}


def test_the_functions_ironcalc_applies_to_each_element_still_are():
    # GIVEN, for each function of IRONCALC_LIFTS, an array formula adding its results over a
    # range and a plain formula adding them cell by cell
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, (x, t) in enumerate([(0.25, "a b"), (0.75, "Cd"), (0.5, "xyz")], start=1):
        ws.cell(row, 1, x)
        ws.cell(row, 2, t)
    for row, name in enumerate(sorted(one_value.IRONCALC_LIFTS), start=5):
        column = "B" if name in _TEXT else "A"
        after = _AFTER.get(name, "")
        ws.cell(row, 3, name)
        ws.cell(row, 4).value = ArrayFormula(f"D{row}", f"=SUM(IFERROR(--({name}({column}1:{column}3{after})),0))")
        ws.cell(row, 5).value = "=" + "+".join(
            f"IFERROR(--({name}({column}{k}{after})),0)" for k in (1, 2, 3))
    fd, path = tempfile.mkstemp(suffix=".xlsx")
    os.close(fd)
    try:
        wb.save(path)
        model = ironcalc.load_from_xlsx(path, "en", "UTC")
    finally:
        os.unlink(path)
    # WHEN IronCalc alone calculates them
    model.evaluate()
    # THEN the two agree for every function
    differ = []
    for row, name in enumerate(sorted(one_value.IRONCALC_LIFTS), start=5):
        whole, cells = model.get_cell_value(0, row, 4), model.get_cell_value(0, row, 5)
        if not (whole == cells or isinstance(cells, float) and whole == pytest.approx(cells, rel=1e-12, abs=1e-12)):
            differ.append((name, whole, cells))
    assert differ == []


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
