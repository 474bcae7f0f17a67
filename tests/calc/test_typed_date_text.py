"""A date, a time or a number typed as text into a formula where Excel expects a number is read
as Excel reads it (shared/calc/corrections/text_operands.py).

Expected values from Microsoft's pages: DAYS("15-MAR-2021","1-FEB-2021") is 42 (DAYS); 15-Jan-2011
less one month is 15-Dec-2010, serial 40527 (EDATE); NETWORKDAYS from 1-Oct-2012 to 1-Mar-2013 is
110, 109 with the holiday 22-Nov-2012 (NETWORKDAYS); 2/14/2008 is a Thursday, 5 (WEEKDAY);
`="6/1/2001"-"5/1/2001"` is 31 ("Calculation operators and precedence"); serial 1 is 1900-01-01
and serial 60 the 29 February 1900 Excel keeps ("Excel incorrectly assumes that the year 1900 is
a leap year"); the 1904 date system's serials are 1,462 less ("Date systems in Excel").
"""

import pytest

from shared.calc.corrections.text_operands import rewrite_formula

from .conftest import named_formulas, saved_sheet_xml, uploaded_and_stored

PAGES = {
    "days": '=DAYS("15-MAR-2021","1-FEB-2021")',
    "month_before": '=EDATE("15-Jan-2011",-1)',
    "working_days": '=NETWORKDAYS("1-Oct-2012","1-Mar-2013")',
    "with_holiday": '=NETWORKDAYS("1-Oct-2012","1-Mar-2013","22-Nov-2012")',
    "weekday": '=WEEKDAY("14-Feb-2008")',
    "days_between": '="6/1/2001"-"5/1/2001"',
    "year": '=YEAR("15-Jan-2024")',
    "hour": '=HOUR("15-Jan-2024 10:00 AM")',
    "shown": '=TEXT("15-Jan-2024","yyyy-mm-dd")',
}


def test_the_pages_examples_written_as_text_in_a_job():
    # GIVEN the pages' examples with their dates typed as text (IronCalc alone: #VALUE! for all
    # but the last subtraction, and the text itself for TEXT)
    for workbook in uploaded_and_stored(named_formulas(PAGES)):
        # WHEN a job calculates them THEN each is the page's answer
        assert workbook.calculate({}) == {
            "days": 42, "month_before": 40527, "working_days": 110, "with_holiday": 109, "weekday": 5,
            "days_between": 31, "year": 2024, "hour": 10, "shown": "2024-01-15",
        }
        assert workbook.correction_flags() == []


def test_arithmetic_reads_every_form_of_date_time_and_number_excel_reads():
    formulas = {
        "month_name": '="2 February 2026"+0',
        "month_first": '="Feb 2, 2026"-1',
        "with_time": '="1/15/2024 10:00"*1',
        "negated": '=-"15-Jan-2024"',
        "in_parentheses": '="(100)"+0',
        "fraction": '=2*"1 1/2"',
        "time_of_day": '="3:30 PM"*24',
        "lotus_day": '="2/29/1900"+0',
        "early_day": '="1/15/1900"+0',
    }
    for workbook in uploaded_and_stored(named_formulas(formulas)):
        outputs = workbook.calculate({})
        assert outputs == {
            "month_name": 46055, "month_first": 46054, "with_time": pytest.approx(45306 + 10 / 24, abs=1e-9),
            "negated": -45306, "in_parentheses": -100, "fraction": 3, "time_of_day": 15.5,
            "lotus_day": 60, "early_day": 15,
        }
        # a time of day is the same double as Excel's 15:30 (55800 s of 86400), not 15 digits of it
        assert workbook.calculate({}, ["time_of_day"])["time_of_day"] == 55800 / 86400 * 24


def test_text_stays_text_where_excel_keeps_it():
    formulas = {
        "joined": '="Due "&"15-Jan-2024"',
        "compared": '=IF("15-Jan-2024">1,"text is greater","number")',  # Excel: text > any number
        "length": '=LEN("15-Jan-2024")',
        "no_date": '="soon"+1',
        "day_first": '=YEAR("13/01/2024")',  # no 13th month in United States English
    }
    for workbook in uploaded_and_stored(named_formulas(formulas)):
        assert workbook.calculate({}) == {
            "joined": "Due 15-Jan-2024", "compared": "text is greater", "length": 11,
            "no_date": "#VALUE!", "day_first": "#VALUE!",
        }


def test_only_typed_text_in_a_numeric_place_is_rewritten():
    assert rewrite_formula('=YEAR("15-Jan-2024")') == "YEAR(45306)"
    assert rewrite_formula('=DAYS("15-MAR-2021", "1-FEB-2021")') == "DAYS(44270, 44228)"
    assert rewrite_formula('=A1*"1 1/2"%') == "A1*1.5%"
    assert rewrite_formula('="a"&"15-Jan-2024"+1') == '"a"&45306+1'  # + binds before &
    assert rewrite_formula('="15-Jan-2024"&"x"') is None
    assert rewrite_formula('=+"15-Jan-2024"') is None  # a leading + converts nothing
    assert rewrite_formula('="3"+1') is None  # a plain number: IronCalc reads it
    assert rewrite_formula('=YEAR("15-Jan-"&A1)') is None  # not known at load
    assert rewrite_formula('=ROUNDUP("15-Jan-2024",0)') is None  # not a date argument
    assert rewrite_formula('=WEEKDAY(A1,"2")') is None  # the return type


def test_a_date_without_its_year_is_left_to_the_day_of_calculation():
    # DATEVALUE's page: a date without its year is in the current year, so it is not a constant
    assert rewrite_formula('="5-Jul"+0') is None


def test_a_workbook_of_the_1904_date_system_reads_typed_dates_as_its_serials():
    formulas = {"serial": '="15-Jan-2024"+0', "year": '=YEAR("15-Jan-2024")', "weekday": '=WEEKDAY("14-Feb-2008")'}
    for workbook in uploaded_and_stored(named_formulas(formulas, date1904=True)):
        assert workbook.calculate({}) == {"serial": 45306 - 1462, "year": 2024, "weekday": 5}


def test_the_filled_workbook_and_formulatext_show_the_formula_as_written():
    book = named_formulas({"year": '=YEAR("15-Jan-2024")', "written": "=FORMULATEXT(C1)"})
    workbook = uploaded_and_stored(book)[0]
    assert workbook.calculate({}) == {"year": 2024, "written": '=YEAR("15-Jan-2024")'}
    assert 'YEAR("15-Jan-2024")' in saved_sheet_xml(workbook).replace("&quot;", '"')
