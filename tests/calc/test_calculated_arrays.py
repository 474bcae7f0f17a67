"""Arrays a formula calculates, given to functions that read a list of values, through the
correction layer.

Excel's aggregate functions ignore the logical values and texts of an array as they ignore those
of a range (Microsoft's AVERAGE, MEDIAN and COUNT pages: "If an array or reference argument
contains text, logical values, or empty cells, those values are ignored"), which is what the
conditional aggregates of "Guidelines and examples of array formulas" rely on:
`{=AVERAGE(IF(region="North",sales))}` averages the North's sales, the other rows' FALSE left
out. IronCalc 0.9.1 counts that FALSE as 0 in AVERAGE, MEDIAN, GEOMEAN, HARMEAN, KURT and SKEW,
counts no number at all in COUNT of a calculated array, and reads LOOKUP's and XLOOKUP's
calculated vectors as one cell: plausible wrong numbers, which the layer now calculates.

Expected values are worked from the data by those rules (the North's sales are 5, 9 and 4).
"""

import io

import openpyxl
import pytest
from openpyxl.worksheet.formula import ArrayFormula

from shared.calc.corrections.dynamic import select

from .conftest import add_name, to_bytes, uploaded_and_stored

REGIONS = ["North", "South", "North", "South", "North"]
SALES = [5, 7, 9, 2, 4]


def sales_book() -> bytes:
    """Regions in A1:A5 and sales in B1:B5 (inputs), the region asked for in D1 and a ceiling
    in D2 (inputs), and per-region figures in column F: legacy array formulas where Excel 2019
    needs them, plain formulas where it does not."""
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, (region, sales) in enumerate(zip(REGIONS, SALES), start=1):
        ws.cell(row, 1, region)
        ws.cell(row, 2, sales)
    ws["D1"] = "North"
    ws["D2"] = 5
    ws["F1"] = ArrayFormula("F1", "=AVERAGE(IF(A1:A5=D1,B1:B5))")
    ws["F2"] = ArrayFormula("F2", "=MEDIAN(IF(A1:A5=D1,B1:B5))")
    ws["F3"] = ArrayFormula("F3", "=COUNT(IF(A1:A5=D1,B1:B5))")
    ws["F4"] = "=LOOKUP(2,1/(A1:A5=D1),B1:B5)"  # the last sale of the region, no Ctrl+Shift+Enter
    ws["F5"] = ArrayFormula("F5", "=_xlfn.XLOOKUP(1,(A1:A5=D1)*(B1:B5<D2),B1:B5)")
    ws["F6"] = "=SUMPRODUCT(LARGE(B1:B5,ROW(1:3)))"  # the three largest sales
    ws["F7"] = ArrayFormula("F7", "=PRODUCT(IF(A1:A5=D1,B1:B5))")
    for name, ref in [("regions", "$A$1:$A$5"), ("sales", "$B$1:$B$5"), ("region", "$D$1"),
                      ("below", "$D$2"), ("average", "$F$1"), ("median", "$F$2"), ("count", "$F$3"),
                      ("last", "$F$4"), ("first_below", "$F$5"), ("top3", "$F$6"), ("product", "$F$7")]:
        add_name(wb, name, f"Sheet!{ref}")
    return to_bytes(wb)


OUTPUTS = ["average", "median", "count", "last", "first_below", "top3", "product"]


@pytest.mark.parametrize("loaded", ["uploaded", "stored"])
def test_conditional_aggregates_leave_out_the_rows_the_condition_drops(loaded):
    # GIVEN the workbook as an upload has it and as a job gets it
    workbook = dict(zip(("uploaded", "stored"), uploaded_and_stored(sales_book())))[loaded]

    # WHEN a job asks for the North, then the South with sales below 3
    north = workbook.calculate({}, OUTPUTS)
    south = workbook.calculate({"region": "South", "below": 3}, OUTPUTS)

    # THEN only the region's sales count (IronCalc alone: average 3.6, median 4, count 0)
    assert north == {"average": 6, "median": 5, "count": 3, "last": 4, "first_below": 4, "top3": 21,
                     "product": 180}
    assert south == {"average": 4.5, "median": 4.5, "count": 2, "last": 2, "first_below": 2, "top3": 21,
                     "product": 14}
    assert workbook.correction_flags() == []


