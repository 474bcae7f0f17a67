"""/openapi.json describes the API completely: every route of the spec's tables that exists today,
its request and response models, and the error statuses it can answer."""

from __future__ import annotations

from typing import Annotated

import pytest
from fastapi import FastAPI, Header, Query

from shared.api.deps import CurrentConsumer
from shared.api.routers.jobs import IDEMPOTENCY_KEY, WAIT

MANAGEMENT = {"401", "403"}
# (method, path): error statuses beyond 401/403 that management routes share; None for consumer routes below.
MANAGEMENT_ROUTES = {
    ("GET", "/engines"): set(),
    ("POST", "/engines"): {"409", "422"},
    ("GET", "/engines/{engine_id}"): {"404", "422"},
    ("PATCH", "/engines/{engine_id}"): {"404", "409", "422"},
    ("DELETE", "/engines/{engine_id}"): {"404", "422"},
    ("POST", "/engines/{engine_id}/versions"): {"404", "409", "413", "422"},
    ("PATCH", "/engines/{engine_id}/versions/{version_id}"): {"404", "422"},
    ("DELETE", "/engines/{engine_id}/versions/{version_id}"): {"404", "409", "422"},
    ("POST", "/engines/{engine_id}/versions/{version_id}/activate"): {"404", "422"},
    ("GET", "/engines/{engine_id}/access"): {"404", "422"},
    ("PUT", "/engines/{engine_id}/access/{consumer_id}"): {"404", "422"},
    ("DELETE", "/engines/{engine_id}/access/{consumer_id}"): {"404", "422"},
    ("GET", "/engines/{engine_id}/jobs"): {"404", "422"},
    ("GET", "/engines/{engine_id}/jobs/recent"): {"404", "422"},
    ("GET", "/consumers"): set(),
    ("POST", "/consumers"): {"422"},
    ("PATCH", "/consumers/{consumer_id}"): {"404", "422"},
    ("DELETE", "/consumers/{consumer_id}"): {"404", "422"},
    ("GET", "/consumers/{consumer_id}/access"): {"404", "422"},
}
CONSUMER_ROUTES = {
    ("POST", "/jobs/execute/{tenant_slug}/{engine_slug}"): {"400", "401", "403", "404", "422"},
    ("POST", "/jobs/test/{tenant_slug}/{engine_slug}/{version_id}"): {"400", "401", "403", "404", "422"},
    ("GET", "/jobs/about/{tenant_slug}/{engine_slug}"): {"400", "401", "403", "404"},
    ("GET", "/jobs/{job_id}"): {"401", "403", "404"},
    ("GET", "/jobs/{job_id}/download"): {"400", "401", "403", "404"},
}
OTHER_ROUTES = {
    ("POST", "/auth/login"): {"401", "422"},
    ("POST", "/auth/logout"): set(),
    ("POST", "/auth/change-password"): {"401", "422"},
    ("GET", "/health"): {"503"},
}
# The spec's names for the success bodies of the routes whose names it gives.
SUCCESS_MODELS = {
    ("GET", "/engines"): ("array", "EngineListItem"),
    ("POST", "/engines"): (None, "EngineListItem"),
    ("GET", "/engines/{engine_id}"): (None, "EngineDetail"),
    ("PATCH", "/engines/{engine_id}"): (None, "EngineDetail"),
    ("DELETE", "/engines/{engine_id}"): (None, "EngineDeleteResponse"),
    ("POST", "/engines/{engine_id}/versions"): (None, "EngineVersionCreateResponse"),
    ("PATCH", "/engines/{engine_id}/versions/{version_id}"): (None, "EngineVersionUpdateResponse"),
    ("DELETE", "/engines/{engine_id}/versions/{version_id}"): (None, "EngineVersionDeleteResponse"),
    ("POST", "/engines/{engine_id}/versions/{version_id}/activate"): (None, "EngineVersionActivateResponse"),
    ("GET", "/engines/{engine_id}/access"): ("array", "AccessListItem"),
    ("PUT", "/engines/{engine_id}/access/{consumer_id}"): (None, "AccessPermissionResponse"),
    ("DELETE", "/engines/{engine_id}/access/{consumer_id}"): (None, "AccessRevokeResponse"),
    ("GET", "/engines/{engine_id}/jobs"): (None, "JobListResponse"),
    ("GET", "/engines/{engine_id}/jobs/recent"): ("array", "RecentJobItem"),
    ("GET", "/consumers"): ("array", "ConsumerListItem"),
    ("POST", "/consumers"): (None, "ConsumerCreateResponse"),
    ("PATCH", "/consumers/{consumer_id}"): (None, "ConsumerUpdateResponse"),
    ("DELETE", "/consumers/{consumer_id}"): (None, "ConsumerDeleteResponse"),
    ("GET", "/consumers/{consumer_id}/access"): ("array", "ConsumerEngineAccessItem"),
    ("POST", "/jobs/execute/{tenant_slug}/{engine_slug}"): (None, "ExecuteResponse"),
    ("POST", "/jobs/test/{tenant_slug}/{engine_slug}/{version_id}"): (None, "ExecuteResponse"),
    ("GET", "/jobs/about/{tenant_slug}/{engine_slug}"): (None, "AboutResponse"),
    ("GET", "/jobs/{job_id}"): (None, "JobResponse"),
    ("GET", "/jobs/{job_id}/download"): (None, "DownloadResponse"),
}
REQUEST_MODELS = {
    ("POST", "/engines"): "EngineCreate",
    ("PATCH", "/engines/{engine_id}"): "EngineUpdate",
    ("PATCH", "/engines/{engine_id}/versions/{version_id}"): "EngineVersionUpdate",
    ("PUT", "/engines/{engine_id}/access/{consumer_id}"): "GrantAccessRequest",
    ("POST", "/consumers"): "ConsumerCreate",
    ("PATCH", "/consumers/{consumer_id}"): "ConsumerUpdate",
    ("POST", "/jobs/execute/{tenant_slug}/{engine_slug}"): "ExecuteRequest",
    ("POST", "/jobs/test/{tenant_slug}/{engine_slug}/{version_id}"): "ExecuteRequest",
    ("POST", "/auth/login"): "LoginRequest",
    ("POST", "/auth/change-password"): "ChangePasswordRequest",
}
ALL_ROUTES = {**MANAGEMENT_ROUTES, **CONSUMER_ROUTES, **OTHER_ROUTES}
# wait=N (an addition to the spec): execute answers 200 with the finished job when it finishes in time.
WAITABLE = {("POST", "/jobs/execute/{tenant_slug}/{engine_slug}"), ("POST", "/jobs/test/{tenant_slug}/{engine_slug}/{version_id}")}


