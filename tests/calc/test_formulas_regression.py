"""Excel's LINEST and TREND for `formulas` (shared/calc/formulas/regression.py).

Every expected value below is one Excel saved in pycel's stats.xlsx (sheets Stats and
LinestArrayExp; the cell it comes from is named next to it), or, where said, in formulas'
test.xlsx or IronCalc's TREND_GROWTH test: none is worked out here. The workbooks are small
copies of those sheets, the data typed in as the values Excel saved for it.
"""

import numpy as np
import openpyxl
import pytest
from openpyxl.worksheet.formula import ArrayFormula

from shared.calc.fidelity.check import check
from shared.calc.fidelity.compare import values_match
from shared.calc.formulas.engine import FormulasEngine
from shared.calc.formulas.regression import MISSING, linest, trend

from .test_fidelity import excel_saved

NA, NUM, REF, VALUE = ("e", "#N/A"), ("e", "#NUM!"), ("e", "#REF!"), ("e", "#VALUE!")

# stats.xlsx LinestArrayExp!A2:B13: x = -6..5 and y = 0.4x^2 - 0.2x + 1.1 (+0.1 at x = -3)
QUADRATIC_X = list(range(-6, 6))
QUADRATIC_Y = [16.700000000000003, 12.1, 8.3, 5.4, 3.1, 1.7000000000000002, 1.1, 1.3,
               2.3000000000000003, 4.1, 6.700000000000001, 10.1]
# LINEST(B2:B13,A2:A13^{1,2},TRUE,TRUE), LinestArrayExp!B21:D25
QUADRATIC_STATS = [
    [0.3995754245754246, -0.20217282717282734, 1.1124125874125879],
    [0.000840660973012326, 0.002702346944042465, 0.013283152773193276],
    [0.9999679517862108, 0.030711943006319794, NA],
    [140408.94174757402, 9, NA],
    [264.874010989011, 0.008489010989010918, NA],
]


def _value(v):
    if isinstance(v, tuple):
        return v
    return ("n", float(v))


def _array(ws, area: str, formula: str, expected: list[list]) -> dict:
    """An array formula over `area` and Excel's saved values for its top-left cell."""
    ws[area.split(":")[0]] = ArrayFormula(area, formula)
    return {f"{ws.title}!{area.split(':')[0]}": expected[0][0]}


def _write_arrays(ws, written: dict[str, str], areas: dict[str, list[list]]) -> dict:
    """Each formula of `written` over its area of `ws`; Excel's values for excel_saved."""
    saved = {}
    for area, formula in written.items():
        saved.update(_array(ws, area, formula, areas[area]))
    return saved


def _assert_areas(data: bytes, sheet: str, areas: dict[str, list[list]]) -> None:
    """Every cell of each array area (not only its top-left one) holds Excel's value."""
    cells, wanted = [], []
    for area, expected in areas.items():
        top_left = openpyxl.utils.cell.range_boundaries(area if ":" in area else f"{area}:{area}")
        left, top = top_left[0], top_left[1]
        for dr, row in enumerate(expected):
            for dc, value in enumerate(row):
                cells.append((sheet, top + dr, left + dc))
                wanted.append(_value(value))
    actual, _ = FormulasEngine().recalculate_cells(data, cells, set())
    differing = [(c, w, a) for c, w, a in zip(cells, wanted, actual) if not values_match(w, a)]
    assert differing == []


def _stats_sheet(wb: openpyxl.Workbook | None = None) -> tuple[openpyxl.Workbook, object]:
    """A sheet Stats holding stats.xlsx Stats!J3:N7 and E2:F2, as Excel saved them."""
    if wb is None:
        wb = openpyxl.Workbook()
        ws = wb.active
        ws.title = "Stats"
    else:
        ws = wb.create_sheet("Stats")
    rows = {
        3: [1, 2.1, 3.1, 4.1, 5.1],
        4: [-2, -4, -7, -9, -11],
        5: [1, 3, 6, 9, 12],
        6: [1, 1, 1, 1, 1],
        7: [0, 0, 0, 0, 0],
    }
    for row, values in rows.items():
        for col, value in enumerate(values, start=10):  # J..N
            ws.cell(row, col, value)
    ws["E2"], ws["F2"] = 2.5, 3.5
    return wb, ws


# --- whole workbooks through the fidelity check ----------------------------------------------


