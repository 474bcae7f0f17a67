"""Dates, times and numbers written as text, read as Excel reads them (United States English).

Microsoft's pages: VALUE reads "any of the constant number, date, or time formats recognized by
Microsoft Excel" (`VALUE("16:48:00")-VALUE("12:00:00")` is 0.2); DATEVALUE reads "8/22/2011",
"22-MAY-2011" and "30-Jan-2008", ignores a time in the text and answers #VALUE! outside 1900-9999;
TIMEVALUE("22-Aug-2011 6:35 AM") is 0.2743055556, the date ignored. Excel-saved: VALUE("2-Feb-2026")
is 46055 (IronCalc's T_VALUE_VALUETOTEXT.xlsx). IronCalc 0.9.1 answers #VALUE! for many of these
forms; the layer reads them in the calculations where IronCalc answers #VALUE!, so a consumer who
sends "Feb 2, 2026" for a date gets the date, not an error.
"""

import pytest

from shared.calc import run_context
from shared.calc.corrections.dynamic import number_text, select
from shared.calc.corrections.functions.text_format import Unsupported

from .conftest import named_formulas, uploaded_and_stored


def date_book() -> bytes:
    """A date written as text (an input named `written`) read by DATEVALUE, TIMEVALUE and VALUE,
    and used in arithmetic the way a workbook counts days from it."""
    return named_formulas(
        {
            "date": "=DATEVALUE(A1)",
            "time": "=TIMEVALUE(A1)",
            "serial": "=VALUE(A1)",
            "days_to_2012": '=DATEVALUE("1/1/2012")-DATEVALUE(A1)',
        },
        cells={"A1": "8/22/2011"},
        names={"written": "$A$1"},
    )


OUTPUTS = ["date", "time", "serial", "days_to_2012"]


@pytest.mark.parametrize(
    "written, expected",
    [
        # the pages' examples, in the forms IronCalc reads and in those it does not
        ("8/22/2011", {"date": 40777, "time": 0, "serial": 40777, "days_to_2012": 132}),
        ("22-MAY-2011", {"date": 40685, "time": 0, "serial": 40685, "days_to_2012": 224}),
        ("Aug 22, 2011", {"date": 40777, "time": 0, "serial": 40777, "days_to_2012": 132}),
        ("22 August 2011", {"date": 40777, "time": 0, "serial": 40777, "days_to_2012": 132}),
        ("22-Aug-2011 6:35 AM", {"date": 40777, "time": pytest.approx(0.2743055556),
                                 "serial": pytest.approx(40777.2743055556), "days_to_2012": 132}),
    ],
)
def test_a_date_written_in_any_form_excel_reads_is_that_date(written, expected):
    for workbook in uploaded_and_stored(date_book()):
        assert workbook.calculate({"written": written}, OUTPUTS) == expected


def test_a_time_written_as_text_is_that_time_of_day():
    # TIMEVALUE's page: "6:45 PM" is 0.78125; VALUE's: "16:48:00" less "12:00:00" is 0.2
    for workbook in uploaded_and_stored(date_book()):
        assert workbook.calculate({"written": "6:45 PM"}, ["time", "serial"]) == {"time": 0.78125, "serial": 0.78125}
        assert workbook.calculate({"written": "16:48"}, ["serial"])["serial"] - 0.5 == pytest.approx(0.2)


def test_text_that_is_no_date_stays_an_error_and_nothing_is_flagged():
    for workbook in uploaded_and_stored(date_book()):
        # a day the month does not have, a year before 1900, a word
        for written in ("Feb 30, 2010", "Dec 31, 1899", "soon"):
            assert workbook.calculate({"written": written}, ["date", "serial"]) == {"date": "#VALUE!", "serial": "#VALUE!"}
        assert workbook.correction_flags() == []


def test_a_form_excel_is_not_known_to_read_is_flagged_not_answered():
    # GIVEN a date with its weekday's name, a form neither the pages nor a saved file settles
    for workbook in uploaded_and_stored(date_book()):
        values = workbook.calculate({"written": "Monday, August 22, 2011"}, ["serial"])
        # THEN the cell keeps IronCalc's error and is flagged (never a guessed date)
        assert values == {"serial": "#VALUE!"}
        assert any(f.cell == "C3" for f in workbook.correction_flags())


def test_a_date_read_inside_iferror_or_isnumber_is_read_as_excel_reads_it():
    # GIVEN the usual guard against a date that does not read: IronCalc's #VALUE! would be
    # turned into the fallback, silently
    book = named_formulas(
        {"date_or_zero": "=IFERROR(DATEVALUE(A1),0)", "is_date": "=ISNUMBER(VALUE(Written))"},
        cells={"A1": "8/22/2011"},
        names={"Written": "$A$1"},
    )
    for workbook in uploaded_and_stored(book):
        # WHEN the text is a form IronCalc does not read THEN Excel's date (DATEVALUE's page)
        assert workbook.calculate({"Written": "Aug 22, 2011"}, ["date_or_zero", "is_date"]) == {
            "date_or_zero": 40777, "is_date": True}
        # AND a text that is no date still takes the fallback
        assert workbook.calculate({"Written": "soon"}, ["date_or_zero", "is_date"]) == {
            "date_or_zero": 0, "is_date": False}


