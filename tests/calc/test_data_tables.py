"""Excel what-if data tables (`{=TABLE(...)}`): IronCalc calculates them for every job, as Excel
does; the `formulas` engine, and IronCalc beyond the size limit, keep the values Excel saved,
and the upload says which.

No corpus workbook holds a data table (none of tests/corpus/'s packages has a
`t="dataTable"` formula), so the package is written here as Excel writes one (ECMA-376 Part 1,
18.3.1.40 `f`: `t="dataTable"`, `ref`, `dt2D`, `dtr`, `r1`, `r2` on the range's first cell; the
other cells hold values only). Every expected value is computed by hand from Excel's documented
rule (Microsoft, "Calculate multiple results by using a data table") on formulas simple enough
to check: payment = principal * rate, with rates and principals exact in binary.

- one variable, column input (dtr=0): each rate of A6:A8 goes into the input cell B2; the
  formulas of the row above the body (B5 = payment, C5 = payment + principal) give B6:C8;
- one variable, row input (dtr=1): each principal of F9:H9 goes into B1; the formula left of
  the body (E10 = payment) gives F10:H10;
- two variables (dt2D=1): the top row's principals (B12:C12) go into r1 = B1, the left
  column's rates (A13:A14) into r2 = B2; the corner formula (A12 = payment) gives B13:C14.
"""

import io
import re
import uuid
import zipfile

import openpyxl
import pytest

from shared.calc import get_engine
from shared.db.session import session_scope
from shared.repositories import tenants as tenant_repo
from shared.services import engines, versions
from tests.factories import deploy_loan, worked_job
from tests.packages import edit_sheet

from .conftest import add_name, to_bytes
from .test_fidelity import excel_saved

RATES = (0.25, 0.5, 0.75)
PRINCIPALS = (100, 200, 400)


def by_rate(principal: float) -> list[list[float]]:
    """B6:C8: payment and payment + principal at each rate of A6:A8."""
    return [[principal * r, principal * r + principal] for r in RATES]


def by_principal(rate: float) -> list[float]:
    """F10:H10: payment for each principal of F9:H9."""
    return [p * rate for p in PRINCIPALS]


GRID = [[100 * 0.25, 300 * 0.25], [100 * 0.5, 300 * 0.5]]  # B13:C14, every input substituted


def total(principal: float) -> float:
    return sum(sum(row) for row in by_rate(principal))


TABLES = {  # first body cell -> (definition, body cells)
    "B6": ('<f t="dataTable" ref="B6:C8" dt2D="0" dtr="0" r1="B2"/>', ["B6", "C6", "B7", "C7", "B8", "C8"]),
    "F10": ('<f t="dataTable" ref="F10:H10" dt2D="0" dtr="1" r1="B1"/>', ["F10", "G10", "H10"]),
    "B13": ('<f t="dataTable" ref="B13:C14" dt2D="1" dtr="1" r1="B1" r2="B2"/>', ["B13", "C13", "B14", "C14"]),
}
KEPT = "is an Excel what-if data table: kept as Excel's saved values, not recalculated from inputs"
CALCULATED = "is an Excel what-if data table: calculated for every job, as Excel does, from its input cell"