def test_a_constant_x_is_dropped_and_the_fit_is_the_mean_of_y():
    # GIVEN rows of y against x = {1,1,1,1,1} and x = {0,0,0,0,0}, which have no slope to fit
    wb, ws = _stats_sheet()
    areas = {
        "E5:F5": [[6.2, 6.2]],  # Stats!E5:F5 =TREND(J5:N5,J6:N6,E2:F2)
        "G5:H5": [[0, 6.2]],  # Stats!G5:H5 =LINEST(J5:N5,J6:N6)
        "E9:F9": [[-6.6, -6.6]],  # Stats!E9:F9 =TREND(J4:N4,J6:N6,E2:F2)
        "G9:H9": [[0, -6.6]],  # Stats!G9:H9
        "E12:F12": [[3.08, 3.08]],  # Stats!E12:F12 =TREND(J3:N3,J6:N6,E2:F2)
        "G12:H12": [[0, 3.08]],  # Stats!G12:H12
        "E10": [[6.2]],  # Stats!E10 =TREND(J5:N5,J7:N7,E2): x all zeros
        "G10:H10": [[0, 6.2]],  # Stats!G10:H10 =LINEST(J5:N5,J7:N7)
    }
    written = {
        "E5:F5": "=TREND(J5:N5,J6:N6,E2:F2)", "G5:H5": "=LINEST(J5:N5,J6:N6)",
        "E9:F9": "=TREND(J4:N4,J6:N6,E2:F2)", "G9:H9": "=LINEST(J4:N4,J6:N6)",
        "E12:F12": "=TREND(J3:N3,J6:N6,E2:F2)", "G12:H12": "=LINEST(J3:N3,J6:N6)",
        "E10": "=TREND(J5:N5,J7:N7,E2)", "G10:H10": "=LINEST(J5:N5,J7:N7)",
    }
    data = excel_saved(wb, _write_arrays(ws, written, areas))

    # WHEN the workbook is checked with formulas
    report = check(data, "formulas")

    # THEN every cell matches Excel: slope 0, intercept and trend the mean of y
    assert report.cells_compared == len(written)
    assert report.mismatches == []
    _assert_areas(data, "Stats", areas)


def test_an_empty_const_means_true_and_the_statistics_are_excels():
    # GIVEN LINEST(y,x,,TRUE): the const argument left empty
    wb, ws = _stats_sheet()
    expected = [  # Stats!Q16:R20 =LINEST(J3:N3,J4:N4,,TRUE)
        [-0.4409774436090227, 0.16954887218045034],
        [0.01981575107847483, 0.14588484603131655],
        [0.9939787497182618, 0.1445327793643257],
        [495.2353929214176, 3],
        [10.345330827067666, 0.06266917293233057],
    ]
    data = excel_saved(wb, _array(ws, "Q16:R20", "=LINEST(J3:N3,J4:N4,,TRUE)", expected))

    # WHEN the workbook is checked with formulas
    report = check(data, "formulas")

    # THEN the fit has an intercept, as Excel's has, and all five rows are Excel's
    assert report.mismatches == []
    _assert_areas(data, "Stats", {"Q16:R20": expected})


def test_shapes_that_do_not_fit_are_ref_errors_before_values_are_looked_at():
    # GIVEN x and y of lengths that do not match, one with a blank cell as well
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "LinestArrayExp"
    for row, (x, y) in enumerate(zip(QUADRATIC_X, QUADRATIC_Y), start=2):
        ws.cell(row, 1, x)
        ws.cell(row, 2, y)
    saved = {}
    # LinestArrayExp!B29: y has 13 cells (B14 blank), x 12 rows: #REF!, not #VALUE!
    saved.update(_array(ws, "B29", "=LINEST(B2:B14,A2:A13^{1,2})", [[REF]]))
    # LinestArrayExp!B30: 12 against 11
    saved.update(_array(ws, "B30", "=LINEST(B2:B13,A2:A12^{1,2})", [[REF]]))
    # LinestArrayExp!B28: the lengths fit but B14 is blank: #VALUE!
    saved.update(_array(ws, "B28", "=LINEST(B2:B14,A2:A14^{1,2})", [[VALUE]]))
    _, sheet = _stats_sheet(wb)
    # Stats!P6: y a row and two rows of x, but a single new x
    saved.update(_array(sheet, "P6", "=TREND(J3:N3,J4:N5,2.5)", [[REF]]))
    # Stats!P7 and Q7: y two rows
    saved.update(_array(sheet, "P7", "=LINEST(J3:N4,J5:N7)", [[REF]]))
    saved.update(_array(sheet, "Q7", "=LINEST(J3:N4,J5:N5)", [[REF]]))
    data = excel_saved(wb, saved)

    # WHEN the workbook is checked with formulas
    report = check(data, "formulas")

    # THEN each is the error Excel answered
    assert report.cells_compared == 6
    assert report.mismatches == []


