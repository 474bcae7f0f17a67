"""The IP whitelist on the consumer API, through the real API Lambda handler.

Each call is an API Gateway HTTP API (v2) event, as in tests/events/api_execute.json, whose
``requestContext.http.sourceIp`` is the caller's address: the one thing a caller cannot forge.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from shared.config import reset_settings

EVENT = json.loads((Path(__file__).resolve().parents[1] / "events" / "api_execute.json").read_text())
INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10}
DENIED = {"detail": "Access denied: IP address not in whitelist"}


def call(method: str, path: str, *, source_ip: str, api_key: str | None, body: dict | None = None, forwarded_for: str | None = None):
    """Invoke the API Lambda as API Gateway would; returns (status, parsed body)."""
    from functions.api.app import handler

    event = copy.deepcopy(EVENT)
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event["requestContext"]["http"]["sourceIp"] = source_ip
    headers = {k: v for k, v in event["headers"].items() if k not in ("x-api-key", "x-forwarded-for")}
    if api_key is not None:
        headers["x-api-key"] = api_key
    if forwarded_for is not None:
        headers["x-forwarded-for"] = forwarded_for
    event["headers"] = headers
    event["body"] = json.dumps(body) if body is not None else None
    answer = handler(event, None)
    return answer["statusCode"], json.loads(answer["body"])


def execute(d, source_ip, *, api_key="own", forwarded_for=None):
    key = d.api_key if api_key == "own" else api_key
    return call("POST", d.execute_path, source_ip=source_ip, api_key=key, body={"inputs": INPUTS}, forwarded_for=forwarded_for)


def whitelist(d, *entries, enabled=True):
    r = d.admin.patch(f"/engines/{d.engine_id}", json={"ip_whitelist_enabled": enabled, "ip_whitelist": list(entries)})
    assert r.status_code == 200, r.text


@pytest.fixture()
def trusted_proxies(monkeypatch):
    """Set SHEETCALC_TRUSTED_PROXIES for one test, and forget it afterwards."""
    def set_(value: str):
        monkeypatch.setenv("SHEETCALC_TRUSTED_PROXIES", value)
        reset_settings()

    yield set_
    monkeypatch.delenv("SHEETCALC_TRUSTED_PROXIES", raising=False)
    reset_settings()


def test_without_a_whitelist_every_address_is_served(deployed):
    assert execute(deployed, "198.51.100.23")[0] == 202
    # entries alone do nothing while the switch is off
    whitelist(deployed, "192.0.2.1", enabled=False)
    assert execute(deployed, "198.51.100.23")[0] == 202


def test_a_single_address_lets_only_that_address_in(deployed):
    whitelist(deployed, "203.0.113.7")
    assert execute(deployed, "203.0.113.7")[0] == 202
    assert execute(deployed, "203.0.113.8") == (403, DENIED)
    assert execute(deployed, "2001:db8::7") == (403, DENIED)


def test_the_whitelist_is_checked_before_the_key(deployed):
    whitelist(deployed, "203.0.113.7")
    # an unlisted caller learns nothing about keys: no key, a wrong key, a good key all get 403
    for key in (None, "nope", deployed.api_key):
        assert execute(deployed, "192.0.2.50", api_key=key) == (403, DENIED)
    # a listed caller then goes through the usual key check
    assert execute(deployed, "203.0.113.7", api_key="nope") == (401, {"detail": "Invalid API key"})


def test_ipv4_cidr_range(deployed):
    whitelist(deployed, "198.51.100.0/24", "192.0.2.128/25")
    for inside in ("198.51.100.0", "198.51.100.255", "192.0.2.200"):
        assert execute(deployed, inside)[0] == 202, inside
    for outside in ("198.51.101.1", "192.0.2.127", "10.0.0.1"):
        assert execute(deployed, outside) == (403, DENIED), outside


def test_ipv6_cidr_range_and_address(deployed):
    whitelist(deployed, "2001:db8:abcd::/48", "2001:db8:ffff::42")
    for inside in ("2001:db8:abcd::1", "2001:db8:abcd:ffff:ffff:ffff:ffff:ffff", "2001:DB8:FFFF::42"):
        assert execute(deployed, inside)[0] == 202, inside
    for outside in ("2001:db8:abce::1", "2001:db8:ffff::43", "198.51.100.1"):
        assert execute(deployed, outside) == (403, DENIED), outside


def test_ipv4_mapped_ipv6_callers_match_ipv4_entries(deployed):
    whitelist(deployed, "198.51.100.0/24")
    assert execute(deployed, "::ffff:198.51.100.9")[0] == 202
    assert execute(deployed, "::ffff:198.51.101.9") == (403, DENIED)
    # and a mapped entry is stored as the IPv4 address it stands for
    whitelist(deployed, "::ffff:203.0.113.5")
    assert deployed.admin.get(f"/engines/{deployed.engine_id}").json()["ip_whitelist"] == ["203.0.113.5"]
    assert execute(deployed, "203.0.113.5")[0] == 202


def test_an_enabled_but_empty_whitelist_refuses_everyone(deployed):
    whitelist(deployed)
    assert execute(deployed, "203.0.113.7") == (403, DENIED)


def test_a_spoofed_x_forwarded_for_does_not_get_in(deployed):
    # GIVEN a whitelist, and no trusted proxies configured
    whitelist(deployed, "203.0.113.7")
    # WHEN an unlisted caller claims a listed address in X-Forwarded-For THEN it is still refused
    assert execute(deployed, "192.0.2.66", forwarded_for="203.0.113.7") == (403, DENIED)
    assert execute(deployed, "192.0.2.66", forwarded_for="203.0.113.7, 203.0.113.7") == (403, DENIED)
    # AND a listed caller is not locked out by whatever X-Forwarded-For says
    assert execute(deployed, "203.0.113.7", forwarded_for="192.0.2.66")[0] == 202


def test_x_forwarded_for_is_believed_only_from_a_trusted_proxy(deployed, trusted_proxies):
    # GIVEN a trusted proxy range in front of the service
    trusted_proxies('["10.0.0.0/8"]')
    whitelist(deployed, "203.0.113.7")
    # WHEN the proxy forwards a listed client THEN it is served
    assert execute(deployed, "10.1.2.3", forwarded_for="203.0.113.7")[0] == 202
    # WHEN the client put a listed address in front of its real one THEN the proxy's last hop counts, and it is refused
    assert execute(deployed, "10.1.2.3", forwarded_for="203.0.113.7, 192.0.2.66") == (403, DENIED)
    # WHEN the same header comes straight from an untrusted address THEN it is ignored
    assert execute(deployed, "192.0.2.66", forwarded_for="203.0.113.7") == (403, DENIED)
    # AND the proxy's own address is not a client
    assert execute(deployed, "10.1.2.3") == (403, DENIED)


def test_every_consumer_endpoint_applies_the_whitelist(deployed, run_worker):
    # GIVEN a job run from a listed address
    whitelist(deployed, "203.0.113.7")
    status, job = execute(deployed, "203.0.113.7")
    assert status == 202
    run_worker()
    slug = f"{deployed.admin.slug}/{deployed.engine_slug}"
    paths = [
        ("GET", f"/jobs/about/{slug}", None, deployed.api_key),
        ("GET", f"/jobs/{job['job_id']}", None, deployed.api_key),
        ("GET", f"/jobs/{job['job_id']}/download", None, deployed.api_key),
        ("POST", f"/jobs/test/{slug}/{deployed.version_id}", {"inputs": INPUTS}, deployed.test_key),
    ]
    for method, path, body, key in paths:
        # THEN the listed address is served and any other is refused with the whitelist message
        assert call(method, path, source_ip="203.0.113.7", api_key=key, body=body)[0] in (200, 202), path
        assert call(method, path, source_ip="192.0.2.66", api_key=key, body=body) == (403, DENIED), path


def test_the_testclient_host_is_not_an_address_and_is_refused(client, deployed):
    # TestClient reports its peer as "testclient": with a whitelist on, that is never a listed address
    whitelist(deployed, "0.0.0.0/0", "::/0")
    r = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers={"X-API-Key": deployed.api_key})
    assert (r.status_code, r.json()) == (403, DENIED)
    assert execute(deployed, "192.0.2.66")[0] == 202
