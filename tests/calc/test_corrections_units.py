"""The correction layer's CONVERT rewrite: temperatures to Celsius and logical values calculate
as Excel with IronCalc.

Expected values: Microsoft's CONVERT page (`CONVERT(68,"F","C")` is 20; "If number is
non-numeric, CONVERT returns the #VALUE! error value") and the Excel-saved formulas/test.xlsx
(ENGINEERING!Y16: a TRUE cell converted is #VALUE!; X16: the text "3.6" converts to 38.48).
IronCalc 0.9.1 alone subtracts 273.5 on the way to Celsius (19.65) and reads TRUE as 1.
"""

import pytest

from shared.calc.corrections.units import rewrite_formula

from .conftest import named_formulas, uploaded_and_stored


def convert_workbook() -> bytes:
    """A number and two units as inputs; CONVERT to Celsius by a literal unit, by the target
    cell, and to Fahrenheit."""
    return named_formulas(
        {
            "celsius": '=CONVERT(A1,B1,"C")',
            "by_cell": "=CONVERT(A1,B1,B2)",
            "fahrenheit": '=CONVERT(A1,"C","F")',
        },
        cells={"A1": 68, "B1": "F", "B2": "cel"},
        names={"number": "$A$1", "unit_from": "$B$1", "unit_to": "$B$2"},
    )


def test_conversions_to_celsius_answer_excels_value_in_a_job():
    # GIVEN the workbook uploaded and stored for jobs
    for workbook in uploaded_and_stored(convert_workbook()):
        # WHEN a job converts the page's example, 68 degrees Fahrenheit
        out = workbook.calculate({"number": 68, "unit_from": "F", "unit_to": "cel"}, ["celsius", "by_cell"])

        # THEN both cells are 20 (IronCalc alone: 19.65)
        assert out["celsius"] == pytest.approx(20, rel=1e-12)
        assert out["by_cell"] == pytest.approx(20, rel=1e-12)


@pytest.mark.parametrize(
    ("unit_from", "number", "celsius"),
    [("K", 0, -273.15), ("kel", 273.15, 0), ("Rank", 491.67, 0), ("Reau", 80, 100), ("C", 37, 37), ("fah", 212, 100)],
)
def test_every_temperature_unit_reaches_celsius_by_its_offset(unit_from, number, celsius):
    # GIVEN the workbook as a job gets it
    _, workbook = uploaded_and_stored(convert_workbook())

    # WHEN a job converts from each temperature unit of the page's table
    out = workbook.calculate({"number": number, "unit_from": unit_from, "unit_to": "C"}, ["celsius", "by_cell"])

    # THEN the answer is the scales' arithmetic (kelvin less 273.15)
    assert out["celsius"] == pytest.approx(celsius, abs=1e-9)
    assert out["by_cell"] == pytest.approx(celsius, abs=1e-9)


def test_a_target_unit_cell_that_is_not_celsius_keeps_the_conversion():
    _, workbook = uploaded_and_stored(convert_workbook())

    # WHEN the target cell names another unit, or one that is not a temperature
    assert workbook.calculate({"number": 20, "unit_from": "C", "unit_to": "F"}, ["by_cell"])["by_cell"] == pytest.approx(68)
    assert workbook.calculate({"number": 1, "unit_from": "m", "unit_to": "C"}, ["by_cell"])["by_cell"] == "#N/A"
    # AND unit names are case-sensitive: "c" is not Celsius
    assert workbook.calculate({"number": 1, "unit_from": "F", "unit_to": "c"}, ["by_cell"])["by_cell"] == "#N/A"


def test_a_logical_value_is_not_a_number_to_convert():
    _, workbook = uploaded_and_stored(convert_workbook())

    # WHEN the number is TRUE, or a number typed as text
    # THEN TRUE is #VALUE! (IronCalc alone: 33.8) and "3.6" converts, as Excel saved them
    assert workbook.calculate({"number": True}, ["fahrenheit"])["fahrenheit"] == "#VALUE!"
    assert workbook.calculate({"number": "3.6"}, ["fahrenheit"])["fahrenheit"] == pytest.approx(38.48)


@pytest.mark.parametrize(
    ("formula", "rewritten"),
    [
        ('=CONVERT(68,"F","C")', '(CONVERT(68,"F","K")-273.15)'),
        ('=CONVERT(TRUE,"C","F")', "#VALUE!"),
        ('=CONVERT(1,"m","ft")', None),  # nothing to correct
        ('=CONVERT(A1:A3,"C","F")', None),  # a range: left to IronCalc
        ('=CONVERT(1,"F",INDEX(B:B,2))', None),  # a computed unit: left to IronCalc
    ],
)
def test_the_rewrite_touches_only_what_ironcalc_gets_wrong(formula, rewritten):
    assert rewrite_formula(formula) == rewritten


def test_units_ironcalc_does_not_know_convert_with_excels_table():
    # GIVEN CONVERT between units named in cells (inputs), and a formula built on it
    workbook_bytes = named_formulas(
        {"converted": "=CONVERT(A1,B1,B2)", "doubled": "=2*CONVERT(A1,B1,B2)"},
        cells={"A1": 1500, "B1": "ms", "B2": "sec"},
        names={"number": "$A$1", "unit_from": "$B$1", "unit_to": "$B$2"},
    )
    for workbook in uploaded_and_stored(workbook_bytes):
        # THEN milliseconds convert (IronCalc alone: #N/A; formulas' test.xlsx EXTRA!AK42, saved
        # by Excel, has 1 ms as 0.001 sec), and the cell built on it follows
        assert workbook.calculate({}, ["converted", "doubled"]) == {
            "converted": pytest.approx(1.5, rel=1e-12), "doubled": pytest.approx(3.0, rel=1e-12)}
        # AND the Imperial hundredweight by its name hweight (EXTRA!U12: 50802.34544 g)
        out = workbook.calculate({"number": 1, "unit_from": "hweight", "unit_to": "g"}, ["converted"])
        assert out["converted"] == pytest.approx(50802.34544, rel=1e-12)
        # AND units IronCalc knows stay its own; a unit nobody knows is #N/A; units of two kinds too
        assert workbook.calculate({"number": 1, "unit_from": "mi", "unit_to": "m"}, ["converted"])["converted"] \
            == pytest.approx(1609.344, rel=1e-12)
        assert workbook.calculate({"unit_from": "furlong"}, ["converted"])["converted"] == "#N/A"
        assert workbook.calculate({"unit_from": "ms", "unit_to": "g"}, ["converted"])["converted"] == "#N/A"
