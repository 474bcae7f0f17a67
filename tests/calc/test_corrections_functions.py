"""Functions we evaluate ourselves after IronCalc (shared/calc/corrections/functions/).

Expected values are Excel's: the examples on Microsoft's function pages (support.microsoft.com:
"TEXT function", "Number format codes", "AGGREGATE function", "BIN2DEC function" and the other
base conversions), and values Excel saved in the corpus (tests/corpus/: pycel tests/fixtures/text.xlsx,
IronCalc xlsx/tests TEXT.xlsx), named where used.
"""

import io
import zipfile

import openpyxl
import pytest

from shared.calc.corrections.functions.aggregate import ExcelError, Item, aggregate
from shared.calc.corrections.functions.bases import convert
from shared.calc.corrections.functions.text_format import Unsupported, excel_text

from .conftest import add_name

# --- TEXT ----------------------------------------------------------------------------------

MICROSOFT_TEXT_EXAMPLES = [  # the TEXT function page's examples
    (1234.567, "$#,##0.00", "$1,234.57"),
    (0.285, "0.0%", "28.5%"),
    (4.34, "# ?/?", "4 1/3"),
    (12200000, "0.00E+00", "1.22E+07"),
    (1234567898, "[<=9999999]###-####;(###) ###-####", "(123) 456-7898"),
    (1234, "0000000", "0001234"),
    (123456, "##0° 00' 00''", "12° 34' 56''"),
]

MICROSOFT_NUMBER_FORMAT_EXAMPLES = [  # "Review guidelines for customizing a number format"
    (1234.59, "####.#", "1234.6"),
    (8.9, "#.000", "8.900"),
    (0.631, "0.#", "0.6"),
    (12, "#.0#", "12.0"),
    (12200000, "#,###.0,", "12,200.0"),
]


@pytest.mark.parametrize("value, code, expected", MICROSOFT_TEXT_EXAMPLES + MICROSOFT_NUMBER_FORMAT_EXAMPLES)
def test_text_follows_microsofts_examples(value, code, expected):
    assert excel_text(value, code) == expected


def test_text_fraction_without_a_whole_part_trims_to_the_fraction():
    # TEXT page: =TRIM(TEXT(0.34,"# ?/?")) is "1/3"
    assert excel_text(0.34, "# ?/?").strip() == "1/3"
    # number-format page: 5.25 with "# ???/???" shows 5 1/4 (placeholders padded with spaces)
    assert excel_text(5.25, "# ???/???").split() == ["5", "1/4"]


EXCEL_SAVED = [  # (value, format, what Excel saved), pycel text.xlsx unless said
    ("2007-02-03 19:08:07.0123", "[h]", "938803"),
    (39116.79730339468, "[m]", "56328188"),
    (39116.79730339468, "[s]", "3379691287"),
    (-1, "##.00;-  ##.0;\"ZERO\"", "-  1.0"),
    (0, "##.00;-  ##.0;\"ZERO\"", "ZERO"),
    ("X", "##.00;-  ##.0;\"ZERO\";->@<-@", "->X<-X"),
    ("X", ";-  ##.0;\"ZERO\"@;\"X\"", "#VALUE!"),
    (0, "\"-> \"#.00;-#;\"SS\"m;\"ZERO\"@", "SS1"),
    (2958465, "[hh]", "71003160"),
    (2958466, "h", "#VALUE!"),
    (-1, "[h]", "-24"),
    (-1, "[h]:m", "#VALUE!"),
    (0, "[h]:m", "0:0"),
    (0, "[s].000", "0.000"),
    (1234567.89, "#,#\"ZZ\"#.0\"YY\"00", "1,234,56ZZ7.8YY90"),
    (None, "#,#\"ZZ\"#.0Y00", "#VALUE!"),
    (-1, "w;x;z@", "x"),
    (0, "w;x;z", "z"),
    (-1, "", "-"),
    ("Plugh", "", "Plugh"),
    (-1, "w;x@", "-w"),
    (890123.456789, "#.###.#.#.#", "890123.456.7.8.9"),
    (890123.456789, "#x,0,#.00.0", "890,1x,23.45.7"),
    (890123.456789, "%#%#%", "%89012345678%9%"),
    (890123.456789, "#.#####00#0", "890123.45678900"),
    (1234.56, "$x*y#,##0* ", "$x1,235"),
    (1, "#.###", "1."),
    (True, "#.###", "TRUE"),
    ("1.001", "#.##", "1."),
    # formulas test.xlsx, sheet EXTRA
    (1234, "5000700", "5012734"),
    (1, "[<=1]x;[<=2]a;b", "x"),
    (2, "[<=1]a;[=2]xx;xcx", "xx"),
    (130.63332, "h hh hhh hhhh", "15 15 15 15"),
    (130, "m mm mmm mmmm mmmmm mmmmmm mmmmmmm", "5 05 May May M May May"),
    # IronCalc TEXT.xlsx: small negatives that round to zero lose their sign
    (-0.0001, "0.00", "0.00"),
    (41181, "ddddd/mmmmm/yyyyy", "Saturday/S/2012"),
    (41181, "dd/mm--yy", "29/09--12"),
]


