"""Idempotency-Key on execute and test-execute: a retried request gets the first job, once."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from shared.db.models import Job
from shared.db.session import session_scope
from shared.db.types import utcnow
from shared.services import idempotency
from shared.services import inputs as input_rules
from tests.factories import ALL_PERMISSIONS

INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30}


def jobs_of(tenant_id: str) -> int:
    with session_scope() as session:
        return session.scalar(select(func.count()).select_from(Job).where(Job.tenant_id == uuid.UUID(tenant_id)))


def execute(client, deployed, key: str | None, inputs=INPUTS, api_key=None, **extra):
    headers = {"X-API-Key": api_key or deployed.api_key}
    if key is not None:
        headers["Idempotency-Key"] = key
    return client.post(deployed.execute_path, json={"inputs": inputs, **extra}, headers=headers)


def test_the_same_key_and_body_answer_the_first_job_with_the_same_body(client, deployed):
    # GIVEN a job made with a key
    first = execute(client, deployed, "order-1234")
    assert first.status_code == 202, first.text
    # WHEN the same request is sent again with the key (the job may have moved on meanwhile)
    again = execute(client, deployed, "order-1234", inputs=dict(reversed(INPUTS.items())))
    # THEN the answer is the first one, and there is one job
    assert again.status_code == 202 and again.json() == first.json()
    assert jobs_of(deployed.admin.tenant_id) == 1


def test_the_replay_answers_the_same_body_after_the_job_completed(client, deployed, run_worker):
    first = execute(client, deployed, "k-after-done")
    run_worker()
    assert client.get(f"/jobs/{first.json()['job_id']}", headers={"X-API-Key": deployed.api_key}).json()["status"] == "completed"
    again = execute(client, deployed, "k-after-done")
    assert again.status_code == 202 and again.json() == first.json()


def test_a_replay_that_waits_answers_with_the_first_job_once_it_has_finished(client, deployed, run_worker):
    # GIVEN a job made with a key, then finished
    first = execute(client, deployed, "k-wait")
    run_worker()
    # WHEN the request is retried with wait THEN the answer is that job, finished (200, not a new job's 202)
    headers = {"X-API-Key": deployed.api_key, "Idempotency-Key": "k-wait"}
    again = client.post(deployed.execute_path, params={"wait": "25"}, json={"inputs": INPUTS}, headers=headers)
    assert again.status_code == 200, again.text
    assert (again.json()["job_id"], again.json()["status"]) == (first.json()["job_id"], "completed")
    assert again.json() == client.get(f"/jobs/{first.json()['job_id']}", headers={"X-API-Key": deployed.api_key}).json()
    assert jobs_of(deployed.admin.tenant_id) == 1


def test_the_same_key_with_a_different_body_is_409(client, deployed):
    execute(client, deployed, "order-1")
    other = execute(client, deployed, "order-1", inputs={**INPUTS, "years": 15})
    assert other.status_code == 409
    assert other.json() == {"detail": idempotency.KEY_REUSED}
    webhook = execute(client, deployed, "order-1", webhook_url="https://example.com/hook")
    assert webhook.status_code == 409
    assert jobs_of(deployed.admin.tenant_id) == 1


def test_without_a_key_every_request_is_a_new_job(client, deployed):
    a, b = execute(client, deployed, None), execute(client, deployed, None)
    assert a.json()["job_id"] != b.json()["job_id"]


@pytest.mark.parametrize("key", ["", "a" * 256, "has space", "semi;colon", "slash/key"])
def test_a_malformed_key_is_400(client, deployed, key):
    r = execute(client, deployed, key)
    assert r.status_code == 400 and r.json() == {"detail": idempotency.BAD_KEY}
    assert jobs_of(deployed.admin.tenant_id) == 0


def test_a_key_is_the_callers_own(client, deployed):
    # GIVEN a second consumer of the same engine
    from shared.repositories import tenants as tenant_repo
    from shared.services import consumers

    with session_scope() as session:
        tenant = tenant_repo.get_tenant(session, tenant_id=uuid.UUID(deployed.admin.tenant_id))
        other = consumers.create(session, tenant=tenant, name="Other app")
        consumers.grant(session, tenant_id=tenant.id, engine_id=uuid.UUID(deployed.engine_id), consumer_id=other.consumer.id, **ALL_PERMISSIONS)
        other_key = other.api_key
    # WHEN both send the same key
    mine = execute(client, deployed, "shared-key")
    theirs = execute(client, deployed, "shared-key", api_key=other_key, inputs={**INPUTS, "years": 10})
    # THEN each has its own job
    assert theirs.status_code == 202 and theirs.json()["job_id"] != mine.json()["job_id"]


def test_test_execute_takes_a_key_per_test_key(client, deployed):
    path = f"/jobs/test/{deployed.admin.slug}/{deployed.engine_slug}/{deployed.version_id}"
    headers = {"X-API-Key": deployed.test_key, "Idempotency-Key": "t-1"}
    first = client.post(path, json={"inputs": INPUTS}, headers=headers)
    again = client.post(path, json={"inputs": INPUTS}, headers=headers)
    other = client.post(path, json={"inputs": {**INPUTS, "years": 5}}, headers=headers)
    assert first.status_code == again.status_code == 202 and again.json() == first.json()
    assert other.status_code == 409


def test_an_expired_key_makes_a_new_job(client, deployed, monkeypatch):
    first = execute(client, deployed, "daily-run")
    # WHEN more than 24 hours have passed
    later = utcnow() + idempotency.LIFETIME + timedelta(seconds=1)
    monkeypatch.setattr(idempotency, "clock", lambda: later)
    # THEN the key is free again, even for a different body
    again = execute(client, deployed, "daily-run", inputs={**INPUTS, "years": 20})
    assert again.status_code == 202 and again.json()["job_id"] != first.json()["job_id"]
    # and it is bound to the new job from then on
    assert execute(client, deployed, "daily-run", inputs={**INPUTS, "years": 20}).json() == again.json()


def test_a_key_just_inside_24_hours_still_replays(client, deployed, monkeypatch):
    first = execute(client, deployed, "almost-a-day")
    later = utcnow() + idempotency.LIFETIME - timedelta(minutes=1)
    monkeypatch.setattr(idempotency, "clock", lambda: later)
    assert execute(client, deployed, "almost-a-day").json() == first.json()


@pytest.mark.own_transactions  # the requests race on the real database, each in its own transaction
def test_twenty_concurrent_duplicates_make_one_job(client, deployed, monkeypatch, configure):
    # (20 calls of one tenant in progress at once: its share of an API process raised from 16 for it)
    configure(api_max_job_calls_per_tenant=20)
    # GIVEN a key recently used (so the requests do not queue behind its last-used write), and a
    # request that found the key free held before it binds it until another has found it free
    # too: the race is then certain, on either database (on PostgreSQL a tenant's executes count
    # their unfinished jobs one after another, so only one at a time gets that far), however
    # fast the machine; the timeout only ends a hang
    assert client.get(f"/jobs/about/{deployed.admin.slug}/{deployed.engine_slug}", headers={"X-API-Key": deployed.api_key}).status_code == 200
    gate, found_free, binds = threading.Condition(), [], []
    real_replay, real_validate, real_bind = idempotency.replay, input_rules.validate, idempotency.bind

    def counted_replay(*args, **kwargs):
        first = real_replay(*args, **kwargs)
        if first is None:
            with gate:
                found_free.append(1)
                gate.notify_all()
        return first

    def held_validate(*args, **kwargs):
        with gate:
            assert gate.wait_for(lambda: len(found_free) >= 2, timeout=120), "no other request found the key free"
        return real_validate(*args, **kwargs)

    def counted_bind(*args, **kwargs):
        binds.append(real_bind(*args, **kwargs))
        return binds[-1]

    monkeypatch.setattr(idempotency, "replay", counted_replay)
    monkeypatch.setattr(input_rules, "validate", held_validate)
    monkeypatch.setattr(idempotency, "bind", counted_bind)
    # WHEN 20 requests with one key arrive at once through the app
    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(lambda _: execute(client, deployed, "race-1"), range(20)))
    # THEN all are accepted with the same job, and there is one job
    assert {r.status_code for r in answers} == {202}, [r.text for r in answers if r.status_code != 202]
    assert len({r.json()["job_id"] for r in answers}) == 1
    assert jobs_of(deployed.admin.tenant_id) == 1
    # and the race was real: requests that found the key free lost it to the winner
    assert binds.count(True) == 1 and binds.count(False) >= 1


def test_a_request_that_loses_the_race_to_bind_answers_with_the_winners_job(client, deployed, monkeypatch):
    # GIVEN a request that found the key free, and another that bound it before this one could
    first = execute(client, deployed, "raced")
    real_replay = idempotency.replay
    calls = []

    def key_looked_free_at_first(session, **kw):
        calls.append(kw)
        return None if len(calls) == 1 else real_replay(session, **kw)

    monkeypatch.setattr(idempotency, "replay", key_looked_free_at_first)
    # WHEN it goes on to bind the key
    late = execute(client, deployed, "raced")
    # THEN it answers with the winner's job and makes none
    assert len(calls) == 2 and late.status_code == 202 and late.json() == first.json()
    assert jobs_of(deployed.admin.tenant_id) == 1
