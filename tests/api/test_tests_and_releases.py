"""Safe releases: an engine's test cases, their run on every upload, the activation gate, overrides
and the release history.

Expected values are Excel's: the loan workbook's monthly payment is PMT(annual_rate/12, years*12,
-principal), the annuity formula Excel's PMT documentation gives (support.microsoft.com, "PMT
function": payment = pv * rate / (1 - (1 + rate)^-nper)).
"""

from __future__ import annotations

import json
import uuid

import pytest

from shared.db.session import session_scope
from shared.repositories import tenants as tenant_repo
from shared.services import test_cases, versions
from tests.factories import deploy_loan, make_admin, submit_job

LOAN = {"principal": 250000, "annual_rate": 0.045, "years": 30}


def pmt(principal, annual_rate, years):
    r, n = annual_rate / 12, years * 12
    return principal * r / (1 - (1 + r) ** -n)


PAYMENT = pmt(**LOAN)


def add_case(deployed, *, expected=None, tolerances=None, inputs=None, enabled=True, name=None):
    """A test case on the deployed engine, through the service (by default: Excel's payment, to
    a relative 1e-9, as floating point may order PMT's operations otherwise)."""
    if expected is None and tolerances is None:
        tolerances = {"monthly_payment": {"relative": 1e-9}}
    with session_scope() as session:
        case = test_cases.create(
            session, tenant_id=uuid.UUID(deployed.admin.tenant_id), engine_id=uuid.UUID(deployed.engine_id),
            fields=test_cases.CaseFields(name=name, inputs=inputs or LOAN, expected=expected or {"monthly_payment": PAYMENT},
                                         tolerances=tolerances, enabled=enabled),
        )
        return str(case.id)


def upload_version(deployed, loan_xlsx, label):
    """Another version of the deployed engine, through the upload service; its id and warnings."""
    with session_scope() as session:
        tenant = tenant_repo.get_tenant(session, tenant_id=uuid.UUID(deployed.admin.tenant_id))
        uploaded = versions.upload(session, tenant=tenant, engine_id=uuid.UUID(deployed.engine_id), version=label,
                                   filename="loan-quote.xlsx", data=loan_xlsx)
        return str(uploaded.version.id), uploaded.warnings


def paths(d, version_id=None):
    base = f"/engines/{d.engine_id}"
    return base, f"{base}/versions/{version_id or d.version_id}"


def run_tests(d, version_id, run_checks):
    _, v = paths(d, version_id)
    r = d.admin.post(f"{v}/test-runs")
    assert r.status_code == 202, r.text
    assert r.json()["status"] == "pending"
    run_checks()
    return d.admin.get(f"{v}/test-runs/latest").json()


@pytest.fixture()
def inactive(admin, loan_xlsx):
    """The loan workbook uploaded as version 1.0 of a new engine, not active yet."""
    return deploy_loan(admin, loan_xlsx, activate=False)


# --------------------------------------------------------------------------------------- the gate


def test_an_engine_without_test_cases_activates_as_before_and_records_the_release(inactive):
    # GIVEN an engine with no test cases
    base, v = paths(inactive)
    # WHEN its version is activated with no body, as the spec has it
    r = inactive.admin.post(f"{v}/activate")
    # THEN it is active, and the release names who did it and that it replaced nothing
    assert r.status_code == 200, r.text
    assert r.json()["is_active"] is True
    [release] = inactive.admin.get(f"{base}/releases").json()
    assert release["version_id"] == inactive.version_id and release["version"] == "1.0"
    assert release["previous_version_id"] is None and release["activated_by_email"] == inactive.admin.email
    assert release["test_run"] is None and release["override_reason"] is None and release["gate_reasons"] is None
    assert release["replay"] is None


