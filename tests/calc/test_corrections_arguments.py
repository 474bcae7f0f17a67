"""The correction layer's argument rewrite: values typed directly into statistical functions,
and OFFSET's omitted height or width, calculate as Excel with IronCalc.

Expected values follow Excel's documented rules, worked by hand (Microsoft support, STDEV.S,
VAR.S, DEVSQ, SUMSQ, MODE.SNGL...: "Logical values and text representations of numbers that you
type directly into the list of arguments are counted", while in a reference they are ignored;
OFFSET: "If height is omitted, it is assumed to be the same height as reference", width
likewise). IronCalc 0.9.1 alone answers #DIV/0! for STDEV(1,TRUE,"3"), 1 for SUMSQ(1,TRUE,"3")
and #REF! for an empty height or width.
"""

import math
import statistics

import openpyxl
import pytest

from shared.calc import get_engine
from shared.calc.fidelity.check import check

from .conftest import add_name, to_bytes, uploaded_and_stored
from .test_fidelity import excel_saved

# {1, 1, 3}: mean 5/3, squared deviations 4/9 + 4/9 + 16/9 = 8/3
CASES = {
    "B1": ('=STDEV(1,TRUE,"3")', math.sqrt(4 / 3)),
    "B2": ('=VAR.S(1,TRUE,"3")', 4 / 3),
    "B3": ('=VAR.P(1,TRUE,"3")', 8 / 9),
    "B4": ('=STDEV.P(1,TRUE,"3")', math.sqrt(8 / 9)),
    "B5": ('=DEVSQ(1,TRUE,"3")', 8 / 3),
    "B6": ('=SUMSQ(1,TRUE,"3")', 11),
    "B7": ('=MODE(1,TRUE,"3")', 1),
    "B8": ("=STDEV(A1:A4)", math.sqrt(2)),  # A1:A4 = 1, TRUE, "3", 3: only 1 and 3 count
    "B9": ("=SUM(OFFSET(A1,3,0,))", 3),  # height omitted: A1's, so A4
    "B10": ("=SUM(OFFSET(C1:C3,0,0,,1))", 60),  # C1:C3 = 10, 20, 30
    "B11": ("=ROWS(OFFSET(C1:D3,0,0,,))*10+COLUMNS(OFFSET(C1:D3,0,0,,))", 32),
    "B12": ("=AVERAGE(1,TRUE,\"3\")", 5 / 3),  # already right in IronCalc: unchanged
}


def arguments_workbook() -> openpyxl.Workbook:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Stats"
    ws["A1"], ws["A2"], ws["A3"], ws["A4"] = 1, True, "3", 3
    ws["C1"], ws["C2"], ws["C3"] = 10, 20, 30
    for cell, (formula, _) in CASES.items():
        ws[cell] = formula
        add_name(wb, f"out_{cell.lower()}", f"Stats!${cell[0]}${cell[1:]}")
    return wb


def test_every_case_calculates_as_excel_in_a_job_and_from_the_stored_model():
    workbook, stored = uploaded_and_stored(to_bytes(arguments_workbook()))

    for loaded in (workbook, stored):
        outputs = loaded.calculate({})
        for cell, (_, expected) in CASES.items():
            assert outputs[f"out_{cell.lower()}"] == pytest.approx(expected, rel=1e-12), cell


def test_the_upload_check_matches_excel_and_the_export_keeps_the_formulas():
    # GIVEN the workbook with Excel's values saved
    data = excel_saved(arguments_workbook(), {f"Stats!{c}": v for c, (_, v) in CASES.items()})

    # WHEN it is checked, and a job's workbook exported
    report = check(data, "ironcalc")
    workbook = get_engine("ironcalc").load_xlsx(data)
    workbook.calculate({})
    exported = openpyxl.load_workbook(__import__("io").BytesIO(workbook.to_xlsx()))["Stats"]

    # THEN every cell matches, and the cells show the formulas as written (newer functions
    # with the _xlfn. prefix Excel's files give them)
    assert report.cells_matching == report.cells_compared == len(CASES), report.mismatches
    for cell, (formula, _) in CASES.items():
        assert exported[cell].value.replace("_xlfn.", "") == formula


def test_references_and_other_text_are_left_to_ironcalc():
    # GIVEN statistical functions over references and with text that may read as a date
    wb = arguments_workbook()
    wb["Stats"]["D1"] = "=STDEV(A1:A4,A2)"
    wb["Stats"]["D2"] = '=STDEV("1/2/2020",1)'
    wb["Stats"]["D3"] = "=OFFSET(A1,1,1)"

    # WHEN it is loaded
    _, _, fixes = get_engine("ironcalc")._load(to_bytes(wb))

    # THEN none of them is rewritten
    rewritten = {(w.row, w.col) for w in fixes.rewrites}
    assert not rewritten & {(1, 4), (2, 4), (3, 4)}