def test_new_data_is_read_the_same_way():
    workbook, _ = uploaded_and_stored(sales_book())

    out = workbook.calculate({"regions": [["East"], ["North"], ["East"], ["East"], ["North"]],
                              "sales": [[1], [2], [3], [10], [20]], "region": "East"}, OUTPUTS)

    assert out["average"] == pytest.approx(14 / 3)
    assert out["median"] == 3
    assert out["count"] == 3
    assert out["last"] == 10
    assert out["top3"] == 33


def test_a_region_with_no_sales_answers_excel_s_errors():
    workbook, _ = uploaded_and_stored(sales_book())

    out = workbook.calculate({"region": "West"}, ["average", "count", "last", "first_below"])

    # AVERAGE of nothing #DIV/0!, COUNT 0, LOOKUP and XLOOKUP find nothing
    assert out == {"average": "#DIV/0!", "count": 0, "last": "#N/A", "first_below": "#N/A"}


def test_offset_given_an_array_is_flagged_at_upload_not_answered_as_one_cell():
    # GIVEN the count of visible rows through SUBTOTAL of one OFFSET per row, which IronCalc
    # answers as one cell and the layer cannot calculate
    wb = openpyxl.load_workbook(io.BytesIO(sales_book()))
    wb.active["H1"] = "=SUMPRODUCT(SUBTOTAL(9,OFFSET(B1,ROW(1:5)-1,0)))"
    workbook, _ = uploaded_and_stored(to_bytes(wb))

    workbook.calculate({}, ["average"])

    # THEN the cell is named in the flags (the upload's report and warnings name it)
    assert any("H1" in str(flag) for flag in workbook.correction_flags())


@pytest.mark.parametrize(
    ("formula", "array_formula", "ours"),
    [
        ('=AVERAGE(IF(A1:A5="x",B1:B5))', True, True),  # FALSE counted as 0 by IronCalc
        ('=COUNT(B1:B5*1)', True, True),  # IronCalc counts no number of a calculated array
        ('=COUNT(SEARCH({"red","blue"},A1))', False, True),  # an array constant: any formula
        ("=SUM(--ISNUMBER(_xlfn.SEQUENCE(3)))", True, True),  # a dynamic array's elements
        ('=SUM(B1:B5*(MOD(ROW(B1:B5),2)=0))', True, True),  # ROW of a range is an array
        ('=LOOKUP(2,1/(A1:A5="x"),B1:B5)', False, True),  # LOOKUP's vectors take arrays
        ("=SUMPRODUCT(ISNUMBER(MATCH(B1:B5,{5,9},0))*1)", False, True),  # one position per value
        ("=AVERAGE(B1:B5)", True, False),  # a range as written: IronCalc's
        ('=AVERAGE(IF(A1:A5="x",B1:B5,""))', False, False),  # not an array formula: intersected
        ('=STDEV(IF(A1:A5="x",B1:B5))', True, False),  # IronCalc leaves the FALSE out here
        ("=LOOKUP(2,A1:A5,B1:B5)", False, False),  # vectors as written
    ],
)
def test_the_formulas_the_layer_takes_for_their_calculated_arrays(formula, array_formula, ours):
    # (formulas calling an Excel 365 function are the layer's by their own rule: XLOOKUP's
    # calculated lookup array is in the jobs above, SORTBY by a row in the conformance cases)
    found = select(formula, array_formula)
    assert (found is not None and found.always) is ours


def test_a_cell_reading_another_corrected_cell_is_calculated_again_from_its_answer():
    # GIVEN the North's average (F1, corrected by the layer) and, from it, how many sales lie
    # above it (G1, also the layer's): G1 first reads IronCalc's wrong average
    wb = openpyxl.load_workbook(io.BytesIO(sales_book()))
    wb.active["G1"] = ArrayFormula("G1", "=COUNT(IF(B1:B5>F1,B1:B5))")
    add_name(wb, "above", "Sheet!$G$1")
    for workbook in uploaded_and_stored(to_bytes(wb)):
        # THEN it is calculated again from the corrected average (6: 7 and 9 lie above it;
        # from IronCalc's 3.6 it would be 4)
        assert workbook.calculate({}, ["average", "above"]) == {"average": 6, "above": 2}
        # AND again when a job changes what the average reads
        assert workbook.calculate({"region": "South"}, ["average", "above"]) == {"average": 4.5, "above": 3}