def test_enabled_cases_without_a_run_refuse_activation_with_reasons(inactive):
    # GIVEN an engine with an enabled test case that never ran on its version
    add_case(inactive)
    base, v = paths(inactive)
    # WHEN the version is activated
    r = inactive.admin.post(f"{v}/activate")
    # THEN 409: a sentence in detail, the reasons beside it, nothing activated or recorded
    assert r.status_code == 409, r.text
    body = r.json()
    assert isinstance(body["detail"], str) and "override_reason" in body["detail"]
    assert [reason["code"] for reason in body["reasons"]] == ["tests_not_run"]
    assert inactive.admin.get(base).json()["active_version_id"] is None
    assert inactive.admin.get(f"{base}/releases").json() == []
    # AND a disabled case does not gate
    case_id = json.loads(inactive.admin.get(f"{base}/test-cases").text)[0]["id"]
    assert inactive.admin.patch(f"{base}/test-cases/{case_id}", json={"enabled": False}).status_code == 200
    assert inactive.admin.post(f"{v}/activate").status_code == 200


def test_a_passing_run_opens_the_gate_and_the_release_keeps_its_summary(inactive, run_checks):
    # GIVEN a case whose expected payment is Excel's PMT, within a cent's half
    add_case(inactive, tolerances={"monthly_payment": {"absolute": 0.005}})
    base, v = paths(inactive)
    assert inactive.admin.get(f"{v}/gate").json()["allowed"] is False
    # WHEN the tests run on the version
    run = run_tests(inactive, inactive.version_id, run_checks)
    # THEN it passed, output by output
    assert run["status"] == "passed" and (run["passed"], run["failed"], run["total"]) == (1, 0, 1)
    [output] = run["results"][0]["outputs"]
    assert output["name"] == "monthly_payment" and output["verdict"] in ("identical", "within")
    assert output["got"] == pytest.approx(PAYMENT, abs=0.005)
    # AND the version may be activated, and its release records the run
    assert inactive.admin.get(f"{v}/gate").json() == {"allowed": True, "reasons": [], "enabled_test_cases": 1}
    assert inactive.admin.post(f"{v}/activate").status_code == 200
    [release] = inactive.admin.get(f"{base}/releases").json()
    assert release["test_run"]["status"] == "passed" and release["test_run"]["run_id"] == run["id"]


def test_a_failing_run_refuses_and_an_override_activates_and_is_recorded(inactive, run_checks):
    # GIVEN a case expecting a payment one unit off Excel's, with no tolerance
    add_case(inactive, expected={"monthly_payment": PAYMENT + 1})
    base, v = paths(inactive)
    run = run_tests(inactive, inactive.version_id, run_checks)
    assert run["status"] == "failed"
    [output] = run["results"][0]["outputs"]
    assert output["verdict"] == "changed" and output["difference"] == pytest.approx(-1, abs=1e-6)
    # WHEN the version is activated without a reason
    r = inactive.admin.post(f"{v}/activate")
    # THEN the gate refuses, naming the output that differs
    assert r.status_code == 409
    [reason] = r.json()["reasons"]
    assert reason["code"] == "tests_failed" and "monthly_payment" in reason["message"]
    # WHEN it is activated with a reason
    r = inactive.admin.post(f"{v}/activate", json={"override_reason": "Rate table changed on purpose"})
    # THEN it is active, and the release records the reason and what it overrode
    assert r.status_code == 200, r.text
    [release] = inactive.admin.get(f"{base}/releases").json()
    assert release["override_reason"] == "Rate table changed on purpose"
    assert [g["code"] for g in release["gate_reasons"]] == ["tests_failed"]
    assert release["test_run"]["status"] == "failed" and release["test_run"]["differing_outputs"] == ["monthly_payment"]


