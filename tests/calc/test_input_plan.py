"""The input plan (shared/calc/input_plan.py) as a specification: which cells inputs write, with
what, and the one message per problem that execute and the worker both give."""

import openpyxl
import pytest

from shared.calc import NamedRange, get_engine
from shared.calc.input_plan import plan_inputs
from shared.calc.values import iso_to_serial
from shared.errors import InputValidationError

from .conftest import add_name, to_bytes


def rng(name, rows=1, cols=1, kind="input", is_date=False, date_cells=None):
    return NamedRange(name, "Sheet", "A1", kind, rows, cols, is_date, date_cells)


RANGES = [
    rng("one"),
    rng("row", 1, 3),
    rng("col", 3, 1),
    rng("block", 2, 2),
    rng("when", is_date=True),
    rng("dates", 1, 2, date_cells=(True, False)),
    rng("result", kind="output"),
]


def cells(inputs, date_names=()):
    return [(w.range.name, w.row, w.col, w.value) for w in plan_inputs(inputs, RANGES, date_names)]


def refused(inputs, date_names=()) -> str:
    with pytest.raises(InputValidationError) as caught:
        plan_inputs(inputs, RANGES, date_names)
    return caught.value.reason


# --- shapes -----------------------------------------------------------------------------------


def test_a_one_cell_range_takes_a_scalar_and_numbers_become_floats():
    assert cells({"one": 3}) == [("one", 0, 0, 3.0)]
    assert cells({"one": "x"}) == [("one", 0, 0, "x")]
    assert cells({"one": True}) == [("one", 0, 0, True)]
    assert cells({"one": None}) == [("one", 0, 0, None)]


def test_a_row_or_column_takes_a_flat_list_from_the_start():
    assert cells({"row": [1, 2]}) == [("row", 0, 0, 1.0), ("row", 0, 1, 2.0)]
    assert cells({"col": [1, 2]}) == [("col", 0, 0, 1.0), ("col", 1, 0, 2.0)]


def test_a_block_takes_a_list_of_rows_and_short_rows_leave_cells_alone():
    assert cells({"block": [[1], [3, 4]]}) == [
        ("block", 0, 0, 1.0), ("block", 1, 0, 3.0), ("block", 1, 1, 4.0),
    ]
    assert cells({"block": []}) == []


def test_null_for_a_whole_range_clears_every_cell():
    assert cells({"block": None}) == [
        ("block", 0, 0, None), ("block", 0, 1, None), ("block", 1, 0, None), ("block", 1, 1, None),
    ]


def test_keys_are_matched_without_case_and_unknown_or_output_names_are_ignored():
    assert cells({"ONE": 1, "nowhere": [[1]], "result": "x"}) == [("one", 0, 0, 1.0)]


@pytest.mark.parametrize(
    ("inputs", "reason"),
    [
        ({"row": [1, 2, 3, 4]}, "'row' expects at most 3 values, got 4"),
        ({"row": 5}, "'row' expects a list of up to 3 values"),
        ({"block": [1, 2, 3, 4]}, "'block' expects a list of rows (2 rows x 2 columns)"),
        ({"block": [[1, 2], [3, 4], [5, 6]]}, "'block' expects at most 2 rows, got 3"),
        ({"block": [[1, 2, 3]]}, "'block' expects at most 2 values per row, got 3 in row 1"),
        ({"block": [[1, {"a": 1}]]}, "'block' expects numbers, text, booleans or null"),
        ({"one": [1]}, "'one' expects a single value, not a list"),
        ({"ONE": [1]}, "'one' expects a single value, not a list"),
        ({"one": float("nan")}, "'one' expects a finite number"),
        ({"one": 10**400}, "'one' expects a finite number"),
        ({"one": {"a": 1}}, "'one' expects numbers, text, booleans or null"),
        ({"col": [1, [2]]}, "'col' mixes values and lists; expected 3 rows x 1 columns"),
        ({"when": "31/01/2026"}, "'when' expects a date like 2026-01-31, got '31/01/2026'"),
    ],
)
def test_each_problem_has_one_message_naming_the_range(inputs, reason):
    assert refused(inputs) == reason


def test_the_first_problem_is_reported_and_nothing_is_planned():
    assert refused({"one": 1, "row": 9, "col": 9}) == "'row' expects a list of up to 3 values"


# --- dates ------------------------------------------------------------------------------------


