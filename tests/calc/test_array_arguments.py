"""Arrays given to functions of one value, through the correction layer.

- Inside SUMPRODUCT such a function is applied to each cell of a range, as in every Excel
  (ECMA-376 Part 1, 18.17.7: SUMPRODUCT's argument-list is "array of numbers"; Microsoft's
  SUMPRODUCT page, example 3, multiplies conditions over ranges). IronCalc 0.9.1 reads the range
  as the one cell in the formula's row (it renders `@A1:A5`) and answers a plausible wrong number.
- In a legacy (Ctrl+Shift+Enter) array formula, likewise (Microsoft: "Guidelines and examples of
  array formulas"); IronCalc 0.9.1 answers ISNUMBER, ISTEXT, ROUND, MOD, ... of an array as if
  every element were the first.

Expected values are worked from the data by that rule: how many cells hold an "a", how many
characters there are, and so on.
"""

import datetime
import io
import zipfile

import openpyxl
import pytest
from openpyxl.worksheet.formula import ArrayFormula

from shared.calc.corrections.dynamic import (
    legacy_of_arrays,
    lifted,
    sumproduct_of_arrays,
)

from .conftest import add_name, one_sheet, to_bytes, uploaded_and_stored


def search_book() -> bytes:
    """Five names in A1:A5 (an input), a search term in C1 (an input), and in row 1 beside
    them: how many names hold the term, their characters, and the length of the name in the
    formula's own row outside SUMPRODUCT (Excel intersects there)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, name in enumerate(["Alpha", "beta", "Gamma", "delta", "Omega"], start=1):
        ws.cell(row, 1, name)
    ws["C1"] = "ta"
    ws["E1"] = "=SUMPRODUCT(--ISNUMBER(SEARCH(C1,A1:A5)))"
    ws["F1"] = "=SUMPRODUCT(LEN(A1:A5))+LEN(A1:A5)"
    ws["G1"] = "=SUMPRODUCT(N(OFFSET(A1,ROW(A1:A5)-1,0)))"
    ws["H1"] = "=SUMPRODUCT(N(A1:A5))"
    add_name(wb, "names", "Sheet!$A$1:$A$5")
    add_name(wb, "term", "Sheet!$C$1")
    add_name(wb, "found", "Sheet!$E$1")
    add_name(wb, "characters", "Sheet!$F$1")
    add_name(wb, "numbers", "Sheet!$G$1")
    add_name(wb, "first_number", "Sheet!$H$1")
    return to_bytes(wb)


@pytest.mark.parametrize("loaded", ["uploaded", "stored"])
def test_a_function_of_one_value_inside_sumproduct_reads_every_cell(loaded):
    # GIVEN the workbook as an upload has it and as a job gets it
    workbook = dict(zip(("uploaded", "stored"), uploaded_and_stored(search_book())))[loaded]

    # WHEN jobs search for terms
    # THEN every name holding the term counts (IronCalc alone: 0, only A1 was read)
    assert workbook.calculate({"term": "ta"}, ["found"])["found"] == 2  # beta, delta
    assert workbook.calculate({"term": "A"}, ["found"])["found"] == 5
    assert workbook.calculate({"term": "mm"}, ["found"])["found"] == 1
    # AND new data is read the same way
    out = workbook.calculate({"names": [["ta"], ["x"], ["xta"], ["TA"], [""]], "term": "ta"}, ["found"])
    assert out["found"] == 3
    # AND outside SUMPRODUCT the range is still the cell of the formula's row: 24 + LEN(A1)
    assert workbook.calculate({}, ["characters"])["characters"] == 24 + 5


def test_what_the_layer_cannot_read_as_excel_is_flagged_not_guessed():
    # GIVEN OFFSET given an array inside SUMPRODUCT (one reference per element, N reading each)
    workbook, _ = uploaded_and_stored(search_book())

    workbook.calculate({}, ["numbers"])

    # THEN the cell is named in the flags
    flags = [str(f) for f in workbook.correction_flags()]
    assert any("G1" in f and "OFFSET" in f for f in flags), flags


def test_n_of_a_range_reads_its_upper_left_cell_even_inside_sumproduct():
    # N of a reference reads one cell, not each (formulas' test.xlsx, saved by Excel:
    # {=N(C19:Q19)} is C19's value; tests/conformance/cases/N.yaml)
    for workbook in uploaded_and_stored(search_book()):
        assert workbook.calculate({"names": [[7], [2], ["x"], [True], [5]]}, ["first_number"]) == {"first_number": 7}


def test_the_filled_workbook_keeps_the_formula_as_written():
    workbook, _ = uploaded_and_stored(search_book())
    workbook.calculate({"term": "ta"}, ["found"])

    with zipfile.ZipFile(io.BytesIO(workbook.to_xlsx())) as package:
        sheet = package.read("xl/worksheets/sheet1.xml").decode()

    # THEN the formula has no @ (IronCalc's mark of an intersection) and the value is ours
    assert "SUMPRODUCT(--ISNUMBER(SEARCH(C1,A1:A5)))</f><v>2</v>" in sheet


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ('=SUMPRODUCT(--ISNUMBER(SEARCH("a",@A1:A3)))', '=SUMPRODUCT(--ISNUMBER(SEARCH("a",A1:A3)))'),
        ("=SUMPRODUCT(LEN(@A1:A3))+LEN(@A1:A3)", "=SUMPRODUCT(LEN(A1:A3))+LEN(@A1:A3)"),
        ('=SUMPRODUCT(--("@"=@A1:A3))', '=SUMPRODUCT(--("@"=A1:A3))'),
        ("=SUMPRODUCT(A1:A3,B1:B3)", None),  # IronCalc reads these right: left to it
        ("=SUM(@A1:A3)", None),
        # INDEX's first argument takes an array too; its other arguments are positions
        ("=MAX(INDEX((YEAR(@A1:A3)=2024)*B1:B3,0))", "=MAX(INDEX((YEAR(A1:A3)=2024)*B1:B3,0))"),
        ("=INDEX(B1:B3,MATCH(2024,YEAR(@A1:A3),0))", None),
        ("=INDEX(LEN(@A1:A3),@C1:C3)", "=INDEX(LEN(A1:A3),@C1:C3)"),
        # and LOOKUP's vectors, not its lookup value
        ("=LOOKUP(2,1/(YEAR(@A1:A3)=2024),B1:B3)", "=LOOKUP(2,1/(YEAR(A1:A3)=2024),B1:B3)"),
        ("=LOOKUP(LEN(@A1:A3),B1:B3)", None),
        ("=VLOOKUP(LEN(@A1:A3),B1:C3,2)", None),
    ],
)
def test_only_the_intersections_in_arguments_that_take_arrays_are_taken_out(formula, expected):
    assert lifted(formula) == expected


@pytest.mark.parametrize(
    ("formula", "ours"),
    [
        ('=SUMPRODUCT(--ISNUMBER(SEARCH("a",@A1:A3)))', True),  # a range IronCalc intersects
        ("=SUMPRODUCT(ROUND(B1:B3*1.5,0))", True),  # an array IronCalc does not round (#N/IMPL!)
        ("=SUMPRODUCT(ABS({1,-2}))", True),
        ("=SUMPRODUCT(A1:A3,B1:B3)", False),  # ranges and operators: IronCalc's
        ('=SUMPRODUCT((A1:A3="x")*B1:B3)', False),
        ("=SUMPRODUCT(ROUND(SUM(A1:A3),0))", False),  # one value rounded
        ("=ROUND(A1:A3,0)", False),  # outside SUMPRODUCT Excel intersects too
    ],
)
def test_the_cells_evaluated_by_the_layer_are_those_ironcalc_reads_as_one_value(formula, ours):
    assert sumproduct_of_arrays(formula) is ours


def legacy_book() -> bytes:
    """Values in A1:A4 (an input) and legacy array formulas over them in row 1: the sum of the
    numbers, the count of texts, and each cell tested (C1:C4, a four-cell array formula)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, value in enumerate([1, "x", 3, True], start=1):
        ws.cell(row, 1, value)
    ws["B1"] = ArrayFormula("B1", "=SUM(IF(ISNUMBER(A1:A4),A1:A4))")
    ws["B2"] = ArrayFormula("B2", "=SUM(IF(ISTEXT(A1:A4),1,0))")
    ws["B3"] = ArrayFormula("B3", "=SUM(ROUND(IF(ISNUMBER(A1:A4),A1:A4,0)*1.5,0))")
    ws["C1"] = ArrayFormula("C1:C4", "=ISNUMBER(A1:A4)")
    add_name(wb, "values", "Sheet!$A$1:$A$4")
    add_name(wb, "numbers", "Sheet!$B$1")
    add_name(wb, "texts", "Sheet!$B$2")
    add_name(wb, "rounded", "Sheet!$B$3")
    add_name(wb, "tested", "Sheet!$C$1:$C$4")
    return to_bytes(wb)