def test_tolerances_are_applied_per_output_and_text_is_exact(inactive, run_checks):
    # GIVEN cases 0.004 off Excel's payment: one with an absolute tolerance of 0.005, one with a
    # relative one of 1e-6 (about 0.0013 here), and one expecting other text of a text output
    add_case(inactive, name="absolute", expected={"monthly_payment": PAYMENT + 0.004}, tolerances={"monthly_payment": {"absolute": 0.005}})
    add_case(inactive, name="relative", expected={"monthly_payment": PAYMENT + 0.004}, tolerances={"monthly_payment": {"relative": 1e-6}})
    add_case(inactive, name="text", expected={"end_date": "not a date"}, tolerances={"end_date": {"relative": 1.0}})
    # WHEN they run
    run = run_tests(inactive, inactive.version_id, run_checks)
    # THEN only the absolute one passes (within), and the text one fails whatever its tolerance
    by_name = {case["name"]: case for case in run["results"]}
    assert by_name["absolute"]["status"] == "passed" and by_name["absolute"]["outputs"][0]["verdict"] == "within"
    assert by_name["relative"]["status"] == "failed" and by_name["relative"]["outputs"][0]["verdict"] == "changed"
    assert by_name["text"]["status"] == "failed" and by_name["text"]["outputs"][0]["difference"] is None
    assert (run["passed"], run["failed"]) == (1, 2)


def test_a_case_added_after_the_passing_run_makes_it_stale(inactive, run_checks):
    add_case(inactive)
    _, v = paths(inactive)
    assert run_tests(inactive, inactive.version_id, run_checks)["status"] == "passed"
    add_case(inactive, name="new")
    r = inactive.admin.post(f"{v}/activate")
    assert r.status_code == 409 and [x["code"] for x in r.json()["reasons"]] == ["tests_stale"]


def test_outputs_depending_on_unimplemented_functions_also_gate(inactive, monkeypatch):
    # GIVEN the fidelity check says an output depends on a function no engine implements
    from shared.services import version_checks

    found = [{"output": "monthly_payment", "cell": "Quote!B9", "function": "NEWFUNC"}]
    monkeypatch.setattr(version_checks, "unimplemented_outputs", lambda session, *, tenant_id, version: found)
    _, v = paths(inactive)
    r = inactive.admin.post(f"{v}/activate")
    assert r.status_code == 409 and [x["code"] for x in r.json()["reasons"]] == ["unimplemented_outputs"]
    assert "monthly_payment (NEWFUNC)" in r.json()["reasons"][0]["message"]
    assert inactive.admin.post(f"{v}/activate", json={"override_reason": "checked by hand"}).status_code == 200


def test_rollback_is_activating_the_previous_version_through_the_same_gate(deployed, loan_xlsx, run_checks):
    # GIVEN version 1.0 active, then 2.0 uploaded and activated after its tests passed
    add_case(deployed)
    base, _ = paths(deployed)
    v2, _warnings = upload_version(deployed, loan_xlsx, "2.0")
    run_checks()
    assert deployed.admin.post(f"/engines/{deployed.engine_id}/versions/{v2}/activate").status_code == 200
    # WHEN 1.0, whose tests never ran, is activated again
    _, v1 = paths(deployed)
    assert deployed.admin.post(f"{v1}/activate").status_code == 409
    run_tests(deployed, deployed.version_id, run_checks)
    assert deployed.admin.post(f"{v1}/activate").status_code == 200
    # THEN the history lists the rollback first, replacing 2.0
    history = deployed.admin.get(f"{base}/releases").json()
    assert [(r["version"], r["previous_version"]) for r in history] == [("1.0", "2.0"), ("2.0", "1.0")]


# ------------------------------------------------------------------------------ run on every upload


