"""MOD of a divisor that is not a whole number: the exact remainder of the two binary values, as
Excel answers it (shared/calc/corrections/dynamic/functions._mod, watched by dynamic.select).

Expected values: IronCalc's MOD_QUOTIENT.xlsx, saved by Excel (sheet DATEVALUE: MOD(5,1E-10) in
C25, MOD(5,-1E-10) in C26, MOD(10.0000000001,0.1) in C20), and what Excel 2010 and later answer
for MOD(281.44,0.02) and MOD(10,0.1) as reported on Microsoft's TechNet forum ("Excel 2010 MOD
bug": 0.02 and 0.1, where number - divisor*INT(number/divisor) is 0). IronCalc 0.9.1 computes
the latter formula: 0 there, and for MOD(5,1E-10) too.
"""

import pytest

from .conftest import named_formulas, uploaded_and_stored


def mod_book() -> bytes:
    return named_formulas({
        "remainder": "=MOD(A1,B1)",
        "parity": '=IF(MOD(A1,B1)=0,"even","odd")',
        "pence": "=MOD(A2,0.02)",
        "tenths": "=MOD(10,0.1)",
    }, column="D", cells={"A1": 5, "B1": 1e-10, "A2": 281.44}, names={"number": "$A$1", "divisor": "$B$1"})


def test_the_exact_remainder_of_a_divisor_that_is_not_whole():
    for workbook in uploaded_and_stored(mod_book()):
        outputs = workbook.calculate({})
        assert outputs["remainder"] == pytest.approx(9.999981783901343e-11, rel=1e-12)
        assert outputs["parity"] == "odd"
        assert outputs["pence"] == pytest.approx(0.02, rel=1e-9)
        assert outputs["tenths"] == pytest.approx(0.1, rel=1e-9)
        assert workbook.correction_flags() == []


@pytest.mark.parametrize("number, divisor, excel", [
    (5, -1e-10, -1.821609865774887e-16),
    (10.0000000001, 0.1, 9.999945316252479e-11),
    (281.44, 0.02, 0.02),  # TechNet's report (IronCalc alone: 0)
    (10, 0.1, 0.1),
    (-5, 2, 1),  # the divisor's sign (MOD_QUOTIENT.xlsx C8)
    (10, 3, 1),  # a whole divisor: IronCalc's own answer, the same
])
def test_a_divisor_from_an_input(number, divisor, excel):
    for workbook in uploaded_and_stored(mod_book()):
        outputs = workbook.calculate({"number": number, "divisor": divisor}, ["remainder"])
        assert outputs["remainder"] == pytest.approx(excel, rel=1e-9)
