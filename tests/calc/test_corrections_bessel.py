"""BESSELJ and BESSELY answer Excel's approximation, not the exact function
(shared/calc/corrections/functions/bessel.py).

Every expected value is one Excel saved in tests/corpus/ironcalc/xlsx/tests/calc_tests/ENGINEERING/BESSEL.xlsx;
IronCalc and formulas answer the exact functions, 1e-9 to 1e-8 away, which the 1e-12 tolerance
below tells apart.
"""

from __future__ import annotations

import math

import pytest

from shared.calc import get_engine
from shared.calc.corrections.functions import bessel
from shared.calc.formulas.engine import FormulasEngine
from tests.calc.conftest import named_formulas, saved_sheet_xml

EXCEL_SAVED = [  # (function, x, n, Excel's value)
    ("J", 0, 0, 1.00000000283141),  # the exact function's 1
    ("J", 1e-10, 1, 5.000000000760061e-11),
    ("J", 1.4, 0, 0.5668551190749975),
    ("J", -0.7, 1, -0.32899574151754873),
    ("J", 3.5, 7, 0.0067430003156384016),  # Miller's recurrence from order 22
    ("J", 10, 10, 0.20748610663402065),
    ("J", 2, 30, 3.650256266474097e-33),
    ("J", 100000, 5, 0.001846551246313725),  # upward from the asymptotic J0 and J1
    ("Y", 1e-10, 0, -14.732516312945261),
    ("Y", 2, 1, -0.1070324316480381),
    ("Y", 10, 7, 0.20102002353099924),
    ("Y", 32, 10, -0.1417774805939537),
    ("Y", 2, 30, -2.9132238172293094e30),
]


@pytest.mark.parametrize("kind, x, n, expected", EXCEL_SAVED)
def test_the_values_excel_saved_to_one_part_in_a_trillion(kind, x, n, expected):
    function = bessel.besselj if kind == "J" else bessel.bessely
    assert math.isclose(function(x, n), expected, rel_tol=1e-12)


@pytest.mark.parametrize("call, code", [
    (lambda: bessel.besselj(2, -1), "#NUM!"),  # a negative order
    (lambda: bessel.bessely(0, 1), "#NUM!"),  # Y of 0 or less
    (lambda: bessel.bessely(-0.5, 0), "#NUM!"),
    (lambda: bessel.besselj(True, 1), "#VALUE!"),  # a logical value
    (lambda: bessel.bessely("abc", 1), "#VALUE!"),  # text that is not a number
])
def test_the_documented_errors(call, code):
    with pytest.raises(bessel.ExcelError) as raised:
        call()
    assert raised.value.code == code


def test_blanks_numeric_text_and_fractional_orders_read_as_excel_reads_them():
    assert bessel.besselj(-1, None) == bessel.besselj(-1, 0)  # a blank order is 0
    assert math.isclose(bessel.besselj("1", 2), 0.11490348499246938, rel_tol=1e-12)
    assert bessel.besselj(1, 1.999) == bessel.besselj(1, 1)  # the order is truncated
    assert bessel.besselj(None, "3.3") == 0.0


FORMULAS = {
    "j0": "=BESSELJ(A1,0)",
    "j7": "=BESSELJ(A2,7)",
    "y1": "=BESSELY(2,1)",
    "doubled": "=2*BESSELJ(A1,0)",
}


def test_a_job_answers_excels_values_and_dependants_see_them():
    # GIVEN a workbook calling BESSELJ and BESSELY, x in A1 (named x) and A2
    data = named_formulas(FORMULAS, cells={"A1": 0, "A2": 3.5}, names={"x": "$A$1"})
    workbook = get_engine("ironcalc").load_xlsx(data)
    # WHEN it is calculated as uploaded, THEN the values are Excel's, a dependant's too
    outputs = workbook.calculate({})
    assert outputs["j0"] == pytest.approx(1.00000000283141, rel=1e-12)
    assert outputs["doubled"] == pytest.approx(2.00000000566282, rel=1e-12)
    assert outputs["j7"] == pytest.approx(0.0067430003156384016, rel=1e-12)
    assert outputs["y1"] == pytest.approx(-0.1070324316480381, rel=1e-12)
    # AND a job's input reaches them
    assert workbook.calculate({"x": 1.4})["j0"] == pytest.approx(0.5668551190749975, rel=1e-12)
    # AND the filled workbook keeps the formulas as written
    assert "BESSELJ(A1,0)" in saved_sheet_xml(workbook)


def test_the_formulas_engine_answers_excels_values_too():
    data = named_formulas(FORMULAS, cells={"A1": 0, "A2": 3.5})
    outputs = FormulasEngine().load_xlsx(data).calculate({})
    assert outputs["j0"] == pytest.approx(1.00000000283141, rel=1e-12)
    assert outputs["y1"] == pytest.approx(-0.1070324316480381, rel=1e-12)