@pytest.fixture(scope="module")
def spec(app):
    from fastapi.testclient import TestClient

    with TestClient(app) as c:
        r = c.get("/openapi.json")
    assert r.status_code == 200
    return r.json()


def operation(spec, method, path):
    assert path in spec["paths"], f"{path} missing"
    assert method.lower() in spec["paths"][path], f"{method} {path} missing"
    return spec["paths"][path][method.lower()]


def json_schema(response: dict) -> dict:
    return response["content"]["application/json"]["schema"]


def ref_name(schema: dict) -> str:
    return schema["$ref"].rsplit("/", 1)[-1]


@pytest.mark.parametrize("method, path", sorted(ALL_ROUTES))
def test_every_route_has_a_described_success_body_and_its_error_statuses(spec, method, path):
    op = operation(spec, method, path)
    successes = [s for s in op["responses"] if s.startswith("2")]
    if (method, path) in WAITABLE:
        assert successes == ["202", "200"] and ref_name(json_schema(op["responses"]["200"])) == "JobResponse"
        successes = ["202"]
    assert len(successes) == 1, (method, path, successes)
    assert json_schema(op["responses"][successes[0]]), f"{method} {path}: 2xx body has no schema"
    expected = ALL_ROUTES[(method, path)] | (MANAGEMENT if (method, path) in MANAGEMENT_ROUTES else set())
    errors = {s for s in op["responses"] if not s.startswith("2")}
    assert expected <= errors, f"{method} {path}: undocumented {expected - errors}"
    for status in errors:
        assert json_schema(op["responses"][status]), f"{method} {path}: {status} has no body schema"
    assert op.get("summary") and op.get("description"), f"{method} {path}: no docstring"


