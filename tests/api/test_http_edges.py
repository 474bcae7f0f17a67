"""Edges of HTTP itself: query integers past 64 bits, and methods a resource does not answer."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("offset", [2**63, 10**30])
def test_an_offset_past_64_bits_is_a_validation_error_not_a_server_error(admin, deployed, offset):
    r = admin.get(f"/engines/{deployed.engine_id}/jobs", params={"offset": offset})
    assert r.status_code == 422
    (issue,) = r.json()["detail"]
    assert issue["loc"] == ["query", "offset"] and issue["type"] == "less_than_equal"


def test_the_largest_offset_a_database_takes_is_an_empty_page(admin, deployed):
    r = admin.get(f"/engines/{deployed.engine_id}/jobs", params={"offset": 2**63 - 1})
    assert r.status_code == 200
    assert r.json()["jobs"] == [] and r.json()["offset"] == 2**63 - 1


@pytest.mark.parametrize(
    "method, path, allowed",
    [
        ("OPTIONS", "/engines", "GET, POST"),
        ("OPTIONS", "/engines/{engine_id}", "DELETE, GET, PATCH"),
        ("PUT", "/engines/{engine_id}", "DELETE, GET, PATCH"),
        ("OPTIONS", "/engines/{engine_id}/versions/{version_id}", "DELETE, PATCH"),
        ("OPTIONS", "/jobs/execute/{tenant}/{engine}", "POST"),
        ("DELETE", "/health", "GET"),
    ],
)
def test_a_method_the_resource_does_not_answer_is_405_with_every_method_it_does(admin, deployed, method, path, allowed):
    target = path.format(engine_id=deployed.engine_id, version_id=deployed.version_id, tenant=admin.slug, engine=deployed.engine_slug)
    r = admin.client.request(method, target, headers=admin.headers)
    assert r.status_code == 405
    assert r.headers["Allow"] == allowed
    assert r.json() == {"detail": "Method Not Allowed"}


NUL = "a\x00b"


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("POST", "/consumers", {"name": NUL}),
        ("POST", "/engines", {"name": NUL}),
        ("POST", "/engines", {"name": "E", "description": NUL}),
        ("POST", "/users", {"email": f"{NUL}@example.com"}),
        ("PUT", "/tenant/settings", {"client_id": NUL}),
        ("POST", "/auth/login", {"email": NUL, "password": NUL}),
    ],
)
def test_a_nul_character_in_a_request_body_is_a_validation_error(admin, method, path, body):
    # PostgreSQL cannot store or compare text holding NUL: it was a 500 there (schemathesis found it)
    r = admin.client.request(method, path, json=body, headers=admin.headers)
    assert r.status_code == 422, r.text
    assert "Text may not contain NUL characters" in r.json()["detail"][0]["msg"]


@pytest.mark.parametrize("path", ["/jobs/about/a%00b/loan", "/engines/{engine_id}/stats?start_date=2026-01-01%00"])
def test_a_nul_character_in_a_path_or_query_is_a_validation_error(admin, deployed, path):
    r = admin.client.get(path.format(engine_id=deployed.engine_id), headers={**admin.headers, "X-API-Key": deployed.api_key})
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["msg"] == "Text may not contain NUL characters"


def test_a_nul_character_in_an_uploaded_version_string_is_a_validation_error(admin, loan_xlsx):
    engine = admin.post("/engines", json={"name": "E"}).json()
    r = admin.post(f"/engines/{engine['id']}/versions", data={"version": NUL}, files={"file": ("loan.xlsx", loan_xlsx)})
    assert r.status_code == 422, r.text


@pytest.mark.own_transactions
def test_a_request_that_finds_every_database_connection_taken_is_503_with_retry_after(client, monkeypatch):
    # A real pool of one connection, held by someone else for longer than the pool waits.
    import os
    import uuid

    from sqlalchemy import create_engine

    from shared.db import session as db_session

    url = db_session._normalise(os.environ["DATABASE_URL"])
    tiny = create_engine(url, pool_size=1, max_overflow=0, pool_timeout=0.05)
    monkeypatch.setattr(db_session, "get_engine", lambda url=None: tiny)
    monkeypatch.setattr(db_session, "_factories", {})  # sessionmakers cached by URL would bypass tiny
    monkeypatch.setattr(db_session, "_default_factory", None)  # and the one remembered per settings; restored after
    holder = tiny.connect()
    try:
        r = client.get(f"/jobs/{uuid.uuid4()}", headers={"X-API-Key": "sk_anything"})
    finally:
        holder.close()
        tiny.dispose()
    assert r.status_code == 503
    assert r.json() == {"detail": "Service temporarily unavailable, try again shortly"}
    assert r.headers["Retry-After"] == "1"
