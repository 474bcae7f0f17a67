"""The webhook delivery log and redelivery: every POST is recorded (status, duration, the first
1 KB of the answer, why it failed), the administrator's job view lists them, and a redelivery
is one more logged POST made once by the webhook function, only when asked for. The job's own
webhook fields keep describing its first attempt."""

from __future__ import annotations

import threading
import uuid

import pytest

from shared.db.models import WebhookAttempt
from shared.db.session import session_scope
from shared.services import webhooks
from tests.factories import make_admin
from tests.receiver import WebhookReceiver
from tests.worker.test_redelivery_and_webhooks import job_row, submit
from tests.worker.test_webhook_signing import python_verify, read_secret


def job_view(deployed, job_id: str) -> dict:
    r = deployed.admin.get(f"/engines/{deployed.engine_id}/jobs/{job_id}")
    assert r.status_code == 200, r.text
    return r.json()


def redeliver(admin, deployed, job_id: str):
    return admin.post(f"/engines/{deployed.engine_id}/jobs/{job_id}/webhook-redeliveries")


def logged(job_id: str) -> list[WebhookAttempt]:
    with session_scope() as session:
        rows = list(session.query(WebhookAttempt).filter_by(job_id=uuid.UUID(job_id)).order_by(WebhookAttempt.requested_at))
        session.expunge_all()
        return rows


def test_the_first_attempt_is_logged_with_status_duration_and_the_first_kilobyte(client, deployed, run_worker, run_webhooks):
    # GIVEN a receiver answering 201 with a 2,000-byte body
    with WebhookReceiver(status=201, answer=b"a" * 1000 + b"b" * 1000) as receiver:
        job_id = submit(client, deployed, webhook_url=receiver.url)
        run_worker()
        run_webhooks()
    # THEN the job's view lists one attempt: not a redelivery, its status, the first 1,024 bytes
    view = job_view(deployed, job_id)
    [attempt] = view["webhook_attempts"]
    assert attempt["redelivery"] is False and attempt["target_url"] == receiver.url
    assert attempt["status_code"] == 201 and attempt["error_class"] is None
    assert attempt["response_excerpt"] == "a" * 1000 + "b" * 24
    assert attempt["duration_ms"] >= 0 and attempt["attempted_at"] is not None
    # AND the spec's fields say the same of that first attempt
    assert view["webhook_response_status"] == 201 and view["webhook_sent_at"] == attempt["attempted_at"]


def closed_port_url() -> str:
    with WebhookReceiver() as gone:
        return gone.url


@pytest.mark.parametrize("case", ["http_error", "connection", "timeout", "refused_private_address", "unresolvable"])
def test_a_failed_attempt_is_logged_with_its_error_class(client, deployed, run_worker, run_webhooks, configure, case):
    released = threading.Event()
    with WebhookReceiver(status=500, answer=b"database is down", hold=released if case == "timeout" else None) as receiver:
        url = {
            "http_error": receiver.url,
            "connection": closed_port_url(),  # nobody listens there any more
            "timeout": receiver.url,  # held until after the (shortened) timeout
            "refused_private_address": receiver.url,
            "unresolvable": "http://no-such-host.invalid/hook",  # .invalid never resolves (RFC 6761)
        }[case]
        job_id = submit(client, deployed, webhook_url=url)
        run_worker()
        if case == "timeout":
            configure(webhook_timeout_seconds=0.5)
        if case == "refused_private_address":
            configure(allow_private_webhooks="false")
        try:
            run_webhooks()
        finally:
            released.set()
    [attempt] = job_view(deployed, job_id)["webhook_attempts"]
    assert attempt["error_class"] == case
    assert attempt["status_code"] == (500 if case == "http_error" else 0)
    assert attempt["response_excerpt"] == ("database is down" if case == "http_error" else None)
    assert job_row(job_id).webhook_response_status == attempt["status_code"]


