"""XLOOKUP and XMATCH in the dynamic-array evaluator (shared/calc/corrections/dynamic/lookup.py):
the regular expression mode and the rules Excel's saved values settle, and TREND there
(dynamic/regression.py).

Expected values: Microsoft's REGEXTEST page ("whether any part of supplied text matches",
case-sensitive by default, PCRE2) and cells Excel saved in the corpus (cited per case).
"""

import math

import pytest

from shared.calc.corrections.dynamic.evaluate import Book, Evaluator
from shared.calc.corrections.dynamic.regex import compile_pattern
from shared.calc.corrections.dynamic.values import Err, Grid
from shared.calc.corrections.functions.text_format import Unsupported

COUNTRIES = '{"Albania";"Indonesia";"India";"Germany";"Spain";"Venezuela";"Italy";"Francialy"}'


def evaluate(formula: str):
    class NoModel:
        def get_defined_name_list(self):
            return []

    def empty(model, sheet, row, col):
        return ("empty", None)

    result = Evaluator(Book(NoModel(), ["Sheet1"], empty, {}), 0, 10, 10).formula(formula)
    if isinstance(result, Grid):
        return result.rows
    return result.code if isinstance(result, Err) else result


@pytest.mark.parametrize("formula, expected", [
    # corpus LOOKUP_AND_REFERENCE/XMATCH.xlsx D6 and D7 (Excel for Mac), the range as a constant
    (f'=XMATCH("[A-Z][a-z]+y",{COUNTRIES},3,1)', 4.0),
    (f'=XMATCH("[A-Z][a-z]+y",{COUNTRIES},3,-1)', 8.0),
    # REGEXTEST page: any part of the text matches; case-sensitive unless the pattern says so
    (f'=XMATCH("ai",{COUNTRIES},3)', 5.0),
    (f'=XMATCH("^SPAIN$",{COUNTRIES},3)', "#N/A"),
    (f'=XMATCH("(?i)^SPAIN$",{COUNTRIES},3)', 5.0),
    (f'=XLOOKUP("^Ind",{COUNTRIES},{{1;2;3;4;5;6;7;8}},"none",3,-1)', 3.0),
    ('=XLOOKUP("x",{"a";"b"},{1;2},"none",3)', "none"),
])
def test_a_regular_expression_finds_the_text_it_matches(formula, expected):
    assert evaluate(formula) == expected


@pytest.mark.parametrize("pattern", [
    "[[:alpha:]]+", r"\Qa.b\E", r"\p{Lu}", r"a\Kb", r"\h", r"a\z", r"a\Z", "(*UTF)a", "(?|a|b)",
    "(?<name>a)", "a{,3}", r"\x{41}", "(?U)a+", r"\R",
])
def test_a_pattern_pcre2_reads_otherwise_is_refused(pattern):
    with pytest.raises(Unsupported):
        compile_pattern(pattern)


def test_a_pattern_both_read_alike_is_compiled():
    for pattern in (r"^\(\d{3}\) \d{3}-\d{4}$", "(?i)b(?:an)+a", "(?P<x>a)(?P=x)", "a++b", "(?>ab)c"):
        compile_pattern(pattern)
    assert compile_pattern(r"\d+").search("tel 555")
    with pytest.raises(Unsupported):  # \d over digits PCRE2 would read as ASCII only
        compile_pattern(r"\d").search("٣")


def test_regular_expressions_are_not_searched_by_halves():
    with pytest.raises(Unsupported):
        evaluate(f'=XMATCH("a",{COUNTRIES},3,2)')


@pytest.mark.parametrize("formula, expected", [
    # formulas' test.xlsx, LOOKUP sheet: Excel's sort order across types, blanks last
    ('=XMATCH(TRUE,{-1.1,2.1,3.1,4.1},-1)', 4.0),               # Y189
    ('=XMATCH("*b?u*",{"c bau c",4.1,"a",1.1},-1)', 2.0),       # X193
    ('=XMATCH(A1,{TRUE,4.1,FALSE,"c bau c"},-1,-2)', 1.0),      # W178 (A1 empty)
    ('=XMATCH(A1,{TRUE,4.1,FALSE,"c bau c"},0)', "#N/A"),       # W187
    ('=XMATCH(NA(),{4.1,3.1,2.1,1.1},2,2)', "#N/A"),            # AA183
    ('=XLOOKUP(4.1,{"b",4.1,"a",1.1},{"L","ML","MR","R"})', "ML"),  # V166
    ('=XLOOKUP(3,{-1.1,2.1,3.1,4.1},{1,2,3,4},8,2,1)', 8.0),    # T162: a number in wildcard mode
    ('=XMATCH(4.1,{"a",2.1,"c bau c",4.1},2,1)', 4.0),          # V181: matches exactly
])
def test_lookups_answer_the_values_excel_saved(formula, expected):
    assert evaluate(formula) == expected


def test_trend_is_evaluated_with_excels_rules():
    # Microsoft's Excel 97 help for TREND: TREND(B2:B13,,{13;14;15;16;17}) equals
    # {146172;147190;148208;149226;150244} (to the dollar)
    costs = "{133890;135000;135790;137300;138130;139100;139900;141120;141890;143230;144000;145290}"
    rows = evaluate(f"=TREND({costs},,{{13;14;15;16;17}})")
    assert [round(r[0]) for r in rows] == [146172, 147190, 148208, 149226, 150244]
    # formulas' test.xlsx STATISTICAL!S113 and AA113
    assert evaluate("=TREND({2;3;4;21;2},{2,1;2,2;5,3;2,4;4,1},{0.1,0.2,0.3})") == "#REF!"
    assert evaluate("=TREND({2;3;4;21;2},{2,1;2,2;5,3;2,4;4,1},{5,NA()})") == "#VALUE!"


