"""The correction layer's date rewrite: YEAR/MONTH/DAY/WEEKDAY of serials 0-60 and the 1904
date system calculate as Excel with IronCalc.

Expected values follow Excel's documented rules, worked by hand (Microsoft support: "Excel
incorrectly assumes that the year 1900 is a leap year": serial 1 is 1900-01-01 and 60 is
1900-02-29; "Date systems in Excel": the 1904 system's first day, 1904-01-01, is serial 0 and
its last, 9999-12-31, 2,957,003 against the 1900 system's 2,958,465, 1,462 days apart;
WEEKDAY counts from serial 1, a Sunday in Excel's calendar). IronCalc 0.9.1 alone reads serials
1-60 one day early (DAY(60) is 28, YEAR(1) 1899), answers #NUM! for 0 and ignores date1904.
"""

import openpyxl
import pytest
from openpyxl.utils.datetime import CALENDAR_MAC_1904

from shared.calc import get_engine
from shared.calc.fidelity.check import check
from shared.errors import InputValidationError
from tests.corpus import corpus_file

from .conftest import add_name, named_formulas, to_bytes, uploaded_and_stored
from .test_fidelity import excel_saved

# serial -> Excel's (YEAR, MONTH, DAY, WEEKDAY)
EARLY_SERIALS = {
    0: (1900, 1, 0, 7),  # 1900-01-00, a Saturday
    1: (1900, 1, 1, 1),
    31: (1900, 1, 31, 3),
    32: (1900, 2, 1, 4),
    59: (1900, 2, 28, 3),
    60: (1900, 2, 29, 4),  # the day that never was
    61: (1900, 3, 1, 5),
    0.75: (1900, 1, 0, 7),
}
FUNCTIONS = ("YEAR", "MONTH", "DAY", "WEEKDAY")


