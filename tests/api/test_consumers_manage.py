"""Managing consumers and their access: list, deactivate, archive, per-engine and per-consumer access."""

from __future__ import annotations

import re
import uuid

import pytest

from tests.factories import deploy_loan

INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10}
ALL = {"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}


def execute(client, d, api_key=None):
    return client.post(d.execute_path, json={"inputs": INPUTS}, headers={"X-API-Key": api_key or d.api_key})


# ----------------------------------------------------------------------------- GET /consumers


def test_list_shows_active_consumers_by_name_with_masked_keys(admin):
    # GIVEN three consumers, one of them deactivated
    created = {name: admin.post("/consumers", json={"name": name}).json() for name in ("Website", "Batch", "Old app")}
    admin.patch(f"/consumers/{created['Old app']['id']}", json={"is_active": False})
    # WHEN the administrator lists consumers
    r = admin.get("/consumers")
    # THEN only the active ones appear, by name, each key masked to the tenant prefix and last four characters
    assert r.status_code == 200
    listed = r.json()
    assert [c["name"] for c in listed] == ["Batch", "Website"]
    for item in listed:
        full_key = created[item["name"]]["api_key"]
        assert item["api_key"] == f"{admin.slug}_****{full_key[-4:]}"
        assert full_key not in r.text
        assert item["id"] == created[item["name"]]["id"] and item["is_active"] is True and item["last_used_at"] is None
        assert set(item) == {"id", "name", "api_key", "created_at", "last_used_at", "is_active"}
    # AND the deactivated one can still be found to switch it back on
    assert [c["name"] for c in admin.get("/consumers", params={"include_inactive": True}).json()] == ["Batch", "Old app", "Website"]


def test_list_records_when_a_key_was_last_used(client, admin, deployed):
    assert admin.get("/consumers").json()[0]["last_used_at"] is None
    execute(client, deployed)
    assert admin.get("/consumers").json()[0]["last_used_at"] is not None


# ----------------------------------------------------------------------------- PATCH /consumers/{id}


def test_deactivating_stops_the_key_at_once_and_reactivating_restores_it(client, admin, deployed):
    # WHEN the consumer is deactivated
    r = admin.patch(f"/consumers/{deployed.consumer_id}", json={"is_active": False})
    # THEN the answer shows it, and its key is refused on the very next call
    assert (r.status_code, r.json()) == (200, {"id": deployed.consumer_id, "name": "Pricing app", "is_active": False})
    assert (execute(client, deployed).status_code, execute(client, deployed).json()) == (401, {"detail": "Invalid API key"})
    assert admin.get("/consumers").json() == []
    # AND its access is still shown on the engine, marked inactive
    assert [a["is_active"] for a in admin.get(f"/engines/{deployed.engine_id}/access").json()] == [False]
    # WHEN it is activated again THEN the same key works
    r = admin.patch(f"/consumers/{deployed.consumer_id}", json={"is_active": True})
    assert r.json()["is_active"] is True
    assert execute(client, deployed).status_code == 202


def test_patch_without_a_change_answers_the_consumer(admin, deployed):
    for body in ({}, {"is_active": None}):
        r = admin.patch(f"/consumers/{deployed.consumer_id}", json=body)
        assert (r.status_code, r.json()) == (200, {"id": deployed.consumer_id, "name": "Pricing app", "is_active": True})


def test_patch_errors(admin, deployed):
    r = admin.patch(f"/consumers/{deployed.consumer_id}", json={"is_active": "perhaps"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "is_active"]
    r = admin.patch(f"/consumers/{uuid.uuid4()}", json={"is_active": False})
    assert (r.status_code, r.json()) == (404, {"detail": "Consumer not found"})
    assert admin.patch("/consumers/123", json={"is_active": False}).status_code == 422


# ----------------------------------------------------------------------------- DELETE /consumers/{id}


def test_delete_archives_the_consumer_and_keeps_its_history(client, admin, deployed, run_worker):
    # GIVEN a consumer that ran a job
    job_id = execute(client, deployed).json()["job_id"]
    run_worker()
    # WHEN it is deleted
    r = admin.delete(f"/consumers/{deployed.consumer_id}")
    # THEN it answers with a message, the key fails at once, and the consumer is gone from every list
    assert (r.status_code, r.json()) == (200, {"message": "Consumer 'Pricing app' deleted"})
    assert execute(client, deployed).json() == {"detail": "Invalid API key"}
    assert client.get(f"/jobs/{job_id}", headers={"X-API-Key": deployed.api_key}).status_code == 401
    assert admin.get("/consumers").json() == []
    assert admin.get("/consumers", params={"include_inactive": True}).json() == []
    assert admin.get(f"/engines/{deployed.engine_id}/access").json() == []
    assert admin.get(f"/engines/{deployed.engine_id}").json()["consumers"] == []
    # AND every further change to it is 404
    assert admin.patch(f"/consumers/{deployed.consumer_id}", json={"is_active": True}).json() == {"detail": "Consumer not found"}
    assert admin.delete(f"/consumers/{deployed.consumer_id}").status_code == 404
    assert admin.get(f"/consumers/{deployed.consumer_id}/access").json() == {"detail": "Consumer not found"}
    assert admin.put(f"/engines/{deployed.engine_id}/access/{deployed.consumer_id}", json=ALL).status_code == 404
    assert admin.delete(f"/engines/{deployed.engine_id}/access/{deployed.consumer_id}").json() == {"detail": "Consumer not found"}
    # AND its jobs are still in the engine's history, under its name
    jobs = admin.get(f"/engines/{deployed.engine_id}/jobs").json()
    assert [(j["job_id"], j["consumer_name"], j["status"]) for j in jobs["jobs"]] == [(job_id, "Pricing app", "completed")]


def test_delete_unknown_consumer_is_404(admin):
    r = admin.delete(f"/consumers/{uuid.uuid4()}")
    assert (r.status_code, r.json()) == (404, {"detail": "Consumer not found"})


# ----------------------------------------------------------------------------- engine access


def test_engine_access_list_shows_each_consumer_with_its_flags(admin, deployed):
    # GIVEN a second consumer allowed only to execute
    viewer = admin.post("/consumers", json={"name": "Auditor"}).json()
    admin.put(f"/engines/{deployed.engine_id}/access/{viewer['id']}", json={"can_view_about": True})
    # WHEN the engine's access list is read
    r = admin.get(f"/engines/{deployed.engine_id}/access")
    # THEN each consumer appears once, by name, with its flags, status and grant time
    assert r.status_code == 200
    rows = r.json()
    assert [(a["consumer_name"], a["consumer_id"]) for a in rows] == [("Auditor", viewer["id"]), ("Pricing app", deployed.consumer_id)]
    assert {k: rows[0][k] for k in ALL} == {"can_execute": False, "can_view_jobs": False, "can_download": False, "can_view_about": True}
    assert {k: rows[1][k] for k in ALL} == ALL
    assert all(a["is_active"] is True and re.match(r"\d{4}-\d\d-\d\dT", a["granted_at"]) for a in rows)
    assert set(rows[0]) == {"consumer_id", "consumer_name", "is_active", "granted_at", *ALL}


def test_engine_access_list_of_unknown_engine_is_404_and_of_a_new_engine_empty(admin):
    r = admin.get(f"/engines/{uuid.uuid4()}/access")
    assert (r.status_code, r.json()) == (404, {"detail": "Engine not found"})
    engine = admin.post("/engines", json={"name": "E"}).json()
    assert admin.get(f"/engines/{engine['id']}/access").json() == []


def test_revoke_removes_all_access_and_the_consumer_is_refused(client, admin, deployed):
    # WHEN the consumer's access to the engine is revoked
    r = admin.delete(f"/engines/{deployed.engine_id}/access/{deployed.consumer_id}")
    # THEN it answers with a message and the consumer can no longer execute or read about the engine
    assert (r.status_code, r.json()) == (200, {"message": "Access revoked"})
    r = execute(client, deployed)
    assert (r.status_code, r.json()) == (403, {"detail": "Consumer does not have execute permission for this engine"})
    assert client.get(f"/jobs/about/{admin.slug}/{deployed.engine_slug}", headers={"X-API-Key": deployed.api_key}).status_code == 403
    assert admin.get(f"/engines/{deployed.engine_id}/access").json() == []
    assert admin.get(f"/consumers/{deployed.consumer_id}/access").json() == []
    # AND revoking again is 404, while a new grant starts from nothing
    r = admin.delete(f"/engines/{deployed.engine_id}/access/{deployed.consumer_id}")
    assert (r.status_code, r.json()) == (404, {"detail": "This consumer has no access to this engine"})
    r = admin.put(f"/engines/{deployed.engine_id}/access/{deployed.consumer_id}", json={"can_execute": True})
    assert r.json()["can_view_jobs"] is False and execute(client, deployed).status_code == 202


@pytest.mark.parametrize("which", ["engine", "consumer"])
def test_revoke_with_unknown_ids_is_404(admin, deployed, which):
    engine_id = uuid.uuid4() if which == "engine" else deployed.engine_id
    consumer_id = uuid.uuid4() if which == "consumer" else deployed.consumer_id
    r = admin.delete(f"/engines/{engine_id}/access/{consumer_id}")
    assert (r.status_code, r.json()) == (404, {"detail": "Engine not found" if which == "engine" else "Consumer not found"})


# ----------------------------------------------------------------------------- GET /consumers/{id}/access


def test_consumer_access_lists_its_engines_with_their_active_versions(admin, loan_xlsx):
    # GIVEN a consumer with access to a live engine and to one with no active version yet
    live = deploy_loan(admin, loan_xlsx)
    draft = admin.post("/engines", json={"name": "Draft engine"}).json()
    admin.put(f"/engines/{draft['id']}/access/{live.consumer_id}", json={"can_view_about": True})
    admin.post("/engines", json={"name": "Not granted"})
    # WHEN its access list is read
    r = admin.get(f"/consumers/{live.consumer_id}/access")
    # THEN both engines appear, by name, each with the consumer's flags and its active version string (null when none)
    assert r.status_code == 200
    assert r.json() == [
        {"engine_id": draft["id"], "engine_name": "Draft engine", "active_version_slug": None,
         "can_execute": False, "can_view_jobs": False, "can_download": False, "can_view_about": True},
        {"engine_id": live.engine_id, "engine_name": "Loan quote", "active_version_slug": "1.0", **ALL},
    ]


def test_consumer_access_of_unknown_consumer_is_404(admin):
    r = admin.get(f"/consumers/{uuid.uuid4()}/access")
    assert (r.status_code, r.json()) == (404, {"detail": "Consumer not found"})


def test_consumer_access_of_a_new_consumer_is_empty(admin):
    consumer = admin.post("/consumers", json={"name": "New"}).json()
    assert admin.get(f"/consumers/{consumer['id']}/access").json() == []
