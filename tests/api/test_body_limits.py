"""Request bodies are limited while they stream in, on every route, before any authentication:
a chunked body with no declared length is cut off at its route's limit, not read in full.

The chunked bodies are async generators sent through httpx's ASGI transport, which pulls a
chunk each time the app reads one (Starlette's TestClient would read the whole body first), so
how many chunks were pulled is how much of the body the service read.
"""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path

import httpx
import pytest

from tests.envtools import settings_env

CHUNK = 64 * 1024
EVENT = json.loads((Path(__file__).resolve().parents[1] / "events" / "api_execute.json").read_text())


class ChunkedBody:
    """A body of ``total`` bytes sent in 64 KB chunks, counting the chunks the server pulled."""

    def __init__(self, total: int, first: bytes = b'{"inputs": {"x": "'):
        self.total = total
        self.first = first
        self.pulled = 0

    async def __aiter__(self):
        sent = 0
        while sent < self.total:
            chunk = self.first if sent == 0 else b"a" * CHUNK
            self.pulled += 1
            sent += len(chunk)
            yield chunk

    @property
    def bytes_pulled(self) -> int:
        return len(self.first) + (self.pulled - 1) * CHUNK


def stream(app, method: str, path: str, body: ChunkedBody, headers: dict | None = None) -> httpx.Response:
    """Send ``body`` chunk by chunk to the app, with no declared length unless ``headers`` give one."""

    async def send() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as c:
            return await c.request(method, path, content=body, headers={"content-type": "application/json", **(headers or {})})

    return asyncio.run(send())


@pytest.mark.parametrize("path", ["/auth/login", "/jobs/execute/acme/loan-quote", "/engines", "/consumers"])
def test_a_chunked_body_over_the_json_limit_is_cut_off_with_413_and_no_credentials_needed(app, path):
    # GIVEN the default JSON body limit (2 MB) and no credentials at all
    body = ChunkedBody(200 * 1024 * 1024)
    # WHEN a 200 MB chunked body is sent
    r = stream(app, "POST", path, body)
    # THEN 413 names the limit, and the service stopped reading just past it
    assert r.status_code == 413
    assert r.json() == {"detail": "The request body is larger than the 2 MB limit"}
    assert body.bytes_pulled <= 2 * 1024 * 1024 + CHUNK


def test_a_route_that_takes_no_body_answers_as_usual_without_reading_it(app):
    body = ChunkedBody(200 * 1024 * 1024)
    r = stream(app, "POST", "/no/such/route", body)
    assert r.status_code == 404
    assert body.pulled <= 1


def test_the_json_limit_is_a_setting_and_counts_bytes_not_declarations(app, client):
    with settings_env(SHEETCALC_MAX_JSON_BODY_BYTES="1000"):
        body = ChunkedBody(10_000)
        r = stream(app, "POST", "/auth/login", body)
        assert r.status_code == 413 and r.json()["detail"] == "The request body is larger than the 1000 bytes limit"
        assert body.bytes_pulled <= 1000 + CHUNK
        # a small body still reaches the route (and its own answer)
        r = client.post("/auth/login", json={"email": "nobody@example.com", "password": "x"})
        assert r.status_code == 401


def test_a_declared_length_over_the_limit_is_refused_before_a_byte_is_read(app):
    body = ChunkedBody(3 * 1024 * 1024)
    r = stream(app, "POST", "/auth/login", body, headers={"content-length": str(3 * 1024 * 1024)})
    assert r.status_code == 413
    assert body.pulled == 0


def test_an_upload_may_exceed_the_json_limit_up_to_the_upload_limit(admin, loan_xlsx):
    engine = admin.post("/engines", json={"name": "Loan"}).json()
    with settings_env(SHEETCALC_MAX_JSON_BODY_BYTES="1000"):
        assert len(loan_xlsx) > 1000
        r = admin.post(f"/engines/{engine['id']}/versions", data={"version": "1"}, files={"file": ("loan.xlsx", loan_xlsx)})
    assert r.status_code == 201, r.text


def test_a_chunked_upload_over_the_upload_limit_is_cut_off(app, admin):
    engine = admin.post("/engines", json={"name": "E"}).json()
    boundary = "sheetcalcboundary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="version"\r\n\r\n1\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.xlsx"\r\n'
        "Content-Type: application/octet-stream\r\n\r\nPK"
    ).encode()
    body = ChunkedBody(200 * 1024 * 1024, first=head)
    with settings_env(SHEETCALC_MAX_UPLOAD_BYTES=str(1024 * 1024)):
        r = stream(app, "POST", f"/engines/{engine['id']}/versions", body,
                   headers={**admin.headers, "content-type": f"multipart/form-data; boundary={boundary}"})
    assert r.status_code == 413
    assert r.json() == {"detail": "The request is larger than the 1 MB upload limit"}
    # the 1 MB upload limit plus the 1 MB envelope, and not a chunk more than it takes to see it
    assert body.bytes_pulled <= 2 * 1024 * 1024 + CHUNK
    assert admin.get(f"/engines/{engine['id']}").json()["versions"] == []


def test_behind_api_gateway_the_lambda_refuses_a_body_over_the_limit():
    # API Gateway hands the whole body (up to its own 10 MB) to the function in one event.
    from functions.api.app import handler

    event = copy.deepcopy(EVENT)
    event["headers"] = {k: v for k, v in event["headers"].items() if k != "x-api-key"}
    event["body"] = json.dumps({"inputs": {"x": "a" * (3 * 1024 * 1024)}})
    answer = handler(event, None)
    assert answer["statusCode"] == 413
    assert json.loads(answer["body"]) == {"detail": "The request body is larger than the 2 MB limit"}
