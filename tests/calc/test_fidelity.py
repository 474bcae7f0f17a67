"""The fidelity check, specified on small workbooks whose Excel values are known.

openpyxl writes no cached values, so `excel_saved` writes into each formula cell the value
Excel gives for it, as Excel would have saved it.
"""

import io
import re
import zipfile
from pathlib import Path

import openpyxl
import pytest

from shared.calc.fidelity.check import check
from shared.calc.fidelity.compare import values_match
from shared.calc.fidelity.fence import check_isolated
from shared.calc.xlsx.cells import read_excel_cells
from shared.calc.xlsx.write import write_values
from shared.errors import WorkbookError

from .conftest import add_name


def excel_saved(wb: openpyxl.Workbook, cached: dict[str, object]) -> bytes:
    """The workbook's bytes with `cached` ({"Sheet!A1": value}) as Excel's saved values.

    Values are numbers, text, booleans, or ("e", "#DIV/0!") for an error.
    """
    buffer = io.BytesIO()
    wb.save(buffer)
    values = {}
    for where, value in cached.items():
        sheet, _, address = where.rpartition("!")
        cell = wb[sheet.strip("'")][address]
        values[(sheet.strip("'"), cell.row, cell.column)] = value
    return write_values(buffer.getvalue(), values)


def known_workbook() -> bytes:
    """Numbers, text, booleans, errors, a date, and one cell whose saved value is wrong."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Prices"
    ws["A1"], ws["A2"], ws["A3"] = 100, 0.1, "widget"
    ws["B1"] = "=A1*1.2"
    ws["B2"] = "=A2+0.2"
    ws["B3"] = '=UPPER(A3)&"!"'
    ws["B4"] = "=A1>50"
    ws["B5"] = "=A1/0"
    ws["B6"] = "=DATE(2026,1,31)"
    ws["B7"] = "=2+2"  # the deliberate mismatch: the file claims 5
    other = wb.create_sheet("Totals")
    other["A1"] = "=SUM(Prices!A1:A2)"
    return excel_saved(wb, {
        "Prices!B1": 120, "Prices!B2": 0.3, "Prices!B3": "WIDGET!", "Prices!B4": True,
        "Prices!B5": ("e", "#DIV/0!"), "Prices!B6": 46053, "Prices!B7": 5,
        "Totals!A1": 100.1,
    })


@pytest.mark.parametrize("engine", ["ironcalc", "formulas"])
def test_the_check_compares_every_formula_cell_and_names_the_one_that_differs(engine):
    # GIVEN a workbook whose saved values are Excel's, except B7 which claims 2+2 = 5
    data = known_workbook()

    # WHEN it is checked
    report = check(data, engine)

    # THEN all eight formula cells are compared, seven match, and B7 is reported in full
    assert report.status == "ok"
    assert report.cells_compared == 8
    assert report.cells_matching == 7
    assert report.mismatches == [{
        "sheet": "Prices", "cell": "B7", "formula": "=2+2", "expected": 5, "actual": 4,
    }]
    assert report.unsupported_functions == []


def test_excel_values_are_read_with_their_types():
    book = read_excel_cells(known_workbook())
    by_cell = {(c.sheet, c.address): c for c in book.cells}
    assert by_cell[("Prices", "B3")].expected == ("s", "WIDGET!")
    assert by_cell[("Prices", "B4")].expected == ("b", True)
    assert by_cell[("Prices", "B5")].expected == ("e", "#DIV/0!")
    assert by_cell[("Prices", "B6")].expected == ("n", 46053.0)  # a serial, not a datetime
    assert by_cell[("Totals", "A1")].formula == "SUM(Prices!A1:A2)"
    assert book.sheets == ["Prices", "Totals"]


def test_comparison_rules():
    # numbers within a relative 1e-9, and float noise around zero
    assert values_match(("n", 0.3), ("n", 0.1 + 0.2))
    assert values_match(("n", 1e12), ("n", 1e12 + 1))
    assert not values_match(("n", 1.0), ("n", 1.000001))
    assert values_match(("n", 0.0), ("n", 5e-17))
    # text and booleans exactly, and never as each other or as numbers
    assert not values_match(("s", "abc"), ("s", "ABC"))
    assert not values_match(("b", True), ("n", 1.0))
    assert not values_match(("s", "#N/A"), ("e", "#N/A"))
    # errors by their code
    assert values_match(("e", "#N/A"), ("e", "#N/A"))
    assert not values_match(("e", "#N/A"), ("e", "#VALUE!"))
    # an empty result is Excel's 0 or ""
    assert values_match(("n", 0.0), ("empty", None))
    assert values_match(("s", ""), ("empty", None))


def test_volatile_cells_and_their_dependants_are_left_out():
    # GIVEN NOW() and RAND() cells, a cell that uses one of them and one that does not
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = "=NOW()"
    ws["A2"] = "=A1+1"
    ws["A3"] = "=SUM(A1:A2)"
    ws["A4"] = "=RAND()"
    ws["B1"] = 3
    ws["B2"] = "=B1*3"
    data = excel_saved(wb, {"Sheet!A1": 1.5, "Sheet!A2": 2.5, "Sheet!A3": 4, "Sheet!A4": 0.42,
                            "Sheet!B2": 9})

    report = check(data, "ironcalc")

    # THEN only B2 is compared; the four volatile cells are counted as left out
    assert report.cells_compared == 1 and report.cells_matching == 1
    assert report.skipped == {"volatile": 4}


def test_references_to_other_workbooks_are_left_out():
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = "=[1]Rates!A1*2"
    ws["A2"] = "=A1+1"
    ws["A3"] = "=1+1"
    data = excel_saved(wb, {"Sheet!A1": 10, "Sheet!A2": 11, "Sheet!A3": 2})

    report = check(data, "ironcalc")

    assert (report.cells_compared, report.cells_matching) == (1, 1)
    assert report.skipped == {"external": 2}


def test_bahttext_is_answered_on_ironcalc_not_named_unknown():
    # BAHTTEXT is not in IronCalc 0.9.1; the correction layer answers it (Microsoft's page:
    # BAHTTEXT(1234) is the Thai text below), so the upload does not name it unknown
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = 1234
    ws["B1"] = "=BAHTTEXT(A1)"
    data = excel_saved(wb, {"Sheet!B1": "หนึ่งพันสองร้อยสามสิบสี่บาทถ้วน"})

    report = check(data, "ironcalc")

    assert report.unsupported_functions == []
    assert (report.cells_compared, report.cells_matching) == (1, 1)


def test_functions_an_engine_does_not_know_are_named():
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["A2"] = 1, 2
    ws["B1"] = "=SUBTOTAL(9,A1:A2)"
    ws["B2"] = "=NOSUCHFUNCTION(A1)"
    data = excel_saved(wb, {"Sheet!B1": 3, "Sheet!B2": ("e", "#NAME?")})

    ironcalc = check(data, "ironcalc")
    formulas = check(data, "formulas")

    assert ironcalc.unsupported_functions == ["NOSUCHFUNCTION"]
    assert ironcalc.cells_matching == 2
    assert formulas.unsupported_functions == ["NOSUCHFUNCTION", "SUBTOTAL"]
    assert formulas.mismatches[0]["cell"] == "B1"
    assert formulas.mismatches[0]["actual"] == "#NAME?"


def test_a_file_without_cached_values_compares_nothing():
    wb = openpyxl.Workbook()
    wb.active["A1"] = "=1+1"
    buffer = io.BytesIO()
    wb.save(buffer)

    report = check(buffer.getvalue(), "ironcalc")

    assert report.cells_compared == 0
    assert report.skipped == {"no_cached_value": 1}


def test_shared_formulas_are_expanded_per_cell():
    # GIVEN a sheet where B2:B4 share B2's formula, as Excel writes fill-downs
    wb = openpyxl.Workbook()
    ws = wb.active
    for r in range(1, 5):
        ws.cell(r, 1, r * 10)
    ws["B2"], ws["B3"], ws["B4"] = "=A1+A2", "=A2+A3", "=A3+A4"
    data = excel_saved(wb, {"Sheet!B2": 30, "Sheet!B3": 50, "Sheet!B4": 71})
    data = _share_formulas(data)

    book = read_excel_cells(data)
    report = check(data, "ironcalc")

    assert [c.formula for c in book.cells] == ["A1+A2", "A2+A3", "A3+A4"]
    assert report.cells_compared == 3
    assert [m["cell"] for m in report.mismatches] == ["B4"]
    assert report.mismatches[0]["formula"] == "=A3+A4"


def _share_formulas(data: bytes) -> bytes:
    import zipfile

    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            part = source.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":
                part = part.replace(b"<f>A1+A2</f>", b'<f t="shared" ref="B2:B4" si="0">A1+A2</f>')
                part = part.replace(b"<f>A2+A3</f>", b'<f t="shared" si="0"/>')
                part = part.replace(b"<f>A3+A4</f>", b'<f t="shared" si="0"/>')
            target.writestr(info, part)
    return out.getvalue()


def test_a_file_that_is_not_a_workbook_is_refused():
    with pytest.raises(WorkbookError):
        check(b"not a zip at all", "ironcalc")


def test_an_isolated_check_reports_the_same_as_in_process():
    report = check_isolated(known_workbook(), "formulas", timeout_s=3600)  # a guard, not a verdict on speed
    assert report.status == "ok"
    assert (report.cells_compared, report.cells_matching) == (8, 7)


def test_an_isolated_check_past_its_deadline_is_reported_as_timeout():
    report = check_isolated(known_workbook(), "formulas", timeout_s=0.05)
    assert report.status == "timeout"
    assert report.match_rate is None


def test_an_isolated_check_without_enough_memory_is_not_ok():
    # 100 MB of address space is not enough for numpy and formulas: the child fails at once
    # (at about 200 MB it can instead hang after a MemoryError until the deadline ends it;
    # either outcome passes, but this one does not wait 15 s for it)
    report = check_isolated(known_workbook(), "formulas", timeout_s=15, memory_mb=100)
    assert report.status in {"failed", "timeout"}
    assert report.cells_compared == 0


def test_short_defined_names_are_names_not_whole_columns():
    # GIVEN names of one to three letters: `m` points into another workbook, `vol` at a
    # RAND() cell, `tax` at a plain input (a bare M or TAX is never a column reference)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = "=RAND()"
    ws["A2"] = 0.2
    ws["B1"] = "=m*2"
    ws["B2"] = "=vol+1"
    ws["B3"] = "=tax*100"
    add_name(wb, "m", "[1]Sheet1!$A$1")
    add_name(wb, "vol", "Sheet!$A$1")
    add_name(wb, "tax", "Sheet!$A$2")
    data = excel_saved(wb, {"Sheet!A1": 0.5, "Sheet!B1": 4, "Sheet!B2": 1.5, "Sheet!B3": 20})

    report = check(data, "ironcalc")

    # THEN B1 is left out as external, B2 as volatile, and only B3 is compared
    assert report.skipped == {"external": 1, "volatile": 2}
    assert (report.cells_compared, report.cells_matching) == (1, 1)


CALC_TESTS = Path(__file__).resolve().parents[1] / "corpus" / "ironcalc" / "xlsx" / "tests" / "calc_tests"


def test_errors_newer_than_the_file_format_are_read_as_excel_shows_them():
    # GIVEN workbooks Excel 365 saved with empty arrays in them: the cells hold #VALUE! for older
    # readers and a rich value saying which error Excel shows
    drop_take = read_excel_cells((CALC_TESTS / "LOOKUP_AND_REFERENCE" / "DROP_TAKE.xlsx").read_bytes())
    filters = read_excel_cells((CALC_TESTS / "LOOKUP_AND_REFERENCE" / "FILTER_ERRORS.xlsx").read_bytes())
    sequence = read_excel_cells((CALC_TESTS / "MATH_AND_TRIGONOMETRY" / "SEQUENCE.xlsx").read_bytes())
    expected = lambda book, address: next(c.expected for c in book.cells if c.address == address)  # noqa: E731
    # THEN the check expects #CALC! where Excel shows it, and #VALUE! where that is the error
    assert expected(drop_take, "F2") == ("e", "#CALC!")  # DROP(A2:A8,7)
    assert expected(filters, "E1") == ("e", "#CALC!")  # FILTER with nothing kept
    assert expected(filters, "J1") == ("e", "#VALUE!")  # FILTER with a wrong-sized include
    assert expected(sequence, "C16") == ("e", "#CALC!")  # SEQUENCE(0,0)
    assert expected(sequence, "C18") == ("e", "#VALUE!")  # SEQUENCE(-1)


def test_a_rich_error_is_numbered_as_error_type_less_one():
    # Excel's own ERROR.TYPE.xlsx: the rich errors of A8 and A14 have ERROR.TYPE 14 and 9
    import zipfile

    from shared.calc.xlsx.rich_errors import rich_errors

    package = zipfile.ZipFile(CALC_TESTS / "INFORMATION" / "ERROR.TYPE.xlsx")
    sheet = package.read("xl/worksheets/sheet1.xml").decode()
    errors = rich_errors(package)
    by_cell = {cell: errors[int(vm)] for cell, vm in re.findall(r'<c r="(A\d+)"[^>]*vm="(\d+)"', sheet)}
    assert by_cell == {"A8": "#CALC!", "A14": "#SPILL!"}
    error_type = {cell: int(value) for cell, value in re.findall(r'<c r="B(\d+)"><f[^>]*(?:/>|>[^<]*</f>)<v>(\d+)</v>', sheet)}
    assert error_type["8"] == 14 and error_type["14"] == 9


def test_a_filled_workbook_keeps_a_rich_error_only_where_the_new_value_is_that_error():
    # GIVEN Excel's DROP_TAKE.xlsx, whose C2 and F2 hold a rich #CALC! (#VALUE! for older readers)
    data = (CALC_TESTS / "LOOKUP_AND_REFERENCE" / "DROP_TAKE.xlsx").read_bytes()
    # WHEN a job's values are written: C2 an empty array again, F2 a number, B2 a #SPILL! with
    # no rich value of its own
    filled = write_values(data, {("Sheet1", 2, 3): ("e", "#CALC!"), ("Sheet1", 2, 6): ("n", 5.0), ("Sheet1", 2, 2): ("e", "#SPILL!")})
    # THEN C2 still reads as #CALC!, F2 is a plain number, and B2 holds what older readers see
    by_cell = {c.address: c.expected for c in read_excel_cells(filled).cells if c.sheet == "Sheet1"}
    assert by_cell["C2"] == ("e", "#CALC!")
    assert by_cell["F2"] == ("n", 5.0)
    assert by_cell["B2"] == ("e", "#VALUE!")
    sheet = zipfile.ZipFile(io.BytesIO(filled)).read("xl/worksheets/sheet1.xml").decode()
    assert re.search(r'<c r="F2"[^>]*vm=', sheet) is None


def test_outputs_calculated_from_a_cell_the_service_cannot_reproduce_are_named_at_upload():
    from shared.calc.fidelity.stored_report import build_report, upload_warnings

    from .conftest import one_sheet

    # GIVEN a TEXT format code the service does not implement ([DBNum1]: Chinese numerals),
    # an output calculated from it and another that is not
    data = one_sheet(
        {"A1": 5, "B1": '=TEXT(A1,"[DBNum1]0")', "C1": '=B1&" units"', "D1": "=A1*2"},
        {"amount": "$A$1", "label": "$C$1", "double": "$D$1"},
    )

    # WHEN the upload is checked
    report = check(data, "ironcalc")

    # THEN the report names the output that depends on the cell, with the reason, and only it
    assert report.flagged_outputs == [
        {"output": "label", "cell": "Sheet1!B1", "reason": "TEXT: format code [DBNum1]"},
    ]
    # AND the upload's warnings say what jobs will answer for it
    warnings = upload_warnings(build_report("ironcalc", {"ironcalc": report}))
    assert (
        "Output 'label' is calculated from Sheet1!B1, which the service cannot calculate as Excel would "
        "(TEXT: format code [DBNum1]): jobs answer it with the engine's value"
    ) in warnings
    assert not any("'double'" in line for line in warnings)