@pytest.mark.parametrize("loaded", ["uploaded", "stored"])
def test_a_legacy_array_formula_applies_each_function_to_every_element(loaded):
    workbook = dict(zip(("uploaded", "stored"), uploaded_and_stored(legacy_book())))[loaded]

    # WHEN a job calculates the file's values, and then others
    first = workbook.calculate({}, ["numbers", "texts", "rounded", "tested"])
    second = workbook.calculate({"values": [["a"], [2], [2.5], ["b"]]}, ["numbers", "texts", "rounded", "tested"])

    # THEN each element is tested and rounded (IronCalc alone: 0, 0, 2 and FALSE four times)
    assert first == {"numbers": 4, "texts": 1, "rounded": 7, "tested": [True, False, True, False]}
    assert second == {"numbers": 4.5, "texts": 2, "rounded": 7, "tested": [False, True, True, False]}
    assert workbook.correction_flags() == []


@pytest.mark.parametrize(
    ("formula", "ours"),
    [
        ("=SUM(IF(ISNUMBER(A1:A4),A1:A4))", True),
        ("=SUM(ROUND(A1:A3*1.5,0))", True),
        ("=SUM(IF(MOD(A1:A4,2)=0,1,0))", True),
        ("=SUM(IF(ISNUMBER(A1),A1))", False),  # one cell
        ("=SUM(LEN(A1:A4))", False),  # LEN: IronCalc applies it to each element
        ("=ISNUMBER(@A1:A4)", False),  # not an array formula (IronCalc's @)
    ],
)
def test_the_legacy_array_formulas_evaluated_by_the_layer(formula, ours):
    assert legacy_of_arrays(formula) is ours


