"""Complex numbers written as Excel writes them: a part below 1 that would take more than 21
characters written out is in E notation.

Expected values: Excel-saved formulas' test.xlsx (ENGINEERING!S37 IMCSCH("13+5j") is
"1.28233995888454E-06+4.33496947416312E-06j", R46 IMSEC("7+25j")
"2.09403043759793E-11+1.82483860060804E-11j", S35 IMCOT written out as
"0.0000692442674613868-1.00005873951153j") and IronCalc's Excel-saved COMPLEXs.xlsx (COMPLEX of
1.2E-45 and -3 is "1.2E-45-3i", of 1E-16 and 0 "0.0000000000000001"). IronCalc 0.9.1 writes every
part out ("0.00000128233995888454+...").
"""

import pytest

from shared.calc.corrections.dynamic.complex_text import excel_form, whole_call

from .conftest import named_formulas, uploaded_and_stored


def complex_workbook() -> bytes:
    """A complex number as an input and functions of it, one behind arguments.py's pole guard."""
    return named_formulas(
        {"csch": "=IMCSCH(A1)", "sec": "=IMSEC(A1)", "csc": "=IMCSC(A1)", "joined": '="z="&IMSEC(A1)'},
        cells={"A1": "13+5j"},
        names={"z": "$A$1"},
    )


def test_small_parts_are_in_e_notation_in_a_job():
    for workbook in uploaded_and_stored(complex_workbook()):
        out = workbook.calculate({"z": "13+5j"}, ["csch"])
        assert out["csch"] == "1.28233995888454E-06+4.33496947416312E-06j"
        out = workbook.calculate({"z": "7+25j"}, ["sec", "csc"])
        assert out["sec"] == "2.09403043759793E-11+1.82483860060804E-11j"
        assert out["csc"] == "1.82483860060804E-11-2.09403043759793E-11j"


def test_a_complex_number_inside_other_text_is_left_to_the_engine():
    # only a cell that is the function's answer is rewritten: inside other text the parts stay
    _, workbook = uploaded_and_stored(complex_workbook())

    out = workbook.calculate({"z": "7+25j"}, ["joined"])

    assert out["joined"].startswith("z=0.0000000000209403043759793")


@pytest.mark.parametrize(("text", "excel"), [
    ("0.00000128233995888454+0.00000433496947416312j", "1.28233995888454E-06+4.33496947416312E-06j"),
    ("0.0000692442674613868-1.00005873951153j", None),  # 21 characters: written out
    ("0.0000000000000001", None),                        # 18 characters
    ("0.000000000000000122464679914735+2i", "1.22464679914735E-16+2i"),
    ("-0.00000000000000000000001i", "-1E-23i"), ("-0.0000001i", None),
    ("3+4i", None), ("-j", None), ("2i", None), ("abc", None),
])
def test_which_parts_excel_writes_in_e_notation(text, excel):
    assert excel_form(text) == excel


@pytest.mark.parametrize(("formula", "whole"), [
    ("=IMSQRT(A1)", True), ("=_xlfn.IMCOT(C35)", True), ('=IMSUM(IMSQRT(-4),"1")', True),
    ('=IMSQRT(A1)&""', False), ("=COMPLEX(1,2)+1", False), ("=IMABS(A1)", False),
])
def test_only_a_formula_that_is_one_such_call_is_watched(formula, whole):
    assert whole_call(formula) is whole
