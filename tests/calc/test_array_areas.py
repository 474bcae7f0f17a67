"""A legacy array formula entered over more cells than its result (dynamic.area_watch,
settle._fitted): a result of one row is repeated down the area, one of one column across it, and
the other cells beyond the result show #N/A (ECMA-376 Part 4, single- and multi-cell formulas;
the MODE.MULT page's example: modes 1, 2 and 3 in C15:C22, then #N/A).
"""

import openpyxl
from openpyxl.worksheet.formula import ArrayFormula

from .conftest import add_name, to_bytes, uploaded_and_stored

DATA = [1, 2, 3, 4, 3, 2, 1, 2, 3, 5, 6, 1]  # the MODE.MULT page's


def areas_book() -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, value in enumerate(DATA, start=1):
        ws[f"A{row}"] = value
    ws["C1"] = ArrayFormula("C1:C8", "=_xlfn.MODE.MULT(A1:A12)")
    ws["E1"] = ArrayFormula("E1:F3", "={1,2}")
    ws["H1"] = ArrayFormula("H1:H4", "=A1:A3*10")
    add_name(wb, "modes", "Sheet!$C$1:$C$8")
    add_name(wb, "repeated", "Sheet!$E$1:$F$3")
    add_name(wb, "tens", "Sheet!$H$1:$H$4")
    add_name(wb, "first", "Sheet!$A$1")
    return to_bytes(wb)


def test_the_cells_beyond_the_result_are_na_or_repeat_it():
    for workbook in uploaded_and_stored(areas_book()):
        outputs = workbook.calculate({}, ["modes", "repeated", "tens"])
        assert outputs == {
            "modes": [1, 2, 3, "#N/A", "#N/A", "#N/A", "#N/A", "#N/A"],
            "repeated": [[1, 2], [1, 2], [1, 2]],
            "tens": [10, 20, 30, "#N/A"],
        }
        # AND the area follows the inputs: with a 4 first, 2 and 3 are the modes (three each)
        assert workbook.calculate({"first": 4}, ["modes"]) == {"modes": [2, 3, "#N/A", "#N/A", "#N/A", "#N/A", "#N/A", "#N/A"]}


def test_an_area_of_the_results_size_keeps_ironcalcs_values():
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["A2"] = 1, 2
    ws["C1"] = ArrayFormula("C1:C2", "=A1:A2*10")
    add_name(wb, "tens", "Sheet!$C$1:$C$2")
    for workbook in uploaded_and_stored(to_bytes(wb)):
        assert workbook.calculate({}, ["tens"]) == {"tens": [10, 20]}