def loan_tables_workbook(principal: float = 1000, rate: float = 0.05, rate_as_percent: bool = False,
                         payment: str = "=B1*B2") -> bytes:
    """principal (B1) and rate (B2) are inputs, payment (B3) = B1*B2, the three tables above,
    total (D1) sums the first; Excel's saved values are those of the rule at these inputs.
    `rate_as_percent`: B2 is a formula, =F1/100, over the input rate_percent (F1)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Loans"
    ws["B1"], ws["B2"], ws["B3"] = principal, rate, payment
    if rate_as_percent:
        ws["F1"], ws["B2"] = rate * 100, "=F1/100"
        add_name(wb, "rate_percent", "Loans!$F$1")
    ws["D1"] = "=SUM(B6:C8)"
    ws["B5"], ws["C5"] = "=B3", "=B3+B1"
    ws["E10"], ws["A12"] = "=B3", "=B3"
    for row, r in zip((6, 7, 8), RATES):
        ws.cell(row, 1, r)
    for col, p in zip((6, 7, 8), PRINCIPALS):
        ws.cell(9, col, p)
    ws["B12"], ws["C12"], ws["A13"], ws["A14"] = 100, 300, 0.25, 0.5
    saved = {"Loans!B3": principal * rate, "Loans!D1": total(principal), "Loans!B5": principal * rate,
             "Loans!C5": principal * rate + principal, "Loans!E10": principal * rate, "Loans!A12": principal * rate}
    values = [v for row in by_rate(principal) for v in row] + by_principal(rate) + [v for row in GRID for v in row]
    cells = [c for _, body in TABLES.values() for c in body]
    for cell, value in zip(cells, values):
        ws[cell] = "=0"  # a placeholder, replaced by the data table below
        saved[f"Loans!{cell}"] = value
    for name, ref in (("principal", "$B$1"), ("rate", "$B$2"), ("payment", "$B$3"), ("total", "$D$1"),
                      ("by_rate", "$B$6:$C$8"), ("by_principal", "$F$10:$H$10"), ("grid", "$B$13:$C$14")):
        add_name(wb, name, f"Loans!{ref}")
    return as_excel_writes_tables(excel_saved(wb, saved), TABLES)


def as_excel_writes_tables(data: bytes, tables: dict) -> bytes:
    """The package with each table's placeholders replaced as Excel writes a table: the
    definition on the first cell, the saved value alone in the others."""

    def rewrite(sheet: str) -> str:
        for first, (definition, body) in tables.items():
            for cell in body:
                sheet, n = re.subn(rf'(<c r="{cell}"[^>]*>)<f>0</f>',
                                   lambda m: m.group(1) + (definition if cell == first else ""), sheet)
                assert n == 1, (cell, sheet)
        return sheet

    return edit_sheet(data, rewrite)


def test_the_workbook_really_holds_data_tables_as_excel_writes_them():
    sheet = zipfile.ZipFile(io.BytesIO(loan_tables_workbook())).read("xl/worksheets/sheet1.xml").decode()
    assert '<c r="B6"><f t="dataTable" ref="B6:C8" dt2D="0" dtr="0" r1="B2"/><v>250</v></c>' in sheet
    assert '<c r="C6"><v>1250</v></c>' in sheet
    assert sheet.count('t="dataTable"') == 3


def test_the_saved_values_are_the_documented_rule_at_the_saved_inputs():
    # The hand-computed expectations at principal 1000, rate 0.05, as the file carries them.
    assert by_rate(1000) == [[250, 1250], [500, 1500], [750, 1750]]
    assert by_principal(0.05) == [5, 10, 20] and GRID == [[25, 75], [50, 150]]
    assert total(1000) == 6000


def test_ironcalc_calculates_every_kind_of_table_from_a_jobs_inputs():
    # GIVEN the workbook loaded by IronCalc, as uploaded and as stored for jobs
    workbook = get_engine("ironcalc").load_xlsx(loan_tables_workbook())
    stored = get_engine("ironcalc").load_serialized(workbook.serialize())

    for loaded in (workbook, stored):
        # WHEN a job changes the principal and the rate
        outputs = loaded.calculate({"principal": 2000, "rate": 0.5})

        # THEN each table follows Excel's rule at the job's inputs, and so does what sums it
        assert outputs["by_rate"] == by_rate(2000)  # the rates substituted, the job's principal kept
        assert outputs["by_principal"] == by_principal(0.5)  # the principals substituted, the job's rate kept
        assert outputs["grid"] == GRID  # both inputs substituted
        assert outputs["total"] == total(2000) == 12000
        # AND the input cells hold the job's values again: the substitutions are undone
        assert outputs["payment"] == 2000 * 0.5  # principal * rate at the job's own inputs


def test_an_input_cell_holding_a_formula_gets_its_formula_back():
    # GIVEN the rate cell B2 a formula over the input rate_percent
    workbook = get_engine("ironcalc").load_xlsx(loan_tables_workbook(rate_as_percent=True))

    # WHEN a job sends rate_percent 50
    outputs = workbook.calculate({"principal": 2000, "rate_percent": 50})

    # THEN the table substituted its rates into B2, and B2 is again =F1/100 for the rest
    assert outputs["by_rate"] == by_rate(2000) and outputs["grid"] == GRID
    assert outputs["by_principal"] == by_principal(0.5) and outputs["payment"] == 1000


def test_a_function_ironcalc_lacks_is_corrected_in_every_substitution():
    # GIVEN payment computed with AGGREGATE (IronCalc lacks it; shared.calc.corrections.functions
    # evaluates it): AGGREGATE(9, 6, B1) is SUM(B1) ignoring errors, so payment is still B1*B2
    workbook = get_engine("ironcalc").load_xlsx(loan_tables_workbook(payment="=_xlfn.AGGREGATE(9,6,B1)*B2"))

    outputs = workbook.calculate({"principal": 2000, "rate": 0.5})

    assert outputs["by_rate"] == by_rate(2000) and outputs["by_principal"] == by_principal(0.5)
    assert outputs["grid"] == GRID and outputs["payment"] == 1000 and outputs["total"] == 12000
    assert workbook.correction_flags() == []
    # AND the filled workbook keeps payment's formula, with the job's value
    exported = workbook.to_xlsx()
    assert "AGGREGATE(9,6,B1)*B2" in str(openpyxl.load_workbook(io.BytesIO(exported))["Loans"]["B3"].value)
    assert openpyxl.load_workbook(io.BytesIO(exported), data_only=True)["Loans"]["B3"].value == 1000


def test_without_inputs_the_tables_are_excels_saved_values():
    outputs = get_engine("ironcalc").load_xlsx(loan_tables_workbook()).calculate({})

    assert outputs["by_rate"] == by_rate(1000) and outputs["by_principal"] == by_principal(0.05)
    assert outputs["grid"] == GRID and outputs["total"] == 6000


def test_the_filled_workbook_keeps_the_tables_live_with_the_jobs_values():
    workbook = get_engine("ironcalc").load_xlsx(loan_tables_workbook())
    workbook.calculate({"principal": 2000, "rate": 0.5})

    exported = workbook.to_xlsx()

    # THEN each table's definition is back on its first cell, and the body holds values only
    sheet = zipfile.ZipFile(io.BytesIO(exported)).read("xl/worksheets/sheet1.xml").decode()
    for first, (definition, body) in TABLES.items():
        assert re.search(rf'<c r="{first}"[^>]*>{re.escape(definition)}<v>', sheet), first
        for cell in body[1:]:
            assert not re.search(rf'<c r="{cell}"[^>]*><f>', sheet), cell
    values = openpyxl.load_workbook(io.BytesIO(exported), data_only=True)["Loans"]
    assert [[values[f"{c}{r}"].value for c in "BC"] for r in (6, 7, 8)] == by_rate(2000)
    assert values["D1"].value == 12000 and values["B3"].value == 1000


def test_the_formulas_engine_keeps_the_saved_values_whatever_the_inputs():
    workbook = get_engine("formulas").load_xlsx(loan_tables_workbook())
    stored = get_engine("formulas").load_serialized(workbook.serialize())

    for loaded in (workbook, stored):
        outputs = loaded.calculate({"principal": 2000, "rate": 0.5})

        assert outputs["payment"] == 1000  # an ordinary formula follows the inputs
        assert outputs["by_rate"] == by_rate(1000) and outputs["total"] == 6000  # the table does not


def test_beyond_the_size_limit_ironcalc_keeps_the_saved_values(configure):
    # GIVEN a limit below the 3 + 3 + 4 substitutions the tables need
    configure(upload_max_data_table_substitutions=9)

    outputs = get_engine("ironcalc").load_xlsx(loan_tables_workbook()).calculate({"principal": 2000})

    assert outputs["by_rate"] == by_rate(1000) and outputs["total"] == 6000 and outputs["payment"] == 100


def upload(admin, data: bytes) -> versions.UploadedVersion:
    tenant_id = uuid.UUID(admin.tenant_id)
    with session_scope() as session:
        tenant = tenant_repo.get_tenant(session, tenant_id=tenant_id)
        engine = engines.create(session, tenant_id=tenant_id, name="Loans", slug=None, description=None).engine
        uploaded = versions.upload(session, tenant=tenant, engine_id=engine.id, version="1",
                                   filename="loans.xlsx", data=data)
        session.expunge(uploaded.version)
        return uploaded


def test_the_upload_says_the_tables_are_calculated_and_checks_them_against_excel(admin):
    # WHEN the workbook with data tables is uploaded
    uploaded = upload(admin, loan_tables_workbook())

    # THEN the warnings say each table is calculated, naming its input cells
    warnings = [w for w in uploaded.warnings if "data table" in w]
    assert warnings[0] == (f"Loans!B6:C8 {CALCULATED} B2 (IronCalc only: with the formulas engine "
                           "it keeps Excel's saved values)")
    assert warnings[2].startswith(f"Loans!B13:C14 {CALCULATED}s B1 and B2")
    # AND the fidelity report records them, and compares the calculated cells with Excel's
    report = uploaded.version.fidelity_report
    assert [(t["ref"], t["inputs"], t["calculated"], sorted(t["outputs"])) for t in report["data_tables"]] == [
        ("B6:C8", ["B2"], True, ["by_rate", "total"]),
        ("F10:H10", ["B1"], True, ["by_principal"]),
        ("B13:C14", ["B1", "B2"], True, ["grid"]),
    ]
    assert report["cells_compared"] == report["cells_matching"] == 6 + 13  # formulas + table bodies
    assert "data_table" not in (report.get("skipped") or {})
    # AND the tables stay outputs: no job can write into them
    kinds = {r["name"]: r["kind"] for r in uploaded.version.named_ranges}
    assert kinds["by_rate"] == kinds["grid"] == "output"


def test_a_table_saved_without_values_is_still_an_output_and_calculated(admin):
    # GIVEN the tables' bodies written without saved values (a file no Excel has saved)
    body = [c for _, cells in TABLES.values() for c in cells]

    def drop_values(sheet: str) -> str:
        for cell in body:
            sheet = re.sub(rf'(<c r="{cell}"[^>]*>(?:<f[^>]*/>|<f[^>]*>.*?</f>)?)<v>[^<]*</v>', r"\1", sheet)
        return sheet

    uploaded = upload(admin, edit_sheet(loan_tables_workbook(), drop_values))
    # THEN the named ranges over them are outputs, not inputs a job could write into
    kinds = {r["name"]: r["kind"] for r in uploaded.version.named_ranges}
    assert kinds["by_rate"] == kinds["by_principal"] == kinds["grid"] == "output"
    # AND IronCalc still calculates them by the documented rule
    book = get_engine("ironcalc").load_xlsx(edit_sheet(loan_tables_workbook(), drop_values))
    outputs = book.calculate({"principal": 2000, "rate": 0.5})
    assert outputs["by_rate"] == by_rate(2000)
    assert outputs["by_principal"] == by_principal(0.5)
    assert outputs["grid"] == GRID


def test_the_fidelity_check_compares_the_calculated_tables_with_excels_values():
    from shared.calc.fidelity.check import check

    # GIVEN a file whose saved value of B6 does not follow the rule (250 at principal 1000)
    data = edit_sheet(loan_tables_workbook(), lambda xml: xml.replace("<v>250</v>", "<v>999</v>", 1))

    # WHEN IronCalc's check runs, THEN that one cell is a mismatch; with `formulas` the
    # table's cells are Excel's own values, skipped
    report = check(data, "ironcalc")
    assert (report.cells_compared, report.cells_matching) == (19, 18)
    assert (report.mismatches[0]["cell"], report.mismatches[0]["expected"]) == ("B6", 999)
    assert check(data, "formulas").skipped == {"data_table": 13}


def test_beyond_the_size_limit_the_upload_says_the_tables_keep_the_saved_values(admin, configure):
    configure(upload_max_data_table_substitutions=9)

    uploaded = upload(admin, loan_tables_workbook())

    warning = next(w for w in uploaded.warnings if "B6:C8" in w)
    assert warning.startswith(f"Loans!B6:C8 {KEPT}")
    assert "named ranges total, by_rate are in it or calculated from it" in warning
    report = uploaded.version.fidelity_report
    assert report["skipped"] == {"data_table": 13}
    assert not any(t.get("calculated") for t in report["data_tables"])


def test_a_job_reads_the_tables_at_its_own_inputs(client, admin, run_worker):
    # GIVEN the workbook deployed
    deployed = deploy_loan(admin, loan_tables_workbook())

    # WHEN a job sends another principal
    job = worked_job(client, deployed, {"principal": 2000}, run_worker)

    # THEN the tables follow it
    assert job["status"] == "completed", job
    assert job["outputs"]["by_rate"] == by_rate(2000) and job["outputs"]["total"] == 12000
    assert job["outputs"]["by_principal"] == by_principal(0.05) and job["outputs"]["payment"] == 100


def test_a_job_on_the_formulas_engine_reads_the_saved_values(client, admin, run_worker):
    deployed = deploy_loan(admin, loan_tables_workbook())
    r = admin.patch(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}", json={"calc_engine": "formulas"})
    assert r.status_code == 200, r.text

    job = worked_job(client, deployed, {"principal": 2000}, run_worker)

    assert job["status"] == "completed", job
    assert job["outputs"]["by_rate"] == by_rate(1000) and job["outputs"]["payment"] == 100


def test_a_workbook_without_data_tables_reads_the_same_bytes():
    from shared.calc.xlsx.data_tables import as_constants, find_data_tables

    wb = openpyxl.Workbook()
    wb.active["A1"] = "=1+1"
    data = to_bytes(wb)
    assert find_data_tables(data) == [] and as_constants(data) is data


def test_every_kind_of_saved_value_is_kept_as_excel_saved_it_where_tables_are_not_calculated():
    # GIVEN a two-variable table (dt2D, r1 and r2) whose saved values are a number, an error,
    # a text and a boolean (Excel writes text results as t="str")
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Grid"
    ws["A1"], ws["A2"] = 1, 2
    for cell in ("B5", "C5", "B6", "C6"):
        ws[cell] = "=0"
    add_name(wb, "grid", "Grid!$B$5:$C$6")
    data = excel_saved(wb, {"Grid!B5": -1.25e-07, "Grid!C5": ("e", "#DIV/0!"),
                            "Grid!B6": 'say "hi"', "Grid!C6": True})
    data = edit_sheet(data, lambda sheet: sheet.replace(
        "<f>0</f>", '<f t="dataTable" ref="B5:C6" dt2D="1" dtr="1" r1="A1" r2="A2"/>', 1).replace("<f>0</f>", ""))

    # WHEN the formulas engine calculates it
    outputs = get_engine("formulas").load_xlsx(data).calculate({})

    # THEN each cell is the value Excel saved, of the same kind
    assert outputs["grid"] == [[-1.25e-07, "#DIV/0!"], ['say "hi"', True]]
