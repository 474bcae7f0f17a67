"""WORKDAY and WORKDAY.INTL count every holiday of a range (shared/calc/corrections/functions/holidays.py).

Expected values from Microsoft's WORKDAY page example: 151 workdays from 2008-10-01 (39722) are
2009-04-30 (39933), and 2009-05-05 (39938) with the holidays 2008-11-26, 2008-12-04 and 2009-01-21.
"""

from __future__ import annotations

from shared.calc import get_engine
from shared.calc.corrections.functions.holidays import without_intersection
from tests.calc.conftest import named_formulas, saved_sheet_xml


def test_the_intersection_before_the_holidays_is_removed_and_nothing_else():
    assert without_intersection('=WORKDAY(A1,151,@B1:B3)') == '=WORKDAY(A1,151,B1:B3)'
    assert without_intersection('=WORKDAY.INTL(A1,151,"0000011", @Sheet2!B1:B3)+1') == '=WORKDAY.INTL(A1,151,"0000011", Sheet2!B1:B3)+1'
    assert without_intersection('=@B1:B3+WORKDAY(A1,151)') is None  # not a holidays argument
    assert without_intersection('=WORKDAY.INTL(A1,151,@B1:B3)') is None  # the weekend argument of WORKDAY.INTL
    assert without_intersection('=IF(A1,WORKDAY(A1,"@",@B1:B3),"@")') == '=IF(A1,WORKDAY(A1,"@",B1:B3),"@")'
    assert without_intersection('=WORKDAY(A1,151,B1:B3)') is None


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
