"""Defined names whose value is a formula over a table, names to deleted cells, and ranges
ended by INDEX calls give Excel's values with IronCalc (names.py, index_ranges.py).

Expected values come from Microsoft's documentation:
- "INDEX function" (reference form), its example table Fruit/Price/Count in A1:C6 and
  `=SUM(B2:INDEX(A2:C6, 5, 2))` = 2.42, "the sum of B2:B6"; a row or column past the reference
  is #REF!.
- "Using structured references with Excel tables": `Table1[Count]` is the column's data cells.
- "Define and use names in formulas": a name to a formula calculates as that formula;
  "How to correct a #REF! error": a name whose cells were deleted (`=#REF!`, `=Sheet1!#REF!`)
  makes the formulas using it #REF!.
IronCalc 0.9.1 alone answers #NAME? for the names and #VALUE! for the INDEX ranges.
"""

import openpyxl
from openpyxl.worksheet.formula import ArrayFormula
from openpyxl.worksheet.table import Table

from shared.calc import get_engine
from shared.calc.fidelity.check import check

from .conftest import add_name, to_bytes

FRUIT = [("Fruit", "Price", "Count"), ("Apples", 0.69, 40), ("Bananas", 0.34, 38),
         ("Lemons", 0.55, 15), ("Oranges", 0.25, 25), ("Pears", 0.59, 40)]
FORMULAS = {  # Sheet1 cell: (output, formula, Excel's value)
    "F1": ("documented", "=SUM(B2:INDEX(A2:C6,5,2))", 2.42),
    "F2": ("growing", "=SUM(Prices)", 2.42),
    "F3": ("rows", "=ROWS(INDEX($B:$B,2):INDEX($B:$B,6))", 5),
    "F4": ("past_end", "=SUM(INDEX(A2:C6,7,2):B2)", "#REF!"),
    "F5": ("table_total", "=TotalCount", 158),
    "F6": ("table_column", "=MAX(CountColumn)", 40),
    "F7": ("deleted", "=Gone*2", "#REF!"),
    "F8": ("deleted_caught", "=IFERROR(Gone,0)", 0),
    "F9": ("deleted_on_sheet", "=Lost", "#REF!"),
    "F10": ("formula_name", "=Double", 1.38),
    # a name to a range as INDEX's reference: the 2nd to 5th prices, B3:B6
    "F11": ("named_ends", "=SUM(INDEX(PriceColumn,2):INDEX(PriceColumn,5))", 1.73),
    "F12": ("named_end", "=SUM(B2:INDEX(PriceColumn,COUNT(PriceColumn)))", 2.42),
    # XLOOKUP gives a reference (its page's example 6): Bananas' price to Oranges', B3:B5
    "F13": ("lookup_ends", '=SUM(_xlfn.XLOOKUP("Bananas",A2:A6,B2:B6):_xlfn.XLOOKUP("Oranges",A2:A6,B2:B6))', 1.14),
    "F14": ("lookup_end_missing", '=SUM(B2:_xlfn.XLOOKUP("Kiwis",A2:A6,B2:B6))', "#N/A"),
    # the cell INDEX or XLOOKUP refers to, read as a reference: its row, its address, an OFFSET
    # from it (Lemons is row 4; Bananas' and Lemons' counts 38 + 15)
    "F15": ("row_of_index", '=ROW(INDEX(B2:B6,MATCH("Lemons",A2:A6,0)))', 4),
    "F16": ("address_of_lookup", '=CELL("address",_xlfn.XLOOKUP("Pears",A2:A6,C2:C6))', "$C$6"),
    "F17": ("offset_from_index", "=SUM(OFFSET(INDEX(C2:C6,2),0,0,2))", 53),
}


