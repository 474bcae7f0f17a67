"""The dashboard's pages carry its content security policy; the APIs' answers do not."""

from __future__ import annotations

from shared.api.dashboard import CSP


def test_a_dashboard_page_carries_its_security_headers(client):
    r = client.get("/dashboard/")
    assert r.status_code == 200
    assert r.headers["content-security-policy"] == CSP
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "same-origin"


def test_a_missing_dashboard_file_is_404_with_the_same_headers(client):
    r = client.get("/dashboard/no-such-file.js")
    assert r.status_code == 404
    assert r.headers["content-security-policy"] == CSP


def test_an_api_answer_carries_no_dashboard_headers(client):
    r = client.get("/health")
    assert "content-security-policy" not in r.headers
    assert "referrer-policy" not in r.headers