@pytest.mark.parametrize("value, code, expected", EXCEL_SAVED)
def test_text_matches_what_excel_saved(value, code, expected):
    assert excel_text(value, code) == expected


TIMES_IN_TEXT = [  # pycel text.xlsx, sheet TextDates: text Excel reads as a time, or leaves as text
    ("0:59:99", "#.#####", ".04212"),
    ("60:99", "#.#####", "60:99"),
    ("23:99", "#.#####", "1.02708"),
    ("24:99", "#.#####", "24:99"),
    ("23:9999", "#.#####", "7.90208"),
    ("23:10000", "#.#####", "23:10000"),
    ("0:0:9999", "#.#####", ".11573"),
    ("0:0:10000", "#.#####", "0:0:10000"),
    ("23:59:9999", "#.#####", "1.11503"),
    ("23:60:9999", "#.#####", "23:60:9999"),
    ("59:9999.0", "#.#####", ".1567"),
    ("59:10000.0", "#.#####", "59:10000.0"),
    ("23:59.012345", "#.#######", ".0166552"),
    ("59:9999.012345", "0.########", "0.15670153"),
    ("60:9999.012345", "#.########", "60:9999.012345"),
    ("59:9999.012345789", "#.########", ".15670153"),
    ("23:59.:0", "#.###########", "23:59.:0"),
    ("23:59.", "#.###########", ".99930555556"),
    ("23.:59", "#.###########", "23.:59"),
    ("-1", '##.00;-  ##.0;"ZERO"', "-  1.0"),
]


@pytest.mark.parametrize("value, code, expected", TIMES_IN_TEXT)
def test_text_reads_times_in_text_as_excel_does(value, code, expected):
    assert excel_text(value, code) == expected


def test_text_reads_an_iso_date_in_text_in_the_workbooks_date_system():
    # pycel text.xlsx TextDates!C2: 2007-02-03 19:08:07 is serial 39116.797..., 938803 hours
    assert excel_text("2007-02-03 19:08:07.0123", "[h]") == "938803"
    assert excel_text("2007-02-03", "0") == "39116"
    assert excel_text("2007-02-03", "0", date1904=True) == str(39116 - 1462)
    with pytest.raises(Unsupported):
        excel_text("25:30", "0.00")  # a duration above 23 hours: not settled by Excel's files


# --- AGGREGATE (the AGGREGATE function page's example) -------------------------------------

COLUMN_A = ["#DIV/0!", 72, 30, "#NUM!", 31, 96, 32, 81, 33, 53, 34]
COLUMN_B = [82, 65, 95, 63, 53, 71, 55, 83, 100, 91, 89]


def items(values):
    return [Item("e", v) if isinstance(v, str) else Item("n", float(v)) for v in values]


def test_aggregate_follows_microsofts_example():
    assert aggregate(4, 6, [items(COLUMN_A)]) == 96
    assert aggregate(14, 6, [items(COLUMN_A), [Item("n", 3.0)]]) == 72
    assert aggregate(12, 6, [items(COLUMN_A), items(COLUMN_B)]) == 68
    with pytest.raises(ExcelError) as missing_k:
        aggregate(15, 6, [items(COLUMN_A)])
    assert missing_k.value.code == "#VALUE!"