def test_the_quadratic_fit_and_its_statistics_are_excels():
    # GIVEN y against x and x^2, with and without statistics and an empty const
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "LinestArrayExp"
    for row, (x, y) in enumerate(zip(QUADRATIC_X, QUADRATIC_Y), start=2):
        ws.cell(row, 1, x)
        ws.cell(row, 2, y)
    for row, values in enumerate([[1, 2, 3], [2, 2, 3], [3, 2, 3]], start=16):
        for col, value in enumerate(values, start=6):  # F16:H18, both x columns constant
            ws.cell(row, col, value)
    areas = {
        "B18:D18": QUADRATIC_STATS[:1],  # LinestArrayExp!B18:D18 =LINEST(B2:B13,A2:A13^{1,2})
        "B19:D19": QUADRATIC_STATS[:1],  # LinestArrayExp!B19:D19 (,,TRUE: only one row fits)
        "B21:D25": QUADRATIC_STATS,  # LinestArrayExp!B21:D25
        "F21:H25": [  # LinestArrayExp!F21:H25 =LINEST(F16:F18,G16:H18,,TRUE)
            [0, 0, 2],
            [0, 0, 0],
            [1, 0, NA],
            [NUM, 0, NA],
            [2, 0, NA],
        ],
        "B33:C33": [[1, -7]],  # LinestArrayExp!B33:C33 =LINEST(A2:A13): x omitted is 1..12
    }
    written = {
        "B18:D18": "=LINEST(B2:B13,A2:A13^{1,2})",
        "B19:D19": "=LINEST(B2:B13,A2:A13^{1,2},,TRUE)",
        "B21:D25": "=LINEST(B2:B13,A2:A13^{1,2},TRUE,TRUE)",
        "F21:H25": "=LINEST(F16:F18,G16:H18,,TRUE)",
        "B33:C33": "=LINEST(A2:A13)",
    }
    data = excel_saved(wb, _write_arrays(ws, written, areas))

    # WHEN the workbook is checked with formulas
    report = check(data, "formulas")

    # THEN every cell of every area is Excel's, the degenerate fit's statistics included
    assert report.cells_compared == len(written)
    assert report.mismatches == []
    _assert_areas(data, "LinestArrayExp", areas)


def test_trend_answers_one_value_per_row_of_new_x_for_several_variables():
    # GIVEN TREND of a column of y on two columns of x (formulas' test.xlsx STATISTICAL!R113:V113)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "STATISTICAL"
    ws["C113"], ws["D113"], ws["E113"], ws["F113"], ws["G113"] = 4, 0.1, 0.2, 0.3, 5
    ws["C114"], ws["D114"], ws["E114"], ws["F114"], ws["G114"] = 0, 5, 0.7, 3, 4
    known = "{2;3;4;21;2},{2,1;2,2;5,3;2,4;4,1}"
    areas = {
        "R113": [[-6.594117647058825]],  # new x one row of two: one value
        "S113": [[REF]],  # a row of three for two variables
        "T113:T114": [[2.0529411764705867], [15.188235294117646]],  # two rows: two values
        "V113": [[REF]],  # a column of two
    }
    written = {
        "R113": f"=TREND({known},C113:D113)", "S113": f"=TREND({known},D113:F113)",
        "T113:T114": f"=TREND({known},E113:F114)", "V113": f"=TREND({known},G113:G114)",
    }
    saved = _write_arrays(ws, written, areas)
    # IronCalc's TREND_GROWTH test, D2:D4: three new x for five known (formulas said #REF!)
    for row, (y, x, new) in enumerate(zip([0.2, 0.31, 0.4, 0.51, 0.7], [1.1, 2.1, 3, 5.2, 7],
                                          [8, 9, 11, None, None]), start=2):
        ws.cell(row, 1, y)
        ws.cell(row, 2, x)
        if new is not None:
            ws.cell(row, 3, new)
    areas["D2:D4"] = [[0.7668816454592993], [0.846252396723026], [1.0049938992504792]]
    saved.update(_array(ws, "D2:D4", "=TREND(A2:A6,B2:B6,C2:C4)", areas["D2:D4"]))
    data = excel_saved(wb, saved)

    # WHEN the workbook is checked with formulas
    report = check(data, "formulas")

    # THEN the values and errors are Excel's
    assert report.mismatches == []
    _assert_areas(data, "STATISTICAL", areas)


