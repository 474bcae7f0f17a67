"""SUMPRODUCT's arguments as arrays through the correction layer: a one-value function given a
range inside SUMPRODUCT is applied to each cell of it, as in every Excel (ECMA-376 Part 1,
18.17.7: SUMPRODUCT's argument-list is "array of numbers"; Microsoft's SUMPRODUCT page, example
3, multiplies conditions over ranges). IronCalc 0.9.1 reads such a range as the one cell in the
formula's row (it renders `@A1:A5`) and answers a plausible wrong number.

Expected values are worked from the data by that rule: how many cells hold an "a", how many
characters there are, and so on.
"""

import io
import zipfile

import openpyxl
import pytest

from shared.calc.corrections.dynamic import lifted, sumproduct_of_arrays

from .conftest import add_name, to_bytes, uploaded_and_stored


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
    ws["G1"] = "=SUMPRODUCT(N(A1:A5))"
    add_name(wb, "names", "Sheet!$A$1:$A$5")
    add_name(wb, "term", "Sheet!$C$1")
    add_name(wb, "found", "Sheet!$E$1")
    add_name(wb, "characters", "Sheet!$F$1")
    add_name(wb, "numbers", "Sheet!$G$1")
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
    # GIVEN N of a range inside SUMPRODUCT (N of a reference reads one cell, not each one)
    workbook, _ = uploaded_and_stored(search_book())

    workbook.calculate({}, ["numbers"])

    # THEN the cell is named in the flags
    flags = [str(f) for f in workbook.correction_flags()]
    assert any("G1" in f and "N of a range" in f for f in flags), flags


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
    ],
)
def test_only_the_intersections_inside_sumproduct_are_taken_out(formula, expected):
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