def test_typed_text_that_cannot_be_a_number_is_an_error_except_in_mode():
    # Microsoft, STDEV.S / VAR.S / SUMSQ / STDEVPA pages: "Arguments that are error values or
    # text that cannot be translated into numbers cause errors" (and Excel saved #VALUE! for
    # STDEV(...,"") in formulas' test.xlsx); IronCalc 0.9.1 drops such text (STDEV(1,2,3,"x")
    # 1). MODE.SNGL ignores it, against its page: Excel saved 0.2 for test.xlsx STATISTICAL!S71
    # =MODE.SNGL(D71:E71,E71:F71,F71:G71,"").
    # GIVEN those formulas, and MODE's own example (MODE.SNGL page: 5.6, 4, 4, 3, 2, 4 is 4)
    cases = {
        '=STDEV(1,2,3,"x")': "#VALUE!", '=_xlfn.VAR.S(1,"")': "#VALUE!",
        '=SUMSQ(1,2,"abc")': "#VALUE!", '=STDEVPA(1,2,3,"x")': "#VALUE!",
        '=_xlfn.MODE.SNGL(1,2,2,3,"")': 2,
        "=_xlfn.MODE.SNGL(5.6,4,4,3,2,4)": 4, '=MODE(1,TRUE,"3",3)': 1,
        '=VARPA(1,TRUE,"3")': pytest.approx(8 / 9),
    }
    wb = openpyxl.Workbook()
    for row, formula in enumerate(cases, start=1):
        wb.active.cell(row, 1, formula)
    add_name(wb, "out", f"Sheet!$A$1:$A${len(cases)}")

    # WHEN a job calculates, on the upload's model and on the stored one
    for loaded in uploaded_and_stored(to_bytes(wb)):
        # THEN each is Excel's answer
        assert loaded.calculate({})["out"] == list(cases.values())



def test_left_right_mid_counts_typed_as_text_or_logical_are_numbers():
    from shared.calc.corrections.arguments import rewrite_formula

    assert rewrite_formula('=LEFT("abc","2")') == 'LEFT("abc",2)'
    assert rewrite_formula('=MID("abcd","2",TRUE)') == 'MID("abcd",2,1)'
    assert rewrite_formula('=RIGHT("12","1")') == 'RIGHT("12",1)'  # the text argument stays text
    assert rewrite_formula('=LEFT("abc","x")') is None  # IronCalc's #VALUE! is Excel's
    assert rewrite_formula('=LEFT("123",2)') is None


# LEFT/RIGHT/MID counts from a cell or an expression: Excel converts the value as it converts a
# typed one (formulas' test.xlsx, Excel-saved, sheet TEXT: Y20 LEFT("ciao",TRUE cell) "c", Y37
# RIGHT "o", Y25 MID("ciao",TRUE cell,blank cell) "", W20 LEFT of a blank cell "", X20 of the
# text "ciao" #VALUE!, AB20 of a #DIV/0! cell #DIV/0!; "Converting values in formulas", the
# "Calculation operators and precedence" page: text that reads as a number is that number).
# IronCalc 0.9.1 alone answers #VALUE! for the TRUE, FALSE and "2" cells.
COUNTS_FROM_CELLS = {
    "B1": ('=LEFT("ciao",A1)', "c"),  # A1 TRUE (Y20)
    "B2": ('=RIGHT("ciao",A1)', "o"),  # Y37
    "B3": ('=MID("ciao",A1,A3)', ""),  # A3 blank (Y25)
    "B4": ('=LEFT("ciao",A3)', ""),  # W20
    "B5": ('=LEFT("abc",A2)', "ab"),  # A2 the text "2"
    "B6": ('=MID("abcd",A2,A2)', "bc"),
    "B7": ('=LEFT("ciao",A4)', ""),  # A4 FALSE: 0
    "B8": ('=LEFT("ciao",A5)', "#VALUE!"),  # A5 the text "ciao" (X20)
    "B9": ('=LEFT("ciao",A6)', "#DIV/0!"),  # A6 =1/0 (AB20)
    "B10": ('=LEFT("ciao",A7)', "ci"),  # a number as it is (A7 2.3; S20: 1.9 is "c")
    "B11": ('=LEFT("ciao",A7>1)', "c"),  # a comparison: TRUE
    "B12": ('=MID("abcd",A2&"",1)', "b"),  # a concatenation: the text "2", start 2
    "B13": ('=LEFTB("ciao",A1)', "c"),  # test.xlsx TEXT!Y21
    "B14": ('=RIGHT("ciao",+A1)', "o"),  # unary plus leaves TRUE as it is
}


