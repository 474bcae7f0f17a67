"""The correction layer's reference operators: the space (intersection), the union in parentheses
and a range of ranges, written between references, calculate as Excel with IronCalc.

Expected values: Microsoft's "Calculation operators and precedence" (space: the cells common to
two references; comma: a union; colon: every cell between two references), "How to correct a
#NULL! error" (ranges that do not meet), the AREAS page's examples (`AREAS((B2:D4,E5,F6:I9))` 3,
`AREAS(B2:D4 B2)` 1), the INDEX page's reference form (area_num chooses an area), and the
Excel-saved formulas/test.xlsx (LOOKUP!S15/S115: ROWS and COLUMNS of a union of several areas
are #REF!; LOOKUP!AB4: AREAS of a cell holding an error is 1). IronCalc 0.9.1 alone answers
#ERROR! for each, and reads `=A1:C3 B2*10` as `=@A1:C3` (the rest of the formula dropped).
"""

import pytest

from shared.calc.corrections.reference_operators import rewrite

from .conftest import named_formulas, uploaded_and_stored

GRID = {"A1": 1, "B1": 2, "C1": 3, "A2": 4, "B2": 5, "C2": 6, "A3": 7, "B3": 8, "C3": 9}


def operators_workbook() -> bytes:
    """A 3x3 grid (A1 is an input) and a formula per operator, each an output."""
    return named_formulas(
        {
            "intersection": "=SUM(A1:C3 B2:D9)",
            "no_common_cell": "=SUM(A1:A3 C1:C3)",
            "at_the_top": "=A1:C3 A1*10",
            "after_a_sign": "=-A1:C1 A1:A3",
            "union_in_sum": "=SUM((A1:A3,C1:C3))",
            "union_intersected": "=SUM(A1:C2 (A1:A3,C1:C3))",
            "range_of_ranges": "=SUM(A1:A2:C3)",
            "areas": "=AREAS((B2:C3,A1,A2:A3))",
            "areas_of_an_error": "=AREAS(E1)",
            "rows_of_a_union": "=ROWS((A1:A2,C1:C3))",
            "index_area": "=INDEX((A1:A3,B1:C3),2,2,2)",
            "column": "=COLUMN(A1:C3 B1:D1)",
        },
        column="F",
        cells={**GRID, "E1": "=1/0"},
        names={"corner": "$A$1"},
    )


def test_each_operator_answers_excels_reference_in_a_job():
    # GIVEN the workbook uploaded and stored for jobs
    for workbook in uploaded_and_stored(operators_workbook()):
        # WHEN a job changes the grid's corner
        out = workbook.calculate({"corner": 100}, [
            "intersection", "no_common_cell", "at_the_top", "after_a_sign", "union_in_sum",
            "union_intersected", "range_of_ranges", "areas", "areas_of_an_error",
            "rows_of_a_union", "index_area", "column",
        ])

        # THEN each reads the cells Excel's operators name, the new corner included
        assert out["intersection"] == 5 + 6 + 8 + 9
        assert out["no_common_cell"] == "#NULL!"
        assert out["at_the_top"] == 1000
        assert out["after_a_sign"] == -100
        assert out["union_in_sum"] == 100 + 4 + 7 + 3 + 6 + 9
        assert out["union_intersected"] == 100 + 4 + 3 + 6
        assert out["range_of_ranges"] == 100 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9
        assert out["areas"] == 3
        assert out["areas_of_an_error"] == 1
        assert out["rows_of_a_union"] == "#REF!"
        assert out["index_area"] == 6
        assert out["column"] == 2


@pytest.mark.parametrize(("formula", "rewritten"), [
    ("SUM(A1:A3 A2:B5)", "SUM(A2:A3)"),
    ("SUM(A:A 2:2)", "SUM(A2)"),
    ("AREAS(((F4:G4,G4:I4,F6:G6,G6:I6) G3:G11))", "4"),
    ("AREAS((E4:H4 J4:K4 L4:O4))", "#NULL!"),
    ("COLUMNS(((G15:H16) H14:H23))", "COLUMNS(H15:H16)"),
    ("MAX((A1:A2,B1:B2))+COLUMNS((A1:A2,B1:B2))", "MAX(A1:A2,B1:B2)+#REF!"),
    ("SUM('My sheet'!A1:A3 'My sheet'!A2:B5)", "SUM('My sheet'!A2:A3)"),
])
def test_a_static_expression_becomes_the_reference_it_makes(formula, rewritten):
    assert rewrite(formula, "Sheet1") == rewritten


@pytest.mark.parametrize("formula", [
    "IF(A1 >1, 2 , 3)",                      # spaces around operators are not intersections
    'CONCAT("a b",A1)',                      # nor spaces in text
    "SUM(A1,B1)",                            # arguments are not a union
    "SUM(Rate A1:A3)",                       # a name: left to the engine
    "SUM(Other!A1:A3 A2:B5)",                # two sheets: Excel's #VALUE!, left to the engine
    "INDEX((A1:A3,B1:B3),1,1,C1)",           # an area chosen by a cell: left to the engine
    "VLOOKUP(1,(A1:B3,D1:E3),2,FALSE)",      # a union where Excel's meaning is not spelled out
])
def test_what_is_not_a_static_reference_expression_is_left_alone(formula):
    assert rewrite(formula, "Sheet1") is None