def test_a_workbook_of_the_1904_date_system_reads_dates_as_its_serials():
    # GIVEN a workbook in the 1904 date system ("Date systems in Excel": 1,462 days apart)
    book = named_formulas({"serial": "=VALUE(A1)", "date": "=DATEVALUE(A1)"}, cells={"A1": "2-Feb-2026"},
                          names={"written": "$A$1"}, date1904=True)
    for workbook in uploaded_and_stored(book):
        # THEN both answer 2026-02-02 in that system (46055 in the 1900 system, Excel-saved)
        assert workbook.calculate({}, ["serial", "date"]) == {"serial": 46055 - 1462, "date": 46055 - 1462}


def test_a_cell_is_read_by_the_layer_only_where_ironcalc_answers_value_error():
    # the routing: VALUE, DATEVALUE and TIMEVALUE are watched for #VALUE!, never always ours
    for formula in ("=VALUE(A1)", "=DATEVALUE(A1)+1", '=TIMEVALUE("6:45 PM")*24'):
        chosen = select(formula)
        assert chosen is not None and chosen.watched and not chosen.always
        assert chosen.when_error == ("#VALUE!",)
    assert select("=ABS(A1)") is None  # another function
    assert select("=VALUE(A1)", watch=False) is None  # one value in its own cell: never a spill


@pytest.mark.parametrize(
    "text, serial",
    [
        ("1/1/2008", 39448),  # DATEVALUE's page
        ("30-Jan-2008", 39477),  # DATEVALUE's page
        ("2011/02/23", 40597),  # DATEVALUE's page
        ("2-Feb-2026", 46055),  # Excel-saved
        ("2/29/1900", 60),  # the day Excel keeps for Lotus 1-2-3 ("Excel incorrectly assumes...")
        ("3/1/1900", 61),
        ("1/1/1900", 1),
        ("12/31/9999", 2958465),  # the last day ("Date systems in Excel")
    ],
)
def test_the_serial_of_a_date_text(text, serial):
    assert number_text.value(text) == serial


@pytest.mark.parametrize(
    "text",
    ["40-2-2023", "30/2/2010", "12,34", "qwerty", "1/1/1899", "1/1/10000", "13/1/2026",
     "v1.2.3", "(555) 123-4567", "May", "Sunday brunch", "Q1 2026"],
)
def test_text_excel_does_not_read_as_a_number(text):
    # the first four Excel-saved (T_VALUE_VALUETOTEXT.xlsx); the years outside 1900-9999 from
    # DATEVALUE's page; month 13 does not exist; the rest is in none of the number, date or time
    # formats VALUE's page names (text that merely holds digits, a month's or a day's name)
    assert number_text.value(text) is None


@pytest.mark.parametrize(
    "text", ["Monday, Feb 2, 2026", "25:00", "12:61", "2026-02-02T10:00", "2/30", "1/1/026"]
)
def test_forms_not_settled_are_refused(text):
    with pytest.raises(Unsupported):
        number_text.value(text)


def test_a_date_without_its_year_is_in_the_year_of_the_job():
    # DATEVALUE's page: "If the year portion of the date_text argument is omitted, DATEVALUE
    # uses the current year from your computer's built-in clock" -- a job's clock is its own
    import datetime

    context = run_context.RunContext(created_at=datetime.datetime(2011, 3, 1, 9, 0), seed="s")
    with run_context.running(context):
        assert number_text.date_value("5-JUL") == number_text.date_value("7/5/2011") == 40729
        assert number_text.date_value("Jul 5") == 40729


def test_numbervalue_reads_a_european_amount_sent_as_text():
    # GIVEN NUMBERVALUE over an input with a decimal comma (the page's example "2.500,27")
    book = named_formulas(
        {"amount": '=NUMBERVALUE(A1,",",".")'}, cells={"A1": "1"}, names={"sent": "$A$1"},
    )
    for workbook in uploaded_and_stored(book):
        # THEN the page's example, and a negative in parentheses (Excel-saved test.xlsx TEXT!R27),
        # which IronCalc alone answers #VALUE!
        assert workbook.calculate({"sent": "2.500,27"}, ["amount"]) == {"amount": 2500.27}
        assert workbook.calculate({"sent": "(2.500,27)"}, ["amount"]) == {"amount": -2500.27}
        # AND a group separator after the decimal one is #VALUE! (the page)
        assert workbook.calculate({"sent": "2,500.27"}, ["amount"]) == {"amount": "#VALUE!"}
        assert workbook.correction_flags() == []