def counts_workbook() -> openpyxl.Workbook:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Text"
    ws["A1"], ws["A2"], ws["A4"] = True, "2", False
    ws["A5"], ws["A6"], ws["A7"] = "ciao", "=1/0", 2.3
    for cell, (formula, _) in COUNTS_FROM_CELLS.items():
        ws[cell] = formula
    ws["C1"] = "=FORMULATEXT(B1)"
    add_name(wb, "count", "Text!$A$1")
    add_name(wb, "out", f"Text!$B$1:$B${len(COUNTS_FROM_CELLS)}")
    add_name(wb, "shown", "Text!$C$1")
    return wb


def test_left_right_mid_counts_from_cells_and_expressions_are_converted_as_excel():
    workbook, stored = uploaded_and_stored(to_bytes(counts_workbook()))

    for loaded in (workbook, stored):
        outputs = loaded.calculate({})
        assert outputs["out"] == [v for _, v in COUNTS_FROM_CELLS.values()]
        # FORMULATEXT shows the formula as written, not the model's --(A1)
        assert outputs["shown"] == '=LEFT("ciao",A1)'
        # a job writing the count: a number, the text "3", TRUE again
        assert loaded.calculate({"count": 3})["out"][0] == "cia"
        assert loaded.calculate({"count": "3"})["out"][0] == "cia"
        assert loaded.calculate({"count": True})["out"][0] == "c"


def test_left_right_mid_counts_from_cells_keep_the_formulas_as_written_in_the_export():
    workbook = get_engine("ironcalc").load_xlsx(to_bytes(counts_workbook()))
    workbook.calculate({})
    exported = openpyxl.load_workbook(__import__("io").BytesIO(workbook.to_xlsx()))["Text"]

    for cell, (formula, _) in COUNTS_FROM_CELLS.items():
        # IronCalc renders `+A1` as `A1` in every formula (rewritten or not)
        assert exported[cell].value == formula.replace(",+", ","), cell


# A logical value where PHI, F.DIST, WEIBULL.DIST, STANDARDIZE, LARGE's and SMALL's k and RANK's
# number expect a number: Excel reads TRUE as 1 (formulas' test.xlsx, Excel-saved, sheet
# STATISTICAL: Y84 PHI of a TRUE cell 0.2420, Y57 LARGE with k TRUE the largest, Y95 SMALL the
# smallest, Y90 RANK.EQ of TRUE #N/A as for a 1 not in the list). IronCalc 0.9.1 alone: #VALUE!.
def test_logical_values_given_for_numbers_to_statistical_functions_are_numbers():
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, value in enumerate([0.1, -10, 0.9, 2.2, -0.1], start=1):
        ws.cell(row, 1, value)
    ws["C1"] = True
    ws["D1"] = "=PHI(C1)"
    ws["D2"] = "=LARGE(A1:A5,C1)"
    ws["D3"] = "=SMALL(A1:A5,C1)"
    ws["D4"] = "=RANK.EQ(C1,A1:A5)"
    ws["D5"] = "=STANDARDIZE(0,1,C1)"
    add_name(wb, "flag", "Sheet!$C$1")
    add_name(wb, "out", "Sheet!$D$1:$D$5")
    for loaded in uploaded_and_stored(to_bytes(wb)):
        phi, largest, smallest, rank, standardized = loaded.calculate({})["out"]
        assert math.isclose(phi, 0.24197072451914337, rel_tol=1e-12)  # PHI(1)
        assert (largest, smallest, rank, standardized) == (2.2, -10, "#N/A", -1)
        # FALSE is 0: k 0 is #NUM!, and the standard deviation 0 too
        phi, largest, smallest, rank, standardized = loaded.calculate({"flag": False})["out"]
        assert math.isclose(phi, 0.3989422804014327, rel_tol=1e-12)  # PHI(0), the page's peak
        assert (largest, smallest, standardized) == ("#NUM!", "#NUM!", "#NUM!")
        # a number is as it is
        assert loaded.calculate({"flag": 2})["out"][1:3] == [0.9, -0.1]