def test_each_upload_runs_the_enabled_cases_and_the_version_shows_the_result(deployed, loan_xlsx, run_checks):
    # GIVEN an engine with one passing and one failing case, and one disabled
    add_case(deployed, name="pmt")
    add_case(deployed, name="off", expected={"monthly_payment": 1.0, "total_paid": PAYMENT * 360},
             tolerances={"total_paid": {"relative": 1e-9}})
    add_case(deployed, name="disabled", expected={"monthly_payment": 2.0}, enabled=False)
    # WHEN a version is uploaded
    v2, warnings = upload_version(deployed, loan_xlsx, "2.0")
    # THEN its run is queued with the checks, and runs there
    assert any("test cases" in w for w in warnings)
    base, v = paths(deployed, v2)
    assert deployed.admin.get(f"{v}/test-runs/latest").json()["status"] == "pending"
    run_checks()
    run = deployed.admin.get(f"{v}/test-runs/latest").json()
    assert run["trigger"] == "upload" and run["status"] == "failed" and (run["passed"], run["failed"]) == (1, 1)
    assert {c["name"] for c in run["results"]} == {"pmt", "off"}
    # AND the engine detail shows it on the version, with the output that differed
    item = next(x for x in deployed.admin.get(base).json()["versions"] if x["id"] == v2)
    assert item["tests"]["status"] == "failed" and item["tests"]["differing_outputs"] == ["monthly_payment"]
    assert item["tests"]["total"] == 2


def test_an_upload_to_an_engine_without_cases_queues_no_run(deployed, loan_xlsx):
    v2, warnings = upload_version(deployed, loan_xlsx, "2.0")
    _, v = paths(deployed, v2)
    assert deployed.admin.get(f"{v}/test-runs/latest").status_code == 404
    assert not any("test cases" in w for w in warnings)


# ------------------------------------------------------------------------------ making test cases


def test_a_completed_job_becomes_a_case_in_one_call(deployed, run_worker, run_checks):
    # GIVEN a completed job
    job_id = submit_job(deployed, LOAN)
    run_worker()
    base, _ = paths(deployed)
    job = deployed.admin.get(f"{base}/jobs/{job_id}").json()
    # WHEN it is made a test case
    r = deployed.admin.post(f"{base}/test-cases/from-job/{job_id}")
    # THEN its inputs and outputs are the case, and the case passes on the job's version
    assert r.status_code == 201, r.text
    case = r.json()
    assert case["inputs"] == LOAN and case["expected"] == job["outputs"] and case["source_job_id"] == job_id
    assert case["enabled"] is True and case["tolerances"] == {}
    assert run_tests(deployed, deployed.version_id, run_checks)["status"] == "passed"


def test_a_job_that_did_not_complete_cannot_become_a_case(deployed):
    job_id = submit_job(deployed, LOAN)  # still pending
    base, _ = paths(deployed)
    r = deployed.admin.post(f"{base}/test-cases/from-job/{job_id}", json={"name": "x"})
    assert r.status_code == 422 and "completed" in r.json()["detail"]


CSV = (
    "case.name,principal,annual_rate,years,expected.monthly_payment,tolerance.monthly_payment.absolute,expected.end_date\n"
    "thirty years,250000,0.045,30,1266.71,0.005,\n"
    "with text,100000,0.05,10,1060.66,0.01,'2036-01-01\n"
)


def test_csv_import_reads_inputs_expected_outputs_and_tolerances(deployed):
    base, _ = paths(deployed)
    r = deployed.admin.post(f"{base}/test-cases/import", content=CSV, headers={"Content-Type": "text/csv"})
    assert r.status_code == 201, r.text
    assert r.json()["imported"] == 2
    first, second = r.json()["cases"]
    assert first["name"] == "thirty years" and first["inputs"] == LOAN
    assert first["expected"] == {"monthly_payment": 1266.71}  # the empty end_date cell is not checked
    assert first["tolerances"] == {"monthly_payment": {"absolute": 0.005, "relative": None}}
    assert second["expected"]["end_date"] == "2036-01-01"  # the apostrophe keeps text


def test_a_bad_row_imports_nothing_and_is_named(deployed):
    base, _ = paths(deployed)
    bad = CSV + "broken,1,2,3,4,-1,\n"
    r = deployed.admin.post(f"{base}/test-cases/import", content=bad, headers={"Content-Type": "text/csv"})
    assert r.status_code == 422 and r.json()["detail"].startswith("Row 4")
    assert deployed.admin.get(f"{base}/test-cases").json() == []