def test_an_administrator_redelivers_once_signed_and_logged_and_the_first_attempt_stays_the_jobs(client, deployed, run_worker, run_webhooks):
    with WebhookReceiver(status=503) as receiver:
        # GIVEN a job whose webhook's first attempt got 503
        job_id = submit(client, deployed, webhook_url=receiver.url)
        run_worker()
        run_webhooks()
        first = job_row(job_id)
        # WHEN the administrator asks for a redelivery, and the receiver now answers 200
        receiver.status = 200
        r = redeliver(deployed.admin, deployed, job_id)
        assert r.status_code == 202, r.text
        queued = r.json()
        assert queued["redelivery"] is True and queued["attempted_at"] is None and queued["status_code"] is None
        run_webhooks()
        got = receiver.wait_for(2)
        # AND the webhook function gets the same message again (a duplicate)
        assert webhooks.redeliver(uuid.UUID(queued["id"])) is None
        assert len(receiver.wait_for(3, timeout=0.5)) == 2
    # THEN the receiver got the same payload again, signed with the tenant's secret
    assert got[1]["raw"] == got[0]["raw"] and got[1]["headers"]["Sheetcalc-Job-Id"] == job_id
    assert python_verify(read_secret(deployed.admin), got[1]["headers"]["Sheetcalc-Signature"], got[1]["raw"]) is True
    # AND the log has both attempts; the job's own fields still describe the first
    view = job_view(deployed, job_id)
    assert [(a["redelivery"], a["status_code"], a["error_class"]) for a in view["webhook_attempts"]] == [
        (False, 503, "http_error"), (True, 200, None),
    ]
    assert view["webhook_attempts"][1]["id"] == queued["id"]
    again = job_row(job_id)
    assert again.webhook_response_status == 503 and again.webhook_sent_at == first.webhook_sent_at


def test_nothing_is_redelivered_unless_asked(client, deployed, run_worker, run_webhooks):
    with WebhookReceiver(status=500) as receiver:
        job_id = submit(client, deployed, webhook_url=receiver.url)
        run_worker()
        run_webhooks()
        # the same webhook message again (SQS redelivers) and another drain
        assert webhooks.deliver(uuid.UUID(job_id)) is None
        run_webhooks()
        assert len(receiver.wait_for(2, timeout=0.5)) == 1
    assert len(logged(job_id)) == 1


def test_a_job_without_webhook_url_cannot_be_redelivered(client, deployed, run_worker):
    job_id = submit(client, deployed)
    run_worker()
    r = redeliver(deployed.admin, deployed, job_id)
    assert r.status_code == 400
    assert r.json() == {"detail": "This job has no webhook_url: there is no webhook to redeliver"}
    assert logged(job_id) == []


def test_a_webhook_not_attempted_yet_cannot_be_redelivered(client, deployed, run_worker, run_webhooks):
    with WebhookReceiver() as receiver:
        job_id = submit(client, deployed, webhook_url=receiver.url)
        run_worker()  # finished; its webhook message waits in the queue
        r = redeliver(deployed.admin, deployed, job_id)
        assert r.status_code == 409
        assert r.json() == {"detail": "This job's webhook has not been attempted yet: its first attempt comes first"}
        run_webhooks()
        assert len(receiver.wait_for(1)) == 1
    assert len(logged(job_id)) == 1


def test_another_tenants_administrator_cannot_see_or_redeliver_a_jobs_webhook(client, deployed, run_worker, run_webhooks):
    with WebhookReceiver() as receiver:
        job_id = submit(client, deployed, webhook_url=receiver.url)
        run_worker()
        run_webhooks()
        other = make_admin(client)
        # WHEN another tenant's administrator asks for this job, or its redelivery
        seen = other.get(f"/engines/{deployed.engine_id}/jobs/{job_id}")
        asked = redeliver(other, deployed, job_id)
        run_webhooks()
        # THEN both are 404, nothing is logged and nothing more is posted
        assert seen.status_code == 404 and asked.status_code == 404
        assert len(receiver.wait_for(2, timeout=0.5)) == 1
    assert len(logged(job_id)) == 1


def test_a_redelivery_message_naming_no_attempt_is_dropped():
    assert webhooks.redeliver(uuid.uuid4()) is None
