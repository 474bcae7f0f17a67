"""TAN, COT, CSC and SEC answer Excel's values near their poles, where Excel's reduction of the
angle by the x87 π (shared/calc/corrections/functions/trig.py) decides the answer.

Every expected value is one Excel saved: tests/corpus/ironcalc/xlsx/tests/docs/TAN.xlsx and
tests/corpus/ironcalc/xlsx/tests/calc_tests/MATH_AND_TRIGONOMETRY/TRIGONOMETRIC.xlsx. The exact
functions of the same doubles differ from them in the fourth digit (TAN(PI()/2) is
1.633123935319537E+16 exactly, 1.6324552277619072E+16 in Excel).
"""

from __future__ import annotations

import math

import pytest

from shared.calc import get_engine
from shared.calc.corrections.functions.errors import ExcelError
from shared.calc.corrections.functions.trig import excel_trig
from shared.calc.formulas.engine import FormulasEngine
from tests.calc.conftest import named_formulas, one_sheet, saved_sheet_xml

PI = math.pi
EXCEL_SAVED = [  # (function, x, Excel's value)
    ("TAN", -3 * PI / 2, -5441517425873024.0),  # TAN.xlsx B2
    ("TAN", -PI / 2, -1.6324552277619072e16),  # TAN.xlsx B4
    ("TAN", PI / 2, 1.6324552277619072e16),  # TAN.xlsx B8
    ("TAN", 3 * PI / 2, 5441517425873024.0),  # TAN.xlsx B10
    ("COT", PI - 1e-12, -999788629259.2037),  # TRIGONOMETRIC.xlsx COT_CSC_SEC!B33
    ("CSC", PI - 1e-12, 999788629259.2037),  # C33
    ("SEC", PI / 2 - 1e-12, 999849864538.9548),  # D34
    ("SEC", PI / 2 + 1e-12, -999972357604.5276),  # D35
    ("TAN", 0.5, 0.54630248984379),  # TAN.xlsx B7, 15 digits as Excel shows them
]


@pytest.mark.parametrize("name, x, expected", EXCEL_SAVED)
def test_the_values_excel_saved(name, x, expected):
    assert math.isclose(excel_trig(name, x), expected, rel_tol=1e-14)


@pytest.mark.parametrize("name, x, code", [
    ("TAN", 2.0**27, "#NUM!"),  # Microsoft: the number must be below 2^27
    ("COT", -(2.0**27), "#NUM!"),
    ("COT", 0.0, "#DIV/0!"),  # Microsoft's COT page
    ("CSC", 0.0, "#DIV/0!"),
])
def test_the_documented_errors(name, x, code):
    with pytest.raises(ExcelError) as raised:
        excel_trig(name, x)
    assert raised.value.code == code


FORMULAS = {
    "tan": "=TAN(A1)",
    "sec": "=SEC(A1+1E-12)",
    "doubled": "=2*TAN(A1)",
    "date_text": '=COT("2024-01-10")',  # TRIGONOMETRIC.xlsx B26: the date's serial
    "spaced_date": '=COT(" 2024-01-10 ")',  # B27: not read
    "text": "=FORMULATEXT(C1)",
}


def test_a_job_answers_excels_values_and_dependants_and_formulatext_see_them():
    # GIVEN a workbook with TAN and SEC of an input x (A1, named x)
    data = named_formulas(FORMULAS, cells={"A1": 0.5}, names={"x": "$A$1"})
    workbook = get_engine("ironcalc").load_xlsx(data)
    # WHEN a job sets x to PI()/2's double, THEN the values are Excel's, a dependant's too
    outputs = workbook.calculate({"x": PI / 2})
    assert outputs["tan"] == 1.6324552277619072e16
    assert outputs["doubled"] == 2 * 1.6324552277619072e16
    assert outputs["sec"] == pytest.approx(-999972357604.5276, rel=1e-14)
    assert outputs["date_text"] == pytest.approx(-1.0394341057959304, rel=1e-12)
    assert outputs["spaced_date"] == "#VALUE!"
    # AND FORMULATEXT of a corrected cell reads its formula, not the value written in
    assert outputs["text"] == "=TAN(A1)"
    # AND the next job's input reaches them
    assert workbook.calculate({"x": 0.5})["tan"] == pytest.approx(0.54630248984379, rel=1e-13)
    # AND the filled workbook keeps the formula
    assert "TAN(A1)" in saved_sheet_xml(workbook)


def test_the_formulas_engine_answers_excels_values_too():
    data = one_sheet({"A1": "=PI()/2", "B1": "=TAN(A1)", "B2": "=SIN(PI())", "B3": "=1/COS(A1)"},
                     {"tan": "$B$1", "sin": "$B$2", "inverse": "$B$3"})
    outputs = FormulasEngine().load_xlsx(data).calculate({})
    assert outputs["tan"] == 1.6324552277619072e16
    assert outputs["sin"] == pytest.approx(1.22514845490862e-16, rel=1e-13)  # Excel's SIN(PI())
    assert outputs["inverse"] == pytest.approx(1.6324552277619072e16, rel=1e-14)