def named_grid(names: dict[str, str], formulas: dict[str, str]) -> bytes:
    """The 3x3 grid on Sheet1 with workbook names (name -> reference or formula) and formulas
    by cell address."""
    import openpyxl

    from .conftest import add_name, to_bytes

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    for address, value in {**GRID, **formulas}.items():
        ws[address] = value
    for name, ref in names.items():
        add_name(wb, name, ref)
    return to_bytes(wb)


def test_an_intersection_of_named_ranges_reads_their_common_cell_in_a_job():
    # GIVEN a month row and a product column, each a workbook name, and their intersection
    # (Microsoft: "Calculation operators and precedence", the space operator)
    book = named_grid(
        {"Feb": "Sheet1!$A$2:$C$2", "Sales": "Sheet1!$B$1:$B$3", "feb_sales": "Sheet1!$E$1",
         "doubled": "Sheet1!$E$2", "grid": "Sheet1!$A$1:$C$3"},
        {"E1": "=Feb Sales", "E2": "=SUM(Feb Sales)*2"},
    )
    for workbook in uploaded_and_stored(book):
        # WHEN a job changes the grid THEN the cell where the row meets the column is read
        # (IronCalc alone: `=@Feb`, #VALUE!, and #ERROR!)
        out = workbook.calculate({"grid": [[1, 2, 3], [4, 50, 6], [7, 8, 9]]}, ["feb_sales", "doubled"])
        assert out == {"feb_sales": 50, "doubled": 100}


def test_an_intersection_known_only_when_calculated_is_flagged_at_upload():
    from shared.calc.corrections.flags import flagged_cells
    from shared.calc.xlsx.cells import read_excel_cells

    # GIVEN an intersection with a function's result and one with a name to a formula
    book = named_grid(
        {"Moving": "OFFSET(Sheet1!$A$1,0,0,3,1)", "Feb": "Sheet1!$A$2:$C$2"},
        {"E1": "=INDEX(A1:C3,1,1) A1", "E2": "=Moving Feb", "E3": "=SUM(Feb B1:B3)"},  # E3 known at load
    )

    # WHEN the upload is checked
    flags, total = flagged_cells(read_excel_cells(book), "ironcalc")

    # THEN both cells IronCalc cannot calculate are named, and only they
    assert total == 2
    assert [(f["cell"], "intersection" in f["reason"]) for f in flags] == [("E1", True), ("E2", True)]


def test_a_union_of_named_ranges_and_a_name_to_a_union_are_calculated_in_a_job():
    # GIVEN a name to the first column, a name to a union of the first and third columns (as
    # Excel writes one, without parentheses), and formulas over unions of names
    # (Microsoft: "Calculation operators and precedence", the comma is the union operator;
    # the AREAS page: AREAS of a union counts its areas; the INDEX page: area_num picks one)
    book = named_grid(
        {"First": "Sheet1!$A$1:$A$3", "Outer": "Sheet1!$A$1:$A$3,Sheet1!$C$1:$C$3", "grid": "Sheet1!$A$1:$C$3",
         "summed": "Sheet1!$E$1", "counted": "Sheet1!$E$2", "areas": "Sheet1!$E$3", "picked": "Sheet1!$E$4",
         "largest_twice": "Sheet1!$E$5"},
        {"E1": "=SUM((First,B2))", "E2": "=COUNT(Outer)", "E3": "=AREAS(Outer)", "E4": "=INDEX(Outer,2,1,2)",
         "E5": "=MAX(Outer)*2"},
    )
    for workbook in uploaded_and_stored(book):
        # WHEN a job changes the grid THEN each reads every area (IronCalc alone: #ERROR!, and
        # a name to a union read as its first area)
        out = workbook.calculate({"grid": [[1, 2, 3], [4, 50, 6], [7, 8, 90]]},
                                 ["summed", "counted", "areas", "picked", "largest_twice"])
        assert out == {"summed": 62, "counted": 6, "areas": 2, "picked": 6, "largest_twice": 180}


def test_a_union_the_rewrite_does_not_settle_is_flagged_at_upload():
    from shared.calc.corrections.flags import flagged_cells
    from shared.calc.xlsx.cells import read_excel_cells

    # GIVEN LARGE and RANK over unions (written out, and through a name to one), which IronCalc
    # answers #ERROR! for, SUM over one, which the rewrite settles, and a LAMBDA called in place
    # with two cells (its arguments, no union)
    book = named_grid(
        {"Outer": "Sheet1!$A$1:$A$3,Sheet1!$C$1:$C$3"},
        {"E1": "=LARGE((A1:A3,C1:C3),2)", "E2": "=RANK(5,Outer)", "E3": "=SUM(Outer)",
         "E4": "=_xlfn.LAMBDA(_xlpm.x,_xlpm.y,_xlpm.x+_xlpm.y)(A1,B1)"},
    )

    # WHEN the upload is checked
    flags, total = flagged_cells(read_excel_cells(book), "ironcalc")

    # THEN the two cells are named as unions, and only they
    assert total == 2
    assert [(f["cell"], "union" in f["reason"]) for f in flags] == [("E1", True), ("E2", True)]
