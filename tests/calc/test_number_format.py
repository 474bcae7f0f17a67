"""Excel's number-format grammar (shared/calc/numfmt): expected texts are Excel's own, read
from Excel-saved workbooks of the corpus (the cached value of a TEXT formula) or taken from
Microsoft's "Number format codes" / "TEXT function" pages."""

from __future__ import annotations

import re
from functools import lru_cache

import openpyxl
import pytest

from shared.calc.numfmt import (
    VALUE_ERROR,
    Unsupported,
    format_number,
    format_text,
    general,
    is_date_format,
    parse,
)
from tests.corpus import corpus_file

FORMULAS_TEST = "formulas/test/test_files/test.xlsx"  # sheet EXTRA: =TEXT(number, "code")
IRONCALC_TEXT = "ironcalc/xlsx/tests/calc_tests/TEXT/TEXT.xlsx"  # sheet NUMBERS: =TEXT($A3,B$2)


def _excel_saved(relative: str, sheet: str, cells: list[str]) -> list[tuple[float, str, str]]:
    """(number, code, Excel's cached text) of `=TEXT(...)` cells, arguments read as Excel saved them."""
    formulas, values = _workbook(relative, False)[sheet], _workbook(relative, True)[sheet]
    cases = []
    for cell in cells:
        args = re.fullmatch(r'=TEXT\((.+?),\s*"((?:[^"]|"")*)"\)', formulas[cell].value)
        if args:  # a literal number and a literal code
            number, code = float(args.group(1)), args.group(2).replace('""', '"')
        else:  # =TEXT($A3,B$2): the number in column A, the code in row 2
            row, column = values[cell].row, values[cell].column
            number, code = values.cell(row, 1).value, values.cell(2, column).value
        cases.append((float(number), code, values[cell].value))
    return cases


@lru_cache(maxsize=4)
def _workbook(relative: str, data_only: bool):
    return openpyxl.load_workbook(corpus_file(relative), data_only=data_only)


# --- integer placeholders keep their power of ten ------------------------------------------


@pytest.mark.parametrize("number, code, excel", _excel_saved(FORMULAS_TEST, "EXTRA", ["A17", "A20", "A21", "A23"]))
def test_a_placeholder_without_a_digit_keeps_its_place_for_the_thousands_separator(number, code, excel):
    # e.g. '#,##000######## .  # ,0.00.0,00' of 1234567.555 is '00,01,234,567 .  5 ,5.50.000'
    assert format_number(number, code) == excel


@pytest.mark.parametrize("number, code, excel", _excel_saved(
    FORMULAS_TEST, "EXTRA", ["A2", "A5", "A9", "A10", "A13", "A14", "A15", "A18", "A22", "A24", "A25", "A26"]
))
def test_placeholders_literals_and_commas_mixed_as_excel_saved_them(number, code, excel):
    assert format_number(number, code) == excel


# --- General ---------------------------------------------------------------------------------


@pytest.mark.parametrize("number, code, excel", _excel_saved(IRONCALC_TEXT, "NUMBERS", [f"H{r}" for r in range(3, 22)]))
def test_general_matches_excel_from_tiny_to_huge(number, code, excel):
    assert code == "General"
    assert format_number(number, code) == excel


@pytest.mark.parametrize("number, excel", [
    (0.000000001, "0.000000001"),   # fits in 11 characters: shown as it is
    (-0.00000001, "-0.00000001"),  # the sign is not counted (IronCalc TEXT.xlsx H20)
    (0.0000000025, "2.5E-09"),     # 12 characters; rounding to 11 would lose a digit
    (123456789012, "1.23457E+11"),  # 12 integer digits (KB 65903; TEXT.xlsx H10)
    (12345678901, "12345678901"),   # 11 integer digits fit
    (1234567.891234, "1234567.891"),  # 10 significant digits with a point
])
def test_general_shows_up_to_eleven_characters(number, excel):
    assert general(number) == excel


# --- scientific --------------------------------------------------------------------------------


@pytest.mark.parametrize("number, code, excel", _excel_saved(IRONCALC_TEXT, "NUMBERS", [f"M{r}" for r in range(3, 22)]))
def test_scientific_matches_excel(number, code, excel):
    assert format_number(number, code) == excel


@pytest.mark.parametrize("number, code, excel", _excel_saved(FORMULAS_TEST, "EXTRA", ["A28", "A29", "A32"]))
def test_scientific_with_several_integer_placeholders_and_hash_exponents(number, code, excel):
    assert format_number(number, code) == excel


def test_scientific_text_after_the_exponent_and_exponent_width():
    # "Number format codes": the count of 0s after E+ is the exponent's digit count
    assert format_number(12200000, "0.00E+00") == "1.22E+07"  # TEXT function page
    assert format_number(12200000, '0.00E+00" units"') == "1.22E+07 units"
    assert format_number(12200000, "0.00E+000") == "1.22E+007"


# --- conditions, sections, text ----------------------------------------------------------------


def test_condition_picks_the_section():
    # TEXT function page: phone numbers
    code = "[<=9999999]###-####;(###) ###-####"
    assert format_number(1234567898, code) == "(123) 456-7898"
    assert format_number(5551234, code) == "555-1234"


def test_a_negative_number_in_a_conditional_format_is_reported_not_guessed():
    with pytest.raises(Unsupported):
        format_number(-5, '[Red][>=100]0;[<0]"neg "0')


def test_text_goes_to_the_text_section():
    # "Review guidelines for customizing a number format": [Blue]#,##0.00_);[Red](#,##0.00);0.00;"sales "@
    code = '[Blue]#,##0.00_);[Red](#,##0.00);0.00;"sales "@'
    assert format_text("East", code) == "sales East"
    assert format_number(-1234.5, code) == "(1,234.50)"
    assert format_number(1234.5, code) == "1,234.50 "


