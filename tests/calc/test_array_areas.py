"""A legacy array formula entered over more cells than its result (dynamic.area_watch,
settle._fitted): a result of one row is repeated down the area, one of one column across it, and
the other cells beyond the result show #N/A (ECMA-376 Part 4, single- and multi-cell formulas;
the MODE.MULT page's example: modes 1, 2 and 3 in C15:C22, then #N/A).
"""

from openpyxl.worksheet.formula import ArrayFormula

from .conftest import one_sheet, uploaded_and_stored

DATA = [1, 2, 3, 4, 3, 2, 1, 2, 3, 5, 6, 1]  # the MODE.MULT page's


def areas_book() -> bytes:
    cells = {f"A{row}": value for row, value in enumerate(DATA, start=1)}
    cells.update({
        "C1": ArrayFormula("C1:C8", "=_xlfn.MODE.MULT(A1:A12)"),
        "E1": ArrayFormula("E1:F3", "={1,2}"),
        "H1": ArrayFormula("H1:H4", "=A1:A3*10"),
    })
    return one_sheet(cells, {"modes": "$C$1:$C$8", "repeated": "$E$1:$F$3", "tens": "$H$1:$H$4", "first": "$A$1"})


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
    book = one_sheet({"A1": 1, "A2": 2, "C1": ArrayFormula("C1:C2", "=A1:A2*10")}, {"tens": "$C$1:$C$2"})
    for workbook in uploaded_and_stored(book):
        assert workbook.calculate({}, ["tens"]) == {"tens": [10, 20]}