def test_iso_text_in_a_date_cell_becomes_excels_serial():
    assert cells({"when": "2026-01-31"}) == [("when", 0, 0, 46053.0)]
    assert cells({"when": "2026-01-31T18:00:00"}) == [("when", 0, 0, 46053.75)]


def test_numbers_and_non_text_in_a_date_cell_are_kept():
    assert cells({"when": 46053}) == [("when", 0, 0, 46053.0)]
    assert cells({"when": None}) == [("when", 0, 0, None)]


def test_dates_follow_excels_1900_leap_year_rule():
    # serial 60 is Excel's phantom 1900-02-29; a real date cannot be written there
    assert cells({"when": "1900-02-28"}) == [("when", 0, 0, 59.0)]
    assert cells({"when": "1900-03-01"}) == [("when", 0, 0, 61.0)]
    assert refused({"when": "1900-02-29"}) == "'when' expects a date like 2026-01-31, got '1900-02-29'"
    assert refused({"when": "1899-12-31"}).startswith("'when' expects a date")
    assert refused({"when": "2026-02-30"}).startswith("'when' expects a date")


def test_date_flags_are_per_cell():
    assert cells({"dates": ["2026-01-31", "2026-01-31"]}) == [
        ("dates", 0, 0, 46053.0), ("dates", 0, 1, "2026-01-31"),
    ]
    assert refused({"dates": ["soon", 1]}) == "'dates' expects a date like 2026-01-31, got 'soon'"


def test_schema_date_names_make_every_cell_of_a_range_a_date_cell():
    assert cells({"one": "2026-01-31"}, date_names={"ONE"}) == [("one", 0, 0, 46053.0)]
    assert refused({"one": "soon"}, date_names={"one"}).startswith("'one' expects a date")
    assert cells({"one": "soon"}) == [("one", 0, 0, "soon")]


# --- the stored named ranges the plan reads at execute ---------------------------------------


def test_per_cell_date_flags_are_stored_only_when_the_cells_disagree():
    mixed = rng("dates", 1, 2, date_cells=(True, False))
    assert mixed.to_dict()["date_cells"] == [True, False]
    assert "date_cells" not in rng("when", is_date=True).to_dict()
    assert NamedRange.from_dict(mixed.to_dict()) == mixed


def test_a_range_stored_before_per_cell_flags_reads_every_cell_as_its_first():
    old = {"name": "d", "sheet": "S", "ref": "A1:B1", "kind": "input", "rows": 1, "cols": 2, "is_date": True}

    stored = NamedRange.from_dict(old)

    assert [stored.cell_is_date(i) for i in range(2)] == [True, True]


# --- engines write from the plan --------------------------------------------------------------


def mixed_dates_workbook() -> bytes:
    """`period` is B1:C1, B1 a date cell and C1 a plain one; outputs echo both as numbers."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["B1"], ws["C1"] = 46023, 5
    ws["B1"].number_format = "yyyy-mm-dd"
    ws["B2"], ws["C2"] = "=B1+0", '=IF(ISNUMBER(C1),"number","text")'
    add_name(wb, "period", "Sheet!$B$1:$C$1")
    add_name(wb, "first", "Sheet!$B$2")
    add_name(wb, "second", "Sheet!$C$2")
    return to_bytes(wb)


@pytest.fixture(params=["ironcalc", "formulas"])
def mixed(request):
    return get_engine(request.param).load_xlsx(mixed_dates_workbook())


def test_engines_report_per_cell_date_flags(mixed):
    period = next(r for r in mixed.named_ranges() if r.name == "period")

    assert (period.is_date, period.date_cells) == (True, (True, False))


def test_engines_write_the_plans_cells(mixed):
    out = mixed.calculate({"period": ["2026-02-01", "2026-02-01"]})

    assert out == {"first": iso_to_serial("2026-02-01"), "second": "text"}


def test_engines_refuse_what_the_stored_ranges_refuse(mixed):
    stored = [NamedRange.from_dict(r.to_dict()) for r in mixed.named_ranges()]
    inputs = {"period": ["soon", 1]}

    with pytest.raises(InputValidationError) as at_execute:
        plan_inputs(inputs, stored)
    with pytest.raises(InputValidationError) as in_worker:
        mixed.calculate(inputs)

    assert in_worker.value.reason == at_execute.value.reason