def test_another_calendar_is_reported_only_where_it_is_used():
    assert format_number(1, "[<=1]x;[<=2]a;b") == "x"  # formulas test.xlsx EXTRA A34
    with pytest.raises(Unsupported):
        format_number(3, "[<=1]x;[<=2]a;b")
    with pytest.raises(Unsupported):
        format_number(1, "[DBNum1]0")


def test_a_code_excel_rejects_is_value_error():
    assert format_number(1, '"unterminated') == VALUE_ERROR
    assert format_number(1, "0;0;0;0;0") == VALUE_ERROR
    assert format_number(1, "0.0 hh") == VALUE_ERROR  # digits and dates mixed


# --- fractions, elapsed time, dates ------------------------------------------------------------


@pytest.mark.parametrize("number, code, excel", [
    (4.34, "# ?/?", "4 1/3"),           # TEXT function page
    (1.3, "# ?/8", "1 2/8"),            # a fixed denominator is not reduced
    (1.3, "# ??/100", "1 30/100"),
    (1.25, "?/???", "5/4  "),
])
def test_fractions(number, code, excel):
    assert format_number(number, code) == excel


def test_question_marks_pad_a_fraction_with_spaces():
    # "Number format codes": 5.25 under # ???/??? shows 5 1/4, the fraction's digits aligned
    assert format_number(5.25, "# ???/???").split() == ["5", "1/4"]


def test_elapsed_time_and_negative_serials():
    # "Number format codes": [h]:mm:ss shows time beyond 24 hours; pycel text.xlsx for the signs
    assert format_number(1.5, "[h]:mm:ss") == "36:00:00"
    assert format_number(-1, "[h]") == "-24"
    assert format_number(-1, "[h]:m") == VALUE_ERROR
    assert format_number(-1 / 24, "h:mm", date1904=True) == "-1:00"  # 1904 system shows negatives


def test_dates():
    # IronCalc TEXT.xlsx DATES B2:F2 (serial 41181)
    assert format_number(41181, "ddd--/--mmm--/++yyy") == "Sat--/--Sep--/++2012"
    assert format_number(41181, "ddddd/mmmmm/yyyyy") == "Saturday/S/2012"


# --- the parsed-format cache and date detection ---------------------------------------------


def test_a_code_is_parsed_once():
    assert parse("#,##0.00_);(#,##0.00)") is parse("#,##0.00_);(#,##0.00)")


@pytest.mark.parametrize("code, is_date", [
    ("yyyy-mm-dd", True), ("[$-409]d-mmm-yy;@", True), ("[h]:mm:ss", True), ("General", False),
    ("0.00E+00", False), ('"Day "0', False), ("[Red]0.00", False), ("@", False),
    ("[DBNum1]yyyy", True), ("[$-F800]dddd, mmmm dd, yyyy", True), ("[DBNum1]0", False),
])
def test_date_detection_reads_the_first_section(code, is_date):
    assert is_date_format(code) is is_date


def test_a_code_of_another_numeral_system_is_a_date_but_not_shown():
    # GIVEN a date shown with Chinese numerals: the cell holds a date, the text is not ours
    with pytest.raises(Unsupported):
        format_number(45000, "[DBNum1]yyyy")


# --- locale tags ---------------------------------------------------------------------------------


@pytest.mark.parametrize("number, code, excel", [
    (45306, "[$-409]mmmm d, yyyy", "January 15, 2024"),   # English (United States), as an LCID
    (45306, "[$-en-US]mmmm d, yyyy", "January 15, 2024"),  # and as Excel 365 writes it
    (45306, "[$-809]dd mmmm yyyy", "15 January 2024"),     # English (United Kingdom)
    (45306, "[$-407]dd.mm.yyyy", "15.01.2024"),            # German, but no name shown
    (1234.5, "[$€-407] #,##0.00", "€ 1,234.50"),          # a currency symbol is its text
    (5, "[$¥-411]#,##0", "¥5"),
])
def test_a_locale_tag_changes_only_the_names(number, code, excel):
    # Microsoft's LCID tables and "Number format codes": the locale decides the language of the
    # month, day and AM/PM names; digits and separators follow the code as written
    assert format_number(number, code) == excel


@pytest.mark.parametrize("code", [
    "[$-407]mmmm", "[$-de-DE]dddd", "[$-804]h:mm AM/PM",  # another language's names
    "[$-1010409]d/m/yyyy", "[$-en-US,1]dd/mm/yyyy",       # another calendar or numeral system
])
def test_names_in_another_language_are_reported_not_guessed(code):
    with pytest.raises(Unsupported):
        format_number(45306, code)


def test_fractions_are_the_convergents_excel_shows():
    # "Display numbers as fractions": 123.456 up to one, two and three digits is 123 1/2,
    # 123 26/57 and 123 57/125 (1/2 though 4/9 is nearer: Excel does not take the nearest)
    from shared.calc.numfmt.fractions import excel_fraction

    assert excel_fraction(123.456, 9) == (247, 2)
    assert excel_fraction(123.456, 99) == (7037, 57)
    assert excel_fraction(123.456, 999) == (15432, 125)
    assert excel_fraction(5.0, 9) == (5, 1)


def test_a_section_of_a_colour_or_a_condition_alone_shows_general():
    # Number format codes: "[Red][<=100];[Blue][>100]" displays the numbers, in red or blue
    from shared.calc.numfmt import format_number

    assert format_number(50.0, "[Red][<=100];[Blue][>100]") == "50"
    assert format_number(150.5, "[Red][<=100];[Blue][>100]") == "150.5"
    assert format_number(-3.0, "[Red]") == "-3"
    assert format_number(5.0, ";;;") == ""  # empty sections still hide the number