def test_aggregate_without_ignoring_errors_answers_the_first_error():
    with pytest.raises(ExcelError) as error:
        aggregate(4, 4, [items(COLUMN_A)])
    assert error.value.code == "#DIV/0!"


# --- base conversions (each function page's examples) ------------------------------------------

BASE_EXAMPLES = [
    ("BIN", "DEC", 1100100, None, 100), ("BIN", "DEC", 1111111111, None, -1),
    ("BIN", "HEX", 11111011, 4, "00FB"), ("BIN", "HEX", 1110, None, "E"),
    ("BIN", "HEX", 1111111111, None, "FFFFFFFFFF"),
    ("BIN", "OCT", 1001, 3, "011"), ("BIN", "OCT", 1100100, None, "144"),
    ("BIN", "OCT", 1111111111, None, "7777777777"),
    ("DEC", "BIN", 9, 4, "1001"), ("DEC", "BIN", -100, None, "1110011100"),
    ("DEC", "HEX", 100, 4, "0064"), ("DEC", "HEX", -54, None, "FFFFFFFFCA"),
    ("DEC", "HEX", 28, None, "1C"), ("DEC", "HEX", 64, 1, "#NUM!"),
    ("DEC", "OCT", 58, 3, "072"), ("DEC", "OCT", -100, None, "7777777634"),
    ("HEX", "BIN", "F", 8, "00001111"), ("HEX", "BIN", "B7", None, "10110111"),
    ("HEX", "BIN", "FFFFFFFE00", None, "1000000000"),
    ("HEX", "DEC", "A5", None, 165), ("HEX", "DEC", "FFFFFFFF5B", None, -165),
    ("HEX", "DEC", "3DA408B9", None, 1034160313),
    ("HEX", "OCT", "F", 3, "017"), ("HEX", "OCT", "3B4E", None, "35516"),
    ("HEX", "OCT", "FFFFFFFF00", None, "7777777400"),
    ("OCT", "BIN", 3, 3, "011"), ("OCT", "BIN", 7777777000, None, "1000000000"),
    ("OCT", "DEC", 54, None, 44), ("OCT", "DEC", 7777777533, None, -165),
    ("OCT", "HEX", 100, 4, "0040"), ("OCT", "HEX", 7777777533, None, "FFFFFFFF5B"),
]


@pytest.mark.parametrize("source, target, number, places, expected", BASE_EXAMPLES)
def test_base_conversions_follow_microsofts_examples(source, target, number, places, expected):
    argument = float(number) if isinstance(number, int) else number
    result = convert(source, target, argument, None if places is None else float(places))
    if isinstance(result, tuple):
        result = result[1]
    assert result == expected


def test_base_conversion_errors_follow_the_documented_rules():
    assert convert("BIN", "DEC", "12", None) == ("error", "#NUM!")  # not a binary digit
    assert convert("BIN", "DEC", "10000000000", None) == ("error", "#NUM!")  # 11 characters
    assert convert("DEC", "BIN", 512.0, None) == ("error", "#NUM!")  # above 511
    assert convert("DEC", "BIN", 5.0, 0.0) == ("error", "#NUM!")  # places zero
    assert convert("DEC", "BIN", "abc", None) == ("error", "#VALUE!")


# --- through the engine ----------------------------------------------------------------------


def corrected_workbook() -> openpyxl.Workbook:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Calc"
    # Column A of the AGGREGATE example: errors made by formulas, numbers as they are.
    ws["A1"], ws["A4"] = "=1/0", "=SQRT(-1)"
    for row, value in enumerate(COLUMN_A, start=1):
        if not isinstance(value, str):
            ws.cell(row, 1, value)
    ws["C1"] = "=_xlfn.AGGREGATE(4,6,A1:A11)"  # 96 in Excel; IronCalc: #NAME?
    ws["C2"] = "=C1+1"  # a dependant sees the corrected value
    ws["D1"] = 4.34
    ws["D2"] = '=TEXT(D1,"# ?/?")'  # "4 1/3" in Excel; IronCalc: wrong text
    ws["D3"] = '=TEXT(D2,"@")&"!"'  # a corrected cell depending on another
    ws["E1"] = 1
    ws["E2"] = "=E1*2"
    add_name(wb, "rate", "Calc!$D$1")
    add_name(wb, "top", "Calc!$C$2")
    add_name(wb, "fraction", "Calc!$D$3")
    add_name(wb, "doubled", "Calc!$E$2")
    return wb


