"""WORKDAY and WORKDAY.INTL count every holiday of a range, and the four workday functions read
holidays written as text in an array constant (shared/calc/corrections/functions/holidays.py).

Expected values from Microsoft's WORKDAY page example: 151 workdays from 2008-10-01 (39722) are
2009-04-30 (39933), and 2009-05-05 (39938) with the holidays 2008-11-26, 2008-12-04 and 2009-01-21;
and from the NETWORKDAYS.INTL page's: January 2006 with the holidays {"2006/1/2","2006/1/16"} has
22 working days with Sunday the only weekend day (7), 20 with Tuesday and Sunday ("0010001").
"""

from __future__ import annotations

from shared.calc import get_engine
from shared.calc.corrections.functions.holidays import corrected
from tests.calc.conftest import named_formulas, saved_sheet_xml


def test_the_intersection_before_the_holidays_is_removed_and_nothing_else():
    assert corrected('=WORKDAY(A1,151,@B1:B3)') == '=WORKDAY(A1,151,B1:B3)'
    assert corrected('=WORKDAY.INTL(A1,151,"0000011", @Sheet2!B1:B3)+1') == '=WORKDAY.INTL(A1,151,"0000011", Sheet2!B1:B3)+1'
    assert corrected('=@B1:B3+WORKDAY(A1,151)') is None  # not a holidays argument
    assert corrected('=WORKDAY.INTL(A1,151,@B1:B3)') is None  # the weekend argument of WORKDAY.INTL
    assert corrected('=IF(A1,WORKDAY(A1,"@",@B1:B3),"@")') == '=IF(A1,WORKDAY(A1,"@",B1:B3),"@")'
    assert corrected('=WORKDAY(A1,151,B1:B3)') is None


def test_holidays_written_as_text_in_an_array_constant_are_read_as_dates():
    assert corrected('=NETWORKDAYS(A1,A2,{"2006/1/2","2006/1/16"})') == '=NETWORKDAYS(A1,A2,--{"2006/1/2","2006/1/16"})'
    assert corrected('=_xlfn.NETWORKDAYS.INTL(A1,A2,"0010001", {"2006/1/2"})') \
        == '=_xlfn.NETWORKDAYS.INTL(A1,A2,"0010001", --{"2006/1/2"})'
    assert corrected('=WORKDAY(A1,5,{38719,38733})') is None  # numbers already
    assert corrected('=NETWORKDAYS.INTL(A1,A2,{"1"})') is None  # the weekend argument
    assert corrected('=SUM({"x"})+NETWORKDAYS(A1,A2)') is None


def test_the_network_days_page_examples_in_a_job():
    formulas = {
        "sundays": '=_xlfn.NETWORKDAYS.INTL(DATE(2006,1,1),DATE(2006,2,1),7,{"2006/1/2","2006/1/16"})',
        "two_days": '=_xlfn.NETWORKDAYS.INTL(DATE(2006,1,1),DATE(2006,2,1),"0010001",{"2006/1/2","2006/1/16"})',
        # the same holidays in the other three functions: January 2006 has 22 weekdays
        "plain": '=NETWORKDAYS(DATE(2006,1,1),DATE(2006,1,31),{"2006/1/2","2006/1/16"})',
        "workday": '=WORKDAY(DATE(2006,1,1),2,{"2006/1/2"})',  # Tuesday 3 and Wednesday 4
        "not_a_date": '=NETWORKDAYS(DATE(2006,1,1),DATE(2006,1,31),{"soon"})',
    }
    engine = get_engine("ironcalc")
    workbook = engine.load_serialized(engine.load_xlsx(named_formulas(formulas, column="D")).serialize())
    assert workbook.calculate({}) == {"sundays": 22, "two_days": 20, "plain": 20, "workday": 38721,
                                      "not_a_date": "#VALUE!"}


def _workbook() -> bytes:
    """The start date in A1 (named start), the holidays in B1:B3, the three formulas in D1:D3."""
    holidays = {"B1": 39778, "B2": 39786, "B3": 39834}
    formulas = {
        "plain": "=WORKDAY(A1,151,B1:B3)",
        "intl": '=_xlfn.WORKDAY.INTL(A1,151,"0000011",B1:B3)',
        "omitted": "=_xlfn.WORKDAY.INTL(A1,151,,B1:B3)",
    }
    return named_formulas(formulas, column="D", cells={"A1": 39722, **holidays}, names={"start": "$A$1"})


def test_every_holiday_of_the_range_counts_in_a_job():
    # GIVEN the page's example uploaded, WHEN a job calculates it
    engine = get_engine("ironcalc")
    workbook = engine.load_serialized(engine.load_xlsx(_workbook()).serialize())
    outputs = workbook.calculate({})
    # THEN all three holidays are skipped, whatever the weekend argument (1, "0000011", omitted)
    assert outputs == {"plain": 39938, "intl": 39938, "omitted": 39938}
    # AND a later start moves past them alike (the holidays still read as a range)
    assert workbook.calculate({"start": 39723})["plain"] == 39939


def test_the_filled_workbook_keeps_the_formula_as_written():
    engine = get_engine("ironcalc")
    workbook = engine.load_xlsx(_workbook())
    workbook.calculate({})
    sheet = saved_sheet_xml(workbook)
    assert "WORKDAY(A1,151,B1:B3)" in sheet and "@" not in sheet


def test_the_filled_workbook_keeps_text_holidays_as_written():
    formulas = {"days": '=NETWORKDAYS(DATE(2006,1,1),DATE(2006,1,31),{"2006/1/2","2006/1/16"})'}
    workbook = get_engine("ironcalc").load_xlsx(named_formulas(formulas, column="D"))
    assert workbook.calculate({}) == {"days": 20}
    sheet = saved_sheet_xml(workbook)
    assert "NETWORKDAYS(DATE(2006,1,1),DATE(2006,1,31),{" in sheet and "--{" not in sheet