def test_json_lines_import_as_body_or_multipart_file(deployed):
    base, _ = paths(deployed)
    lines = "\n".join([
        json.dumps({"name": "a", "inputs": LOAN, "expected": {"monthly_payment": PAYMENT}}),
        "",
        json.dumps({"inputs": LOAN, "expected": {"monthly_payment": PAYMENT}, "enabled": False,
                    "tolerances": {"monthly_payment": {"relative": 1e-9}}}),
    ])
    r = deployed.admin.post(f"{base}/test-cases/import", content=lines, headers={"Content-Type": "application/x-ndjson"})
    assert r.status_code == 201, r.text
    assert [c["enabled"] for c in r.json()["cases"]] == [True, False]
    r = deployed.admin.post(f"{base}/test-cases/import", files={"file": ("cases.jsonl", lines.encode(), "application/octet-stream")})
    assert r.status_code == 201 and r.json()["imported"] == 2
    assert len(deployed.admin.get(f"{base}/test-cases").json()) == 4
    r = deployed.admin.post(f"{base}/test-cases/import", content="{}", headers={"Content-Type": "application/json"})
    assert r.status_code == 422


def test_cases_are_edited_and_deleted(deployed):
    base, _ = paths(deployed)
    r = deployed.admin.post(f"{base}/test-cases", json={"inputs": LOAN, "expected": {"monthly_payment": PAYMENT}})
    assert r.status_code == 201 and r.json()["name"] == "Case 1"
    case_id = r.json()["id"]
    r = deployed.admin.patch(f"{base}/test-cases/{case_id}", json={"name": "renamed", "tolerances": {"monthly_payment": {"absolute": 1}}})
    assert r.status_code == 200 and r.json()["name"] == "renamed" and r.json()["tolerances"]["monthly_payment"]["absolute"] == 1
    r = deployed.admin.patch(f"{base}/test-cases/{case_id}", json={"tolerances": {"unknown_output": {"absolute": 1}}})
    assert r.status_code == 422
    assert deployed.admin.delete(f"{base}/test-cases/{case_id}").status_code == 200
    assert deployed.admin.get(f"{base}/test-cases").json() == []


# -------------------------------------------------------------------------------------- tenancy


def test_another_tenants_engine_and_cases_are_not_found(deployed, client):
    # GIVEN a case of this tenant's engine, and an administrator of another tenant
    case_id = add_case(deployed)
    other = make_admin(client)
    base, v = paths(deployed)
    job_id = submit_job(deployed, LOAN)
    # THEN every route answers 404 to them, and nothing of ours changes
    assert other.get(f"{base}/test-cases").status_code == 404
    assert other.post(f"{base}/test-cases", json={"expected": {"a": 1}}).status_code == 404
    assert other.post(f"{base}/test-cases/import", content=CSV, headers={"Content-Type": "text/csv"}).status_code == 404
    assert other.post(f"{base}/test-cases/from-job/{job_id}").status_code == 404
    assert other.patch(f"{base}/test-cases/{case_id}", json={"enabled": False}).status_code == 404
    assert other.delete(f"{base}/test-cases/{case_id}").status_code == 404
    assert other.post(f"{v}/test-runs").status_code == 404
    assert other.get(f"{v}/test-runs/latest").status_code == 404
    assert other.get(f"{v}/gate").status_code == 404
    assert other.get(f"{base}/releases").status_code == 404
    assert other.post(f"{v}/activate", json={"override_reason": "mine now"}).status_code == 404
    # AND their own engine cannot reach our case by id
    own = other.post("/engines", json={"name": "Theirs"}).json()
    assert other.patch(f"/engines/{own['id']}/test-cases/{case_id}", json={"enabled": False}).status_code == 404
    assert deployed.admin.get(f"{base}/test-cases").json()[0]["enabled"] is True