def test_growth_and_logest_are_trend_and_linest_over_logarithms():
    # ECMA-376 Part 4 and Microsoft's GROWTH page: months 11-16, units 33100 ... 220000, fitted
    # 32618.20377 for month 11; LOGEST of the same: m 1.463275628, b 495.3047702
    units = "{33100;47300;69000;102000;150000;220000}"
    months = "{11;12;13;14;15;16}"
    fitted = evaluate(f"=GROWTH({units},{months})")
    assert math.isclose(fitted[0][0], 32618.20377, rel_tol=1e-9)
    m, b = evaluate(f"=LOGEST({units},{months})")[0]
    assert math.isclose(m, 1.463275628, rel_tol=1e-9) and math.isclose(b, 495.3047702, rel_tol=1e-9)
    # Microsoft's GROWTH page: "If any of the numbers in known_y's is 0 or negative, GROWTH
    # returns the #NUM! error value"; an error among them is #VALUE! (test.xlsx STATISTICAL!AB59)
    assert evaluate("=GROWTH({1;0;3},{1;2;3})") == "#NUM!"
    assert evaluate("=LOGEST({1;#N/A;3},{1;2;3})") == "#VALUE!"


def test_linest_in_one_cell_is_its_first_item_as_excel_saved_it():
    """pycel's stats.xlsx (Excel-saved, before dynamic arrays): Stats!G3 LINEST(J3:N3,J4:N4) in
    one plain cell shows the slope, -0.44097...; G5, whose x never varies, 0. IronCalc 0.9.1
    answers #REF! for both."""
    from openpyxl import Workbook

    from .conftest import add_name, to_bytes, uploaded_and_stored

    wb = Workbook()
    ws = wb.active
    ws.title = "Stats"
    for row, values in enumerate([[1, 2.1, 3.1, 4.1, 5.1], [-2, -4, -7, -9, -11], [1, 3, 6, 9, 12],
                                  [1, 1, 1, 1, 1]], start=3):
        for col, value in enumerate(values, start=10):
            ws.cell(row, col, value)
    ws["G3"] = "=LINEST(J3:N3,J4:N4)"
    ws["G5"] = "=LINEST(J5:N5,J6:N6)"
    add_name(wb, "slope", "Stats!$G$3")
    add_name(wb, "flat", "Stats!$G$5")
    add_name(wb, "x", "Stats!$J$4")
    for book in uploaded_and_stored(to_bytes(wb)):
        outputs = book.calculate({}, ["slope", "flat"])
        assert math.isclose(outputs["slope"], -0.4409774436090227, rel_tol=1e-12)
        assert outputs["flat"] == 0
        # a job changing an x: the fit follows (y 1, 2.1, 3.1, 4.1, 5.1 against x 0, -4, -7, -9, -11)
        assert book.calculate({"x": 0}, ["slope"])["slope"] < 0


def test_a_blank_lookup_value_over_cells_is_read_as_excel_reads_it_in_every_job():
    """IronCalc 0.9.1 reads a blank lookup value as 0 (next larger of -1.1, 2.1, 3.1, 4.1: 2);
    Excel finds no next larger item (formulas' test.xlsx LOOKUP!W171 saved #N/A for the same
    lookup over an array constant). A job that fills the input gets IronCalc's answer again."""
    from openpyxl import Workbook

    from .conftest import add_name, to_bytes, uploaded_and_stored

    wb = Workbook()
    ws = wb.active
    ws.title = "Sheet"
    for col, value in enumerate([-1.1, 2.1, 3.1, 4.1], start=2):
        ws.cell(1, col, value)
    ws["A3"] = "=_xlfn.XMATCH(A1,B1:E1,1)"
    ws["A4"] = "=_xlfn.XLOOKUP(A1,B1:E1,B1:E1,\"none\",1)"
    ws["A5"] = "=A3*10"  # a cell depending on the corrected one
    add_name(wb, "value", "Sheet!$A$1")
    add_name(wb, "results", "Sheet!$A$3:$A$5")
    for book in uploaded_and_stored(to_bytes(wb)):
        assert book.calculate({})["results"] == ["#N/A", "none", "#N/A"]
        assert book.calculate({"value": 3})["results"] == [3, 3.1, 30]
        assert book.calculate({"value": None})["results"] == ["#N/A", "none", "#N/A"]


def test_switch_matches_a_blank_cell_only_with_zero_in_every_job():
    """SWITCH reads a blank cell as 0: it matches 0, not FALSE or "" (pycel's logical.xlsx,
    Switch!C32:C40, saved by Excel); IronCalc 0.9.1 matches a blank with FALSE and "" too. A job
    that fills the input gets IronCalc's answer again."""
    from openpyxl import Workbook

    from .conftest import add_name, to_bytes, uploaded_and_stored

    wb = Workbook()
    ws = wb.active
    ws.title = "Sheet"
    ws["A3"] = '=_xlfn.SWITCH(A1,FALSE,"false",0,"zero","other")'
    ws["A4"] = '=_xlfn.SWITCH(FALSE,A1,"matched","no match")'
    add_name(wb, "value", "Sheet!$A$1")
    add_name(wb, "results", "Sheet!$A$3:$A$4")
    for book in uploaded_and_stored(to_bytes(wb)):
        assert book.calculate({})["results"] == ["zero", "no match"]
        assert book.calculate({"value": False})["results"] == ["false", "matched"]
        assert book.calculate({"value": None})["results"] == ["zero", "no match"]
