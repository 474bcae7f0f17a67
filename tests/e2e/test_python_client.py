"""The Python client (clients/python, `sheetcalc-client`) against a real `sheetcalc dev`: an
administrator deploys the sample loan workbook with AdminClient; a consumer executes (with wait=
and by polling), tests a version with its test key, runs a batch, downloads the filled workbook,
receives a real signed webhook that the client's verifier accepts, and uses models generated
from the engine's contract by `sheetcalc-client generate`."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile

import pytest

from sheetcalc_client import AdminClient, Client, EngineNotFound, InputValidationError, verify
from tests.e2e.console import LOAN, new_tenant
from tests.receiver import WebhookReceiver

pytestmark = pytest.mark.e2e

INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30, "start_date": "2026-01-01"}
PASSWORD = "client-password-1"
# A fallback only: no verdict depends on how fast a job finishes.
JOB_TIMEOUT = 300.0


def annuity(principal, annual_rate, years, **_):
    """The monthly payment as Excel's PMT documents it: rate/12 per period, years*12 periods, fv 0."""
    r, n = annual_rate / 12, years * 12
    return principal * r / (1 - (1 + r) ** -n)


@pytest.fixture(scope="module")
def deployed(dev_stack):
    """A tenant with the loan workbook active, deployed through AdminClient; a consumer allowed everything."""
    tenant = new_tenant(dev_stack, "sdk")
    with AdminClient(dev_stack.base_url) as admin:
        assert admin.login(tenant["email"], tenant["temporary_password"])["must_change_password"] is True
        admin.change_password(tenant["temporary_password"], PASSWORD, email=tenant["email"])
        engine = admin.create_engine("Loan quote", slug="loan")
        version = admin.upload_version(engine["id"], "1.0", LOAN)
        admin.activate_version(engine["id"], version["id"])
        consumer = admin.create_consumer("Pricing app")
        admin.grant(engine["id"], consumer["id"])
        secret = admin.webhook_signing_secret()["secret"]
        assert any(e["slug"] == "loan" for e in admin.engines())
    return {"tenant": tenant, "engine": engine, "version": version, "key": consumer["api_key"], "secret": secret,
            "name": f"{tenant['slug']}/loan"}


@pytest.fixture()
def client(dev_stack, deployed):
    with Client(dev_stack.base_url, deployed["key"], job_timeout=JOB_TIMEOUT) as c:
        yield c


def test_execute_answers_the_outputs_with_wait_and_by_polling(client, deployed):
    # WHEN the loan is calculated with wait= (one call), and again without wait (polling with back-off)
    waited = client.execute(deployed["name"], INPUTS)
    polled = client.execute(deployed["name"], {**INPUTS, "principal": 100000}, wait=None)
    # THEN both answers are Excel's PMT
    assert waited["monthly_payment"] == pytest.approx(annuity(**INPUTS), rel=1e-12)
    assert polled["monthly_payment"] == pytest.approx(annuity(**{**INPUTS, "principal": 100000}), rel=1e-12)
    # AND a submitted job can be waited for by id, and its outputs are the same
    job = client.wait_for(client.submit(deployed["name"], INPUTS))
    assert job.status == "completed" and job.outputs == waited


def test_the_service_errors_arrive_as_typed_exceptions(client, deployed):
    with pytest.raises(EngineNotFound):
        client.execute(f"{deployed['tenant']['slug']}/no-such-engine", INPUTS)
    with pytest.raises(InputValidationError) as raised:
        client.execute(deployed["name"], {**INPUTS, "principal": [1, 2]})
    assert raised.value.reason


def test_a_version_is_tried_with_its_test_key(dev_stack, deployed):
    with Client(dev_stack.base_url, deployed["version"]["test_api_key"], job_timeout=JOB_TIMEOUT) as tester:
        outputs = tester.test_execute(deployed["name"], deployed["version"]["id"], INPUTS)
    assert outputs["monthly_payment"] == pytest.approx(annuity(**INPUTS), rel=1e-12)


def test_a_batch_runs_and_its_results_stream_in_order(client, deployed):
    sets = [{**INPUTS, "principal": 100000 + 1000 * i} for i in range(5)]
    sets[3] = {"principal": [1, 2]}  # a list for a one-cell input: refused, no job
    seen = []
    results = client.run_batch(deployed["name"], sets, on_progress=seen.append)
    assert [r.index for r in results] == list(range(5))
    assert results[3].status == "invalid" and results[3].job_id is None
    for i in (0, 1, 2, 4):
        assert results[i].status == "completed"
        assert results[i].outputs["monthly_payment"] == pytest.approx(annuity(**sets[i]), rel=1e-12)
    assert seen[-1].done and seen[-1].counts.completed == 4 and seen[-1].counts.invalid == 1


def test_download_saves_the_filled_workbook(client, deployed, tmp_path):
    job = client.wait_for(client.submit(deployed["name"], INPUTS))
    saved = client.download(job.job_id, tmp_path)
    assert saved.parent == tmp_path and saved.suffix == ".xlsx"
    with zipfile.ZipFile(saved) as workbook:
        assert "xl/workbook.xml" in workbook.namelist()


