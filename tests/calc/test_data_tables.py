"""Excel what-if data tables (`{=TABLE(...)}`): the workbook is accepted, the table's cells keep
the values Excel saved for every engine, and the upload says so, naming the outputs concerned.

No corpus workbook holds a data table, so the package is written here as Excel writes one
(ECMA-376 Part 1, 18.3.1.40 `f`: `t="dataTable"`, `ref`, `dt2D`, `dtr`, `r1` on the range's
first cell; the other cells hold values only). Its cached values are the file's "Excel's saved
values": B5:B7 = 110, 120, 130 (price 100*(1+rate) for rates 0.1, 0.2, 0.3) and D1 = SUM = 360.
The rule under test is that they are kept as saved, not recalculated from a job's inputs.
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
from tests.factories import deploy_loan

from .conftest import add_name, to_bytes
from .test_fidelity import excel_saved

SAVED_TABLE = [110, 120, 130]
SAVED_TOTAL = 360
NOTE = "Pricing!B5:B7 is an Excel what-if data table: kept as Excel's saved values, not recalculated from inputs"


def data_table_workbook() -> bytes:
    """rate (B1, an input) -> price (B2 = 100*(1+B1)); a one-variable data table B5:B7 over the
    rates in A5:A7 with column input cell B1; total (D1) sums the table."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Pricing"
    ws["B1"] = 0.05
    ws["B2"] = "=100*(1+B1)"
    ws["B4"] = "=B2"
    for row, rate in zip((5, 6, 7), (0.1, 0.2, 0.3)):
        ws.cell(row, 1, rate)
        ws.cell(row, 2, "=0")  # placeholders, replaced by the data table below
    ws["D1"] = "=SUM(B5:B7)"
    add_name(wb, "rate", "Pricing!$B$1")
    add_name(wb, "price", "Pricing!$B$2")
    add_name(wb, "table", "Pricing!$B$5:$B$7")
    add_name(wb, "total", "Pricing!$D$1")
    data = excel_saved(wb, {"Pricing!B2": 105, "Pricing!B4": 105, "Pricing!D1": SAVED_TOTAL,
                            **{f"Pricing!B{r}": v for r, v in zip((5, 6, 7), SAVED_TABLE)}})
    return _as_data_table(data)


def _as_data_table(data: bytes) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            part = source.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":
                text = part.decode()
                text, first = re.subn(r'<f>0</f>(<v>110</v>)',
                                      r'<f t="dataTable" ref="B5:B7" dt2D="0" dtr="0" r1="B1"/>\1', text)
                text, rest = re.subn(r"<f>0</f>", "", text)
                assert (first, rest) == (1, 2), text
                part = text.encode()
            target.writestr(info, part)
    return out.getvalue()


def test_the_workbook_really_holds_a_data_table():
    sheet = zipfile.ZipFile(io.BytesIO(data_table_workbook())).read("xl/worksheets/sheet1.xml")
    assert b'<f t="dataTable" ref="B5:B7" dt2D="0" dtr="0" r1="B1"/><v>110</v>' in sheet


@pytest.mark.parametrize("engine_name", ["ironcalc", "formulas"])
def test_every_engine_keeps_the_tables_saved_values_whatever_the_inputs(engine_name):
    # GIVEN the workbook loaded by the engine, as uploaded and as stored for jobs
    workbook = get_engine(engine_name).load_xlsx(data_table_workbook())
    stored = get_engine(engine_name).load_serialized(workbook.serialize())

    for loaded in (workbook, stored):
        # WHEN a job changes the rate
        outputs = loaded.calculate({"rate": 0.5})

        # THEN the ordinary formula follows it, the table and what sums it keep Excel's values
        assert outputs["price"] == 150
        assert outputs["table"] == SAVED_TABLE  # a single column reads as a list
        assert outputs["total"] == SAVED_TOTAL


@pytest.mark.parametrize("engine_name", ["ironcalc", "formulas"])
def test_the_filled_workbook_holds_the_saved_values_as_constants(engine_name):
    workbook = get_engine(engine_name).load_xlsx(data_table_workbook())
    workbook.calculate({"rate": 0.5})

    exported = openpyxl.load_workbook(io.BytesIO(workbook.to_xlsx()), data_only=True)["Pricing"]

    assert [exported[f"B{r}"].value for r in (5, 6, 7)] == SAVED_TABLE
    assert exported["D1"].value == SAVED_TOTAL and exported["B2"].value == 150


