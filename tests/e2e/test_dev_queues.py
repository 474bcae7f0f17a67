"""`sheetcalc dev` polls every queue the template declares: the checks queue has its own poller,
so a version's formulas check runs there while jobs go through the worker."""

from __future__ import annotations

import json
import shlex
import time

import httpx
import pytest

from tests.calc.test_formulas_engine import rates_workbook

GRANT = {"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}
# Only work that never finishes reaches this (a formulas check has 240 s): no verdict depends on speed.
DEADLINE_SECONDS = 300.0

pytestmark = pytest.mark.e2e


def _until(read, done, what: str):
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        value = read()
        if done(value):
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen: {value}")


def test_the_dev_server_runs_jobs_and_version_checks_on_their_own_queues(dev_stack):
    http = httpx.Client(base_url=dev_stack.base_url, timeout=30)
    made = dev_stack.cli("create-tenant", "--slug", "checks-dev", "--name", "Checks", "--admin-email", "admin@checks-dev.example",
                         "--data-dir", str(dev_stack.data_dir), timeout=300)
    assert made.returncode == 0, made.stderr
    password = json.loads(made.stdout)["temporary_password"]
    token = http.post("/auth/login", json={"email": "admin@checks-dev.example", "password": password}).json()["access_token"]
    assert http.post("/auth/change-password", headers={"Authorization": f"Bearer {token}"},
                     json={"current_password": password, "new_password": "a-long-new-password"}).status_code == 200
    http.cookies.clear()
    token = http.post("/auth/login", json={"email": "admin@checks-dev.example", "password": "a-long-new-password"}).json()["access_token"]
    http.cookies.clear()
    admin = {"Authorization": f"Bearer {token}"}

    # GIVEN a version IronCalc gets wrong: its formulas check is queued at upload
    engine = http.post("/engines", headers=admin, json={"name": "Rates"}).json()
    r = http.post(f"/engines/{engine['id']}/versions", headers=admin, data={"version": "1"}, files={"file": ("rates.xlsx", rates_workbook())})
    assert r.status_code == 201, r.text
    version = r.json()
    assert version["fidelity"]["engines"]["formulas"]["status"] == "pending"
    assert http.post(f"/engines/{engine['id']}/versions/{version['id']}/activate", headers=admin).status_code == 200
    consumer = http.post("/consumers", headers=admin, json={"name": "c"}).json()
    assert http.put(f"/engines/{engine['id']}/access/{consumer['id']}", headers=admin, json=GRANT).status_code == 200
    key = {"X-API-Key": consumer["api_key"]}

    # WHEN a consumer executes a job
    job_id = http.post("/jobs/execute/checks-dev/rates", headers=key, json={"inputs": {"score": 720}}).json()["job_id"]

    # THEN the job completes, AND the checks poller runs the check: the version switches to formulas
    job = _until(lambda: http.get(f"/jobs/{job_id}", headers=key).json(), lambda j: j["status"] in ("completed", "failed"), "the job")
    assert job["status"] == "completed", job
    detail = _until(lambda: http.get(f"/engines/{engine['id']}", headers=admin).json()["versions"][0],
                    lambda v: v["fidelity"]["engines"]["formulas"]["status"] != "pending", "the formulas check")
    assert detail["fidelity"]["engines"]["formulas"]["status"] == "ok"
    assert detail["calc_engine"] == "formulas"


def test_the_dev_server_prints_what_the_walkthrough_needs(dev_stack):
    expected = f"export BASE={dev_stack.base_url} DATA_DIR={shlex.quote(str(dev_stack.data_dir))}"
    assert f"sheetcalc dev: walkthrough: {expected}" in dev_stack.output()