# MINA, MAXA, STDEVA, STDEVPA, VARA and VARPA read a cell holding TRUE as 1 and text as 0, one
# cell as a range (their pages; formulas' test.xlsx, Excel-saved, sheet STATISTICAL: Y67
# MINA(TRUE, 4) 1, X63 MAXA(text, -3) 0, Y99 STDEVA(TRUE, -0.1) 0.7778, X119 VARPA(text, -0.1)
# 0.0025, U67 MINA of a blank cell 0). IronCalc 0.9.1 alone reads them so in a range only.
def test_the_a_functions_read_logical_values_and_text_in_one_cell_as_in_a_range():
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["B1"] = True, 4
    ws["A2"], ws["B2"] = "29/02/1900", -3
    ws["A3"], ws["B3"] = True, -0.1
    ws["A4"], ws["B4"] = "1/01/1900", -0.1
    ws["C1"] = "=MINA(A1,B1)"
    ws["C2"] = "=MAXA(A2,B2)"
    ws["C3"] = "=STDEVA(A3,B3)"
    ws["C4"] = "=VARPA(A4,B4)"
    ws["C5"] = "=MINA(D9)"  # a blank cell: no values
    add_name(wb, "out", "Sheet!$C$1:$C$5")
    add_name(wb, "first", "Sheet!$A$1")
    for loaded in uploaded_and_stored(to_bytes(wb)):
        smallest, largest, deviation, variance, nothing = loaded.calculate({})["out"]
        assert (smallest, largest, nothing) == (1, 0, 0)
        assert math.isclose(deviation, 0.7778174593052023, rel_tol=1e-12)
        assert math.isclose(variance, 0.0025, rel_tol=1e-12)
        # FALSE is 0 too (the pages), a number is as it is
        assert loaded.calculate({"first": False})["out"][0] == 0
        assert loaded.calculate({"first": 2})["out"][0] == 2


def test_paired_data_of_different_sizes_are_not_available():
    # SLOPE, INTERCEPT, RSQ, PEARSON, CORREL, STEYX, COVAR(IANCE) and FORECAST: "If known_y's and
    # known_x's ... have a different number of data points, [it] returns the #N/A error value"
    # (each page; pycel's stats.xlsx Stats!P3:R5 saved #N/A). IronCalc 0.9.1 alone: #VALUE!.
    from shared.calc.corrections.arguments import rewrite_formula

    assert rewrite_formula("=SLOPE(J3:N3,K4:N4)") == "#N/A"
    assert rewrite_formula("=FORECAST(2.5,J3:N3,J4:N5)*2") == "#N/A*2"
    assert rewrite_formula("=SLOPE(J3:N3,J4:N4)") is None  # five points each
    assert rewrite_formula("=CORREL(A1:A3,Data)") is None  # a name: left to IronCalc
    wb = openpyxl.Workbook()
    ws = wb.active
    for col, (y, x) in enumerate([(1, -2), (2.1, -4), (3.1, -7), (4.1, -9), (5.1, -11)], start=1):
        ws.cell(1, col, y)
        ws.cell(2, col, x)
    ws["A4"] = "=SLOPE(A1:E1,B2:E2)"
    ws["A5"] = "=INTERCEPT(A1:E1,A2:E3)"
    ws["A6"] = "=SLOPE(A1:E1,A2:E2)"
    add_name(wb, "out", "Sheet!$A$4:$A$6")
    for loaded in uploaded_and_stored(to_bytes(wb)):
        short, long, fitted = loaded.calculate({})["out"]
        assert (short, long) == ("#N/A", "#N/A")
        # five points each: the least-squares slope of the SLOPE page's equation
        expected = statistics.linear_regression([-2, -4, -7, -9, -11], [1, 2.1, 3.1, 4.1, 5.1]).slope
        assert math.isclose(fitted, expected, rel_tol=1e-12)


def test_left_right_mid_counts_that_may_be_ranges_are_left_to_ironcalc():
    from shared.calc.corrections.arguments import rewrite_formula

    # wrapped: one cell (sheet-qualified, absolute, behind + or parentheses), a comparison, a
    # concatenation; MID's two numbers each
    assert rewrite_formula('=LEFT("ciao",J20)') == 'LEFT("ciao",--(J20))'
    assert rewrite_formula("=MID(A1,'My sheet'!$B$1,(C1))") == "MID(A1,--('My sheet'!$B$1),--((C1)))"
    assert rewrite_formula('=RIGHT(A1,+B1)') == "RIGHT(A1,--(+B1))"
    assert rewrite_formula('=LEFT(A1,B1>0)') == "LEFT(A1,--(B1>0))"
    assert rewrite_formula('=MIDB(A1,B1&"",2)') == 'MIDB(A1,--(B1&""),2)'
    # left alone: a number, arithmetic, a range (IronCalc intersects it as Excel does outside
    # an array formula, `--(C1:C3)` it would not), a name, a call that may give a range, the
    # text argument, num_chars omitted or empty
    for formula in (
        "=LEFT(A1,3)", '=LEFT(A1,FIND(" ",A1)-1)', "=LEFT(A1,C1:C3)", "=LEFT(A1,count)",
        "=LEFT(A1,INDEX(C1:C3,2))", "=LEFT(A1,IF(B1,2,3))", "=LEFT(B1)", "=LEFT(A1,)",
    ):
        assert rewrite_formula(formula) is None, formula