def test_offset_and_indirect_give_the_layer_the_range_they_name():
    # GIVEN formulas the layer evaluates (MAP, an array formula) reading ranges through OFFSET
    # and INDIRECT (Microsoft's OFFSET and INDIRECT pages: a reference moved and resized, the
    # reference a text or a defined name names; outside the sheet #REF!)
    wb = openpyxl.load_workbook(io.BytesIO(sales_book()))
    ws = wb.active
    ws["H1"] = "a1b22c3"
    ws["I1"] = "=SUM(_xlfn.MAP(OFFSET(B1,1,0,2,1),_xlfn.LAMBDA(_xlpm.x,_xlpm.x*2)))"
    ws["I2"] = '=SUM(_xlfn.MAP(INDIRECT("B"&D2),_xlfn.LAMBDA(_xlpm.x,_xlpm.x+1)))'
    ws["I3"] = '=SUM(_xlfn.MAP(INDIRECT("sales"),_xlfn.LAMBDA(_xlpm.x,_xlpm.x)))'
    ws["I4"] = "=_xlfn.MAP(OFFSET(B1,-1,0),_xlfn.LAMBDA(_xlpm.x,_xlpm.x))"
    ws["I5"] = ArrayFormula("I5", '=SUM(IFERROR(--MID(H1,ROW(INDIRECT("1:"&LEN(H1))),1),0))')
    for name, ref in [("text", "$H$1"), ("moved", "$I$1"), ("by_text", "$I$2"), ("by_name", "$I$3"),
                      ("outside", "$I$4"), ("digits", "$I$5")]:
        add_name(wb, name, f"Sheet!{ref}")
    for workbook in uploaded_and_stored(to_bytes(wb)):
        out = workbook.calculate({}, ["moved", "by_text", "by_name", "outside", "digits"])
        # THEN B2:B3 doubled, B5 (D2 holds 5) plus one, the whole of sales, #REF!, 1+2+2+3
        assert out == {"moved": 32, "by_text": 5, "by_name": 27, "outside": "#REF!", "digits": 8}
        # AND a job's text is read character by character (IronCalc alone: 0)
        assert workbook.calculate({"text": "x9y9"}, ["digits"]) == {"digits": 18}


UNIQUE_PAGE = "https://support.microsoft.com/en-us/office/count-unique-values-among-duplicates-8d9a69b3-b867-490e-82e0-a929fbc1e273"