@pytest.mark.parametrize("method, path", sorted(SUCCESS_MODELS))
def test_success_bodies_carry_the_spec_names(spec, method, path):
    op = operation(spec, method, path)
    status = next(s for s in op["responses"] if s.startswith("2"))
    kind, name = SUCCESS_MODELS[(method, path)]
    schema = json_schema(op["responses"][status])
    if kind == "array":
        assert schema["type"] == "array"
        schema = schema["items"]
    assert ref_name(schema) == name


@pytest.mark.parametrize("method, path", sorted(REQUEST_MODELS))
def test_request_bodies_are_declared(spec, method, path):
    body = operation(spec, method, path)["requestBody"]
    assert body["required"] is True
    assert ref_name(json_schema(body)) == REQUEST_MODELS[(method, path)]


def test_the_upload_is_described_as_multipart_with_version_and_file(spec):
    body = operation(spec, "POST", "/engines/{engine_id}/versions")["requestBody"]["content"]["multipart/form-data"]["schema"]
    fields = spec["components"]["schemas"][ref_name(body)]
    assert set(fields["required"]) == {"version", "file"}


def test_errors_are_detail_messages_and_422_can_also_be_a_rule_message(spec):
    op = operation(spec, "DELETE", "/engines/{engine_id}/versions/{version_id}")
    assert ref_name(json_schema(op["responses"]["409"])) == "ErrorResponse"
    assert spec["components"]["schemas"]["ErrorResponse"]["properties"]["detail"]["type"] == "string"
    for path in ("/engines/{engine_id}/versions", "/engines/{engine_id}/versions/{version_id}"):
        method = "POST" if path.endswith("versions") else "PATCH"
        shapes = {ref_name(s) for s in json_schema(operation(spec, method, path)["responses"]["422"])["anyOf"]}
        assert shapes == {"ErrorResponse", "ValidationErrorResponse"}


def test_job_list_parameters_state_their_bounds(spec):
    params = {p["name"]: p for p in operation(spec, "GET", "/engines/{engine_id}/jobs")["parameters"]}
    assert params["limit"]["schema"] == {"type": "integer", "maximum": 500, "minimum": 1, "default": 50, "title": "Limit"}
    assert params["offset"]["schema"]["minimum"] == 0 and params["offset"]["schema"]["default"] == 0
    status = params["status"]["schema"]["anyOf"][0]
    assert set(status["enum"]) == {"pending", "processing", "completed", "failed"}
    recent = {p["name"]: p for p in operation(spec, "GET", "/engines/{engine_id}/jobs/recent")["parameters"]}
    assert (recent["limit"]["schema"]["minimum"], recent["limit"]["schema"]["maximum"], recent["limit"]["schema"]["default"]) == (1, 100, 20)


def test_every_path_id_is_a_uuid(spec):
    for (method, path) in ALL_ROUTES:
        for param in operation(spec, method, path).get("parameters", []):
            if param["in"] == "path" and param["name"].endswith("_id"):
                assert param["schema"].get("format") == "uuid", (method, path, param["name"])