def test_a_real_signed_webhook_verifies_with_the_clients_verifier(client, deployed):
    with WebhookReceiver() as receiver:
        client.execute(deployed["name"], INPUTS, webhook_url=receiver.url)
        [posted] = receiver.wait_for(1, timeout=JOB_TIMEOUT)
    headers = {name.lower(): value for name, value in posted["headers"].items()}
    signature = headers["sheetcalc-signature"]
    assert verify(posted["raw"], signature, deployed["secret"])
    assert not verify(posted["raw"] + b" ", signature, deployed["secret"])
    assert not verify(posted["raw"], signature, "whsec_" + "0" * 64)
    assert posted["json"]["status"] == "completed"


def _cli(dev_stack, deployed, *args: str, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "SHEETCALC_URL": dev_stack.base_url, "SHEETCALC_API_KEY": deployed["key"],
           "SHEETCALC_CONFIG": os.devnull}
    return subprocess.run([sys.executable, "-m", "sheetcalc_client.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=JOB_TIMEOUT)


def test_models_generated_from_the_contract_type_the_engine(client, dev_stack, deployed, tmp_path):
    # GIVEN models generated by the CLI from the engine's OpenAPI contract
    done = _cli(dev_stack, deployed, "generate", deployed["name"], "--output", str(tmp_path / "loan_models.py"))
    assert done.returncode == 0, done.stderr
    spec = importlib.util.spec_from_file_location("loan_models", tmp_path / "loan_models.py")
    models = importlib.util.module_from_spec(spec)
    sys.modules["loan_models"] = models  # pydantic resolves the generated generic models through it
    try:
        spec.loader.exec_module(models)
    finally:
        del sys.modules["loan_models"]

    # WHEN the engine is called through them
    engine = client.engine(deployed["name"], inputs=models.LoanInputs, outputs=models.LoanOutputs)
    outputs = engine.execute(models.LoanInputs(principal=250000, annual_rate=0.045, years=30))

    # THEN the answer is the outputs model, with Excel's PMT in it
    assert isinstance(outputs, models.LoanOutputs)
    assert outputs.monthly_payment == pytest.approx(annuity(**INPUTS), rel=1e-12)


def test_the_cli_runs_one_job_per_csv_row(dev_stack, deployed, tmp_path):
    rows = tmp_path / "loans.csv"
    rows.write_text("principal,annual_rate,years\n250000,0.045,30\n100000,0.05,15\n")
    done = _cli(dev_stack, deployed, "run", deployed["name"], "--csv", str(rows))
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout)
    assert [a["status"] for a in answers] == ["completed", "completed"]
    assert answers[1]["outputs"]["monthly_payment"] == pytest.approx(annuity(100000, 0.05, 15), rel=1e-12)


def test_an_administrator_adds_a_test_case_runs_it_and_reads_the_releases(dev_stack, deployed):
    import time

    engine_id, version_id = deployed["engine"]["id"], deployed["version"]["id"]
    with AdminClient(dev_stack.base_url) as admin:
        admin.login(deployed["tenant"]["email"], PASSWORD)
        # GIVEN a test case whose expected payment is Excel's PMT
        case = admin.create_test_case(engine_id, name="30-year loan", inputs=INPUTS,
                                      expected={"monthly_payment": annuity(**INPUTS)},
                                      tolerances={"monthly_payment": {"absolute": 1e-6}})
        assert [c["id"] for c in admin.test_cases(engine_id)] == [case["id"]]
        # WHEN it is run on the active version
        run = admin.run_tests(engine_id, version_id)
        deadline = time.monotonic() + JOB_TIMEOUT
        while run["status"] == "pending":
            assert time.monotonic() < deadline, run
            time.sleep(0.5)
            run = admin.latest_test_run(engine_id, version_id)
        # THEN it passed, the gate allows the version, and the release history lists its activation
        assert (run["status"], run["passed"], run["total"]) == ("passed", 1, 1), run
        assert admin.gate(engine_id, version_id)["allowed"] is True
        assert [r["version_id"] for r in admin.releases(engine_id)] == [version_id]


def test_an_engine_exported_and_imported_under_another_slug_calculates_the_same(dev_stack, deployed, tmp_path):
    with AdminClient(dev_stack.base_url) as admin:
        admin.login(deployed["tenant"]["email"], PASSWORD)
        archive = admin.export_engine(deployed["engine"]["id"], tmp_path / "loan.zip")
        assert zipfile.is_zipfile(archive)
        imported = admin.import_engine(archive, slug="loan-copy", name="Loan copy")
        assert imported["engine"]["slug"] == "loan-copy"
        admin.grant(imported["engine"]["id"], next(c["id"] for c in admin.consumers() if c["name"] == "Pricing app"))
    with Client(dev_stack.base_url, deployed["key"], job_timeout=JOB_TIMEOUT) as client:
        outputs = client.execute(f"{deployed['tenant']['slug']}/loan-copy", INPUTS)
    assert outputs["monthly_payment"] == pytest.approx(annuity(**INPUTS), rel=1e-12)
