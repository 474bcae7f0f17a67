"""The IronCalc engine, specified by what a consumer of a calculation sees."""

import datetime
import importlib.util
import io
import threading
import zipfile

import openpyxl
import pytest
from openpyxl.comments import Comment

from shared.calc import ModelCache, NamedRange, blob_engine_name, get_engine
from shared.calc.refs import parse_range_formula
from shared.calc.values import is_date_format, iso_to_serial, serial_to_iso
from shared.errors import InputValidationError, WorkbookError

from .conftest import LOAN_QUOTE, add_name


def annuity(principal: float, annual_rate: float, years: int) -> float:
    r, n = annual_rate / 12, years * 12
    return principal * r / (1 - (1 + r) ** -n)


def grid_workbook() -> openpyxl.Workbook:
    """Inputs of every shape on 'Calc Sheet', with outputs that echo or sum them."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Calc Sheet"
    ws["A1"], ws["B1"], ws["C1"] = 1, 2, 3  # row input
    ws["E1"], ws["E2"], ws["E3"] = 10, 20, 30  # column input
    for r in range(5, 7):  # block input A5:B6
        for c in range(1, 3):
            ws.cell(r, c, r * 10 + c)
    ws["G1"] = "hello"  # text input
    ws["G2"] = True  # boolean input
    ws["G3"] = 7  # input that can be cleared
    ws["H1"] = "=SUM(A1:C1)"
    ws["H2"] = "=SUM(E1:E3)"
    ws["H3"] = "=SUM(A5:B6)"
    ws["H4"] = '=G1&"!"'
    ws["H5"] = "=IF(G2,\"yes\",\"no\")"
    ws["H6"] = "=ISBLANK(G3)"
    ws["H7"] = "=G3"
    ws["I1"], ws["I2"] = "=A1*2", "=B1*2"
    ws["J1"], ws["J2"] = "=1/0", "=NA()"
    ws["K1"] = '=ISTEXT(G1)'
    for name, ref in {
        "row_in": "$A$1:$C$1", "col_in": "$E$1:$E$3", "block_in": "$A$5:$B$6",
        "text_in": "$G$1", "flag": "$G$2", "clearable": "$G$3",
        "row_sum": "$H$1", "col_sum": "$H$2", "block_sum": "$H$3", "greeting": "$H$4",
        "answer": "$H$5", "is_blank": "$H$6", "echo": "$H$7", "doubled": "$I$1:$I$2",
        "div_zero": "$J$1", "not_available": "$J$2", "text_check": "$K$1",
    }.items():
        add_name(wb, name, f"'Calc Sheet'!{ref}")
    return wb


def date_workbook() -> openpyxl.Workbook:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Dates"
    ws["A1"] = datetime.date(2026, 1, 1)
    ws["A1"].number_format = "yyyy-mm-dd"
    ws["A2"] = 46023  # a plain number cell that a caller may flag as a date
    ws["B1"] = "=A1+30"
    ws["B1"].number_format = "dd/mm/yyyy"
    ws["B2"] = "=A2+1"
    ws["B3"] = "=A1+0.5"
    ws["B3"].number_format = "yyyy-mm-dd hh:mm"
    ws["B4"] = "=YEAR(A1)"
    ws["B5"] = "=ISNUMBER(A2)"
    for name, ref in {"start": "$A$1", "plain": "$A$2", "plus30": "$B$1", "plain_next": "$B$2",
                      "noon": "$B$3", "year": "$B$4", "plain_is_number": "$B$5"}.items():
        add_name(wb, name, f"Dates!{ref}")
    return wb


# --- the loan quote example ---------------------------------------------------------------


def test_loan_quote_pays_the_annuity_and_ends_after_the_term(engine, loan_bytes):
    wb = engine.load_xlsx(loan_bytes)

    out = wb.calculate({"principal": 180000, "annual_rate": 0.06, "years": 20, "start_date": "2026-03-31"})

    assert out["monthly_payment"] == pytest.approx(annuity(180000, 0.06, 20), rel=1e-12)
    assert out["total_paid"] == pytest.approx(annuity(180000, 0.06, 20) * 240, rel=1e-12)
    assert out["total_interest"] == pytest.approx(annuity(180000, 0.06, 20) * 240 - 180000, rel=1e-12)
    assert out["end_date"] == "2046-03-31"
    first, second = out["schedule"][0], out["schedule"][1]
    assert len(out["schedule"]) == 12 and all(len(row) == 4 for row in out["schedule"])
    assert first[0] == 1 and isinstance(first[0], int)
    assert first[2] == pytest.approx(180000 * 0.06 / 12)
    assert first[3] == pytest.approx(first[1] - first[2])
    assert second[2] == pytest.approx((180000 - first[3]) * 0.06 / 12)


def test_loan_quote_named_ranges(engine, loan_bytes):
    ranges = {r.name: r for r in engine.load_xlsx(loan_bytes).named_ranges()}

    assert {n for n, r in ranges.items() if r.kind == "input"} == {"principal", "annual_rate", "years", "start_date"}
    assert ranges["start_date"].is_date and ranges["end_date"].is_date
    assert not ranges["principal"].is_date
    assert ranges["schedule"].to_dict() == {
        "name": "schedule", "sheet": "Quote", "ref": "A15:D26", "kind": "output",
        "rows": 12, "cols": 4, "is_date": False,
    }


def test_loan_quote_example_is_regenerated_identically(loan_bytes):
    spec = importlib.util.spec_from_file_location("make_loan_quote", LOAN_QUOTE.with_name("make_loan_quote.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)

    assert script.deterministic_bytes(script.build()) == loan_bytes


# --- shapes, values and types ---------------------------------------------------------------


def test_scalars_lists_and_blocks_reach_their_cells(load):
    wb = load(grid_workbook())

    out = wb.calculate({"row_in": [4, 5, 6], "col_in": [1, 2, 3], "block_in": [[1, 2], [3, 4]]})

    assert (out["row_sum"], out["col_sum"], out["block_sum"]) == (15, 6, 10)
    assert out["doubled"] == [8, 10]  # a column output comes back as a flat list


def test_row_and_column_ranges_accept_a_list_of_rows(load):
    wb = load(grid_workbook())

    out = wb.calculate({"row_in": [[4, 5, 6]], "col_in": [[1], [2], [3]]})

    assert (out["row_sum"], out["col_sum"]) == (15, 6)


def test_short_lists_fill_from_the_top_left_and_keep_the_rest(load):
    wb = load(grid_workbook())

    out = wb.calculate({"row_in": [100], "block_in": [[0]]})

    assert out["row_sum"] == 100 + 2 + 3
    assert out["block_sum"] == 52 + 61 + 62


def test_integral_numbers_come_back_as_int_and_fractions_as_float(load):
    wb = load(grid_workbook())

    out = wb.calculate({"row_in": [1.5, 2, 3]})

    assert out["row_sum"] == 6.5 and isinstance(out["row_sum"], float)
    assert out["col_sum"] == 60 and isinstance(out["col_sum"], int)


def test_text_is_stored_as_text_never_as_formula_or_number(load):
    wb = load(grid_workbook())

    formula_like = wb.calculate({"text_in": "=1+1"})
    number_like = wb.calculate({"text_in": "123"})

    assert formula_like["greeting"] == "=1+1!" and formula_like["text_check"] is True
    assert number_like["greeting"] == "123!" and number_like["text_check"] is True


def test_booleans_and_none(load):
    wb = load(grid_workbook())

    out = wb.calculate({"flag": False, "clearable": None})

    assert out["answer"] == "no"
    assert out["is_blank"] is True
    assert out["echo"] == 0  # Excel reads an empty cell as 0


def test_excel_errors_come_back_as_their_text(load):
    out = load(grid_workbook()).calculate({})

    assert out["div_zero"] == "#DIV/0!"
    assert out["not_available"] == "#N/A"


def test_a_text_that_looks_like_an_error_is_still_text(load):
    wb = load(grid_workbook())

    assert wb.calculate({"text_in": "#N/A"}, ["greeting"]) == {"greeting": "#N/A!"}


def test_output_selection_and_case_insensitive_input_names(load):
    wb = load(grid_workbook())

    out = wb.calculate({"ROW_IN": [0, 0, 1], "unknown": 5, "row_sum": 999}, ["row_sum", "Col_Sum", "nope"])

    assert out == {"row_sum": 1, "col_sum": 60}


def test_default_outputs_are_every_output_range(load):
    out = load(grid_workbook()).calculate({})

    assert "row_sum" in out and "doubled" in out
    assert "row_in" not in out and "text_in" not in out


# --- dates ----------------------------------------------------------------------------------


def test_iso_date_into_a_date_cell_and_date_outputs(load):
    wb = load(date_workbook())

    out = wb.calculate({"start": "2026-01-31"})

    assert out["plus30"] == "2026-03-02"
    assert out["noon"] == "2026-01-31T12:00:00"
    assert out["year"] == 2026


def test_datetime_input_keeps_its_time(load):
    out = load(date_workbook()).calculate({"start": "2026-01-31T06:00:00"}, ["noon"])

    assert out == {"noon": "2026-01-31T18:00:00"}


def test_date_inputs_flag_converts_iso_text_for_plain_cells(load):
    wb = load(date_workbook())

    outputs = ["plain_next", "plain_is_number"]

    flagged = wb.calculate({"plain": "2026-02-01"}, outputs, date_inputs=frozenset({"plain"}))
    unflagged = wb.calculate({"plain": "2026-02-01"}, outputs)

    assert flagged == {"plain_next": iso_to_serial("2026-02-02"), "plain_is_number": True}
    assert unflagged["plain_is_number"] is False  # stored as text without the flag


def test_a_bad_date_for_a_date_cell_is_rejected(load):
    wb = load(date_workbook())

    with pytest.raises(InputValidationError, match="'start' expects a date"):
        wb.calculate({"start": "next tuesday"})
    with pytest.raises(InputValidationError):
        wb.calculate({"start": "2026-02-30"})


def test_serials_follow_excels_1900_leap_year_bug():
    assert iso_to_serial("1900-01-01") == 1
    assert iso_to_serial("1900-02-28") == 59
    assert iso_to_serial("1900-03-01") == 61
    assert serial_to_iso(60) == "1900-02-29"
    assert serial_to_iso(61) == "1900-03-01"
    assert serial_to_iso(46023) == "2026-01-01"
    assert serial_to_iso(46023.75) == "2026-01-01T18:00:00"
    assert serial_to_iso(iso_to_serial("2026-01-31T12:34:56")) == "2026-01-31T12:34:56"


@pytest.mark.parametrize(
    ("fmt", "is_date"),
    [("yyyy-mm-dd", True), ("d-mmm-yy", True), ("[$-409]d-mmm-yy;@", True), ("[h]:mm:ss", True),
     ("general", False), ("0.00%", False), ("#,##0.00", False), ('"Day "0', False),
     ("[Red]0.00", False), ("0.00E+00", False), ("@", False)],
)
def test_date_format_detection(fmt, is_date):
    assert is_date_format(fmt) is is_date


# --- isolation between jobs -----------------------------------------------------------------


def test_inputs_reset_between_calculations_on_the_same_workbook(engine, loan_bytes):
    wb = engine.load_xlsx(loan_bytes)

    wb.calculate({"principal": 1000, "years": 1, "start_date": "2030-06-15"})
    second = wb.calculate({"annual_rate": 0.06})

    assert second["monthly_payment"] == pytest.approx(annuity(250000, 0.06, 30), rel=1e-12)
    assert second["end_date"] == "2056-01-01"


def test_cleared_and_partial_inputs_are_restored_for_the_next_job(load):
    wb = load(grid_workbook())

    wb.calculate({"clearable": None, "block_in": [[0, 0], [0, 0]], "text_in": "bye"})
    out = wb.calculate({})

    assert out["echo"] == 7
    assert out["block_sum"] == 51 + 52 + 61 + 62
    assert out["greeting"] == "hello!"


def test_an_invalid_input_changes_nothing(load):
    wb = load(grid_workbook())

    with pytest.raises(InputValidationError):
        wb.calculate({"row_in": [9, 9, 9], "col_in": [1, 2, 3, 4]})

    assert wb.calculate({}, ["row_sum"]) == {"row_sum": 6}


# --- shape and value errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "reason"),
    [
        ({"row_in": [1, 2, 3, 4]}, "'row_in' expects at most 3 values, got 4"),
        ({"row_in": 5}, "'row_in' expects a list of up to 3 values"),
        ({"block_in": [1, 2, 3, 4]}, "'block_in' expects a list of rows (2 rows x 2 columns)"),
        ({"block_in": [[1, 2], [3, 4], [5, 6]]}, "'block_in' expects at most 2 rows, got 3"),
        ({"block_in": [[1, 2, 3]]}, "'block_in' expects at most 2 values per row, got 3 in row 1"),
        ({"text_in": [[1]]}, "'text_in' expects a single value, not a list"),
        ({"text_in": float("nan")}, "'text_in' expects a finite number"),
        ({"text_in": float("inf")}, "'text_in' expects a finite number"),
        ({"text_in": {"a": 1}}, "'text_in' expects numbers, text, booleans or null"),
        ({"col_in": [1, [2]]}, "'col_in' mixes values and lists"),
    ],
)
def test_shape_and_value_errors_name_the_range(load, inputs, reason):
    with pytest.raises(InputValidationError) as caught:
        load(grid_workbook()).calculate(inputs)

    assert caught.value.reason.startswith(reason)


# --- named range discovery ------------------------------------------------------------------


def test_sheet_names_with_spaces_and_quotes(load):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Bob's Quote"
    ws["A1"], ws["B1"] = 2, "=A1*21"
    add_name(wb, "base", "'Bob''s Quote'!$A$1")
    add_name(wb, "result", "'Bob''s Quote'!$B$1")

    book = load(wb)

    assert [r.sheet for r in book.named_ranges()] == ["Bob's Quote", "Bob's Quote"]
    assert book.calculate({"base": 3}) == {"result": 63}


def test_sheet_scoped_names_and_workbook_scope_winning(load):
    wb = openpyxl.Workbook()
    first = wb.active
    first.title = "First"
    second = wb.create_sheet("Second")
    first["A1"], second["A1"], second["B1"] = 1, 5, "=A1*2"
    add_name(wb, "rate", "First!$A$1", sheet="First")
    add_name(wb, "rate", "Second!$A$1")
    add_name(wb, "local_out", "Second!$B$1", sheet="Second")

    book = load(wb)
    ranges = {r.name: r for r in book.named_ranges()}

    assert ranges["rate"].sheet == "Second"
    assert book.calculate({"rate": 50}) == {"local_out": 100}


def test_unusable_names_are_skipped(load):
    wb = grid_workbook()
    add_name(wb, "constant", "42")
    add_name(wb, "a_formula", "'Calc Sheet'!$A$1*2")
    add_name(wb, "whole_column", "'Calc Sheet'!$A:$A")
    add_name(wb, "broken", "#REF!")
    add_name(wb, "_xlnm.Print_Area", "'Calc Sheet'!$A$1:$C$3", sheet="Calc Sheet")

    names = {r.name for r in load(wb).named_ranges()}

    assert "row_in" in names
    assert not names & {"constant", "a_formula", "whole_column", "broken", "_xlnm.Print_Area", "Print_Area"}


def test_parse_range_formula():
    box = parse_range_formula("'Quote ''A'''!$C$4:$B$2")

    assert (box.sheet, box.ref, box.rows, box.cols) == ("Quote 'A'", "B2:C4", 3, 2)
    assert parse_range_formula("[1]Sheet1!$A$1") is None
    assert parse_range_formula("Sheet1!$A$1,Sheet1!$B$2") is None
    assert parse_range_formula("Sheet1!$A$1:$A$1048576") is None


# --- export, serialization, bad files -------------------------------------------------------


def test_to_xlsx_keeps_formulas_and_caches_computed_values(engine, loan_bytes):
    wb = engine.load_xlsx(loan_bytes)
    wb.calculate({"principal": 100000, "start_date": "2027-05-01"})

    filled = wb.to_xlsx()
    values = openpyxl.load_workbook(io.BytesIO(filled), data_only=True)["Quote"]
    formulas = openpyxl.load_workbook(io.BytesIO(filled))["Quote"]

    assert values["B9"].value == pytest.approx(annuity(100000, 0.045, 30), rel=1e-12)
    assert values["B3"].value == 100000
    assert values["B12"].value == datetime.datetime(2057, 5, 1)
    assert values["B12"].number_format == "yyyy-mm-dd"
    assert values["D26"].value == pytest.approx(values["B26"].value - values["C26"].value)
    assert formulas["B9"].value == "=PMT(annual_rate/12,years*12,-principal)"
    assert formulas["B12"].value == "=EDATE(start_date,years*12)"
    assert set(openpyxl.load_workbook(io.BytesIO(filled)).defined_names) >= {"principal", "schedule"}


def test_to_xlsx_before_any_calculation_has_computed_values(load):
    filled = load(grid_workbook()).to_xlsx()  # openpyxl stores no cached values at all

    sheet = openpyxl.load_workbook(io.BytesIO(filled), data_only=True)["Calc Sheet"]

    assert sheet["H1"].value == 6
    assert sheet["J1"].value == "#DIV/0!"
    assert sheet["H4"].value == "hello!"


def test_to_xlsx_is_readable_by_the_engine_again(engine, loan_bytes):
    wb = engine.load_xlsx(loan_bytes)
    wb.calculate({"years": 10})

    again = engine.load_xlsx(wb.to_xlsx())

    assert [r.to_dict() for r in again.named_ranges()] == [r.to_dict() for r in wb.named_ranges()]


def test_serialize_round_trip_gives_identical_results(engine, loan_bytes):
    original = engine.load_xlsx(loan_bytes)
    original.calculate({"principal": 5, "years": 2})  # dirty state must not travel

    blob = original.serialize()
    restored = engine.load_serialized(blob)

    assert blob_engine_name(blob) == "ironcalc"
    assert restored.named_ranges() == original.named_ranges()
    fresh = engine.load_xlsx(loan_bytes).calculate({"annual_rate": 0.05})
    assert restored.calculate({"annual_rate": 0.05}) == fresh
    job = {"principal": 320000, "start_date": "2026-07-01"}
    assert restored.calculate(job) == original.calculate(job)


def test_a_restored_model_exports_the_uploaded_inputs_not_the_last_job(engine, loan_bytes):
    wb = engine.load_xlsx(loan_bytes)
    wb.calculate({"principal": 5})

    filled = engine.load_serialized(wb.serialize()).to_xlsx()

    sheet = openpyxl.load_workbook(io.BytesIO(filled), data_only=True)["Quote"]
    assert sheet["B3"].value == 250000
    assert sheet["B9"].value == pytest.approx(annuity(250000, 0.045, 30), rel=1e-12)


def test_foreign_blobs_are_rejected(engine, loan_bytes):
    with pytest.raises(WorkbookError):
        engine.load_serialized(b"not a blob")
    with pytest.raises(WorkbookError):
        engine.load_serialized(loan_bytes)


@pytest.mark.parametrize(
    "data",
    [b"", b"garbage", b"PK\x03\x04truncated", b"\xd0\xcf\x11\xe0legacy xls"],
)
def test_unreadable_files_raise_a_clean_workbook_error(engine, data):
    with pytest.raises(WorkbookError) as caught:
        engine.load_xlsx(data)

    assert caught.value.message == "The file is not a readable .xlsx workbook"


def test_a_zip_that_is_not_a_workbook(engine, loan_bytes):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("hello.txt", "hi")
    half = loan_bytes[: len(loan_bytes) // 2]

    for data in (buffer.getvalue(), half):
        with pytest.raises(WorkbookError, match="not a readable .xlsx"):
            engine.load_xlsx(data)


def test_workbooks_with_openpyxl_comments_load(load):
    wb = grid_workbook()
    wb["Calc Sheet"]["A1"].comment = Comment("the first value", "tester")

    assert load(wb).calculate({"row_in": [1, 1, 1]}, ["row_sum"]) == {"row_sum": 3}


def test_circular_references_raise_a_workbook_error(load):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["B1"], ws["C1"] = 1, "=C1+A1", "=B1+1"
    add_name(wb, "seed", "Sheet!$A$1")
    add_name(wb, "loop", "Sheet!$B$1")

    with pytest.raises(WorkbookError, match="circular"):
        load(wb).calculate({"seed": 2})


def test_unknown_engine_names_are_refused():
    with pytest.raises(ValueError):
        get_engine("excel")


def test_named_range_dict_matches_the_contract():
    rng = NamedRange("rate", "Quote", "B2", "input", 1, 1, False)

    assert rng.to_dict() == {"name": "rate", "sheet": "Quote", "ref": "B2", "kind": "input",
                             "rows": 1, "cols": 1, "is_date": False}


# --- ModelCache -----------------------------------------------------------------------------


def test_cache_reuses_loaded_workbooks_and_evicts_the_least_recently_used(engine, loan_bytes):
    cache = ModelCache(max_entries=2)
    loads = []

    def loader(key):
        def load():
            loads.append(key)
            return engine.load_xlsx(loan_bytes)
        return load

    first = cache.get_or_load("v1", loader("v1"))
    assert cache.get_or_load("v1", loader("v1")) is first
    cache.get_or_load("v2", loader("v2"))
    cache.get_or_load("v1", loader("v1"))  # v1 is now the most recent
    cache.get_or_load("v3", loader("v3"))

    assert loads == ["v1", "v2", "v3"]
    assert cache.keys() == ["v1", "v3"] and len(cache) == 2
    assert cache.get_or_load("v1", loader("v1")) is first


def test_cache_forgets_failed_loads(engine):
    cache = ModelCache(max_entries=2)

    with pytest.raises(WorkbookError):
        cache.get_or_load("bad", lambda: engine.load_xlsx(b"nope"))

    assert "bad" not in cache and len(cache) == 0


def test_checkout_serializes_concurrent_jobs_on_one_workbook(engine, loan_bytes):
    cache = ModelCache(max_entries=1)
    results, loads = {}, []

    def loader():
        loads.append(1)
        return engine.load_xlsx(loan_bytes)

    def job(principal):
        for _ in range(50):
            with cache.checkout("v1", loader) as wb:
                out = wb.calculate({"principal": principal}, ["monthly_payment"])
            results.setdefault(principal, set()).add(out["monthly_payment"])

    threads = [threading.Thread(target=job, args=(p,)) for p in (100000, 200000, 300000, 400000)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(loads) == 1
    for principal, payments in results.items():
        assert len(payments) == 1
        assert payments.pop() == pytest.approx(annuity(principal, 0.045, 30), rel=1e-12)


def test_cell_filename_is_the_same_for_every_load_of_a_workbook():
    # CELL("filename") shows the name of the file the engine read: one fixed name, never a
    # temporary file's, so the same upload answers the same on every worker and every day
    from .conftest import named_formulas, uploaded_and_stored

    data = named_formulas({"file": '=CELL("filename",A1)',
                           "sheet": '=MID(CELL("filename",A1),FIND("]",CELL("filename",A1))+1,255)'})
    answers = [workbook.calculate({}) for _ in range(2) for workbook in uploaded_and_stored(data)]
    assert answers[0] == {"file": "[workbook.xlsx]Sheet1", "sheet": "Sheet1"}
    assert all(answer == answers[0] for answer in answers)
