"""ADDRESS with empty arguments, SHEET, SHEETS and FORMULATEXT of references, ARABIC with
spaces (shared/calc/corrections/functions/reference_arguments.py).

Expected values from Microsoft's pages: "=ADDRESS(1,1,,,"Sheet2") returns Sheet2!$A$1" and
ADDRESS(2,3) is $C$2 (ADDRESS); SHEET gives the number of a reference's sheet; SHEETS the number
of sheets in a reference; FORMULATEXT of a range the formula of its upper left cell; ARABIC
ignores leading and trailing spaces and reads LVII as 57.
"""

import pytest

from shared.calc.corrections.functions.reference_arguments import rewrite_formula

from .conftest import named_formulas, saved_sheet_xml, uploaded_and_stored


def test_the_pages_rules_in_a_job():
    data = named_formulas({
        "on_sheet": '=ADDRESS(1,1,,,"Sheet1")',
        "style_left_empty": '=ADDRESS(2,3,1,,"Sheet1")',  # IronCalc alone: R1C1 style
        "sheet_of": "=SHEET(Sheet1!B3)",
        "sheets_in": "=SHEETS(Sheet1!A1:B2)",
        "sheets_named": "=SHEETS(Area)",
        "formula_of": "=FORMULATEXT(A1:A2)",
        "roman": '=ARABIC("  LVII  ")',
    }, column="D", cells={"A1": "=1+2", "A2": 5}, names={"Area": "$A$1:$B$2"})
    outputs = ["on_sheet", "style_left_empty", "sheet_of", "sheets_in", "sheets_named", "formula_of", "roman"]
    for workbook in uploaded_and_stored(data):
        assert workbook.calculate({}, outputs) == {
            "on_sheet": "Sheet1!$A$1", "style_left_empty": "Sheet1!$C$2", "sheet_of": 1, "sheets_in": 1, "sheets_named": 1,
            "formula_of": "=1+2", "roman": 57,
        }
        assert workbook.correction_flags() == []


@pytest.mark.parametrize("formula, rewritten", [
    ('=ADDRESS(1,1,,,"Sheet2")', 'ADDRESS(1,1,1,TRUE,"Sheet2")'),
    ("=ADDRESS(2,3,)", "ADDRESS(2,3,1)"),
    ("=ADDRESS(2,3,4,FALSE)", None),
    ("=SHEET(Sheet2!B3)", 'SHEET("Sheet2")'),
    ("=SHEET('It''s'!A1)", "SHEET(\"It's\")"),
    ("=SHEET(B3)", "SHEET()"),
    ("=SHEET(Rates)", None),  # a name: left to IronCalc
    ("=SHEETS(A1:B2)+1", "1+1"),
    ("=FORMULATEXT(Sheet2!A1:B2)", "FORMULATEXT(Sheet2!A1)"),
    ("=FORMULATEXT(A1)", None),
    ('=ARABIC(" X ")', 'ARABIC(TRIM(" X "))'),
])
def test_the_calls_rewritten(formula, rewritten):
    assert rewrite_formula(formula) == rewritten


def test_the_filled_workbook_keeps_the_formula_as_written():
    workbook = uploaded_and_stored(named_formulas({"at": '=ADDRESS(1,1,,,"Sheet1")'}))[0]
    workbook.calculate({})
    assert 'ADDRESS(1,1,,,"Sheet1")' in saved_sheet_xml(workbook).replace("&quot;", '"')


def test_lookup_ranges_of_one_cell_are_ranges():
    # INDEX: "Reference ... a reference to one or more cell ranges"; MATCH: "lookup_array ...
    # the range of cells being searched" (IronCalc alone: #N/A, #VALUE!, #NUM!, no RANK)
    data = named_formulas({
        "match": "=MATCH(10,A1,0)", "vlookup": "=VLOOKUP(10,A1:B1,2,FALSE)+VLOOKUP(10,A1,1,FALSE)",
        "xlookup": "=XLOOKUP(10,A1,B1)", "index": "=INDEX(B1,1,1)", "small": "=SMALL(A1,1)",
        "rank": "=RANK(10,A1)",
    }, column="D", cells={"A1": 10, "B1": 40})
    for workbook in uploaded_and_stored(data):
        assert workbook.calculate({}) == {"match": 1, "vlookup": 50, "xlookup": 40, "index": 40, "small": 10,
                                          "rank": 1}


def test_roman_numerals_and_radix_digits_as_excel_reads_them():
    # Excel-saved, formulas' test.xlsx MATH & TRIG row 9 and row 26: ARABIC reads any string of
    # Roman digits right to left, subtracting a digit smaller than the largest read so far; a
    # blank cell is 0; DECIMAL of a digit outside the radix is #NUM!
    data = named_formulas({
        "six_ones_and_five": "=ARABIC(A1)",
        "mixed": "=ARABIC(A2)",
        "blank": "=ARABIC(A3)",
        "negative": '=ARABIC("-MMXI")',
        "logical": "=ARABIC(A4)",
        "f_in_base_15": '=DECIMAL("FF",15)',
        "three_in_binary": "=DECIMAL(113,2)",
        "binary": "=DECIMAL(111,2.5)",
    }, column="D", cells={"A1": "IIIIIIV", "A2": "IILmIIC", "A4": True}, names={"numeral": "$A$1"})
    for workbook in uploaded_and_stored(data):
        # (IronCalc alone: #VALUE! for all but the binary and the logical)
        assert workbook.calculate({}) == {
            "six_ones_and_five": -1, "mixed": 1046, "blank": 0, "negative": -2011, "logical": "#VALUE!",
            "f_in_base_15": "#NUM!", "three_in_binary": "#NUM!", "binary": 7,
        }
        # a numeral IronCalc reads itself stays its answer
        assert workbook.calculate({"numeral": "MCMXII"}, ["six_ones_and_five"]) == {"six_ones_and_five": 1912}
        assert workbook.correction_flags() == []