# --- the functions on arrays -----------------------------------------------------------------


def _column(values):
    return np.array([[v] for v in values], dtype=object)


def test_linest_of_a_constant_x_is_slope_0_and_the_mean():
    # GIVEN Stats!J5:N5 against J6:N6 = {1,1,1,1,1}, as formulas passes them: object arrays
    y = np.array([[1, 3, 6, 9, 12]], dtype=object)
    x = np.array([[1, 1, 1, 1, 1]], dtype=object)

    # WHEN LINEST and TREND are called with const omitted
    fit = linest(y, x)
    forecast = trend(y, x, np.array([[2.5, 3.5]], dtype=object))

    # THEN the slope is 0 and the intercept, and every trend, the mean 6.2 (Stats!G5:H5, E5:F5)
    assert fit.tolist() == [[0, pytest.approx(6.2, rel=1e-12)]]
    assert forecast.tolist() == [[pytest.approx(6.2, rel=1e-12)] * 2]


def test_omitted_and_empty_const_both_mean_true():
    # GIVEN Stats!J3:N3 against J4:N4
    y = np.array([[1, 2.1, 3.1, 4.1, 5.1]], dtype=object)
    x = np.array([[-2, -4, -7, -9, -11]], dtype=object)

    # WHEN const is omitted, or arrives as formulas' empty-argument value
    omitted, empty = linest(y, x), linest(y, x, MISSING, True)

    # THEN both fit an intercept: Stats!G3:H3 and Q16:R16
    expected = [-0.4409774436090227, 0.16954887218045034]
    assert omitted[0].tolist() == pytest.approx(expected, rel=1e-12)
    assert empty[0].tolist() == pytest.approx(expected, rel=1e-12)
    # AND a written 0 or FALSE is still no intercept (Stats!P13:R13 is such a fit)
    assert linest(y, x, False)[0, 1] == 0


def test_lengths_that_do_not_match_raise_ref():
    from formulas.errors import FoundError

    # GIVEN 13 y against 12 rows of x (LinestArrayExp!B29)
    y = _column(QUADRATIC_Y + [1.0])
    x = np.array([[v, v * v] for v in QUADRATIC_X], dtype=object)

    # WHEN LINEST is called
    with pytest.raises(FoundError) as raised:
        linest(y, x)

    # THEN the error is #REF!
    assert str(raised.value.err) == "#REF!"


def test_the_statistics_of_the_quadratic_fit_are_excels():
    # GIVEN y against x and x^2 (LinestArrayExp!A2:B13)
    y = _column(QUADRATIC_Y)
    x = np.array([[v, v * v] for v in QUADRATIC_X], dtype=object)

    # WHEN LINEST is asked for statistics
    result = linest(y, x, True, True)

    # THEN all fifteen cells are LinestArrayExp!B21:D25
    assert result.shape == (5, 3)
    for got_row, want_row in zip(result.tolist(), QUADRATIC_STATS):
        for got, want in zip(got_row, want_row):
            if isinstance(want, tuple):
                assert str(got) == want[1]
            else:
                assert got == pytest.approx(want, rel=1e-9)


def test_without_const_the_sums_of_squares_are_uncentred():
    # GIVEN Stats!B33:C35: y {1;2;3} against x {2;3;4}
    y, x = _column([1, 2, 3]), _column([2, 3, 4])

    # WHEN LINEST fits through the origin with statistics (Stats!D39:E43)
    result = linest(y, x, False, True).tolist()

    # THEN the values are Excel's, se_b #N/A
    assert result[0] == pytest.approx([0.6896551724137931, 0], rel=1e-12)
    assert result[1][0] == pytest.approx(0.05972588991616814, rel=1e-12)
    assert str(result[1][1]) == "#N/A"
    assert result[2] == pytest.approx([0.9852216748768473, 0.32163376045133824], rel=1e-12)
    assert result[3] == pytest.approx([133.33333333333354, 2], rel=1e-12)
    assert result[4] == pytest.approx([13.793103448275863, 0.20689655172413762], rel=1e-12)
    # AND an exact fit with const has no residual, so F is #NUM! (Stats!D45:E49)
    exact = linest(y, x, True, True).tolist()
    assert exact[0] == [1, -1]
    assert [str(exact[3][0]), exact[3][1], exact[4][1]] == ["#NUM!", 1, 0]
