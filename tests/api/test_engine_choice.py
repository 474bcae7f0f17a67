"""Engine choice at upload, seen through the API and the worker: the version is calculated by
the engine that matches Excel best, and an administrator can override it."""

from __future__ import annotations

import json

import uuid as _uuid

from tests.calc.test_formulas_engine import rates_workbook

GRANT = {"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}


def deploy(admin, data):
    engine = admin.post("/engines", json={"name": "Rates"}).json()
    r = admin.post(f"/engines/{engine['id']}/versions", data={"version": "1"}, files={"file": ("rates.xlsx", data)})
    assert r.status_code == 201, r.text
    version = r.json()
    admin.post(f"/engines/{engine['id']}/versions/{version['id']}/activate")
    consumer = admin.post("/consumers", json={"name": "c"}).json()
    admin.put(f"/engines/{engine['id']}/access/{consumer['id']}", json=GRANT)
    return engine, version, {"X-API-Key": consumer["api_key"]}


def run(client, admin, engine, key, run_worker, score):
    job = client.post(f"/jobs/execute/{admin.slug}/{engine['slug']}", json={"inputs": {"score": score}}, headers=key).json()
    run_worker()
    return client.get(f"/jobs/{job['job_id']}", headers=key).json()


def test_a_workbook_only_formulas_gets_right_is_calculated_by_formulas(client, admin, run_worker, run_checks):
    # GIVEN a workbook IronCalc 0.9.1 gets wrong (approximate VLOOKUP over INDIRECT's blank tail)
    engine, version, key = deploy(admin, rates_workbook())
    # THEN the upload answers at once with IronCalc's check, and formulas pending
    assert version["calc_engine"] == "ironcalc" and version["calc_engine_pinned"] is False
    assert version["fidelity"]["engines"]["formulas"]["status"] == "pending"
    assert any("background" in w for w in version["warnings"])
    # WHEN a worker has run the background check, the version is calculated by formulas
    run_checks()
    version = admin.get(f"/engines/{engine['id']}").json()["versions"][0]
    assert version["calc_engine"] == "formulas" and version["calc_engine_pinned"] is False
    fidelity = version["fidelity"]
    assert fidelity["engine"] == "formulas" and fidelity["cells_compared"] == fidelity["cells_matching"] == 3
    assert fidelity["engines"]["ironcalc"]["cells_matching"] < 3
    detail = admin.get(f"/engines/{engine['id']}").json()["versions"][0]
    assert detail["calc_engine"] == "formulas" and detail["fidelity"]["match_rate"] == 1.0
    # AND a job gets Excel's answer, 0.07 for a score of 720
    job = run(client, admin, engine, key, run_worker, 720)
    assert job["status"] == "completed", job
    assert job["outputs"]["rate"] == 0.07 and job["outputs"]["band"] == "normal"


def test_an_administrator_can_pin_the_engine(client, admin, run_worker, run_checks):
    engine, version, key = deploy(admin, rates_workbook())
    run_checks()
    path = f"/engines/{engine['id']}/versions/{version['id']}"
    assert admin.patch(path, json={"calc_engine": "excel-online"}).status_code == 422
    r = admin.patch(path, json={"calc_engine": "ironcalc"})
    assert r.status_code == 200, r.text
    assert r.json()["calc_engine"] == "ironcalc" and r.json()["calc_engine_pinned"] is True
    assert r.json()["fidelity"]["engine"] == "ironcalc" and r.json()["fidelity"]["mismatches_total"] > 0
    # the worker now calculates with IronCalc, and its known defect shows
    run_worker()
    job = run(client, admin, engine, key, run_worker, 720)
    assert job["status"] == "completed" and job["outputs"]["rate"] != 0.07


def test_an_excel_exact_workbook_keeps_ironcalc(client, admin, loan_xlsx):
    engine = admin.post("/engines", json={"name": "Loan"}).json()
    version = admin.post(f"/engines/{engine['id']}/versions", data={"version": "1"}, files={"file": ("l.xlsx", loan_xlsx)}).json()
    assert version["calc_engine"] == "ironcalc"


def test_a_pin_made_before_the_background_check_is_kept(client, admin, run_checks):
    engine, version, key = deploy(admin, rates_workbook())
    admin.patch(f"/engines/{engine['id']}/versions/{version['id']}", json={"calc_engine": "ironcalc"})
    run_checks()
    detail = admin.get(f"/engines/{engine['id']}").json()["versions"][0]
    assert detail["calc_engine"] == "ironcalc" and detail["calc_engine_pinned"] is True
    assert detail["fidelity"]["engines"]["formulas"]["status"] == "ok"
    assert detail["fidelity"]["engines"]["formulas"]["cells_matching"] == 3


def test_a_dead_lettered_version_check_is_recorded_as_failed(client, admin, run_checks):
    from functions.checks.dlq import handler

    engine, version, key = deploy(admin, rates_workbook())
    event = {"Records": [{
        "messageId": str(_uuid.uuid4()), "receiptHandle": "rh", "body": json.dumps({"version_id": version["id"]}),
        "attributes": {"ApproximateReceiveCount": "5"}, "messageAttributes": {}, "md5OfBody": "",
        "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:jobs-dlq", "awsRegion": "us-east-1",
    }]}
    assert handler(event, None) == {"batchItemFailures": []}
    detail = admin.get(f"/engines/{engine['id']}").json()["versions"][0]
    assert detail["fidelity"]["engines"]["formulas"]["status"] == "failed"
    assert detail["calc_engine"] == "ironcalc"
    run_checks()  # the original message, now with nothing pending, changes nothing
    assert admin.get(f"/engines/{engine['id']}").json()["versions"][0]["fidelity"]["engines"]["formulas"]["status"] == "failed"
