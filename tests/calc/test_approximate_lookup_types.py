"""Approximate lookups given a lookup value of a type their data do not hold, through the
correction layer.

Excel compares an approximate VLOOKUP, HLOOKUP, MATCH or LOOKUP's lookup value only with items of
its own type: a text (or TRUE) looked up in a band table of numbers is #N/A (pycel's
lookup.xlsx, LookupBlanks!D12:F12 and Lookup!H20:I26, saved by Excel). IronCalc 0.9.1 sorts texts
after numbers and answers the last band: a plausible wrong rate for a consumer who sends "abc"
where a number belongs. The layer evaluates such a lookup in every calculation whose lookup
value (a cell or a name of one) holds a text or a logical value; a number stays IronCalc's.
"""

import openpyxl

from shared.calc.corrections.dynamic import approximate_lookups, select
from shared.calc.corrections.dynamic.lookup import approximate_position
from shared.calc.corrections.dynamic.parse import parse

from .conftest import add_name, to_bytes, uploaded_and_stored


def band_book() -> bytes:
    """Age bands 0, 18, 30, 50 with rates in A1:B4, the age (an input, named Age) in D1, and
    the rate found by VLOOKUP through the name, by MATCH through the cell, and by LOOKUP."""
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, (age, rate) in enumerate([(0, 0.5), (18, 1.0), (30, 1.2), (50, 1.8)], start=1):
        ws.cell(row, 1, age)
        ws.cell(row, 2, rate)
    ws["D1"] = 35
    ws["E1"] = "=VLOOKUP(Age,$A$1:$B$4,2)"
    ws["E2"] = "=MATCH(D1,$A$1:$A$4,1)"
    ws["E3"] = "=LOOKUP(D1,$A$1:$A$4,$B$1:$B$4)"
    add_name(wb, "Age", "Sheet!$D$1")
    add_name(wb, "rate", "Sheet!$E$1")
    add_name(wb, "band", "Sheet!$E$2")
    add_name(wb, "looked_up", "Sheet!$E$3")
    return to_bytes(wb)


def test_a_number_finds_its_band_and_a_text_or_logical_value_finds_none():
    for workbook in uploaded_and_stored(band_book()):
        outputs = ["rate", "band", "looked_up"]
        # WHEN the age is a number THEN its band is found, as IronCalc finds it
        assert workbook.calculate({"Age": 35}, outputs) == {"rate": 1.2, "band": 3, "looked_up": 1.2}
        # WHEN it is a text THEN nothing is found (IronCalc alone: the last band, 1.8 and 4)
        assert workbook.calculate({"Age": "thirty"}, outputs) == {"rate": "#N/A", "band": "#N/A", "looked_up": "#N/A"}
        assert workbook.calculate({"Age": True}, outputs) == {"rate": "#N/A", "band": "#N/A", "looked_up": "#N/A"}
        # AND a number again is found again
        assert workbook.calculate({"Age": 17}, outputs) == {"rate": 0.5, "band": 1, "looked_up": 0.5}
        assert workbook.correction_flags() == []


def test_a_text_is_found_among_the_texts_of_a_mixed_column():
    # GIVEN a column of grades (texts) with a number among them, looked up approximately
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, (grade, points) in enumerate([("A", 4), (99, 0), ("B", 3), ("C", 2)], start=1):
        ws.cell(row, 1, grade)
        ws.cell(row, 2, points)
    ws["D1"] = "Bx"
    ws["E1"] = "=VLOOKUP(D1,A1:B4,2,TRUE)"
    add_name(wb, "grade", "Sheet!$D$1")
    add_name(wb, "points", "Sheet!$E$1")
    for workbook in uploaded_and_stored(to_bytes(wb)):
        # THEN the number is skipped: "Bx" comes after "B" and before "C"
        assert workbook.calculate({}, ["points"]) == {"points": 3}
        assert workbook.calculate({"grade": "c"}, ["points"]) == {"points": 2}  # without case


def test_match_minus_one_over_ascending_numbers_is_not_found():
    # GIVEN MATCH -1 (descending data expected) over ascending numbers: Excel stops at the first
    # smaller item (pycel's lookup.xlsx Lookup!C32: #N/A), IronCalc 0.9.1 answers the last row
    wb = openpyxl.Workbook()
    ws = wb.active
    for row in range(1, 6):
        ws.cell(row, 1, row - 1)
    ws["C1"] = 0.5
    ws["D1"] = "=MATCH(C1,A1:A5,-1)"
    add_name(wb, "x", "Sheet!$C$1")
    add_name(wb, "found", "Sheet!$D$1")
    for workbook in uploaded_and_stored(to_bytes(wb)):
        assert workbook.calculate({}, ["found"]) == {"found": "#N/A"}
        assert workbook.calculate({"x": 0}, ["found"]) == {"found": 1}
        assert workbook.calculate({"x": -3}, ["found"]) == {"found": 5}


def test_the_lookups_the_layer_watches():
    # approximate: range_lookup or match_type left out, TRUE, or not a literal 0/FALSE
    found = approximate_lookups(parse("=VLOOKUP(A1,B1:C9,2)+MATCH(A2,B1:B9,-1)+LOOKUP(A3,B1:B9)"))
    assert [(value, descending) for value, _, descending in found] == [
        (("ref", "A1"), False), (("ref", "A2"), True), (("ref", "A3"), False)]
    assert approximate_lookups(parse("=VLOOKUP(A1,B1:C9,2,FALSE)+MATCH(A2,B1:B9,0)")) == []
    assert approximate_lookups(parse("=XLOOKUP(A1,B1:B9,C1:C9,,-1)")) == []
    # a lookup value from a cell: ours when it holds a text; over an array constant: always
    assert select("=VLOOKUP(A1,B1:C9,2)").always is False
    assert select('=LOOKUP(A1,{1,2,3})').always is True
    assert select('=MATCH("x",B1:B9)').always is True
    assert select("=VLOOKUP(A1,B1:C9,2,FALSE)") is None
    # a formula calling a function the layer does not evaluate stays IronCalc's
    assert select("=EXP(VLOOKUP(A1,B1:C9,2))") is None
    assert select("=ROUND(VLOOKUP(A1,B1:C9,2),2)") is not None


def test_the_position_excel_finds_in_unsorted_and_mixed_items():
    # formulas' test.xlsx LOOKUP!R59:Y59 and R87:Y87, saved by Excel
    items = [4.1, 2.1, 3.1, 1.1]
    assert [approximate_position(x, items) for x in (-2.0, 2.0, 3.0, 4.0, 4.1)] == [None, None, 1, 3, 3]
    # IronCalc's MATCH.xlsx Sheet1!C7: the last of equal items in sorted data
    assert approximate_position("delta", ["Alpha", "Beta", "Delta", "Delta", "Gamma", "Omega"]) == 3
    mixed = ["c bau c", 4.1, "a", 1.1]
    assert [approximate_position(x, mixed, descending=True) for x in (-2.0, 3.0, 4.1, "*b?u*")] == [3, 1, 1, 2]