def fruit_workbook() -> openpyxl.Workbook:
    """Microsoft's INDEX example table as Table1 (A1:C6), an input row `more_fruit` A7:C7 below
    it, and the names and formulas of FORMULAS."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    for row in FRUIT:
        ws.append(row)
    ws.add_table(Table(displayName="Table1", ref="A1:C6"))
    add_name(wb, "more_fruit", "Sheet1!$A$7:$C$7")
    add_name(wb, "Prices", "Sheet1!$B$2:INDEX(Sheet1!$B:$B,COUNTA(Sheet1!$A:$A))")
    add_name(wb, "TotalCount", "SUM(Table1[Count])")
    add_name(wb, "CountColumn", "Table1[Count]")
    add_name(wb, "Gone", "#REF!")
    add_name(wb, "Lost", "Sheet1!#REF!")
    add_name(wb, "Double", "Sheet1!$B$2*2")
    add_name(wb, "PriceColumn", "Sheet1!$B$2:$B$6")
    for cell, (name, formula, _) in FORMULAS.items():
        ws[cell] = formula
        add_name(wb, name, f"Sheet1!${cell[0]}${cell[1:]}")
    return wb


def test_names_and_index_ranges_answer_excel_on_upload_and_in_a_stored_job():
    # GIVEN the workbook uploaded, and restored for a job
    workbook = get_engine("ironcalc").load_xlsx(to_bytes(fruit_workbook()))
    stored = get_engine("ironcalc").load_serialized(workbook.serialize())

    for loaded in (workbook, stored):
        # WHEN a job calculates it
        outputs = loaded.calculate({})

        # THEN every cell is Excel's value
        for name, _, expected in FORMULAS.values():
            if isinstance(expected, float):
                assert abs(outputs[name] - expected) < 1e-12, name
            else:
                assert outputs[name] == expected, name


def test_a_growing_name_follows_a_row_a_job_adds():
    # GIVEN the workbook stored for jobs
    workbook = get_engine("ironcalc").load_xlsx(to_bytes(fruit_workbook()))
    stored = get_engine("ironcalc").load_serialized(workbook.serialize())

    # WHEN a job adds Kiwis at 0.5 below the table
    outputs = stored.calculate({"more_fruit": ["Kiwis", 0.5, 12]})

    # THEN the name's range ends at the new row (COUNTA of A:A is 7): 2.42 + 0.5
    assert abs(outputs["growing"] - 2.92) < 1e-12


def test_a_range_ended_by_index_over_a_calculated_reference_is_flagged_not_guessed():
    # GIVEN ranges ended by INDEX over OFFSET, directly and through a name, which the rewrite
    # cannot express (IronCalc answers #VALUE!, Excel the sum)
    wb = fruit_workbook()
    wb["Sheet1"]["H1"] = "=SUM(INDEX(OFFSET($B$2,0,0,5),2):INDEX(OFFSET($B$2,0,0,5),3))"
    wb["Sheet1"]["H2"] = "=SUM(INDEX(GrowingPrices,2):$B$4)"
    add_name(wb, "GrowingPrices", "OFFSET(Sheet1!$B$2,0,0,COUNTA(Sheet1!$A:$A)-1)")
    # AND one in an array formula, which is not rewritten
    wb["Sheet1"]["H3"] = ArrayFormula("H3", "=SUM(B2:INDEX(B2:B6,3)*2)")

    # WHEN the upload is checked
    report = check(to_bytes(wb), "ironcalc")

    # THEN the three cells are named with the reason, and the ranges the rewrite expresses are not
    flagged = {f["cell"]: f["reason"] for f in report.flagged}
    assert set(flagged) == {"H1", "H2", "H3"}
    assert all("INDEX" in reason and "#VALUE!" in reason for reason in flagged.values())


def test_the_export_keeps_the_formulas_as_written():
    # GIVEN a job calculated on the workbook
    workbook = get_engine("ironcalc").load_xlsx(to_bytes(fruit_workbook()))
    workbook.calculate({})

    # WHEN it is exported, THEN every formula is the user's
    import io

    exported = openpyxl.load_workbook(io.BytesIO(workbook.to_xlsx()))["Sheet1"]
    for cell, (_, formula, _) in FORMULAS.items():
        assert exported[cell].value == formula


def test_a_structured_reference_to_a_header_with_a_line_break_is_the_column():
    # GIVEN a table whose Price header holds a line break ("Unit" / "Price"), summed by
    # structured references to that column ("Using structured references with Excel tables":
    # Table1[Col] is the column's data cells; Microsoft's SUM example values 0.69 ... 0.59)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    ws.append(["Fruit", "Unit\nPrice"])
    for fruit, price, _ in FRUIT[1:]:
        ws.append([fruit, price])
    ws.add_table(Table(displayName="Table1", ref="A1:B6"))
    ws["D1"] = "=SUM(Table1[Unit\nPrice])"
    ws["D2"] = "=MAX(Table1[[#Data],[Unit\nPrice]])"
    add_name(wb, "total", "Sheet1!$D$1")
    add_name(wb, "highest", "Sheet1!$D$2")
    workbook = get_engine("ironcalc").load_xlsx(to_bytes(wb))

    # WHEN a job calculates it
    outputs = workbook.calculate({})

    # THEN the references are the column's cells (IronCalc alone answers #REF!), and the
    # exported workbook keeps the formulas as written
    assert abs(outputs["total"] - 2.42) < 1e-12 and outputs["highest"] == 0.69
    import io

    exported = openpyxl.load_workbook(io.BytesIO(workbook.to_xlsx()))["Sheet1"]
    assert exported["D1"].value == "=SUM(Table1[Unit\nPrice])"
