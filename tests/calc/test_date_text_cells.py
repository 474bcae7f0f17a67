"""Dates and times held as text in cells, read where Excel reads a number
(shared/calc/corrections/dynamic/date_text.py).

Expected values are worked from Excel's rule ("Converting values in formulas": a text an
operator or a date function reads is read as the date typed), United States order, and cells
formulas' test.xlsx saved from Excel (tests/conformance/cases/WEEKDAY.yaml and others cite
them). Serials: 2024-01-01 is 45292, so 15 January 2024 is 45306.
"""

import openpyxl

from shared.calc.corrections.dynamic.date_text import formulas_and_text_cells
from shared.calc.ironcalc.model import load_model

from .conftest import add_name, named_formulas, to_bytes, uploaded_and_stored

FORMULAS = {
    "year": "=YEAR(A1)",
    "month_later": "=A1+30",
    "month_end": "=EOMONTH(A1,0)",
    "hour": "=HOUR(A2)",
    "day_of": "=INT(A2)",
}


def test_a_date_held_as_text_is_read_by_operators_and_date_functions_in_a_job():
    data = named_formulas(FORMULAS, column="C", cells={"A1": "15-Jan-2024", "A2": "1/15/2024 10:30 AM"},
                          names={"start": "$A$1"})
    for workbook in uploaded_and_stored(data):  # IronCalc alone: #VALUE! for every one
        assert workbook.calculate({}) == {
            "year": 2024, "month_later": 45336, "month_end": 45322, "hour": 10, "day_of": 45306,
        }
        assert workbook.correction_flags() == []
        # WHEN the job writes another date as text, it is read; a number stays a number
        assert workbook.calculate({"start": "March 3, 2024"}, ["year", "month_later", "month_end"]) == {
            "year": 2024, "month_later": 45384, "month_end": 45382,
        }
        assert workbook.calculate({"start": 45000}, ["year", "month_later", "month_end"]) == {
            "year": 2023, "month_later": 45030, "month_end": 45016,
        }


def test_a_date_typed_after_an_apostrophe_is_read_as_excel_saved_it():
    # formulas' test.xlsx 'DATE & TIME'!I22, saved by Excel: "1/1/1987 05:00 AM" typed after an
    # apostrophe (the quotePrefix style), WEEKDAY of it 5 (X22)
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"] = "1/1/1987 05:00 AM"
    sheet["A1"].quotePrefix = True
    sheet["B1"] = "=WEEKDAY(A1)"
    add_name(book, "weekday", "Sheet!$B$1")
    for workbook in uploaded_and_stored(to_bytes(book)):
        assert workbook.calculate({}) == {"weekday": 5}


def test_numbers_held_as_text_in_accounting_and_fraction_forms_are_read_by_operators():
    # GIVEN figures pasted as text from a report: a negative in parentheses, with a currency sign
    # and thousands, and a whole number with a fraction (typed into a cell, Excel reads them as
    # -12, -1234.5 and 3.5; an operator reads a text as the number typed: "Converting values in
    # formulas"), and a label that is no number
    formulas = {"negative": "=A1*1", "dollars": "=-A2", "fraction": "=A3+0", "total": "=SUM(--A1,A2*1)",
                "label": "=A4+1"}
    data = named_formulas(formulas, column="C", cells={"A1": "(12)", "A2": "($1,234.50)", "A3": "3 1/2",
                                                        "A4": "Revenue (2024)"})
    for workbook in uploaded_and_stored(data):
        # WHEN a job calculates it THEN each is Excel's number (IronCalc alone: #VALUE!)
        assert workbook.calculate({}) == {"negative": -12, "dollars": 1234.5, "fraction": 3.5, "total": -1246.5,
                                          "label": "#VALUE!"}


def test_a_text_that_is_no_date_stays_an_error_as_in_excel():
    data = named_formulas({"later": "=A1+30"}, cells={"A1": "soon"})
    for workbook in uploaded_and_stored(data):
        assert workbook.calculate({}) == {"later": "#VALUE!"}


def test_only_the_cells_holding_a_date_as_text_are_found_at_load():
    # a formula is parsed for them only where it writes one of these cells: other workbooks and
    # formulas cost nothing more
    data = named_formulas({"later": "=A1+30"}, cells={"A1": "15-Jan-2024", "A2": 45306, "A3": "thirty",
                                                      "A4": "10:30", "A5": "1,000", "A6": "'10:30"})
    formulas, text_cells = formulas_and_text_cells(load_model(data))
    assert text_cells == {(0, 1, 1), (0, 4, 1)}  # "1,000": IronCalc reads it
    assert formulas == [(0, 1, 3, "=A1+30")]
    assert formulas_and_text_cells(load_model(named_formulas({"later": "=A1+30"}, cells={"A1": 45306})))[1] == set()
