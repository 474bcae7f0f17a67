"""The IS functions, TYPE, N and T read the cell that OFFSET or CHOOSE refers to.

Excel's rules: OFFSET "returns a reference to a range" and CHOOSE of references returns the
chosen reference (their pages); an IS function's value "can be a blank (empty cell), error,
logical value, text, number, or reference value", N of a reference to a number is the number
and of a logical value 1, T of a reference to text is the text (the IS functions, N and T
pages). IronCalc 0.9.1 alone leaves such a reference unread: ISTEXT FALSE, ISBLANK of an empty
cell FALSE, TYPE 64, N #N/IMPL!, T "" (tests/conformance/cases carry the same cases).
"""

import openpyxl
import pytest

from .conftest import add_name, to_bytes, uploaded_and_stored

# column A: what OFFSET and CHOOSE read, row 1 to 5: a number, a text, TRUE, an empty cell, #DIV/0!
COLUMN_A = {"A1": 20, "A2": "b", "A3": True, "A5": "=1/0"}
READERS = {
    "is_number": "=ISNUMBER(OFFSET($A$1,row-1,0))",
    "is_text": "=ISTEXT(OFFSET($A$1,row-1,0))",
    "is_nontext": "=ISNONTEXT(OFFSET($A$1,row-1,0))",
    "is_logical": "=ISLOGICAL(OFFSET($A$1,row-1,0,1,1))",
    "is_blank": "=ISBLANK(OFFSET($A$1,row-1,0))",
    "is_error": "=ISERROR(OFFSET($A$1,row-1,0))",
    "type": "=TYPE(OFFSET($A$1,row-1,0))",
    "n": "=N(OFFSET($A$1,row-1,0))",
    "t": "=T(CHOOSE(row,$A$1,$A$2,$A$3,$A$4,$A$5))",
    "chosen_text": "=ISTEXT(CHOOSE(row,$A$1,$A$2,$A$3,$A$4,$A$5))",
}
# what each reader answers for the cell of each row (the pages' rules above)
EXPECTED = {
    1: {"is_number": True, "is_text": False, "is_nontext": True, "is_logical": False, "is_blank": False,
        "is_error": False, "type": 1, "n": 20, "t": "", "chosen_text": False},
    2: {"is_number": False, "is_text": True, "is_nontext": False, "is_logical": False, "is_blank": False,
        "is_error": False, "type": 2, "n": 0, "t": "b", "chosen_text": True},
    3: {"is_number": False, "is_text": False, "is_nontext": True, "is_logical": True, "is_blank": False,
        "is_error": False, "type": 4, "n": 1, "t": "", "chosen_text": False},
    4: {"is_number": False, "is_text": False, "is_nontext": True, "is_logical": False, "is_blank": True,
        "is_error": False, "type": 1, "n": 0, "t": "", "chosen_text": False},
    5: {"is_number": False, "is_text": False, "is_nontext": True, "is_logical": False, "is_blank": False,
        "is_error": True, "type": 16, "n": "#DIV/0!", "t": "#DIV/0!", "chosen_text": False},
}


def readers_workbook(formulas: dict[str, str]) -> bytes:
    """Column A as COLUMN_A, the input `row` in C1, and each formula in column E under its name."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet"
    for cell, value in COLUMN_A.items():
        ws[cell] = value
    ws["C1"] = 1
    add_name(wb, "row", "Sheet!$C$1")
    for row, (name, formula) in enumerate(formulas.items(), start=1):
        ws[f"E{row}"] = formula
        add_name(wb, name, f"Sheet!$E${row}")
    return to_bytes(wb)


@pytest.mark.parametrize("row", sorted(EXPECTED))
def test_each_reader_reads_the_cell_offset_and_choose_refer_to(row):
    # GIVEN the readers over OFFSET and CHOOSE, the row they refer to an input
    for workbook in uploaded_and_stored(readers_workbook(READERS)):
        # WHEN a job points them at each kind of cell
        outputs = workbook.calculate({"row": row}, list(READERS))
        # THEN each answers as for the cell itself
        assert outputs == EXPECTED[row]


def test_a_choose_among_values_is_left_as_ironcalc_reads_it():
    # GIVEN CHOOSE among typed values (no reference to read through) and among a range
    formulas = {
        "typed_text": '=ISTEXT(CHOOSE(row,1,"x"))',
        "typed_logical": "=N(CHOOSE(row,5,TRUE))",
        "offset_of_a_range": "=ISTEXT(OFFSET($A$1:$A$2,row-1,0,1,1))",
    }
    for workbook in uploaded_and_stored(readers_workbook(formulas)):
        # THEN they answer the chosen value as before
        assert workbook.calculate({"row": 2}, list(formulas)) == {
            "typed_text": True, "typed_logical": 1, "offset_of_a_range": True,
        }
        assert workbook.correction_flags() == []


def test_isref_of_indirect_or_offset_is_whether_a_reference_came_back():
    # GIVEN ISREF of INDIRECT and OFFSET, among them the usual test that a sheet named in a cell
    # exists; `row` names the sheet tested (C1) and how far OFFSET moves up
    # (Microsoft: IS functions, "ISREF: value refers to a reference"; INDIRECT: "If ref_text is
    # not a valid cell reference, INDIRECT returns the #REF! error value"; OFFSET past the sheet's
    # edge is #REF!)
    formulas = {
        "sheet_exists": '=ISREF(INDIRECT("\'"&sheet&"\'!A1"))',
        "cell_with_error": '=ISREF(INDIRECT("A5"))',
        "offset_inside": "=ISREF(OFFSET($A$2,-1,0))",
        "offset_past_edge": "=ISREF(OFFSET($A$2,-2,0))",
    }
    wb = openpyxl.load_workbook(__import__("io").BytesIO(readers_workbook(formulas)))
    wb["Sheet"]["G1"] = "Sheet"
    add_name(wb, "sheet", "Sheet!$G$1")
    for workbook in uploaded_and_stored(to_bytes(wb)):
        # WHEN it is calculated, and with a sheet name the workbook does not have
        # THEN ISREF is TRUE only where a reference comes back (A5 holds an error: still one)
        assert workbook.calculate({}, list(formulas)) == {
            "sheet_exists": True, "cell_with_error": True, "offset_inside": True, "offset_past_edge": False}
        assert workbook.calculate({"sheet": "Budget 2027"}, ["sheet_exists"]) == {"sheet_exists": False}
