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


EXCEL_SAVED_I_AND_K = [  # (function, x, n, Excel's value), BESSEL.xlsx sheets BESSELI and BESSELK
    ("I", 1, 0, 1.2660658480342601),  # the exact I0(1) is 1.2660658777520082
    ("I", -0.5, 1, -0.25789430328903556),
    ("I", 3.5, 7, 0.01451184622078858),
    ("I", 32, 10, 1158284935385.1838),
    ("K", 1, 0, 0.421024421083418),
    ("K", 0.2, 7, 3594005998.103765),
    ("K", 2.9, 10, 3507.65358228027),
    ("K", 32, 1, 2.8383988120931556e-15),
]


@pytest.mark.parametrize("kind, x, n, expected", EXCEL_SAVED_I_AND_K)
def test_besseli_and_besselk_as_excel_saved_them(kind, x, n, expected):
    function = bessel.besseli if kind == "I" else bessel.besselk
    assert math.isclose(function(x, n), expected, rel_tol=1e-12)


def test_besseli_and_besselk_errors():
    for call in (lambda: bessel.besselk(0, 1), lambda: bessel.besselk(-0.5, 0), lambda: bessel.besseli(2, -1),
                 lambda: bessel.besseli(10_000_000, 2)):  # K of 0 or less, a negative order, beyond a double
        with pytest.raises(bessel.ExcelError) as raised:
            call()
        assert raised.value.code == "#NUM!"


def test_the_formulas_engine_answers_excels_besseli_and_besselk():
    data = named_formulas({"i": "=BESSELI(1,0)", "k": "=BESSELK(2.9,10)", "range": "=BESSELI(A1:A2,1)"},
                          column="C", cells={"A1": 1, "A2": 2})
    outputs = FormulasEngine().load_xlsx(data).calculate({})
    assert outputs["i"] == pytest.approx(1.2660658480342601, rel=1e-12)
    assert outputs["k"] == pytest.approx(3507.65358228027, rel=1e-12)
    assert outputs["range"] == "#VALUE!"  # formulas' test.xlsx ENGINEERING!AG3
