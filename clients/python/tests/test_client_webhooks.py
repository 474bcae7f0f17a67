"""The webhook verifier: the service's scheme (HMAC-SHA256 of "<t>.<raw body>", hex, `t=...,v1=...`),
both secrets during a rotation, a tolerance on t, and a constant-time comparison."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from sheetcalc_client import WebhookVerificationError, verify
from sheetcalc_client import webhooks

SECRET = "whsec_" + "ab" * 32
OLD = "whsec_" + "cd" * 32
BODY = b'{"job_id": "0b9a", "status": "completed", "outputs": {"monthly_payment": 1266.71}}'
T = 1_772_000_000


def header(*secrets: str, t: int = T, body: bytes = BODY) -> str:
    # Written out from the documented scheme, independently of the module under test.
    digests = [hmac.new(s.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest() for s in secrets]
    return ",".join([f"t={t}", *(f"v1={d}" for d in digests)])


def test_a_signed_body_verifies_within_the_tolerance():
    assert verify(BODY, header(SECRET), SECRET, now=T + 299)
    assert verify(BODY.decode(), header(SECRET), SECRET, now=T - 299)  # text bodies are their UTF-8 bytes


def test_a_changed_body_another_secret_or_a_stale_or_future_t_fails():
    assert not verify(BODY.replace(b"1266.71", b"1266.72"), header(SECRET), SECRET, now=T)
    assert not verify(BODY, header(OLD), SECRET, now=T)
    assert not verify(BODY, header(SECRET), SECRET, now=T + 301)
    assert not verify(BODY, header(SECRET), SECRET, now=T - 301)
    assert verify(BODY, header(SECRET), SECRET, tolerance=3600, now=T + 3000)


@pytest.mark.parametrize("bad", ["", "v1=abc", f"t=abc,v1={'0' * 64}", f"t={T}", "garbage", None])
def test_a_malformed_or_missing_header_fails(bad):
    assert not verify(BODY, bad, SECRET, now=T)


def test_during_a_rotation_either_secret_verifies_the_two_signature_header():
    both = header(SECRET, OLD)
    assert verify(BODY, both, SECRET, now=T) and verify(BODY, both, OLD, now=T)
    assert verify(BODY, header(OLD), [SECRET, OLD], now=T)
    assert not verify(BODY, both, "whsec_other", now=T)


def test_the_comparison_is_constant_time(monkeypatch):
    compared = []
    real = hmac.compare_digest
    monkeypatch.setattr(webhooks.hmac, "compare_digest", lambda a, b: compared.append((a, b)) or real(a, b))
    verify(BODY, header(SECRET, OLD), SECRET, now=T)
    assert len(compared) == 2  # each v1 compared, no early exit on the first match


def test_parse_returns_the_body_or_raises():
    assert webhooks.parse(BODY, header(SECRET), SECRET, now=T)["status"] == "completed"
    with pytest.raises(WebhookVerificationError):
        webhooks.parse(BODY, header(OLD), SECRET, now=T)