def test_a_range_count_outside_an_array_formula_stays_intersected():
    # Microsoft, "Implicit intersection operator: @": outside an array formula a range where
    # one value is expected is the cell in the formula's row. Row 2 of C1:C3 holds 2.
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["C1"], ws["C2"], ws["C3"] = 1, 2, 3
    ws["B2"] = '=LEFT("ciao",C1:C3)'
    add_name(wb, "out", "Sheet!$B$2")
    for loaded in uploaded_and_stored(to_bytes(wb)):
        assert loaded.calculate({})["out"] == "ci"


def test_left_right_mid_counts_in_an_array_formula_are_flagged():
    # Array formulas are not rewritten; IronCalc 0.9.1 answers #VALUE! for {=LEFT("ciao",A1:A3)}
    # where A1 is TRUE (Excel: "c", as test.xlsx TEXT!Y20 from one cell), so the cell is
    # flagged; a count that is a number or arithmetic is read right and not flagged.
    from openpyxl.worksheet.formula import ArrayFormula

    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["A2"], ws["A3"] = True, "2", 1
    ws["B1"] = ArrayFormula("B1:B3", '=LEFT("ciao",A1:A3)')
    ws["C1"] = ArrayFormula("C1:C3", '=MID("ciao",1,{TRUE;"2";1})')
    ws["D1"] = ArrayFormula("D1:D3", '=LEFT("ciao",LEN(A1:A3)-1)')
    ws["E1"] = '=LEFT("ciao",A1)'  # rewritten, not flagged
    data = excel_saved(wb, {"Sheet!B1": "c", "Sheet!C1": "c", "Sheet!D1": "cia", "Sheet!E1": "c"})

    flagged = {f["cell"]: f["reason"] for f in check(data, "ironcalc").flagged}

    assert sorted(flagged) == ["B1", "C1"]
    assert flagged["B1"].startswith("LEFT in an array formula")


def test_an_error_in_k_is_the_answer_before_the_datas_errors():
    # GIVEN data holding #VALUE! and #N/A (A1:A3) and data without errors (E1:E3), and k
    # calculated from an input (1/divisor), for the functions whose k Excel reads first
    # (formulas' Excel-saved test.xlsx: PERCENTILE(K29:L29,L29) is #N/A there)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet"
    ws["A1"], ws["A2"], ws["A3"] = 4, '="x"+1', "=NA()"
    ws["E1"], ws["E2"], ws["E3"] = 4, 8, 6
    ws["B2"] = 1
    ws["B1"] = "=1/B2"
    functions = ("LARGE", "SMALL", "PERCENTILE", "PERCENTILE.INC", "PERCENTILE.EXC", "QUARTILE",
                 "QUARTILE.INC", "QUARTILE.EXC")
    for row, name in enumerate(functions, start=1):
        prefix = "_xlfn." if "." in name else ""
        ws.cell(row, 3, f"={prefix}{name}(A1:A3,B1)")
        ws.cell(row, 4, f"={prefix}{name}(E1:E3,B1)")
        add_name(wb, f"with_errors_{row}", f"Sheet!$C${row}")
        add_name(wb, f"clean_{row}", f"Sheet!$D${row}")
    add_name(wb, "divisor", "Sheet!$B$2")
    workbook, _ = uploaded_and_stored(to_bytes(wb))
    names = [f"{kind}_{row}" for row in range(1, len(functions) + 1) for kind in ("with_errors", "clean")]

    # WHEN k is an error
    out = workbook.calculate({"divisor": 0}, names)
    # THEN every one answers k's error, whatever the data hold (IronCalc alone: the data's #VALUE!)
    assert set(out.values()) == {"#DIV/0!"}
    # AND with k 1 the data's first error is LARGE's and SMALL's answer, and over the clean data
    # the largest, the smallest, the 100th percentile and the first quartile (4 + (6-4)/2) as before
    out = workbook.calculate({"divisor": 1}, names)
    assert out["with_errors_1"] == out["with_errors_2"] == "#VALUE!"
    assert (out["clean_1"], out["clean_2"], out["clean_3"], out["clean_6"]) == (8, 4, 8, 5)