def test_management_and_consumer_routes_declare_their_credentials(spec):
    schemes = spec["components"]["securitySchemes"]
    assert {s["type"] for s in schemes.values()} >= {"http", "apiKey"}
    for route in {**MANAGEMENT_ROUTES, **CONSUMER_ROUTES}:
        assert operation(spec, *route).get("security"), route


def test_every_reference_resolves(spec):
    names = set(spec["components"]["schemas"])

    def walk(node):
        if isinstance(node, dict):
            if "$ref" in node:
                assert node["$ref"].rsplit("/", 1)[-1] in names, node["$ref"]
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)


def test_every_route_outside_the_public_routers_requires_an_administrator_session(spec, client):
    import re
    import uuid

    from shared.api.app import PUBLIC

    # GIVEN the routes of the routers that authenticate on their own terms (health, login, consumer API)
    public = {(method, route.path) for module in PUBLIC for route in module.router.routes for method in route.methods}
    # WHEN every other documented route is called without a session
    guarded = {(method.upper(), path) for path, ops in spec["paths"].items() for method in ops} - public
    assert guarded >= set(MANAGEMENT_ROUTES)
    for method, path in sorted(guarded):
        r = client.request(method, re.sub(r"\{[^}]+\}", str(uuid.uuid4()), path))
        # THEN it is refused as unauthenticated: the router's dependency runs before anything else
        assert r.status_code == 401, (method, path, r.status_code)


def test_a_new_management_route_cannot_forget_authentication(local_aws):
    from fastapi.testclient import TestClient

    from shared.api.app import PUBLIC, ROUTERS, create_app

    # GIVEN a route added to each management router that asks for no user at all
    probes = {}
    for module in ROUTERS:
        if module not in PUBLIC:
            path = f"/probe/{module.__name__.rsplit('.', 1)[-1]}/a/b/c"  # deeper than any real route
            module.router.add_api_route(path, lambda: {"ok": True}, methods=["GET"])
            probes[module.router.prefix + path] = module.router
    try:
        # WHEN each is called without a session
        with TestClient(create_app()) as c:
            statuses = {path: c.get(path).status_code for path in probes}
    finally:
        for path, router in probes.items():
            router.routes[:] = [r for r in router.routes if getattr(r, "path", None) != path]
    # THEN the router's own dependency refuses it
    assert set(statuses.values()) == {401}, statuses



# An app whose execute and job status declare wait, Idempotency-Key and the consumer's credentials
# as FastAPI dependencies and parameters (as the hot routes did before they read them in one step
# and documented them by hand). Module level: annotations are resolved in this module's globals.
_declared = FastAPI()
_Wait = Annotated[str | None, Query(description=WAIT, examples=["2"])]
_Key = Annotated[str | None, Header(alias="Idempotency-Key", description=IDEMPOTENCY_KEY)]


@_declared.post("/execute")
def _declared_execute(consumer: CurrentConsumer, wait: _Wait = None, key: _Key = None):
    pass


@_declared.get("/status")
def _declared_status(consumer: CurrentConsumer, wait: _Wait = None):
    pass


def test_the_hot_consumer_routes_document_wait_key_and_credentials_as_declared_parameters_would(spec):
    # GIVEN the document FastAPI makes of the declared parameters and credentials
    reference = _declared.openapi()["paths"]
    # WHEN the service's document is read
    # THEN its hot routes carry the same parameters and security, in the same place
    for (method, path), declared_path in (
        (("POST", "/jobs/execute/{tenant_slug}/{engine_slug}"), "/execute"),
        (("POST", "/jobs/test/{tenant_slug}/{engine_slug}/{version_id}"), "/execute"),
        (("GET", "/jobs/{job_id}"), "/status"),
    ):
        ours, theirs = operation(spec, method, path), reference[declared_path][method.lower()]
        assert [p for p in ours["parameters"] if p["in"] != "path"] == theirs["parameters"], path
        assert ours["security"] == theirs["security"], path
        assert list(ours).index("security") < list(ours).index("parameters"), path
