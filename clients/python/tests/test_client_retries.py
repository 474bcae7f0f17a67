"""Retries: connection errors, 429 (Retry-After honoured) and 5xx, bounded, with one
Idempotency-Key per logical call reused on each of its retries."""

from __future__ import annotations

import random

import httpx
import pytest

from client_fakes import BASE, KEY, NoJitter
from sheetcalc_client import Client, NetworkError, RateLimited, RetryPolicy, ServerError, ServiceUnavailable

EXECUTE = "/jobs/execute/acme/loan"
ACCEPTED = {"job_id": "11111111-1111-1111-1111-111111111111", "status": "pending", "message": "Job queued for processing",
            "created_at": "2026-03-01T09:00:00Z"}
BUSY = {"detail": "Rate limit exceeded: 600 requests per 60 seconds"}


def client(service, clock, **options) -> Client:
    options.setdefault("retry", RetryPolicy(max_attempts=5, base_delay=0.5, jitter=0))
    options.setdefault("rng", NoJitter())
    return Client(BASE, KEY, transport=service.transport(), sleep=clock.sleep, clock=clock, **options)


def test_a_429_with_retry_after_and_a_503_are_retried_with_the_same_idempotency_key(service, clock):
    # GIVEN a service that answers 429 (Retry-After: 3), then 503 without Retry-After, then accepts
    service.on("POST", EXECUTE, httpx.Response(429, headers={"Retry-After": "3"}, json=BUSY),
               httpx.Response(503, json={"detail": "The job could not be queued"}), httpx.Response(202, json=ACCEPTED))

    # WHEN one job is submitted
    job_id = client(service, clock).submit("acme/loan", {"principal": 1000})

    # THEN it was sent three times, waiting the 3 s asked, then the back-off of a second attempt (0.5 * 2)
    assert job_id == ACCEPTED["job_id"]
    sent = service.sent("POST", EXECUTE)
    assert len(sent) == 3
    assert clock.sleeps == [3.0, 1.0]
    # AND every attempt carried the one Idempotency-Key made for this call
    keys = {r.headers["Idempotency-Key"] for r in sent}
    assert len(keys) == 1 and keys.pop().startswith("sdk-")
    assert all(r.headers["X-API-Key"] == KEY for r in sent)


def test_each_logical_call_has_its_own_idempotency_key_and_a_given_key_is_used_as_is(service, clock):
    service.on("POST", EXECUTE, httpx.Response(202, json=ACCEPTED))
    c = client(service, clock)
    c.submit("acme/loan", {"principal": 1})
    c.submit("acme/loan", {"principal": 1})
    c.submit("acme/loan", {"principal": 1}, idempotency_key="order-42")
    keys = [r.headers["Idempotency-Key"] for r in service.sent("POST", EXECUTE)]
    assert keys[0] != keys[1] and keys[2] == "order-42"


def test_jitter_shortens_the_back_off_by_at_most_its_fraction_and_never_lengthens_retry_after():
    policy = RetryPolicy(base_delay=0.5, max_delay=15, jitter=0.5)
    rng = random.Random(7)
    for attempt, full in [(1, 0.5), (2, 1.0), (3, 2.0), (7, 15.0)]:
        pauses = [policy.backoff(attempt, rng) for _ in range(200)]
        assert all(full * 0.5 <= p <= full for p in pauses) and len(set(pauses)) > 100
    told = httpx.Response(429, headers={"Retry-After": "4"})
    pauses = [policy.pause(told, attempt=1, safe=True, rng=rng) for _ in range(200)]
    assert all(4 <= p <= 4.5 for p in pauses)


def test_attempts_are_bounded_and_the_last_answer_is_raised(service, clock):
    service.on("POST", EXECUTE, httpx.Response(503, headers={"Retry-After": "1"},
                                               json={"detail": "Service temporarily unavailable, try again shortly"}))
    with pytest.raises(ServiceUnavailable) as raised:
        client(service, clock, retry=RetryPolicy(max_attempts=3, jitter=0)).submit("acme/loan", {})
    assert len(service.sent("POST", EXECUTE)) == 3
    assert raised.value.retry_after == 1.0 and raised.value.status_code == 503
    assert clock.sleeps == [1.0, 1.0]


def test_a_retry_after_longer_than_the_policy_allows_is_raised_at_once(service, clock):
    service.on("POST", EXECUTE, httpx.Response(429, headers={"Retry-After": "120"}, json=BUSY))
    with pytest.raises(RateLimited) as raised:
        client(service, clock).submit("acme/loan", {})
    assert raised.value.retry_after == 120 and clock.sleeps == []
    assert len(service.sent("POST", EXECUTE)) == 1


def test_connection_errors_are_retried_then_reported_as_network_error(service, clock):
    refused = httpx.ConnectError("connection refused")
    service.on("POST", EXECUTE, refused, refused, httpx.Response(202, json=ACCEPTED))
    assert client(service, clock).submit("acme/loan", {}) == ACCEPTED["job_id"]
    assert clock.sleeps == [0.5, 1.0]

    service.script.clear()
    service.on("GET", "/jobs/abc", refused)
    with pytest.raises(NetworkError) as raised:
        client(service, clock, retry=RetryPolicy(max_attempts=2, jitter=0)).job("abc")
    assert isinstance(raised.value.__cause__, httpx.ConnectError)


def test_a_batch_has_no_idempotency_key_so_a_lost_answer_or_a_500_is_not_sent_twice(service, clock):
    # A read timeout may come after the service made the batch: only "not sent" errors, 429 and 503 retry it.
    path = "/jobs/batch/acme/loan"
    service.on("POST", path, httpx.ReadTimeout("no answer"))
    with pytest.raises(NetworkError):
        client(service, clock).submit_batch("acme/loan", [{}])
    assert len(service.sent("POST", path)) == 1

    service.script.clear()
    service.on("POST", path, httpx.Response(500, json={"detail": "Internal server error"}))
    with pytest.raises(ServerError):
        client(service, clock).submit_batch("acme/loan", [{}])
    assert len(service.sent("POST", path)) == 2

    service.script.clear()
    service.on("POST", path, httpx.ConnectError("refused"), httpx.Response(429, headers={"Retry-After": "2"}, json=BUSY),
               httpx.Response(202, json={"batch_id": "b1", "total": 1, "jobs": 1, "invalid": [],
                                         "counts": {"pending": 1, "processing": 0, "completed": 0, "failed": 0, "invalid": 0}}))
    assert client(service, clock).submit_batch("acme/loan", [{}]).batch_id == "b1"


def test_an_execute_carries_its_key_so_a_read_timeout_and_a_500_are_retried(service, clock):
    service.on("POST", EXECUTE, httpx.ReadTimeout("no answer"), httpx.Response(500, json={"detail": "Internal server error"}),
               httpx.Response(202, json=ACCEPTED))
    client(service, clock).submit("acme/loan", {})
    sent = service.sent("POST", EXECUTE)
    assert len(sent) == 3 and len({r.headers["Idempotency-Key"] for r in sent}) == 1


def test_client_errors_are_not_retried(service, clock):
    service.on("POST", EXECUTE, httpx.Response(400, json={"detail": "Input validation failed: years must be a number"}))
    with pytest.raises(Exception):
        client(service, clock).submit("acme/loan", {"years": "x"})
    assert len(service.sent("POST", EXECUTE)) == 1 and clock.sleeps == []
