"""A job's filled workbook holds the uploaded workbook plus that job's inputs and results, nothing
else: not another consumer's inputs through the cached model (IronCalc's shared strings, styles,
cell values), with either engine."""

from __future__ import annotations

import io
import re
import uuid
import zipfile

import httpx
import openpyxl
import pytest

from shared.calc import get_engine
from shared.db.session import session_scope
from shared.errors import InputValidationError
from shared.repositories import tenants as tenant_repo
from shared.services import consumers
from shared.calc import fenced
from tests.calc.test_fidelity import excel_saved
from tests.calc.conftest import add_name
from tests.factories import ALL_PERMISSIONS, deploy_loan

ENGINES = ["ironcalc", "formulas"]
_SI = re.compile(rb"<si>(.*?)</si>", re.DOTALL)
_T = re.compile(rb"<t[^>]*>(.*?)</t>", re.DOTALL)
_MODIFIED = re.compile(rb"<dcterms:modified[^>]*>[^<]*</dcterms:modified>")


def quote_workbook() -> bytes:
    """A text input and a number input, and outputs that repeat them."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Quote"
    ws["A1"], ws["B1"] = "Customer", "nobody"
    ws["A2"], ws["B2"] = "Amount", 100
    ws["B3"] = '="Dear "&B1'
    ws["B4"] = "=B2*2"
    for name, ref in {"customer": "$B$1", "amount": "$B$2", "greeting": "$B$3", "doubled": "$B$4"}.items():
        add_name(wb, name, f"Quote!{ref}")
    return excel_saved(wb, {"Quote!B3": "Dear nobody", "Quote!B4": 200})


def parts(data: bytes) -> dict[str, bytes]:
    """Every part of a package, inflated; the export time in docProps/core.xml blanked."""
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        texts = {name: package.read(name) for name in package.namelist() if not name.endswith("/")}
    if "docProps/core.xml" in texts:
        texts["docProps/core.xml"] = _MODIFIED.sub(b"", texts["docProps/core.xml"])
    return texts


def shared_strings(data: bytes) -> set[str]:
    sst = parts(data).get("xl/sharedStrings.xml", b"")
    return {b"".join(_T.findall(si)).decode() for si in _SI.findall(sst)}


def cell_strings(data: bytes) -> set[str]:
    """Every text an uploaded workbook holds in its cells, typed or cached from a formula."""
    found = set()
    for data_only in (False, True):
        book = openpyxl.load_workbook(io.BytesIO(data), data_only=data_only)
        found |= {c.value for ws in book for row in ws.iter_rows() for c in row if isinstance(c.value, str)}
    return found


def secret_parts(data: bytes, secret: str) -> list[str]:
    return [name for name, text in parts(data).items() if secret.encode() in text]


# -- the engines themselves


@pytest.mark.parametrize("engine_name", ENGINES)
def test_a_cached_workbook_exports_nothing_of_an_earlier_calculation(engine_name):
    # GIVEN a loaded workbook that calculated a job with a secret text input
    data = quote_workbook()
    engine = get_engine(engine_name)
    workbook = engine.load_xlsx(data)
    secret = f"SECRET-{uuid.uuid4().hex}"
    assert workbook.calculate({"customer": secret})["greeting"] == f"Dear {secret}"
    assert secret_parts(workbook.to_xlsx(), secret)  # the job's own file has it
    # WHEN the next job leaves the text out
    outputs = workbook.calculate({"amount": 7})
    filled = workbook.to_xlsx()
    # THEN neither its outputs, nor any part of its file, nor the model's blob carries the secret
    assert outputs == {"greeting": "Dear nobody", "doubled": 14}
    assert secret_parts(filled, secret) == []
    assert secret.encode() not in workbook.serialize()
    # AND the file is the one a workbook that never saw the secret exports
    untouched = engine.load_xlsx(data)
    untouched.calculate({"amount": 7})
    assert parts(filled) == parts(untouched.to_xlsx())


def test_a_failed_calculation_leaves_no_earlier_inputs_to_export():
    # GIVEN a formulas workbook that calculated a secret, then a job whose inputs are refused
    workbook = get_engine("formulas").load_xlsx(quote_workbook())
    secret = f"SECRET-{uuid.uuid4().hex}"
    workbook.calculate({"customer": secret})
    with pytest.raises(InputValidationError):
        workbook.calculate({"amount": [1, 2]})
    # THEN an export now shows the uploaded inputs, not the secret
    assert secret_parts(workbook.to_xlsx(), secret) == []


# -- through the worker, two consumers of one version


def second_consumer(deployed) -> str:
    """Another consumer of the same engine, with every permission; its API key."""
    tenant_id = uuid.UUID(deployed.admin.tenant_id)
    with session_scope() as session:
        tenant = tenant_repo.get_tenant(session, tenant_id=tenant_id)
        created = consumers.create(session, tenant=tenant, name="Other app")
        consumers.grant(session, tenant_id=tenant_id, engine_id=uuid.UUID(deployed.engine_id), consumer_id=created.consumer.id, **ALL_PERMISSIONS)
        return created.api_key


def run_job(client, deployed, api_key, inputs, run_worker) -> tuple[dict, bytes]:
    key = {"X-API-Key": api_key}
    r = client.post(deployed.execute_path, json={"inputs": inputs}, headers=key)
    assert r.status_code == 202, r.text
    run_worker()
    job = client.get(f"/jobs/{r.json()['job_id']}", headers=key).json()
    assert job["status"] == "completed", job
    url = client.get(f"/jobs/{job['job_id']}/download", headers=key).json()["download_url"]
    return job, httpx.get(url).content


@pytest.mark.parametrize("engine_name", ENGINES)
def test_one_consumers_secret_never_reaches_another_consumers_workbook(client, admin, run_worker, engine_name):
    # GIVEN one version calculated by `engine_name`, and two consumers of it
    data = quote_workbook()
    deployed = deploy_loan(admin, data)
    if engine_name != "ironcalc":
        r = admin.patch(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}", json={"calc_engine": engine_name})
        assert r.status_code == 200 and r.json()["calc_engine"] == engine_name, r.text
    other_key = second_consumer(deployed)
    # WHEN the first consumer's job carries a secret, and the second's job follows on the same worker
    secret = f"SECRET-{uuid.uuid4().hex}"
    first, first_file = run_job(client, deployed, deployed.api_key, {"customer": secret}, run_worker)
    assert first["outputs"]["greeting"] == f"Dear {secret}" and secret_parts(first_file, secret)
    inputs = {"amount": 7}
    second, second_file = run_job(client, deployed, other_key, inputs, run_worker)
    # THEN the second job reads the uploaded text, and the secret is in no part of its file
    assert second["outputs"]["greeting"] == "Dear nobody" and second["outputs"]["doubled"] == 14
    assert secret_parts(second_file, secret) == []
    # AND its shared strings are the upload's plus its own inputs and outputs, nothing else
    own = {v for v in (*inputs.values(), *second["outputs"].values()) if isinstance(v, str)}
    assert shared_strings(second_file) <= cell_strings(data) | own
    # AND every part is what a worker that never saw the first job writes for the same inputs
    fenced.reset()
    _, fresh_file = run_job(client, deployed, other_key, inputs, run_worker)
    assert parts(second_file) == parts(fresh_file)
