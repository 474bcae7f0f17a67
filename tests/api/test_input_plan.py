"""Execute runs the input plan as a dry run: an input the worker would refuse is a 400 at once.

The loan example's `start_date` is a date cell: ISO text becomes Excel's serial, anything else
used to be accepted (202) and then fail the job in the worker.
"""

from __future__ import annotations

import io

import openpyxl
import pytest
from openpyxl.workbook.defined_name import DefinedName

INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10}


def key(k):
    return {"X-API-Key": k}


def jobs_total(deployed) -> int:
    return deployed.admin.get(f"/engines/{deployed.engine_id}/jobs").json()["total"]


@pytest.mark.parametrize("bad", ["31/01/2026", "2026-02-30", "next tuesday"])
def test_a_bad_date_is_400_at_execute_and_nothing_is_queued(client, deployed, run_worker, bad):
    # GIVEN the loan workbook, whose start_date cell is formatted as a date
    # WHEN a consumer sends text that is not an ISO date for it
    r = client.post(
        deployed.execute_path, json={"inputs": {**INPUTS, "start_date": bad}}, headers=key(deployed.api_key)
    )
    # THEN it is refused before a job exists, naming the input and the expected form
    assert r.status_code == 400
    assert r.json() == {"detail": f"Input validation failed: 'start_date' expects a date like 2026-01-31, got {bad!r}"}
    assert jobs_total(deployed) == 0
    assert run_worker() == 0


def test_a_bad_date_is_400_on_the_test_endpoint_too(client, deployed, run_worker):
    path = f"/jobs/test/{deployed.admin.slug}/{deployed.engine_slug}/{deployed.version_id}"

    r = client.post(path, json={"inputs": {"start_date": "31/01/2026"}}, headers=key(deployed.test_key))

    assert r.status_code == 400
    assert r.json()["detail"] == "Input validation failed: 'start_date' expects a date like 2026-01-31, got '31/01/2026'"
    assert run_worker() == 0


def test_a_good_date_is_queued_and_calculated(client, deployed, run_worker):
    r = client.post(
        deployed.execute_path, json={"inputs": {**INPUTS, "start_date": "2030-06-15"}}, headers=key(deployed.api_key)
    )
    assert r.status_code == 202, r.text

    assert run_worker() == 1
    job = client.get(f"/jobs/{r.json()['job_id']}", headers=key(deployed.api_key)).json()
    assert job["status"] == "completed", job


def test_a_schema_date_input_is_checked_as_a_date(client, deployed):
    # GIVEN a schema declaring `principal` (a plain number cell) as a date
    schema = {"type": "object", "properties": {"principal": {"type": "string", "format": "date"}}}
    r = deployed.admin.patch(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}", json={"input_schema": schema})
    assert r.status_code == 200, r.text
    # WHEN the text passes the schema's own checks but is no ISO date
    # (jsonschema checks "format" only with an optional package, so the plan is the guard)
    r = client.post(deployed.execute_path, json={"inputs": {"principal": "soon"}}, headers=key(deployed.api_key))
    # THEN the plan refuses it with the same message the worker would give
    assert r.status_code == 400
    assert r.json()["detail"].startswith("Input validation failed: ")


@pytest.mark.parametrize(
    ("inputs", "reason"),
    [
        ({"principal": [1, 2]}, "'principal' expects a single value, not a list"),
        ({"principal": {"a": 1}}, "'principal' expects numbers, text, booleans or null"),
        ({"PRINCIPAL": [1]}, "'principal' expects a single value, not a list"),
    ],
)
def test_shape_and_type_messages_are_the_plans(client, deployed, inputs, reason):
    r = client.post(deployed.execute_path, json={"inputs": inputs}, headers=key(deployed.api_key))

    assert (r.status_code, r.json()) == (400, {"detail": f"Input validation failed: {reason}"})


def test_keys_naming_no_input_range_are_ignored(client, deployed):
    r = client.post(
        deployed.execute_path,
        json={"inputs": {**INPUTS, "unknown": [[1]], "monthly_payment": "not an input"}},
        headers=key(deployed.api_key),
    )

    assert r.status_code == 202, r.text


def mixed_dates_workbook() -> bytes:
    """`period` is B1:B2: B1 formatted as a date, B2 a plain number; `days` = B2 - B1."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["B1"], ws["B2"], ws["C1"] = 46023, 46053, "=B2-B1"
    ws["B1"].number_format = "yyyy-mm-dd"
    wb.defined_names["period"] = DefinedName("period", attr_text="Sheet!$B$1:$B$2")
    wb.defined_names["days"] = DefinedName("days", attr_text="Sheet!$C$1")
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()


def test_date_flags_are_per_cell_at_execute_as_in_the_worker(client, admin, run_worker):
    # GIVEN a version whose input range has a date cell and a plain one
    engine = admin.post("/engines", json={"name": "Mixed dates"}).json()
    up = admin.post(
        f"/engines/{engine['id']}/versions", data={"version": "1"},
        files={"file": ("mixed.xlsx", mixed_dates_workbook(), "application/octet-stream")},
    )
    assert up.status_code == 201, up.text
    version = up.json()
    path = f"/jobs/test/{admin.slug}/{engine['slug']}/{version['id']}"
    # THEN API answers show the contract's fields only (the per-cell flags stay in storage)
    period = next(n for n in version["named_ranges"] if n["name"] == "period")
    assert set(period) == {"name", "sheet", "ref", "kind", "rows", "cols", "is_date"}
    # WHEN text that is no date goes to the date cell, THEN 400 at once
    bad = client.post(path, json={"inputs": {"period": ["soon", 1]}}, headers=key(version["test_api_key"]))
    assert (bad.status_code, bad.json()) == (
        400, {"detail": "Input validation failed: 'period' expects a date like 2026-01-31, got 'soon'"}
    )
    # WHEN an ISO date goes to the date cell and a number to the plain one, THEN the worker agrees
    good = client.post(path, json={"inputs": {"period": ["2026-01-01", 46024]}}, headers=key(version["test_api_key"]))
    assert good.status_code == 202, good.text
    assert run_worker() == 1
    job = client.get(f"/jobs/{good.json()['job_id']}", headers=key(version["test_api_key"])).json()
    assert (job["status"], job["outputs"]) == ("completed", {"days": 1})
