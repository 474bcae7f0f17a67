"""Signed webhooks, checked with the verifiers the guide documents (docs/consumers/webhooks.md): the
Python block is taken out of the page and executed, the Node block is run with ``node`` and the
shell one with ``bash``, all on webhooks a real receiver got. A rotation signs with both secrets for
24 hours, then with the new one only; a changed body, a wrong secret or a stale timestamp fails."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from shared.db.models import WebhookSigningSecret
from shared.db.session import session_scope
from shared.db.types import utcnow
from shared.security import decrypt
from shared.services import webhook_signing
from tests.factories import make_admin
from tests.receiver import WebhookReceiver
from tests.worker.test_redelivery_and_webhooks import submit

GUIDE_PAGE = Path(__file__).resolve().parents[2] / "docs" / "consumers" / "webhooks.md"
SECTION = "## Verifying a signature"


def guide_block(language: str) -> str:
    """The first fenced ``language`` block of the guide's section on verifying a signature."""
    text = GUIDE_PAGE.read_text()
    section = text[text.index(SECTION):]
    section = section[: section.index("\n## ", len(SECTION))]
    blocks = re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)
    assert blocks, f"expected a {language} block in the guide's section {SECTION!r}"
    return blocks[0]


def python_verify(secret: str, header: str, body: bytes) -> bool:
    namespace: dict = {}
    exec(guide_block("python"), namespace)
    return namespace["verify"](secret, header, body)


NODE = shutil.which("node")