def early_serials_workbook() -> openpyxl.Workbook:
    """Serial k in column A with YEAR..WEEKDAY of it beside; `serial` names A1 (an input)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Dates"
    for row, serial in enumerate(EARLY_SERIALS, start=1):
        ws.cell(row, 1, serial)
        for col, function in enumerate(FUNCTIONS, start=2):
            ws.cell(row, col, f"={function}(A{row})")
    add_name(wb, "serial", "Dates!$A$1")
    add_name(wb, "parts", "Dates!$B$1:$E$1")
    add_name(wb, "table", f"Dates!$B$1:$E${len(EARLY_SERIALS)}")
    return wb


def test_year_month_day_weekday_of_serials_0_to_60_are_excels_in_a_job():
    # GIVEN the workbook uploaded and stored for jobs
    workbook, stored = uploaded_and_stored(to_bytes(early_serials_workbook()))

    for loaded in (workbook, stored):
        # WHEN a job calculates it
        table = loaded.calculate({}, ["table"])["table"]

        # THEN every row is Excel's reading of its serial
        assert table == [list(parts) for parts in EARLY_SERIALS.values()]


def test_a_job_input_between_0_and_60_gets_excels_date_parts():
    # GIVEN the workbook; WHEN a job writes serial 60 and then 45000 into A1
    workbook = get_engine("ironcalc").load_xlsx(to_bytes(early_serials_workbook()))

    # THEN 60 is 1900-02-29, a Wednesday (4), and 45000 (2023-03-15) is IronCalc's reading too
    assert workbook.calculate({"serial": 60}, ["parts"])["parts"] == [1900, 2, 29, 4]
    assert workbook.calculate({"serial": 45000}, ["parts"])["parts"] == [2023, 3, 15, 4]


def test_the_upload_check_matches_excel_on_every_early_serial():
    # GIVEN the workbook with Excel's values saved
    cached = {
        f"Dates!{column}{row}": value
        for row, parts in enumerate(EARLY_SERIALS.values(), start=1)
        for column, value in zip("BCDE", parts)
    }
    data = excel_saved(early_serials_workbook(), cached)

    # WHEN it is checked
    report = check(data, "ironcalc")

    # THEN every cell matches
    assert report.cells_matching == report.cells_compared == len(cached), report.mismatches


# (formula, Excel's value): DATE counts days from the month's first day (Microsoft: DATE
# function), with Excel's first days of January-March 1900 at serials 1, 32 and 61
DATE_CASES = [
    ("=DATE(1900,2,29)", 60),
    ("=DATE(1900,1,0)", 0),
    ("=DATE(1900,1,1)", 1),
    ("=DATE(1900,3,1)", 61),
    ("=DATE(1900,3,0)", 60),
    ("=DATE(2020,5,15)", 43966),
    ("=DAY(DATE(1900,2,29))", 29),
    ("=MONTH(DATE(1900,2,29))", 2),
    ("=YEAR(DATE(2020,14,1))", 2021),
]


def test_date_before_march_1900_and_date_parts_of_a_computed_date_are_excels():
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "D"
    for row, (formula, _) in enumerate(DATE_CASES, start=1):
        ws.cell(row, 1, formula)
    add_name(wb, "results", f"D!$A$1:$A${len(DATE_CASES)}")

    results = get_engine("ironcalc").load_xlsx(to_bytes(wb)).calculate({})["results"]

    assert results == [value for _, value in DATE_CASES]


def test_arguments_that_may_be_arrays_are_left_alone():
    # GIVEN DAY over a range inside SUMPRODUCT, and DAY of a function's result
    wb = early_serials_workbook()
    wb["Dates"]["G1"] = "=SUMPRODUCT(DAY(A2:A3))"
    wb["Dates"]["G2"] = "=DAY(MAX(A1:A3))"

    # WHEN it is loaded
    _, _, fixes = get_engine("ironcalc")._load(to_bytes(wb))

    # THEN neither is rewritten
    rewritten = {(w.row, w.col) for w in fixes.rewrites}
    assert (1, 7) not in rewritten and (2, 7) not in rewritten


def test_the_1904_date_system_moves_every_date_function_across():
    # GIVEN a 1904 workbook: 42369 is 2020-01-01 there (43831 - 1462)
    wb = openpyxl.Workbook()
    wb.epoch = CALENDAR_MAC_1904
    ws = wb.active
    ws.title = "Mac"
    ws["A1"] = 42369
    cases = {
        "B1": ("=YEAR(A1)", 2020),
        "C1": ("=MONTH(A1)+DAY(A1)", 2),
        "D1": ("=WEEKDAY(A1)", 4),  # a Wednesday
        "E1": ("=DATE(2020,1,1)", 42369),
        "F1": ("=DATE(1904,1,1)", 0),  # the system's first day
        "G1": ("=EOMONTH(A1,1)", 42428),  # 2020-02-29
        "H1": ("=DAY(DATE(2020,3,15))", 15),
        "I1": ('=DATEVALUE("2020-01-01")', 42369),
        "J1": ("=EDATE(A1,12)-A1", 366),
    }
    for cell, (formula, _) in cases.items():
        ws[cell] = formula
        add_name(wb, f"out_{cell.lower()}", f"Mac!${cell[0]}${cell[1:]}")

    # WHEN a job calculates it
    outputs = get_engine("ironcalc").load_xlsx(to_bytes(wb)).calculate({})

    # THEN each function reads and answers 1904 serials
    assert outputs == {f"out_{c.lower()}": v for c, (_, v) in cases.items()}


def test_a_workbook_without_date_functions_is_not_touched():
    wb = openpyxl.Workbook()
    wb.active["A1"], wb.active["A2"] = 3, "=A1*2"
    _, _, fixes = get_engine("ironcalc")._load(to_bytes(wb))
    assert not fixes


@pytest.mark.parametrize("name", ["DAY", "MONTH", "YEAR"])
def test_excel_saved_docs_workbooks_match_on_every_cell(name):
    # GIVEN IronCalc's DAY/MONTH/YEAR documentation workbooks as Excel saved them (serials 0
    # and 1-60, DATE(1900,2,29); IronCalc alone misses 4, 3 and 2 of their 30 cells)
    path = corpus_file(f"ironcalc/xlsx/tests/docs/{name}.xlsx")

    # WHEN IronCalc with the layer checks one
    report = check(path.read_bytes(), "ironcalc")

    # THEN every cell has Excel's saved value, FORMULATEXT of the rewritten cells included
    assert report.cells_matching == report.cells_compared, report.mismatches


def test_excel_saved_date_parts_of_false_and_true_match():
    # GIVEN pycel's date-time.xlsx as Excel saved it: DAY, MONTH, WEEKDAY and YEAR of FALSE
    # (serial 0) and TRUE (serial 1) in N1 and O1 (IronCalc alone: #NUM!, 31, 12, 1899)
    report = check(corpus_file("pycel/tests/fixtures/date-time.xlsx").read_bytes(), "ironcalc")

    # WHEN IronCalc with the layer checks it
    missed = {(m["sheet"], m["cell"]) for m in report.mismatches}

    # THEN those cells have Excel's saved values
    for cell in ("N9", "O9", "N17", "O17", "N25", "N29", "O29"):
        assert ("Sheet1", cell) not in missed


def test_dates_in_and_out_of_a_1904_workbook_are_the_days_the_user_means():
    # GIVEN a 1904 workbook with a date input (A1) and a date output a month later (B1)
    wb = openpyxl.Workbook()
    wb.epoch = CALENDAR_MAC_1904
    ws = wb.active
    ws.title = "Mac"
    ws["A1"] = 42369  # 2020-01-01 in the 1904 system
    ws["B1"] = "=A1+31"
    ws["C1"] = "=YEAR(A1)"
    for cell in ("A1", "B1"):
        ws[cell].number_format = "yyyy-mm-dd"
    add_name(wb, "start", "Mac!$A$1")
    add_name(wb, "later", "Mac!$B$1")
    add_name(wb, "year", "Mac!$C$1")
    workbook, stored = uploaded_and_stored(to_bytes(wb))

    for loaded in (workbook, stored):
        # WHEN jobs send no date and then 2024-02-29
        # THEN the dates out are those days, and the workbook's functions read the input right
        assert loaded.calculate({}) == {"later": "2020-02-01", "year": 2020}
        assert loaded.calculate({"start": "2024-02-29"}) == {"later": "2024-03-31", "year": 2024}


def test_a_date_before_1904_for_a_1904_workbook_is_refused_clearly():
    wb = openpyxl.Workbook()
    wb.epoch = CALENDAR_MAC_1904
    wb.active["A1"] = 42369
    wb.active["A1"].number_format = "yyyy-mm-dd"
    add_name(wb, "start", "Sheet!$A$1")
    workbook = get_engine("ironcalc").load_xlsx(to_bytes(wb))

    with pytest.raises(InputValidationError, match="from 1904-01-01 on"):
        workbook.calculate({"start": "1903-12-31"})


def test_hour_minute_second_read_the_time_rounded_to_the_nearest_second():
    # GIVEN HOUR, MINUTE and SECOND of an input time, and the serials pycel's date-time.xlsx
    # holds with Excel's answers: 0.675 days as a sum leaves it (0.6749999999999999, 16:11:59.99999),
    # which Excel reads as 16:12:00; PI() days is 3:23:53.6, whose SECOND Excel saved as 54
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = 0.5
    ws["B1"], ws["C1"], ws["D1"] = "=HOUR(A1)", "=MINUTE(A1)", "=SECOND(A1+0)"
    add_name(wb, "time", "Sheet!$A$1")
    add_name(wb, "parts", "Sheet!$B$1:$D$1")
    workbook = get_engine("ironcalc").load_xlsx(to_bytes(wb))

    # WHEN jobs write those serials in
    # THEN the parts are Excel's (IronCalc alone drops the fraction of a second: 53)
    assert workbook.calculate({"time": 0.6749999999999999}, ["parts"])["parts"] == [16, 12, 0]
    assert workbook.calculate({"time": 3.141592653589793}, ["parts"])["parts"] == [3, 23, 54]
    # AND what is not a time of day is still IronCalc's: text it reads, a negative number #NUM!
    assert workbook.calculate({"time": "6:45 PM"}, ["parts"])["parts"] == [18, 45, 0]
    assert workbook.calculate({"time": -1}, ["parts"])["parts"] == ["#NUM!"] * 3


def test_excel_saved_date_time_workbook_matches_on_every_cell():
    # GIVEN pycel's date-time.xlsx as Excel saved it (HOUR, MINUTE, SECOND of fractions of a
    # second, date parts of FALSE and TRUE; IronCalc alone misses 23 of its 180 cells)
    report = check(corpus_file("pycel/tests/fixtures/date-time.xlsx").read_bytes(), "ironcalc")

    # THEN IronCalc with the layer has Excel's value in every cell
    assert report.cells_compared == 180
    assert report.mismatches == []


def test_yearfrac_counts_the_same_fraction_whichever_date_comes_first():
    # GIVEN YEARFRAC of two input dates in every basis, and pycel's Excel-saved answers for
    # 2003-01-01 then 2001-01-02 (yearfrac.xlsx row 8: the later date first)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["A2"] = 37622, 36893
    for col, basis in zip("BCDEF", range(5)):
        ws[f"{col}1"] = f"=YEARFRAC(A1,A2,{basis})"
    ws["G1"] = "=YEARFRAC(A1+0,A2*1,1)"  # dates given by calculations
    add_name(wb, "start", "Sheet!$A$1")
    add_name(wb, "end", "Sheet!$A$2")
    add_name(wb, "fractions", "Sheet!$B$1:$G$1")
    saved = [1.9972222222222222, 1.9972602739726026, 2.025, 1.9972602739726026, 1.9972222222222222, 1.9972602739726026]

    for workbook in uploaded_and_stored(to_bytes(wb)):
        # WHEN a job calculates it, and one with the dates the other way round
        later_first = workbook.calculate({}, ["fractions"])["fractions"]
        earlier_first = workbook.calculate({"start": 36893, "end": 37622}, ["fractions"])["fractions"]

        # THEN both are Excel's (IronCalc alone: #NUM! for actual/actual with the later date first)
        assert later_first == pytest.approx(saved, rel=1e-12)
        assert earlier_first == pytest.approx(saved, rel=1e-12)


def test_yearfrac_in_a_1904_workbook_with_the_later_date_first():
    # GIVEN a 1904 workbook: 42369 is 2020-01-01 and 42734 2020-12-31 there
    wb = openpyxl.Workbook()
    wb.epoch = CALENDAR_MAC_1904
    ws = wb.active
    ws["A1"], ws["A2"] = 42734, 42369
    ws["B1"] = "=YEARFRAC(A1,A2,1)"
    add_name(wb, "fraction", "Sheet!$B$1")

    # WHEN a job calculates it
    fraction = get_engine("ironcalc").load_xlsx(to_bytes(wb)).calculate({}, ["fraction"])["fraction"]

    # THEN it is 365 days of the leap year 2020, actual/actual
    assert fraction == pytest.approx(365 / 366, rel=1e-12)


def test_excel_saved_yearfrac_workbook_matches_in_every_cell():
    # GIVEN pycel's yearfrac.xlsx as Excel saved it: 370 pairs of dates by 5 bases, 152 of them
    # with the later date first, and rows of error and out-of-range arguments
    report = check(corpus_file("pycel/tests/fixtures/yearfrac.xlsx").read_bytes(), "ironcalc")

    # THEN every date pair is Excel's, the basis's error or range is answered before a date's
    # error (P3: #NUM! for basis -1 and a #DIV/0! date), US 30/360 counts serials 1-59 on
    # Excel's calendar (K4: YEARFRAC(1,200,0) 0.5472, IronCalc alone 0.55), and European 30/360
    # counts from serial 0 (M5, R5: 0.55 and 1/360; IronCalc alone #NUM!)
    assert report.cells_compared == 2737
    assert report.mismatches == []


def test_yearfrac_from_a_start_date_left_blank_counts_from_the_date_0():
    # GIVEN YEARFRAC of a start date input and the serial 200 (1900-07-18), US and European
    # 30/360, and Excel's answers from the date 0 (pycel's yearfrac.xlsx M4 and M5: 0.55 both)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = 45000
    ws["B1"], ws["C1"] = "=YEARFRAC(A1,200)", "=YEARFRAC(A1,200,4)"
    add_name(wb, "start", "Sheet!$A$1")
    add_name(wb, "fractions", "Sheet!$B$1:$C$1")

    for workbook in uploaded_and_stored(to_bytes(wb)):
        # WHEN a job leaves the start date blank
        fractions = workbook.calculate({"start": None}, ["fractions"])["fractions"]

        # THEN the blank cell is the date 0, as in Excel (IronCalc alone: #NUM! for both)
        assert fractions == pytest.approx([0.55, 0.55], rel=1e-12)


# start serial -> Excel's (EDATE(s,1), EOMONTH(s,0), EOMONTH(s,1), WEEKNUM(s), WEEKNUM(s,2), ISOWEEKNUM(s)),
# worked on Excel's calendar: January 1900 has days 0-31, February 29 (60 the phantom 29th),
# 1900-01-01 a Sunday; EDATE clamps to the target month's last day, day 0 is the day before
# the first; WEEKNUM's week 1 holds 1 January, weeks from Sunday (1) or Monday (2); ISO weeks
# from Monday, week 1 holding the first Thursday (5 January 1900), so 0 and 1 are week 52.
EARLY_CALENDAR = {
    None: (31, 31, 60, 0, 1, 52),  # a blank cell: serial 0, 1900-01-00 (a Saturday)
    1: (32, 31, 60, 1, 1, 52),
    2: (33, 31, 60, 1, 2, 1),  # Monday 2 January
    31: (60, 31, 60, 5, 6, 5),  # 31 January + 1 month: the phantom 29 February
    45: (74, 60, 91, 7, 8, 7),  # 14 February + 1 month: 14 March (61 is 1 March)
    60: (89, 60, 91, 9, 10, 9),  # 29 February + 1 month: 29 March
}


def test_edate_eomonth_and_week_numbers_of_serials_0_to_60_are_excels():
    # GIVEN a start date (an input, left blank or a serial) and the five functions of it
    cells = {
        "C1": "=EDATE(A1,1)", "C2": "=EOMONTH(A1,0)", "C3": "=EOMONTH(A1,1)",
        "C4": "=WEEKNUM(A1)", "C5": "=WEEKNUM(A1,2)", "C6": "=ISOWEEKNUM(A1)",
    }
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet"
    ws["B1"] = "start"
    for address, formula in cells.items():
        ws[address] = formula
    add_name(wb, "start", "Sheet!$A$1")
    outputs = [f"r{i}" for i in range(1, 7)]
    for i, name in enumerate(outputs, start=1):
        add_name(wb, name, f"Sheet!$C${i}")
    workbook, _ = uploaded_and_stored(to_bytes(wb))
    # WHEN jobs send each start date
    for serial, expected in EARLY_CALENDAR.items():
        out = workbook.calculate({} if serial is None else {"start": serial}, outputs)
        # THEN each answer is Excel's (IronCalc alone: #NUM! for 0, a day off for 1-60)
        assert tuple(out[name] for name in outputs) == expected, serial
    # AND later dates are IronCalc's as before: 15 May 2024 (45427)
    out = workbook.calculate({"start": 45427}, outputs)
    assert tuple(out[name] for name in outputs) == (45458, 45443, 45473, 20, 20, 20)


def test_a_date_written_out_from_march_1900_on_is_left_to_the_engine():
    from shared.calc.corrections.dates import rewrite_formula

    # IronCalc's DATE is Excel's there: the formula keeps its text (and its route: a TEXT of it
    # is corrected as any TEXT is, not as an Excel 365 formula)
    assert rewrite_formula('=TEXT(DATE(2024,1,15),"yyyy-mm-dd")', False) is None
    assert rewrite_formula("=DATE(2024,14,-3)", False) is None
    assert rewrite_formula("=DATE(99,1,1)", False) is None
    # before it, or from cells, Excel's count of the first months of 1900 is written in
    for formula in ("=DATE(1900,2,29)", "=DATE(1900,2,31)", "=DATE(1900,1,62)", "=DATE(A1,1,1)"):
        assert "sheetcalc_date" in rewrite_formula(formula, False)


def test_month_arithmetic_on_a_date_of_early_1900_made_by_date():
    # EDATE and EOMONTH of a computed date are IronCalc's; the DATE inside them stays IronCalc's
    # too, so both count on one calendar: the end of February 1900 is Excel's serial 60 (its
    # 29 February) and a month after 15 February 1900 is 15 March, 75 ("Excel incorrectly assumes
    # that the year 1900 is a leap year"; EOMONTH and EDATE pages)
    data = named_formulas({"end": "=EOMONTH(DATE(1900,2,1),0)", "next": "=EDATE(DATE(1900,2,15),1)",
                           "later": "=EOMONTH(DATE(2024,2,10),0)"})
    for workbook in uploaded_and_stored(data):
        assert workbook.calculate({}) == {"end": 60, "next": 75, "later": 45351}


def test_datedif_md_counts_from_the_start_day_in_the_month_before_the_end():
    # DATEDIF page: "MD" may be negative; the day is put in the month before the end's as DATE
    # puts it (31 October to 21 March 2000: from 2 March, 19; to 1 March, -1); a job's dates
    # are followed (18 June 2020 to 15 January 2024: 28). IronCalc alone answers 21 and 1.
    from .conftest import named_formulas, uploaded_and_stored

    data = named_formulas({"md": '=DATEDIF(A1,A2,"md")', "ym": '=DATEDIF(A1,A2,"ym")'},
                          column="D", cells={"A1": 36099, "A2": 36606}, names={"start": "$A$1", "end": "$A$2"})
    for workbook in uploaded_and_stored(data):
        assert workbook.calculate({}) == {"md": 19, "ym": 4}
        assert workbook.calculate({"end": 36586}) == {"md": -1, "ym": 4}
        assert workbook.calculate({"start": 44000, "end": 45306}) == {"md": 28, "ym": 6}
