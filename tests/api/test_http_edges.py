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
