"""Tenant isolation: tenant B using tenant A's ids gets 404 everywhere, and B's lists never show A's rows."""

from __future__ import annotations

import uuid

import pytest

from tests.factories import deploy_loan, make_admin

ALL = {"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}


@pytest.fixture()
def tenants(client, loan_xlsx, run_worker):
    """Tenant A with a deployed engine, a second version and a job; tenant B with its own engine and consumer."""
    a = deploy_loan(make_admin(client), loan_xlsx)
    up = a.admin.post(f"/engines/{a.engine_id}/versions", data={"version": "2.0"}, files={"file": ("l.xlsx", loan_xlsx)})
    a_v2 = up.json()["id"]
    client.post(a.execute_path, json={"inputs": {"principal": 1000, "annual_rate": 0.05, "years": 1}}, headers={"X-API-Key": a.api_key})
    run_worker()
    b = make_admin(client)
    b_engine = b.post("/engines", json={"name": "B engine"}).json()["id"]
    b_consumer = b.post("/consumers", json={"name": "B consumer"}).json()["id"]
    return a, a_v2, b, b_engine, b_consumer


def test_tenant_b_gets_404_for_every_id_of_tenant_a(tenants):
    a, a_v2, b, b_engine, b_consumer = tenants
    e, v, c = a.engine_id, a_v2, a.consumer_id
    engine_nf, version_nf, consumer_nf = {"detail": "Engine not found"}, {"detail": "Engine version not found"}, {"detail": "Consumer not found"}
    calls = [
        (b.get, f"/engines/{e}", {}, engine_nf),
        (b.patch, f"/engines/{e}", {"json": {"name": "hijacked", "ip_whitelist_enabled": True}}, engine_nf),
        (b.delete, f"/engines/{e}", {}, engine_nf),
        (b.post, f"/engines/{e}/versions", {"data": {"version": "9"}, "files": {"file": ("x.xlsx", b"PK")}}, engine_nf),
        (b.patch, f"/engines/{e}/versions/{v}", {"json": {"input_schema": None}}, engine_nf),
        (b.delete, f"/engines/{e}/versions/{v}", {}, engine_nf),
        (b.post, f"/engines/{e}/versions/{v}/activate", {}, engine_nf),
        (b.get, f"/engines/{e}/access", {}, engine_nf),
        (b.put, f"/engines/{e}/access/{c}", {"json": ALL}, engine_nf),
        (b.delete, f"/engines/{e}/access/{c}", {}, engine_nf),
        (b.get, f"/engines/{e}/jobs", {}, engine_nf),
        (b.get, f"/engines/{e}/jobs/recent", {}, engine_nf),
        (b.patch, f"/consumers/{c}", {"json": {"is_active": False}}, consumer_nf),
        (b.delete, f"/consumers/{c}", {}, consumer_nf),
        (b.get, f"/consumers/{c}/access", {}, consumer_nf),
        # B's own engine with A's version or consumer
        (b.patch, f"/engines/{b_engine}/versions/{v}", {"json": {"input_schema": None}}, version_nf),
        (b.delete, f"/engines/{b_engine}/versions/{v}", {}, version_nf),
        (b.post, f"/engines/{b_engine}/versions/{v}/activate", {}, version_nf),
        (b.put, f"/engines/{b_engine}/access/{c}", {"json": ALL}, consumer_nf),
        (b.delete, f"/engines/{b_engine}/access/{c}", {}, consumer_nf),
    ]
    for method, path, kwargs, body in calls:
        # WHEN tenant B's administrator uses tenant A's ids THEN each one is unknown
        r = method(path, **kwargs)
        assert (r.status_code, r.json()) == (404, body), f"{method.__name__.upper()} {path}"
    # AND nothing of tenant A changed
    detail = a.admin.get(f"/engines/{e}").json()
    assert detail["name"] == "Loan quote" and detail["ip_whitelist_enabled"] is False
    assert detail["active_version_id"] == a.version_id and len(detail["versions"]) == 2
    assert [x["consumer_id"] for x in a.admin.get(f"/engines/{e}/access").json()] == [c]
    assert [x["is_active"] for x in a.admin.get("/consumers").json()] == [True]
    assert a.admin.get(f"/engines/{e}/jobs").json()["total"] == 1


def test_tenant_b_lists_never_show_tenant_a_rows(tenants):
    a, _a_v2, b, b_engine, b_consumer = tenants
    # GIVEN B granted its consumer access to its engine
    b.put(f"/engines/{b_engine}/access/{b_consumer}", json={"can_execute": True})
    # THEN each of B's lists holds only B's rows
    assert [x["id"] for x in b.get("/engines").json()] == [b_engine]
    assert [x["id"] for x in b.get("/consumers").json()] == [b_consumer]
    assert [x["id"] for x in b.get("/consumers", params={"include_inactive": True}).json()] == [b_consumer]
    assert [x["consumer_id"] for x in b.get(f"/engines/{b_engine}/access").json()] == [b_consumer]
    assert [x["engine_id"] for x in b.get(f"/consumers/{b_consumer}/access").json()] == [b_engine]
    assert b.get(f"/engines/{b_engine}/jobs").json()["total"] == 0
    assert b.get(f"/engines/{b_engine}/jobs/recent").json() == []
    assert b.get(f"/engines/{b_engine}").json()["consumers"][0]["consumer_id"] == b_consumer
    # AND A's lists hold only A's
    assert [x["id"] for x in a.admin.get("/engines").json()] == [a.engine_id]
    assert [x["id"] for x in a.admin.get("/consumers").json()] == [a.consumer_id]


def test_the_same_slug_in_two_tenants_is_two_engines(client, tenants):
    a, _a_v2, b, _b_engine, _b_consumer = tenants
    # GIVEN tenant B gives its engine tenant A's slug
    r = b.post("/engines", json={"name": "Loan quote", "slug": a.engine_slug})
    assert r.status_code == 201
    # WHEN B deletes its engine THEN A's engine with that slug still answers
    assert b.delete(f"/engines/{r.json()['id']}").status_code == 200
    assert a.admin.get(f"/engines/{a.engine_id}").status_code == 200
    assert client.get(f"/jobs/about/{a.admin.slug}/{a.engine_slug}", headers={"X-API-Key": a.api_key}).status_code == 200


def test_a_consumer_key_of_tenant_a_does_not_work_on_tenant_b(client, tenants):
    a, _a_v2, b, b_engine, _b_consumer = tenants
    slug = b.get(f"/engines/{b_engine}").json()["slug"]
    r = client.post(f"/jobs/execute/{b.slug}/{slug}", json={"inputs": {}}, headers={"X-API-Key": a.api_key})
    assert (r.status_code, r.json()) == (404, {"detail": f"Engine '{slug}' not found"})


def test_unknown_random_ids_are_404_too(tenants):
    _a, _a_v2, b, _b_engine, _b_consumer = tenants
    assert b.delete(f"/engines/{uuid.uuid4()}").status_code == 404
    assert b.get(f"/consumers/{uuid.uuid4()}/access").status_code == 404
