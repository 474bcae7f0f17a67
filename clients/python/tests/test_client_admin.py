"""AdminClient: one method per management endpoint, the session's token on each call."""

from __future__ import annotations

import httpx
import pytest

from client_fakes import BASE, FakeService, body
from sheetcalc_client import ActivationRefused, AdminClient, RetryPolicy

ENGINE, VERSION = "e1", "v1"


def admin(service: FakeService) -> AdminClient:
    return AdminClient(BASE, transport=service.transport(), retry=RetryPolicy(max_attempts=1))


def test_login_keeps_the_token_for_the_next_calls(service):
    service.on("POST", "/auth/login", httpx.Response(200, json={"access_token": "tok", "must_change_password": False}))
    service.on("GET", "/engines", httpx.Response(200, json=[]))
    a = admin(service)
    a.login("admin@acme.example", "pw")
    assert a.engines() == []
    assert "Authorization" not in service.requests[0].headers
    assert service.requests[1].headers["Authorization"] == "Bearer tok"


def test_activate_sends_an_override_reason_only_when_given(service):
    path = f"/engines/{ENGINE}/versions/{VERSION}/activate"
    service.on("POST", path, httpx.Response(200, json={"id": VERSION, "is_active": True}))
    a = admin(service)
    a.activate_version(ENGINE, VERSION)
    a.activate_version(ENGINE, VERSION, override_reason="hotfix approved by finance")
    first, second = service.sent("POST", path)
    assert first.content == b"" and body(second) == {"override_reason": "hotfix approved by finance"}


def test_a_refused_activation_carries_the_gates_reasons(service):
    reasons = [{"code": "tests_failed", "message": "2 of 5 test cases failed"}]
    service.on("POST", f"/engines/{ENGINE}/versions/{VERSION}/activate", httpx.Response(409, json={
        "detail": "The release gate refused to activate this version; activate it with an override_reason to go ahead anyway",
        "reasons": reasons}))
    with pytest.raises(ActivationRefused) as raised:
        admin(service).activate_version(ENGINE, VERSION)
    assert raised.value.reasons == reasons


def test_test_cases_import_as_a_file_or_as_typed_bytes(service, tmp_path):
    path = f"/engines/{ENGINE}/test-cases/import"
    service.on("POST", path, httpx.Response(201, json={"imported": 1, "cases": []}))
    cases = tmp_path / "cases.csv"
    cases.write_text("principal,expected.monthly_payment\n1000,5.07\n")
    a = admin(service)
    a.import_test_cases(ENGINE, cases)
    a.import_test_cases(ENGINE, b'{"inputs": {}, "expected": {"x": 1}}\n', kind="jsonl")
    as_file, as_bytes = service.sent("POST", path)
    assert as_file.headers["Content-Type"].startswith("multipart/form-data") and b'filename="cases.csv"' in as_file.content
    assert as_bytes.headers["Content-Type"] == "application/x-ndjson"
    with pytest.raises(ValueError):
        a.import_test_cases(ENGINE, b"x")


def test_grant_gives_all_four_permissions_unless_told(service):
    path = f"/engines/{ENGINE}/access/c1"
    service.on("PUT", path, httpx.Response(200, json={}))
    admin(service).grant(ENGINE, "c1", can_download=False)
    assert body(service.sent("PUT", path)[0]) == {
        "can_execute": True, "can_view_jobs": True, "can_download": False, "can_view_about": True}