def names_book() -> bytes:
    """Six names in A1:A6 (an input, a blank among them) and three legacy array formulas over
    them: the count-unique page's FREQUENCY/MATCH count with LEN leaving blanks out, the same
    count as a sum of 1/COUNTIF, and the most frequent name (INDEX of MODE of MATCH)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, name in enumerate(["Ann", "Bob", "Ann", None, "Cy", "Ann"], start=1):
        ws.cell(row, 1, name)
    match = "MATCH(A1:A6,A1:A6,0)"
    ws["C1"] = ArrayFormula("C1", f'=SUM(IF(FREQUENCY(IF(LEN(A1:A6)>0,{match},""),IF(LEN(A1:A6)>0,{match},""))>0,1))')
    ws["C2"] = ArrayFormula("C2", '=SUM(IF(A1:A6<>"",1/COUNTIF(A1:A6,A1:A6)))')
    ws["C3"] = ArrayFormula("C3", f'=INDEX(A1:A6,MODE(IF(A1:A6<>"",{match})))')
    for name, ref in {"names": "$A$1:$A$6", "distinct": "$C$1", "by_countif": "$C$2", "most_frequent": "$C$3"}.items():
        add_name(wb, name, f"Sheet!{ref}")
    return to_bytes(wb)


@pytest.mark.parametrize("loaded", ["uploaded", "stored"])
def test_the_idioms_counting_distinct_values_and_finding_the_most_frequent_one(loaded):
    # GIVEN the idioms of the count-unique page (UNIQUE_PAGE) over names with a blank among them.
    # MATCH answers each name's first position; an exact match of a blank is #N/A and a blank
    # criteria cell counts the cells holding 0 (Excel-saved: IronCalc's MATCH.xlsx C19 and
    # COUNTIF.xlsx Rows!AA6), so IF's blank test leaves the blank out. IronCalc alone: #VALUE!,
    # #DIV/0! and #N/A.
    workbook = dict(zip(("uploaded", "stored"), uploaded_and_stored(names_book())))[loaded]
    outputs = ["distinct", "by_countif", "most_frequent"]

    # WHEN jobs calculate them
    # THEN Ann, Bob and Cy are three names, Ann the most frequent
    assert workbook.calculate({}, outputs) == {"distinct": 3, "by_countif": 3, "most_frequent": "Ann"}
    out = workbook.calculate({"names": [["x"], ["y"], ["y"], ["z"], [None], ["y"]]}, outputs)
    assert out == {"distinct": 3, "by_countif": 3, "most_frequent": "y"}
    # AND no flag was needed: the layer answered every cell
    assert workbook.correction_flags() == []


def test_a_name_let_binds_to_an_array_reaches_the_functions_it_is_given_to():
    # GIVEN Excel 365's LET naming the distinct names and counting each with COUNTIF (a criterion
    # per value, the COUNTIF page), and joining each with CONCATENATE (applied to each value)
    from .test_dynamic_arrays import excel365, spilled

    wb = openpyxl.Workbook()
    ws = wb.active
    for row, name in enumerate(["x", "y", "x", "z", "x"], start=1):
        ws.cell(row, 1, name)
    spilled(ws, "C1", "=_xlfn.LET(_xlpm.u,_xlfn.UNIQUE(A1:A5),_xlfn.HSTACK(_xlpm.u,COUNTIF(A1:A5,_xlpm.u)))", "C1:D3")
    spilled(ws, "F1", '=_xlfn.LET(_xlpm.u,_xlfn.UNIQUE(A1:A5),CONCATENATE(_xlpm.u,"!"))', "F1:F3")
    add_name(wb, "names", "Sheet!$A$1:$A$5")
    add_name(wb, "counts", "Sheet!$C$1:$D$3")
    add_name(wb, "shouted", "Sheet!$F$1:$F$3")
    workbook, _ = uploaded_and_stored(excel365(wb))

    # WHEN a job calculates them
    out = workbook.calculate({}, ["counts", "shouted"])

    # THEN each distinct name is counted and joined (IronCalc alone: 0 and #N/A; #VALUE!)
    assert out == {"counts": [["x", 3], ["y", 1], ["z", 1]], "shouted": ["x!", "y!", "z!"]}


def test_the_text_functions_of_excel_365_given_a_range_answer_for_each_cell():
    # GIVEN TEXTBEFORE, TEXTAFTER and VALUETOTEXT given the range of full names (an input), each
    # spilling down (a function of one value given an array: "Dynamic array formulas and spilled
    # array behavior")
    from .test_dynamic_arrays import excel365, spilled

    wb = openpyxl.Workbook()
    ws = wb.active
    for row, name in enumerate(["John Smith", "Jane Doe", "Bob Lee"], start=1):
        ws.cell(row, 1, name)
    spilled(ws, "C1", '=_xlfn.TEXTBEFORE(A1:A3," ")', "C1:C3")
    spilled(ws, "D1", '=_xlfn.TEXTAFTER(A1:A3," ")', "D1:D3")
    spilled(ws, "E1", "=_xlfn.VALUETOTEXT(A1:A3)", "E1:E3")
    for name, ref in {"names": "$A$1:$A$3", "first": "$C$1:$C$3", "last": "$D$1:$D$3", "as_text": "$E$1:$E$3"}.items():
        add_name(wb, name, f"Sheet!{ref}")
    workbook, _ = uploaded_and_stored(excel365(wb))

    # WHEN a job gives other names
    out = workbook.calculate({"names": [["Ada Lovelace"], ["Alan Turing"], [42]]}, ["first", "last", "as_text"])

    # THEN each cell is answered (IronCalc alone: #VALUE!); a name without a space is #N/A
    assert out == {"first": ["Ada", "Alan", "#N/A"], "last": ["Lovelace", "Turing", "#N/A"],
                   "as_text": ["Ada Lovelace", "Alan Turing", "42"]}