def test_dependants_see_the_corrected_values(load):
    book = load(corrected_workbook())
    assert book.calculate({}) == {"top": 97, "fraction": "4 1/3!", "doubled": 2}
    assert book.calculate({"rate": 5.25}, outputs=["fraction"]) == {"fraction": "5 1/4!"}


def test_the_exported_workbook_keeps_the_formulas_with_the_corrected_values(load):
    book = load(corrected_workbook())
    book.calculate({})
    exported = book.to_xlsx()
    formulas = openpyxl.load_workbook(io.BytesIO(exported))["Calc"]
    values = openpyxl.load_workbook(io.BytesIO(exported), data_only=True)["Calc"]
    assert formulas["C1"].value.upper() == "=_XLFN.AGGREGATE(4,6,A1:A11)"
    assert formulas["D2"].value == '=TEXT(D1,"# ?/?")'
    assert (values["C1"].value, values["C2"].value, values["D2"].value) == (96, 97, "4 1/3")
    assert zipfile.ZipFile(io.BytesIO(exported)).testzip() is None


def test_a_workbook_without_corrected_functions_has_no_plan(load):
    wb = openpyxl.Workbook()
    wb.active["A1"], wb.active["A2"] = 2, "=A1*3"
    add_name(wb, "out", "Sheet!$A$2")
    book = load(wb)
    assert book._corrections is None
    assert book.calculate({}) == {"out": 6}


def test_a_format_outside_the_implementation_is_flagged_not_guessed(load):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = 45000
    ws["A2"] = '=TEXT(A1,"[DBNum1]0")'
    add_name(wb, "out", "Sheet!$A$2")
    book = load(wb)
    book.calculate({})
    flags = book.correction_flags()
    assert [(f.sheet, f.cell) for f in flags] == [("Sheet", "A2")]
    assert "[DBNum1]" in flags[0].reason


def test_the_fidelity_check_names_the_cells_it_could_not_correct():
    from shared.calc.fidelity.check import check

    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["B1"], ws["B2"] = 45000, 5, "=1/0"
    ws["A2"] = '=TEXT(A1,"[DBNum1]0")'  # a Chinese-numeral format: not implemented
    ws["A3"] = "=_xlfn.AGGREGATE(9,6,Rate)"  # a defined name as the reference: resolved
    add_name(wb, "Rate", "Sheet!$B$1:$B$2")
    buffer = io.BytesIO()
    wb.save(buffer)
    report = check(buffer.getvalue(), "ironcalc")
    assert report.unsupported_functions == ["TEXT at Sheet!A2 (format code [DBNum1])"]


def test_text_reads_dates_in_the_workbooks_date_system(load, engine):
    # Microsoft, "Date systems in Excel": in the 1904 date system serial 0 is 1 January 1904
    # (a Friday); in the 1900 system serial 1 is 1 January 1900 and 61 is 1 March 1900.
    assert excel_text(0, "dddd yyyy-mm-dd", date1904=True) == "Friday 1904-01-01"
    assert excel_text(61, "dddd d mmmm yyyy") == "Thursday 1 March 1900"
    wb = openpyxl.Workbook()
    wb.epoch = openpyxl.utils.datetime.CALENDAR_MAC_1904
    wb.active["A1"] = 366
    wb.active["A2"] = '=TEXT(A1,"yyyy-mm-dd")'
    add_name(wb, "day", "Sheet!$A$1")
    add_name(wb, "shown", "Sheet!$A$2")
    book = load(wb)
    assert book.calculate({}, outputs=["shown"]) == {"shown": "1905-01-01"}
    again = engine.load_serialized(book.serialize())  # the stored model keeps the date system
    assert again.calculate({"day": 0}, outputs=["shown"]) == {"shown": "1904-01-01"}