def test_an_excel_365_formula_applies_each_function_to_every_element():
    # GIVEN the same formulas as Excel 365 saves them (dynamic arrays, cm="1")
    from .test_dynamic_arrays import excel365

    wb = openpyxl.load_workbook(io.BytesIO(legacy_book()))
    for workbook in uploaded_and_stored(excel365(wb)):
        # THEN each element is tested, as in a legacy array formula
        out = workbook.calculate({}, ["numbers", "texts", "tested"])
        assert out == {"numbers": 4, "texts": 1, "tested": [True, False, True, False]}


def test_a_lookup_to_the_left_through_choose_of_an_array():
    # GIVEN codes in A1:A3 and names in B1:B3 (inputs), and lookups of a name's code through
    # CHOOSE({1,2},B,A), the left lookup Excel answers without Ctrl+Shift+Enter
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, (code, name) in enumerate([("A-1", "ant"), ("B-2", "bee"), ("C-3", "cat")], start=1):
        ws.cell(row, 1, code)
        ws.cell(row, 2, name)
    ws["D1"] = "bee"
    ws["E1"] = "=VLOOKUP(D1,CHOOSE({1,2},B1:B3,A1:A3),2,FALSE)"
    ws["E2"] = "=VLOOKUP(D1,CHOOSE({1,2},B1:B3,A1:A3),2,TRUE)"
    add_name(wb, "table", "Sheet!$A$1:$B$3")
    add_name(wb, "name", "Sheet!$D$1")
    add_name(wb, "code", "Sheet!$E$1")
    add_name(wb, "approximate", "Sheet!$E$2")

    for workbook in uploaded_and_stored(to_bytes(wb)):
        # THEN the exact lookup finds the code (IronCalc alone: #N/A), in every job
        assert workbook.calculate({}, ["code"])["code"] == "B-2"
        assert workbook.calculate({"name": "CAT"}, ["code"])["code"] == "C-3"  # without case
        assert workbook.calculate({"name": "c*"}, ["code"])["code"] == "C-3"  # a wildcard
        assert workbook.calculate({"name": "dog"}, ["code"])["code"] == "#N/A"
        # AND the approximate one finds the largest name not after the one looked up, as the
        # VLOOKUP page describes it over sorted data
        assert workbook.calculate({}, ["approximate"])["approximate"] == "B-2"
        assert workbook.calculate({"name": "cow"}, ["approximate"])["approximate"] == "C-3"
        assert workbook.calculate({"name": "aardvark"}, ["approximate"])["approximate"] == "#N/A"