def node_verify(secret: str, header: str, body: bytes, folder: Path) -> bool:
    script = folder / "verify.js"
    script.write_text(
        guide_block("js")
        + '\nconst [secret, header, body] = process.argv.slice(2);\n'
        + 'process.stdout.write(String(verify(secret, header, Buffer.from(body, "base64"))));\n'
    )
    done = subprocess.run(
        [NODE, str(script), secret, header, base64.b64encode(body).decode()], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return {"true": True, "false": False}[done.stdout]


def shell_verify(secret: str, header: str, body: bytes, folder: Path) -> bool:
    """The guide's shell verifier (bash, openssl) on ``body`` saved as the receiver got it."""
    received = folder / "body.bin"
    received.write_bytes(body)
    script = guide_block("bash") + '\nif verify "$1" "$2" "$3"; then printf true; else printf false; fi\n'
    done = subprocess.run(["bash", "-c", script, "verify", secret, header, str(received)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return {"true": True, "false": False}[done.stdout]


def received_webhook(client, deployed, run_worker, run_webhooks) -> tuple[str, dict]:
    """A job's webhook as a real receiver got it: the job id and the request (headers, raw body)."""
    with WebhookReceiver() as receiver:
        job_id = submit(client, deployed, webhook_url=receiver.url)
        run_worker()
        run_webhooks()
        return job_id, receiver.wait_for(1)[0]


def v1_values(header: str) -> list[str]:
    return [part.split("=", 1)[1] for part in header.split(",") if part.startswith("v1=")]


def read_secret(admin) -> str:
    r = admin.get("/tenant/webhook-signing-secret")
    assert r.status_code == 200, r.text
    return r.json()["secret"]


def rotate(admin) -> dict:
    r = admin.post("/tenant/webhook-signing-secret/rotate")
    assert r.status_code == 200, r.text
    return r.json()


def test_a_received_webhook_verifies_with_the_guides_python_node_and_shell_verifiers(client, deployed, run_worker, run_webhooks, tmp_path):
    # GIVEN a webhook a real receiver got
    job_id, request = received_webhook(client, deployed, run_worker, run_webhooks)
    headers = {name.lower(): value for name, value in request["headers"].items()}
    # THEN it names its job and carries one signature, made with the tenant's secret
    assert headers["sheetcalc-job-id"] == job_id and request["json"]["job_id"] == job_id
    assert len(v1_values(headers["sheetcalc-signature"])) == 1
    secret = read_secret(deployed.admin)
    assert secret.startswith("whsec_")
    # AND both documented verifiers accept it
    assert python_verify(secret, headers["sheetcalc-signature"], request["raw"]) is True
    if NODE is None:
        pytest.fail("node is not on this machine: the guide's Node verifier cannot be checked")
    assert node_verify(secret, headers["sheetcalc-signature"], request["raw"], tmp_path) is True
    assert shell_verify(secret, headers["sheetcalc-signature"], request["raw"], tmp_path) is True


def test_a_changed_body_a_wrong_secret_or_a_stale_timestamp_fails(client, deployed, run_worker, run_webhooks, tmp_path):
    _, request = received_webhook(client, deployed, run_worker, run_webhooks)
    header = request["headers"]["Sheetcalc-Signature"]
    secret = read_secret(deployed.admin)
    tampered = request["raw"].replace(b'"status":"completed"', b'"status":"failed"')
    assert tampered != request["raw"]
    # a body signed long ago, correctly, is refused by the tolerance on t
    stale_t = int(utcnow().timestamp()) - 3600
    stale = webhook_signing.signature_header(request["raw"], keys=[secret], timestamp=stale_t)
    for verify in (python_verify, lambda *a: node_verify(*a, tmp_path), lambda *a: shell_verify(*a, tmp_path)):
        assert verify(secret, header, request["raw"]) is True
        assert verify(secret, header, tampered) is False
        assert verify("whsec_" + "0" * 64, header, request["raw"]) is False
        assert verify(secret, stale, request["raw"]) is False


def test_during_a_rotation_both_secrets_sign_and_both_verify(client, deployed, run_worker, run_webhooks, tmp_path):
    # GIVEN the tenant's secret, read, then rotated
    old = read_secret(deployed.admin)
    rotated = rotate(deployed.admin)
    new = rotated["secret"]
    assert new != old and rotated["previous_expires_at"] is not None
    # WHEN a webhook is sent within the 24 hours
    _, request = received_webhook(client, deployed, run_worker, run_webhooks)
    header = request["headers"]["Sheetcalc-Signature"]
    # THEN it carries two signatures, and a receiver with either secret verifies it
    assert len(v1_values(header)) == 2
    for secret in (old, new):
        assert python_verify(secret, header, request["raw"]) is True
        assert node_verify(secret, header, request["raw"], tmp_path) is True
        assert shell_verify(secret, header, request["raw"], tmp_path) is True


def test_after_24_hours_only_the_new_secret_signs(client, deployed, run_worker, run_webhooks):
    # GIVEN a secret read, then rotated 24 hours and one second ago (the rotation's clock injected)
    old = read_secret(deployed.admin)
    with session_scope() as session:
        new = webhook_signing.rotate(
            session, tenant_id=uuid.UUID(deployed.admin.tenant_id), now=utcnow() - timedelta(hours=24, seconds=1)
        ).secret
    # WHEN a webhook is sent now
    _, request = received_webhook(client, deployed, run_worker, run_webhooks)
    header = request["headers"]["Sheetcalc-Signature"]
    # THEN only the new secret signs it
    assert len(v1_values(header)) == 1
    assert python_verify(new, header, request["raw"]) is True
    assert python_verify(old, header, request["raw"]) is False
    assert deployed.admin.get("/tenant/webhook-signing-secret").json()["previous_expires_at"] is None


def test_the_replaced_secret_signs_until_exactly_24_hours_after_the_rotation(admin):
    tenant_id = uuid.UUID(admin.tenant_id)
    rotated_at = utcnow()
    with session_scope() as session:
        webhook_signing.rotate(session, tenant_id=tenant_id, now=rotated_at)
        just_before = webhook_signing.signing_secrets(session, tenant_id=tenant_id, now=rotated_at + timedelta(hours=24) - timedelta(seconds=1))
        at_24_hours = webhook_signing.signing_secrets(session, tenant_id=tenant_id, now=rotated_at + timedelta(hours=24))
    assert len(just_before) == 2 and len(at_24_hours) == 1 and at_24_hours[0] == just_before[0]


def test_a_second_rotation_within_24_hours_drops_the_oldest_secret(admin):
    tenant_id = uuid.UUID(admin.tenant_id)
    first = read_secret(admin)
    second = rotate(admin)["secret"]
    third = rotate(admin)["secret"]
    with session_scope() as session:
        signing = webhook_signing.signing_secrets(session, tenant_id=tenant_id, now=utcnow())
    assert signing == [third, second] and first not in signing


def test_the_secret_is_shown_once_and_stored_encrypted(admin):
    # WHEN the secret is read twice
    first = admin.get("/tenant/webhook-signing-secret").json()
    again = admin.get("/tenant/webhook-signing-secret").json()
    # THEN the first read shows it, the second does not
    assert first["secret"].startswith("whsec_") and len(first["secret"]) == len("whsec_") + 64
    assert again["secret"] is None and again["created_at"] == first["created_at"]
    # AND the stored row holds it only encrypted
    with session_scope() as session:
        row = session.get(WebhookSigningSecret, uuid.UUID(admin.tenant_id))
        assert first["secret"] not in row.secret_encrypted and decrypt(row.secret_encrypted) == first["secret"]
    # AND a rotation shows the new one, once
    rotated = rotate(admin)
    assert rotated["secret"] not in (None, first["secret"])
    assert admin.get("/tenant/webhook-signing-secret").json()["secret"] is None


def test_another_tenants_administrator_cannot_read_or_rotate_this_tenants_secret(client, deployed, run_worker, run_webhooks):
    # GIVEN this tenant's secret, read by its administrator
    ours = read_secret(deployed.admin)
    # WHEN another tenant's administrator reads and rotates "the" secret
    other = make_admin(client)
    theirs = read_secret(other)
    rotate(other)
    # THEN they got and rotated their own: ours is unchanged and still signs alone
    assert theirs != ours
    _, request = received_webhook(client, deployed, run_worker, run_webhooks)
    header = request["headers"]["Sheetcalc-Signature"]
    assert len(v1_values(header)) == 1 and python_verify(ours, header, request["raw"]) is True
    assert python_verify(theirs, header, request["raw"]) is False


def test_the_secret_endpoints_need_a_session(client):
    assert client.get("/tenant/webhook-signing-secret").status_code == 401
    assert client.post("/tenant/webhook-signing-secret/rotate").status_code == 401


@pytest.mark.own_transactions
def test_concurrent_first_uses_make_one_secret_and_concurrent_rotations_chain(admin):
    # GIVEN a tenant without a secret, and eight webhook senders needing it at once (real transactions)
    import threading
    from concurrent.futures import ThreadPoolExecutor

    tenant_id = uuid.UUID(admin.tenant_id)
    start = threading.Barrier(8)

    def first_use(_):
        start.wait(30)
        with session_scope() as session:
            return tuple(webhook_signing.signing_secrets(session, tenant_id=tenant_id, now=utcnow()))

    with ThreadPoolExecutor(8) as pool:
        seen = set(pool.map(first_use, range(8)))
    # THEN they all signed with the same one secret, the one an administrator then reads
    assert len(seen) == 1 and list(seen)[0] == (read_secret(admin),)

    # WHEN two rotations run at once
    def rotation(_):
        start.wait(30)
        with session_scope() as session:
            return webhook_signing.rotate(session, tenant_id=tenant_id).secret

    start = threading.Barrier(2)
    with ThreadPoolExecutor(2) as pool:
        made = list(pool.map(rotation, range(2)))
    # THEN one replaced the other: the current secret is one of them, the previous one the other
    with session_scope() as session:
        signing = webhook_signing.signing_secrets(session, tenant_id=tenant_id, now=utcnow())
    assert sorted(signing) == sorted(made)