# --- SUMX2MY2, SUMX2PY2, SUMXMY2 (each function page's example and rules) -----------------

X_VALUES, Y_VALUES = [2, 3, 9, 1, 8, 7, 5], [6, 5, 11, 7, 5, 4, 4]


def test_sums_of_pairs_follow_microsofts_examples():
    from shared.calc.corrections.functions.sums import sum_of_pairs

    xs, ys = [("n", float(v)) for v in X_VALUES], [("n", float(v)) for v in Y_VALUES]
    assert sum_of_pairs("SUMX2MY2", xs, ys) == -55
    assert sum_of_pairs("SUMX2PY2", xs, ys) == 521
    assert sum_of_pairs("SUMXMY2", xs, ys) == 79


def test_sums_of_pairs_drop_pairs_with_text_logicals_or_blanks_and_refuse_unequal_sizes(load):
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, (x, y) in enumerate(zip([2, "x", None, True, 8], [6, 5, 11, 7, None]), start=1):
        ws.cell(row, 1, x)
        ws.cell(row, 2, y)
    ws["D1"] = "=SUMX2MY2(A1:A5,B1:B5)"  # only (2, 6) counts: 4 - 36
    ws["D2"] = "=SUMXMY2(A1:A5,B1:B5)"  # (2 - 6)^2
    ws["D3"] = "=SUMXMY2(A1:A3,B1:B2)"  # different numbers of values: #N/A
    add_name(wb, "sums", "Sheet!$D$1:$D$3")
    assert load(wb).calculate({}) == {"sums": [-32, 16, "#N/A"]}


def test_aggregate_options_ignore_hidden_rows_and_nested_subtotals_of_a_plain_range(load):
    # The options table of Microsoft's AGGREGATE page, and its note that a calculated array
    # ignores neither hidden rows nor nested SUBTOTAL/AGGREGATE.
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, value in enumerate([10, 20, 30, 40], start=1):
        ws.cell(row, 1, value)
    ws["A5"] = "=SUBTOTAL(9,A1:A4)"  # 100
    ws.row_dimensions[2].hidden = True  # hides the 20
    ws["C1"] = "=_xlfn.AGGREGATE(9,0,A1:A5)"  # nested SUBTOTAL ignored: 100
    ws["C2"] = "=_xlfn.AGGREGATE(9,4,A1:A5)"  # nothing ignored: 200
    ws["C3"] = "=_xlfn.AGGREGATE(9,5,A1:A5)"  # hidden row ignored: 180
    ws["C4"] = "=_xlfn.AGGREGATE(9,1,A1:A5)"  # both: 80
    ws["C5"] = "=_xlfn.AGGREGATE(9,1,A1:A5*1)"  # a calculation: nothing ignored, 200
    ws["C6"] = "=_xlfn.AGGREGATE(14,5,A1:A4,2)"  # second largest of 10, 30, 40: 30
    add_name(wb, "sums", "Sheet!$C$1:$C$6")
    assert load(wb).calculate({}) == {"sums": [100, 200, 180, 80, 200, 30]}


def test_aggregate_reads_a_whole_column_up_to_the_last_used_row(load):
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, value in enumerate([10, 20, 30, 40], start=1):
        ws.cell(row, 1, value)
    ws["A6"] = "=1/0"
    ws["C1"] = "=_xlfn.AGGREGATE(14,6,A:A,2)"  # errors ignored: 30
    ws["C2"] = "=_xlfn.AGGREGATE(9,4,$A:$A)"  # nothing ignored: the #DIV/0!
    add_name(wb, "large", "Sheet!$C$1:$C$2")
    add_name(wb, "more", "Sheet!$A$7")
    book = load(wb)
    assert book.calculate({}) == {"large": [30, "#DIV/0!"]}
    ws_more = book.calculate({"more": 35}, outputs=["large"])  # an input below the used rows
    assert ws_more == {"large": [35, "#DIV/0!"]}