def upload(admin, data: bytes) -> versions.UploadedVersion:
    tenant_id = uuid.UUID(admin.tenant_id)
    with session_scope() as session:
        tenant = tenant_repo.get_tenant(session, tenant_id=tenant_id)
        engine = engines.create(session, tenant_id=tenant_id, name="Pricing", slug=None, description=None).engine
        uploaded = versions.upload(session, tenant=tenant, engine_id=engine.id, version="1",
                                   filename="pricing.xlsx", data=data)
        session.expunge(uploaded.version)
        return uploaded


def test_the_upload_is_accepted_and_says_which_outputs_will_not_follow_their_inputs(admin):
    # WHEN the workbook with a data table is uploaded
    uploaded = upload(admin, data_table_workbook())

    # THEN it is accepted; the warning names the table and the outputs in it or computed from it
    warning = next(w for w in uploaded.warnings if "data table" in w)
    assert warning.startswith(NOTE)
    assert "named ranges table, total are in it or calculated from it" in warning
    assert "price" not in warning and "rate" not in warning
    # AND the fidelity report records it; the table's cells are not counted as formula cells
    report = uploaded.version.fidelity_report
    assert report["data_tables"] == [{
        "sheet": "Pricing", "ref": "B5:B7", "inputs": ["B1"], "note": NOTE, "outputs": ["table", "total"],
    }]
    assert report["cells_compared"] == report["cells_matching"] == 3  # B2, B4, D1
    assert report["skipped"] == {"data_table": 3}
    # AND the table stays an output: no job can write into it
    kinds = {r["name"]: r["kind"] for r in uploaded.version.named_ranges}
    assert kinds == {"rate": "input", "price": "output", "table": "output", "total": "output"}


@pytest.mark.parametrize("engine_name", ["ironcalc", "formulas"])
def test_a_job_reads_the_saved_values_from_the_table(client, admin, run_worker, engine_name):
    # GIVEN the workbook deployed, calculated by `engine_name`
    deployed = deploy_loan(admin, data_table_workbook())
    if engine_name != "ironcalc":
        r = admin.patch(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}", json={"calc_engine": engine_name})
        assert r.status_code == 200, r.text
    key = {"X-API-Key": deployed.api_key}

    # WHEN a job sends another rate
    r = client.post(deployed.execute_path, json={"inputs": {"rate": 0.5}}, headers=key)
    assert r.status_code == 202, r.text
    run_worker()
    job = client.get(f"/jobs/{r.json()['job_id']}", headers=key).json()

    # THEN price follows the input, and the table's outputs are Excel's saved values
    assert job["status"] == "completed", job
    assert job["outputs"] == {"price": 150, "table": SAVED_TABLE, "total": SAVED_TOTAL}


def test_a_workbook_without_data_tables_reads_the_same_bytes():
    from shared.calc.xlsx.data_tables import as_constants, find_data_tables

    wb = openpyxl.Workbook()
    wb.active["A1"] = "=1+1"
    data = to_bytes(wb)
    assert find_data_tables(data) == [] and as_constants(data) is data


def test_every_kind_of_saved_value_is_kept_as_excel_saved_it():
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
    source = zipfile.ZipFile(io.BytesIO(data))
    sheet = source.read("xl/worksheets/sheet1.xml").decode()
    sheet = sheet.replace("<f>0</f>", '<f t="dataTable" ref="B5:C6" dt2D="1" dtr="1" r1="A1" r2="A2"/>', 1)
    sheet = sheet.replace("<f>0</f>", "")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            part = sheet.encode() if info.filename == "xl/worksheets/sheet1.xml" else source.read(info.filename)
            target.writestr(info, part)

    for engine_name in ("ironcalc", "formulas"):
        # WHEN it is calculated with new values in the input cells
        outputs = get_engine(engine_name).load_xlsx(out.getvalue()).calculate({})

        # THEN each cell is the value Excel saved, of the same kind
        assert outputs["grid"] == [[-1.25e-07, "#DIV/0!"], ['say "hi"', True]], engine_name