def test_imsum_and_improduct_take_ranges_and_more_than_two_numbers():
    # GIVEN complex numbers in A1:A3 (inputs) and IMSUM/IMPRODUCT over the range, over three
    # cells, and of one number (Microsoft's pages: IMSUM("3+4i","5-3i") is 8+i, IMPRODUCT of
    # them 27+11i; IronCalc alone takes two single values and answers #ERROR! otherwise)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet"
    ws["A1"], ws["A2"], ws["A3"] = "3+4i", "5-3i", "1"
    formulas = {"sum_range": "=IMSUM(A1:A3)", "sum_cells": "=IMSUM(A1,A2,A3)",
                "product_range": "=IMPRODUCT(A1:A2,A3)", "one": '=IMSUM("3+4i")'}
    for row, (name, formula) in enumerate(formulas.items(), start=1):
        ws.cell(row, 3, formula)
        add_name(wb, name, f"Sheet!$C${row}")
    add_name(wb, "numbers", "Sheet!$A$1:$A$3")
    workbook, _ = uploaded_and_stored(to_bytes(wb))
    # WHEN a job calculates them
    out = workbook.calculate({}, list(formulas))
    # THEN each number is added or multiplied, as by two at a time
    assert out == {"sum_range": "9+i", "sum_cells": "9+i", "product_range": "27+11i", "one": "3+4i"}
    # AND a logical value among them is #VALUE!, as Excel answers
    out = workbook.calculate({"numbers": [["3+4i"], [True], ["1"]]}, ["sum_range"])
    assert out["sum_range"] == "#VALUE!"


def test_a_blank_cell_is_complex_zero_and_a_logical_value_an_error_for_the_im_functions():
    # GIVEN IM functions of a cell (an input) that a job leaves blank or fills
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet"
    formulas = {"cosine": "=IMCOS(A1)", "absolute": "=IMABS(A1)", "logarithm": "=IMLN(A1)",
                "difference": '=IMSUB("3+4i",A1)'}
    for row, (name, formula) in enumerate(formulas.items(), start=1):
        ws.cell(row, 3, formula)
        add_name(wb, name, f"Sheet!$C${row}")
    add_name(wb, "z", "Sheet!$A$1")
    workbook, _ = uploaded_and_stored(to_bytes(wb))
    # WHEN z is blank, THEN it is 0: cos 0 is 1, |0| is 0, ln 0 has no value, 3+4i - 0
    # (IronCalc alone: #NUM!, 0, the text "-inf", #NUM!)
    assert workbook.calculate({}, list(formulas)) == {
        "cosine": "1", "absolute": 0, "logarithm": "#NUM!", "difference": "3+4i",
    }
    # AND a logical value is #VALUE! where it is the first number (IronCalc alone: #NUM!)
    out = workbook.calculate({"z": True}, ["cosine", "absolute", "logarithm"])
    assert out == {"cosine": "#VALUE!", "absolute": "#VALUE!", "logarithm": "#VALUE!"}
    # AND a number is IronCalc's as before, a tiny one too (ln 1E-16, IronCalc's Excel-saved COMPLEXs.xlsx)
    assert workbook.calculate({"z": "1+i"}, ["absolute"])["absolute"] == pytest.approx(2 ** 0.5)
    assert workbook.calculate({"z": "1E-16"}, ["logarithm"])["logarithm"] == "-36.8413614879047"


def test_and_and_or_answer_an_error_in_any_argument_even_after_one_that_decides():
    # GIVEN OR and AND whose first argument decides and whose later one divides by an input,
    # and AND over a range that may hold an error
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet"
    ws["A1"], ws["A2"], ws["A3"] = 2, 1, "=1/A2"
    formulas = {"either": "=OR(A1>1,A1/A2>3)", "both": "=AND(A1<1,A1/A2>3)", "all": "=AND(A1<1,A1:A3)"}
    for row, (name, formula) in enumerate(formulas.items(), start=1):
        ws.cell(row, 3, formula)
        add_name(wb, name, f"Sheet!$C${row}")
    add_name(wb, "divisor", "Sheet!$A$2")
    workbook, _ = uploaded_and_stored(to_bytes(wb))
    # WHEN nothing errs THEN the first argument decides, as before
    assert workbook.calculate({}, list(formulas)) == {"either": True, "both": False, "all": False}
    # WHEN the divisor is 0 THEN the error is the answer, as Excel reads every argument
    # (IronCalc alone: TRUE and FALSE, from the first argument)
    assert workbook.calculate({"divisor": 0}, list(formulas)) == {
        "either": "#DIV/0!", "both": "#DIV/0!", "all": "#DIV/0!",
    }