def test_a_stored_model_without_corrected_functions_skips_the_scan(load, engine):
    wb = openpyxl.Workbook()
    wb.active["A1"], wb.active["A2"] = 2, "=A1*3"
    add_name(wb, "out", "Sheet!$A$2")
    again = engine.load_serialized(load(wb).serialize())
    assert again._corrections is None
    assert again.calculate({}) == {"out": 6}


def test_a_failure_inside_the_layer_keeps_the_calculation_and_flags_the_cells(load, monkeypatch):
    from shared.calc.corrections.functions import layer

    book = load(corrected_workbook())
    monkeypatch.setattr(layer, "_evaluate", lambda *a: 1 / 0)
    assert book.calculate({}, outputs=["doubled"]) == {"doubled": 2}
    assert {f.cell for f in book.correction_flags()} == {"C1", "D2", "D3"}


def test_sums_of_pairs_without_a_pair_of_numbers_are_div0():
    from shared.calc.corrections.functions.sums import ExcelError, sum_of_pairs

    for xs, ys in (([], []), ([("n", 1.0), ("s", "b")], [("s", "x"), ("n", 3.0)])):
        with pytest.raises(ExcelError) as raised:
            sum_of_pairs("SUMXMY2", xs, ys)
        assert raised.value.code == "#DIV/0!"


# --- POWER and ^ beyond the largest number (functions/power.py) ------------------------------


def test_an_overflowing_power_is_num_and_its_dependants_follow(load):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["B1"] = 100, 1e13
    ws["C1"] = "=POWER(A1,B1)"  # #NUM! in Excel; IronCalc: #DIV/0!
    ws["C2"] = "=C1+1"  # a dependant sees the #NUM!
    ws["C3"] = "=1+A1^B1"  # the operator inside a larger formula
    ws["C4"] = "=0^-1"  # zero to a negative power stays #DIV/0!
    ws["C5"] = "=POWER(A1,2)"  # right already: left to IronCalc
    add_name(wb, "out", "Sheet!$C$1:$C$5")
    book = load(wb)
    assert book.calculate({}) == {"out": ["#NUM!", "#NUM!", "#NUM!", "#DIV/0!", 10000]}
    assert book.correction_flags() == []
    formulas = openpyxl.load_workbook(io.BytesIO(book.to_xlsx()))["Sheet"]
    assert formulas["C1"].value == "=POWER(A1,B1)"


def test_a_power_is_compiled_only_when_ironcalc_answers_div0(load, monkeypatch):
    from shared.calc.corrections.functions import layer

    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = 2
    ws["B1"] = "=A1^10+POWER(A1,3)"
    add_name(wb, "out", "Sheet!$B$1")
    book = load(wb)
    monkeypatch.setattr(layer, "_compiled", lambda *a: pytest.fail("compiled a power that did not overflow"))
    assert book.calculate({}) == {"out": 1032}


def test_error_type_of_an_overflowing_power_is_that_of_num(load):
    # Microsoft's ERROR.TYPE page: #DIV/0! is 2, #NUM! 6; an overflowed power is #NUM! in Excel
    # ("How to correct a #NUM! error"), which IronCalc 0.9.1 answers #DIV/0!, and ERROR.TYPE
    # then hides it in the same cell (2, not the #DIV/0! the layer watches for).
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["B1"], ws["A2"] = 100, 1e13, 0
    ws["C1"] = "=ERROR.TYPE(POWER(A1,B1))"
    ws["C2"] = "=IF(ISERROR(A1^B1),ERROR.TYPE(A1^B1),0)"
    ws["C3"] = "=ERROR.TYPE(POWER(100,1E13))"
    ws["C4"] = "=ERROR.TYPE(A2^-1)"  # zero to a negative power is #DIV/0!: 2
    ws["C5"] = "=ERROR.TYPE(A1^2)"  # no error: #N/A
    ws["C6"] = '=IFERROR(A1^B1,"big")'  # either error is an error: IronCalc's answer stands
    add_name(wb, "out", "Sheet!$C$1:$C$6")
    book = load(wb)

    # a job changes the inputs: the cell follows, evaluated in every calculation
    assert book.calculate({}) == {"out": [6, 6, 6, 2, "#N/A", "big"]}
    assert book.calculate({}) == {"out": [6, 6, 6, 2, "#N/A", "big"]}
    assert book.correction_flags() == []
    formulas = openpyxl.load_workbook(io.BytesIO(book.to_xlsx()))["Sheet"]
    assert formulas["C1"].value == "=ERROR.TYPE(POWER(A1,B1))"


