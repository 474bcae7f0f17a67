"""A job's webhook in the console, on ``sheetcalc dev``: the delivery log lists the first attempt
(a receiver's error answer and the start of its body), and the administrator's Redeliver button
makes one more signed POST, through the dev stack's webhook poller, that the log then lists."""

from __future__ import annotations

import time

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.console import LOAN, api_session, browser_page, needs_chromium, new_tenant, sign_in
from tests.receiver import WebhookReceiver
from tests.worker.test_webhook_signing import python_verify

pytestmark = [pytest.mark.e2e, needs_chromium]

ALL = {"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}
INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10, "start_date": "2026-01-01"}


def test_the_job_page_lists_webhook_attempts_and_redelivers(dev_stack):
    tenant = new_tenant(dev_stack, "hook")
    with api_session(dev_stack, tenant) as api:
        engine = api.post("/engines", json={"name": "Loan quote"}).json()
        v = api.post(f"/engines/{engine['id']}/versions", data={"version": "1.0"}, files={"file": ("loan.xlsx", LOAN.read_bytes())}).json()
        api.post(f"/engines/{engine['id']}/versions/{v['id']}/activate")
        consumer = api.post("/consumers", json={"name": "Pricing app"}).json()
        api.put(f"/engines/{engine['id']}/access/{consumer['id']}", json=ALL)
        secret = api.get("/tenant/webhook-signing-secret").json()["secret"]

    with WebhookReceiver(status=500, answer=b"try again later") as receiver:
        # GIVEN a job whose webhook's first attempt got 500 from the receiver
        r = httpx.post(f"{dev_stack.base_url}/jobs/execute/{tenant['slug']}/{engine['slug']}",
                       json={"inputs": INPUTS, "webhook_url": receiver.url}, headers={"X-API-Key": consumer["api_key"]}, timeout=60)
        assert r.status_code == 202, r.text
        job_id = r.json()["job_id"]
        assert len(receiver.wait_for(1, timeout=120)) == 1

        with browser_page(dev_stack.base_url) as page:
            sign_in(page, tenant)
            page.goto(f"/dashboard/#/engines/{engine['id']}/jobs/{job_id}")
            # THEN the job page lists that attempt, its outcome and the start of the answer
            attempts = page.locator("#webhook-attempt-list tbody tr")
            expect(attempts).to_have_count(1)
            expect(attempts.first).to_contain_text("first attempt")
            expect(attempts.first).to_contain_text("HTTP 500 (http_error)")
            expect(attempts.first).to_contain_text("try again later")
            # WHEN the administrator redelivers it, confirming, and the receiver now answers 200
            receiver.status = 200
            page.get_by_role("button", name="Redeliver webhook").click()
            page.get_by_role("dialog").get_by_role("button", name="Redeliver").click()
            got = receiver.wait_for(2, timeout=120)
            assert len(got) == 2
            # THEN the log lists the redelivery, answered 200, once the page is opened again
            deadline = time.monotonic() + 120
            while True:
                page.reload()
                expect(attempts).to_have_count(2)
                if "HTTP 200" in attempts.nth(1).inner_text() or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            expect(attempts.nth(1)).to_contain_text("redelivery")
            expect(attempts.nth(1)).to_contain_text("HTTP 200")
    # AND the redelivered POST was signed with the tenant's secret
    assert python_verify(secret, got[1]["headers"]["Sheetcalc-Signature"], got[1]["raw"]) is True
    assert got[1]["headers"]["Sheetcalc-Job-Id"] == job_id