def test_an_array_of_criteria_counts_for_each():
    # GIVEN fruit in A1:A5 (an input) with counts by an array of criteria, the number of distinct
    # values, and a criterion that reads as a date (the reader's locale decides it in Excel)
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, fruit in enumerate(["apples", "oranges", "peaches", "apples", "kiwis"], start=1):
        ws.cell(row, 1, fruit)
    ws["C1"] = '=SUM(COUNTIF(A1:A5,{"apples","kiwis"}))'
    ws["C2"] = "=SUMPRODUCT(1/COUNTIF(A1:A5,A1:A5))"
    ws["C3"] = '=SUM(COUNTIF(A1:A5,{">1/1/2020","x"}))'
    add_name(wb, "fruit", "Sheet!$A$1:$A$5")
    add_name(wb, "chosen", "Sheet!$C$1")
    add_name(wb, "distinct", "Sheet!$C$2")
    add_name(wb, "dated", "Sheet!$C$3")

    for workbook in uploaded_and_stored(to_bytes(wb)):
        # THEN each criterion is counted (IronCalc alone: 0) and the distinct values are 4
        assert workbook.calculate({}, ["chosen", "distinct"]) == {"chosen": 3, "distinct": 4}
        out = workbook.calculate({"fruit": [["kiwis"], ["KIWIS"], ["x"], ["y"], ["apples"]]}, ["chosen", "distinct"])
        assert out == {"chosen": 3, "distinct": 4}  # without case
        # AND a criterion read by the locale is flagged, not guessed
        workbook.calculate({}, ["dated"])
        flags = [str(f) for f in workbook.correction_flags()]
        assert any("C3" in f and "locale" in f for f in flags), flags


def test_ifs_and_switch_over_arrays_in_a_legacy_array_formula():
    # GIVEN legacy array formulas applying IFS and SWITCH to a range (pycel's logical.xlsx
    # Logical!O26:O44 and Switch!A44, saved by Excel: a one-cell array formula shows the first
    # element's answer; IronCalc 0.9.1 answers #VALUE! and #N/A)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["B1"], ws["C1"] = 0, 1, 2
    ws["E1"] = ArrayFormula("E1", "=IFS(A1:C1,1,B1,2)")
    ws["F1"] = ArrayFormula("F1:H1", "=SWITCH(A1:C1,0,\"zero\",1,\"one\",\"many\")")
    add_name(wb, "first", "Sheet!$A$1")
    add_name(wb, "ifs", "Sheet!$E$1")
    add_name(wb, "names", "Sheet!$F$1:$H$1")
    for workbook in uploaded_and_stored(to_bytes(wb)):
        # THEN the first element 0 is FALSE: B1 (1) decides; SWITCH names each element
        assert workbook.calculate({}, ["ifs", "names"]) == {"ifs": 2, "names": ["zero", "one", "many"]}
        # AND a job changing the first element: TRUE for 5, an error for a text
        assert workbook.calculate({"first": 5}, ["ifs", "names"]) == {"ifs": 1, "names": ["many", "one", "many"]}
        assert workbook.calculate({"first": "x"}, ["ifs"]) == {"ifs": "#VALUE!"}