def test_fixed_and_dollar_round_the_number_as_round_does():
    # GIVEN FIXED and DOLLAR of an input, in a report line
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet"
    ws["A1"] = 1.005
    ws["C1"] = '="Total: "&FIXED(A1,2)'
    ws["C2"] = "=DOLLAR(A1)"
    add_name(wb, "amount", "Sheet!$A$1")
    add_name(wb, "line", "Sheet!$C$1")
    add_name(wb, "price", "Sheet!$C$2")
    workbook, _ = uploaded_and_stored(to_bytes(wb))
    # WHEN a job formats 1.005 (1.00499999999999989 in binary, 1.00500000000000 to Excel's 15
    # digits) THEN it is rounded as ROUND(1.005,2) is, 1.01 (IronCalc alone: "1.00")
    assert workbook.calculate({}, ["line", "price"]) == {"line": "Total: 1.01", "price": "$1.01"}
    # AND FIXED's page examples are kept: 1234.567 with two decimals, -0.123 in parentheses
    assert workbook.calculate({"amount": 1234.567}, ["line", "price"]) == {
        "line": "Total: 1,234.57", "price": "$1,234.57",
    }
    assert workbook.calculate({"amount": -0.123}, ["price"])["price"] == "($0.12)"


def test_avedev_and_devsq_of_no_number_are_num_errors():
    # GIVEN AVEDEV and DEVSQ over a column of inputs, and one more over a cell that divides
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet"
    ws["A1"], ws["A2"], ws["A3"], ws["B1"] = 4, 5, 8, "=1/A3"
    formulas = {"avedev": "=AVEDEV(A1:A3)", "devsq": "=DEVSQ(A1:A3)", "divided": "=DEVSQ(B1,A2:A3)"}
    for row, (name, formula) in enumerate(formulas.items(), start=1):
        ws.cell(row, 3, formula)
        add_name(wb, name, f"Sheet!$C${row}")
    add_name(wb, "data", "Sheet!$A$1:$A$3")
    for workbook in uploaded_and_stored(to_bytes(wb)):
        # WHEN the data are numbers THEN the functions answer as before
        out = workbook.calculate({}, list(formulas))
        assert out["avedev"] == pytest.approx(14 / 9) and out["devsq"] == pytest.approx(26 / 3)
        # WHEN the inputs hold no number (a text, TRUE, a blank) THEN #NUM!, as Excel saved for
        # AVEDEV(H3:J3) and DEVSQ(H28:J28) in formulas' test.xlsx (IronCalc alone: #DIV/0!)
        out = workbook.calculate({"data": [["n/a"], [True], [None]]}, list(formulas))
        assert out == {"avedev": "#NUM!", "devsq": "#NUM!", "divided": "#DIV/0!"}


def test_mdeterm_of_blank_cells_and_toolpak_functions_of_true_are_value_errors():
    # GIVEN MDETERM of a 2x2 input block and SQRTPI, FACTDOUBLE, GCD of an input cell
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet"
    ws["A1"], ws["B1"], ws["A2"], ws["B2"], ws["D1"] = 1, 2, 3, 4, 2
    formulas = {"det": "=MDETERM(A1:B2)", "sqrtpi": "=SQRTPI(D1)", "fact": "=FACTDOUBLE(D1)", "gcd": "=GCD(D1,4)"}
    for row, (name, formula) in enumerate(formulas.items(), start=1):
        ws.cell(row, 6, formula)
        add_name(wb, name, f"Sheet!$F${row}")
    add_name(wb, "matrix", "Sheet!$A$1:$B$2")
    add_name(wb, "x", "Sheet!$D$1")
    for workbook in uploaded_and_stored(to_bytes(wb)):
        # WHEN the inputs are numbers THEN the functions answer as before
        out = workbook.calculate({}, list(formulas))
        assert out["det"] == pytest.approx(-2) and out["sqrtpi"] == pytest.approx(math.sqrt(2 * math.pi))
        assert (out["fact"], out["gcd"]) == (2, 2)
        # WHEN a cell of the matrix is blank and x is TRUE THEN #VALUE!, as the MDETERM page says
        # and Excel saved in formulas' test.xlsx (IronCalc alone: a blank read as 0, TRUE as 1)
        out = workbook.calculate({"matrix": [[1, 2], [3, None]], "x": True}, list(formulas))
        assert out == {"det": "#VALUE!", "sqrtpi": "#VALUE!", "fact": "#VALUE!", "gcd": "#VALUE!"}