def test_error_type_of_a_power_follows_the_inputs_of_a_job(load):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["B1"] = 100, 2
    ws["C1"] = "=IFERROR(ERROR.TYPE(A1^B1),-1)"
    add_name(wb, "exponent", "Sheet!$B$1")
    add_name(wb, "out", "Sheet!$C$1")
    book = load(wb)
    assert book.calculate({}) == {"out": -1}
    assert book.calculate({"exponent": 1e13})["out"] == 6
    assert book.calculate({"exponent": 3})["out"] == -1


def test_error_type_of_a_power_the_bridge_cannot_read_is_flagged_at_load(load):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["B1"] = 100, 1e13
    ws["C1"] = "=ERROR.TYPE(A1^B1)+SUM(D:D)"  # a whole column: not read by the bridge
    add_name(wb, "out", "Sheet!$C$1")
    book = load(wb)
    book.calculate({})
    flags = [str(flag) for flag in book.correction_flags()]
    assert len(flags) == 1 and flags[0].startswith("POWER/^, ERROR.TYPE at Sheet!C1"), flags


def test_the_bridge_evaluates_an_overflowing_power_without_numpy_warnings(load):
    import warnings

    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["B1"] = 100, 1e13
    ws["C1"] = "=POWER(A1,B1)"
    ws["C2"] = "=ERROR.TYPE(POWER(100,1E13))"  # a constant power: formulas folds it compiling
    add_name(wb, "out", "Sheet!$C$1:$C$2")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        book = load(wb)
        assert book.calculate({}) == {"out": ["#NUM!", 6]}


def test_the_rest_of_a_text_formula_calculates_as_excel():
    # TEXT is the layer's in every job, and the rest of its formula with it: ROUND there rounds
    # the number as shown (ROUND page: ROUND(-1.475,2) is -1.48; 1.005 is 1.0049999... in
    # binary), a format joined from literals is one format, a number IronCalc writes with an
    # exponent (1e20) reads as that number
    from .conftest import named_formulas, uploaded_and_stored

    data = named_formulas({
        "rounded": '=TEXT(ROUND(A1,2),"0.00")', "page": '=TEXT(ROUND(-1.475,2),"0.00")',
        "joined": '=TEXT(A2,"0"&".00")', "exponent": '=TEXT(1E+20/1E+18,"0.0")',
        "fixed": '=TEXT(FIXED(A1,2),"@")',
        # IPMT page's terms (a loan paid monthly: the first month's interest is positive), VALUE
        # of text with a group separator, ROWS of a range, ROW of the cell, a "<>" criterion
        # with a wildcard ("<>*": cells holding no text) and one finding blanks and numbers
        "interest": '=TEXT(IPMT(0.05/12,1,360,-200000),"0.00")', "value": '=TEXT(VALUE("1,234.5"),"0.0")',
        "rows": '=TEXT(ROWS(B1:B4),"0")', "row": '=TEXT(ROW(),"0")',
        "not_text": '=TEXT(COUNTIF(B1:B4,"<>*"),"0")', "not_x": '=TEXT(COUNTIF(B1:B4,"<>x"),"0")',
    }, column="D", cells={"A1": 1.005, "A2": 1234.5678, "B1": "x", "B2": 7, "B4": "X"})
    for workbook in uploaded_and_stored(data):
        assert workbook.calculate({}) == {
            "rounded": "1.01", "page": "-1.48", "joined": "1234.57", "exponent": "100.0", "fixed": "1.01",
            "interest": "833.33", "value": "1234.5", "rows": "4", "row": "9", "not_text": "2", "not_x": "2",
        }
        assert workbook.correction_flags() == []