def text_amounts_book() -> bytes:
    """Amounts in A1:A4 (an input) and quantities in B1:B4; in row 1 the total of amount times
    quantity (SUMPRODUCT), the plain sum of the amounts as a legacy array formula, and the same
    sum over a defined name."""
    amounts = {f"A{row}": amount for row, amount in enumerate([5, 4, 0.5, 2], start=1)}
    quantities = {f"B{row}": quantity for row, quantity in enumerate([1, 10, 10, 3], start=1)}
    formulas = {"E1": "=SUMPRODUCT(A1:A4*B1:B4)", "F1": ArrayFormula("F1", "=SUM(A1:A4*1)"),
                "G1": "=SUMPRODUCT(amounts/1)"}
    names = {"amounts": "$A$1:$A$4", "total": "$E$1", "sum": "$F$1", "by_name": "$G$1"}
    return one_sheet({**amounts, **quantities, **formulas}, names, title="Sheet")


@pytest.mark.parametrize("loaded", ["uploaded", "stored"])
def test_arithmetic_over_a_range_reads_numbers_held_as_text_as_excel_does(loaded):
    # "Calculation operators and precedence in Excel", converting values: ="1"+"$4.00" is 5;
    # the VALUE page: "$1,000" is 1000, VALUE("16:48:00")-VALUE("12:00:00") is 0.2 (16:48 is 0.7
    # of a day). An operator reads each cell of a range so, in SUMPRODUCT and array formulas.
    workbook = dict(zip(("uploaded", "stored"), uploaded_and_stored(text_amounts_book())))[loaded]
    outputs = ["total", "sum", "by_name"]

    # GIVEN numbers: IronCalc's own answer
    assert workbook.calculate({}, outputs) == {"total": 5 + 40 + 5 + 6, "sum": 11.5, "by_name": 11.5}

    # WHEN a job gives the amounts as text Excel reads as numbers
    out = workbook.calculate({"amounts": [["$1,000"], ["$4.00"], ["16:48:00"], ["1"]]}, outputs)

    # THEN each is read as its number (IronCalc alone: #VALUE! for all three)
    assert out["total"] == pytest.approx(1000 + 40 + 7 + 3)
    assert out["sum"] == pytest.approx(1005.7)
    assert out["by_name"] == pytest.approx(1005.7)

    # AND a text that is no number stays #VALUE!, as in Excel
    out = workbook.calculate({"amounts": [["$1,000"], ["n/a"], [1], [1]]}, outputs)
    assert out == {"total": "#VALUE!", "sum": "#VALUE!", "by_name": "#VALUE!"}


def test_a_dynamic_array_spilling_amounts_held_as_text_reads_each_as_a_number():
    # GIVEN Excel 365's =A1:A3*2 spilling down C1:C3, the amounts an input
    from .test_dynamic_arrays import excel365, spilled

    wb = openpyxl.Workbook()
    ws = wb.active
    for row in (1, 2, 3):
        ws.cell(row, 1, row)
    spilled(ws, "C1", "=A1:A3*2", "C1:C3")
    add_name(wb, "amounts", "Sheet!$A$1:$A$3")
    add_name(wb, "doubled", "Sheet!$C$1:$C$3")
    workbook, _ = uploaded_and_stored(excel365(wb))

    # WHEN the first amount is a plain number and the others are held as text
    out = workbook.calculate({"amounts": [[5], ["$1,000"], ["1,234"]]}, ["doubled"])

    # THEN every cell of the spill is read as Excel reads it (IronCalc alone: #VALUE! below C1)
    assert out["doubled"] == [10, 2000, 2468]