def test_gcd_and_lcm_answer_an_error_before_a_number_outside_their_domain():
    # formulas' Excel-saved test.xlsx MATH & TRIG!Y34 GCD(-0.4, a TRUE cell) and Y37 LCM likewise
    # are #VALUE!: the logical value's error comes before the negative number's #NUM! (IronCalc
    # alone: #NUM!, from the first argument)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet"
    ws["A1"], ws["B1"] = -0.4, True
    for row, formula in enumerate(("=GCD(A1,B1)", "=LCM(A1,B1)", "=GCD(B1,12)"), start=1):
        ws.cell(row, 4, formula)
    add_name(wb, "gcd", "Sheet!$D$1")
    add_name(wb, "lcm", "Sheet!$D$2")
    add_name(wb, "of_twelve", "Sheet!$D$3")
    add_name(wb, "first", "Sheet!$A$1")
    add_name(wb, "second", "Sheet!$B$1")
    for workbook in uploaded_and_stored(to_bytes(wb)):
        assert workbook.calculate({}, ["gcd", "lcm"]) == {"gcd": "#VALUE!", "lcm": "#VALUE!"}
        # a number in its place: the negative number's #NUM!, and numbers answer as before
        assert workbook.calculate({"second": 8}, ["gcd", "lcm"]) == {"gcd": "#NUM!", "lcm": "#NUM!"}
        assert workbook.calculate({"first": 12, "second": 8}, ["gcd", "lcm", "of_twelve"]) == {
            "gcd": 4, "lcm": 24, "of_twelve": 4}


def test_empty_arguments_of_statistics_are_zero_rank_order_true_and_rate_with_a_guess():
    # "AVERAGE(10,20,30,)= 15 ... There is no argument after the last comma and excel is defining
    # as "0" the value" (Microsoft Q&A); RANK.EQ: "If order is any non-zero value, Microsoft Excel
    # ranks number as if ref were a list sorted in ascending order"; RATE's page example (four
    # years of 200 a month for a loan of 8,000: 9.24% a year) given a guess (IronCalc alone: 20,
    # 1, 4, #VALUE!, #ERROR!)
    from .conftest import named_formulas, uploaded_and_stored

    data = named_formulas({
        "average": "=AVERAGE(10,20,30,)", "count": "=COUNT(1,,3)", "median": "=MEDIAN(5,3,)",
        "rank": "=RANK.EQ(5,A1:A4,TRUE)", "rate": "=ROUND(RATE(4*12,-200,8000,0,0,0.01)*12,4)",
    }, column="D", cells={"A1": 5, "A2": 3, "A3": 9, "A4": 1})
    for workbook in uploaded_and_stored(data):
        assert workbook.calculate({}) == {"average": 15, "count": 3, "median": 3, "rank": 3, "rate": 0.0924}


def test_an_empty_first_argument_and_a_date_of_empty_parts():
    # DATE: "If year is between 0 (zero) and 1899 (inclusive), Excel adds that value to 1900"; an
    # empty argument is 0, so DATE(,1,1) is 1900-01-01, serial 1 (IronCalc alone 2); the empty
    # first argument of AVERAGE counts as 0 as a later one does
    from .conftest import named_formulas, uploaded_and_stored

    data = named_formulas({"first_day": "=DATE(,1,1)", "day_zero": "=DATE(,1,)", "average": "=AVERAGE(,1,2)"})
    for workbook in uploaded_and_stored(data):
        assert workbook.calculate({}) == {"first_day": 1, "day_zero": 0, "average": 1}


def test_a_rewrite_that_fails_on_a_formula_leaves_it_to_the_engine():
    from shared.calc.corrections.model import rewrite_cells

    class Model:
        formulas = {(0, 1, 1): "=SUM(1)"}

        def get_cell_formula(self, sheet, row, col):
            return self.formulas[(sheet, row, col)]

    def broken(formula, *_):
        raise ValueError("a defect in a rewrite")

    assert rewrite_cells(Model(), [(0, 1, 1)], broken) == []


def test_irr_from_a_far_guess_ends_within_excels_accuracy():
    # IRR: "accurate within 0.00001 percent" from its guess (IRR page); Excel saved 0.07930826116414913
    # for IRR({-20,5,5,5,5,5},17) (IronCalc's IRR.xlsx General!N2), IronCalc alone 0.0793082610836
    from .conftest import named_formulas, uploaded_and_stored

    data = named_formulas({"far": "=IRR(A1:A6,17)", "default": "=IRR(A1:A6)", "none": "=IRR(B1:B2,0.1)"},
                          column="D", cells={"A1": -20, "A2": 5, "A3": 5, "A4": 5, "A5": 5, "A6": 5,
                                             "B1": 1, "B2": 2})
    for workbook in uploaded_and_stored(data):
        outputs = workbook.calculate({})
        assert outputs["far"] == pytest.approx(0.07930826116414913, rel=1e-9)
        assert outputs["default"] == pytest.approx(0.07930826116039724, rel=1e-9)  # General!L2
        assert outputs["none"] == "#NUM!"  # no payment out: no rate (IRR page: at least one negative)
