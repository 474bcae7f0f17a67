"""The README walkthrough, over HTTP, against `sheetcalc dev` running as a user would start it."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import httpx
import openpyxl
import pytest

from tests.receiver import WebhookReceiver

LOAN = Path(__file__).resolve().parents[2] / "examples" / "loan-quote.xlsx"
INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30, "start_date": "2026-01-01"}

pytestmark = pytest.mark.e2e


def annuity(principal, annual_rate, years, **_):
    r, n = annual_rate / 12, years * 12
    return principal * r / (1 - (1 + r) ** -n)


# Only a job that never finishes reaches this: no verdict depends on the machine's speed.
DEADLINE_SECONDS = 120.0


def poll(http, job_id, headers, timeout=DEADLINE_SECONDS):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = http.get(f"/jobs/{job_id}", headers=headers).json()
        if job["status"] in ("completed", "failed"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish: {job}")


def test_readme_walkthrough(dev_stack):
    http = httpx.Client(base_url=dev_stack.base_url, timeout=30)
    # 1. create a tenant with the command line, against the same database
    made = dev_stack.cli("create-tenant", "--slug", "acme", "--name", "Acme Insurance", "--admin-email", "admin@acme.example",
                         "--data-dir", str(dev_stack.data_dir), timeout=120)
    assert made.returncode == 0, made.stderr
    tenant = json.loads(made.stdout)

    # 2. log in, change the temporary password, log in again
    token = http.post("/auth/login", json={"email": "admin@acme.example", "password": tenant["temporary_password"]}).json()["access_token"]
    r = http.post("/auth/change-password", headers={"Authorization": f"Bearer {token}"},
                  json={"current_password": tenant["temporary_password"], "new_password": "a-long-new-password"})
    assert r.status_code == 200
    http.cookies.clear()
    token = http.post("/auth/login", json={"email": "admin@acme.example", "password": "a-long-new-password"}).json()["access_token"]
    http.cookies.clear()
    admin = {"Authorization": f"Bearer {token}"}

    # 3. an engine, the sample workbook as version 1.0, activated
    engine = http.post("/engines", headers=admin, json={"name": "Loan quote", "slug": "loan-quote"}).json()
    r = http.post(f"/engines/{engine['id']}/versions", headers=admin, data={"version": "1.0"},
                  files={"file": ("loan-quote.xlsx", LOAN.read_bytes())})
    assert r.status_code == 201, r.text
    version = r.json()
    assert {"principal", "annual_rate", "years", "start_date", "monthly_payment", "total_interest"} <= {n["name"] for n in version["named_ranges"]}
    assert http.post(f"/engines/{engine['id']}/versions/{version['id']}/activate", headers=admin).status_code == 200

    # 4. a consumer with access
    consumer = http.post("/consumers", headers=admin, json={"name": "Quote website"}).json()
    r = http.put(f"/engines/{engine['id']}/access/{consumer['id']}", headers=admin,
                 json={"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True})
    assert r.status_code == 200
    key = {"X-API-Key": consumer["api_key"]}

    with WebhookReceiver() as receiver:
        # 5. execute, with a webhook
        r = http.post("/jobs/execute/acme/loan-quote", headers=key, json={"inputs": INPUTS, "webhook_url": receiver.url})
        assert r.status_code == 202 and r.json()["status"] == "pending"
        job_id = r.json()["job_id"]

        # 6. poll until it is done; the answers are the annuity formula's
        job = poll(http, job_id, key)
        assert job["status"] == "completed", job
        expected = annuity(**INPUTS)
        assert job["outputs"]["monthly_payment"] == pytest.approx(expected, rel=1e-12)
        assert job["outputs"]["total_interest"] == pytest.approx(expected * 360 - 250000, rel=1e-9)
        assert job["outputs"]["end_date"] == "2056-01-01"
        assert job["inputs"] == INPUTS and job["execution_time_ms"] >= 0

        # 7. the webhook arrived with the spec's payload
        hooks = receiver.wait_for(1)
    assert len(hooks) == 1
    assert hooks[0]["json"]["job_id"] == job_id and hooks[0]["json"]["status"] == "completed"
    assert hooks[0]["json"]["outputs"] == job["outputs"]
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        job = http.get(f"/jobs/{job_id}", headers=key).json()
        if job.get("webhook_response_status") is not None:
            break
        time.sleep(0.05)
    assert job["webhook_response_status"] == 200

    # 8. download the filled workbook: Excel's formulas, our values
    d = http.get(f"/jobs/{job_id}/download", headers=key).json()
    assert d["filename"].startswith(f"loan-quote_{job_id[:8]}_") and d["filename"].endswith(".xlsx")
    data = httpx.get(d["download_url"]).content
    wb_values = openpyxl.load_workbook(io.BytesIO(data), data_only=True)
    sheet, ref = next(iter(wb_values.defined_names["monthly_payment"].destinations))
    assert wb_values[sheet][ref.replace("$", "")].value == pytest.approx(expected, rel=1e-12)
    sheet, ref = next(iter(wb_values.defined_names["principal"].destinations))
    assert wb_values[sheet][ref.replace("$", "")].value == 250000

    # 9. about
    about = http.get("/jobs/about/acme/loan-quote", headers=key).json()
    assert about["version"] == "1.0" and about["slug"] == "loan-quote"