def array_argument_book() -> bytes:
    """Dates in A2:A5 (an input), amounts in C2:C5 and tags in D2:D5, and in column F the idioms
    that have Excel calculate an array without Ctrl+Shift+Enter: INDEX(array,0), the whole array
    (Microsoft's INDEX page: "If you set row_num or column_num to 0, INDEX returns the array of
    values for the entire column or row"), and LOOKUP(2,1/(condition),result), the last match
    (LOOKUP's array form ignores the errors of 1/FALSE). INDEX's array and LOOKUP's vectors take
    arrays as SUMPRODUCT's arguments do, so YEAR, MONTH, LEFT and IF there apply to every cell."""
    wb = openpyxl.Workbook()
    ws = wb.active
    rows = [(datetime.date(2024, 1, 5), 10, "x"), (datetime.date(2023, 6, 1), 20, "y"),
            (datetime.date(2024, 3, 2), 30, "x"), (datetime.date(2022, 1, 1), 40, "z")]
    for row, (when, amount, tag) in enumerate(rows, start=2):
        ws.cell(row, 1, when)
        ws.cell(row, 3, amount)
        ws.cell(row, 4, tag)
    formulas = {
        "largest_2024": "=MAX(INDEX((YEAR(A2:A5)=2024)*C2:C5,0))",
        "january": "=SUM(INDEX((MONTH(A2:A5)=1)*C2:C5,0))",
        "first_2023": "=INDEX(C2:C5,MATCH(2023,INDEX(YEAR(A2:A5),0),0))",
        "tagged_x": '=COUNT(INDEX(1/(D2:D5="x"),0))',
        "average_x": '=AVERAGE(INDEX(IF(D2:D5="x",C2:C5),0))',
        "counted_x": '=SUMPRODUCT(COUNT(1/(D2:D5="x")))',
        "smallest_x": '=MIN(INDEX(C2:C5+(LEFT(D2:D5)<>"x")*1E9,0))',
        "last_2024": "=LOOKUP(2,1/(YEAR(A2:A5)=2024),C2:C5)",
        "last_x": '=LOOKUP(2,1/(LEFT(D2:D5)="x"),C2:C5)',
    }
    for row, (name, formula) in enumerate(formulas.items(), start=1):
        ws.cell(row, 6, formula)
        add_name(wb, name, f"Sheet!$F${row}")
    add_name(wb, "dates", "Sheet!$A$2:$A$5")
    return to_bytes(wb)


@pytest.mark.parametrize("loaded", ["uploaded", "stored"])
def test_index_and_lookup_calculate_an_array_without_an_array_formula(loaded):
    workbook = dict(zip(("uploaded", "stored"), uploaded_and_stored(array_argument_book())))[loaded]

    answer = workbook.calculate({}, None)

    # 2024 rows: 10 and 30; January rows: 10 and 40; "x" rows: 10 and 30
    assert answer == {"largest_2024": 30, "january": 50, "first_2023": 20, "tagged_x": 2,
                      "average_x": 20, "counted_x": 2, "smallest_x": 10, "last_2024": 30, "last_x": 30}
    # and they follow the inputs: every date moved to 2024
    serial = [float((datetime.date(2024, month, day) - datetime.date(1899, 12, 30)).days)
              for month, day in ((2, 1), (2, 2), (2, 3), (1, 4))]
    moved = workbook.calculate({"dates": [[s] for s in serial]}, ["largest_2024", "january", "first_2023", "last_2024"])
    assert moved["largest_2024"] == 40 and moved["january"] == 40 and moved["last_2024"] == 40
    assert moved["first_2023"] == "#N/A"
