"""Issue 13 in the console, on ``sheetcalc dev``: the webhook signing secret revealed once and
rotated (a real webhook then verifies with the new secret), a completed job re-run from its page
(identical, with the recorded version hash and calculation engine), and the engine page's
snippets for ``?wait=``, ``Idempotency-Key`` and the engine's OpenAPI contract, run as copied."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
import uuid

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.console import (
    LOAN,
    PHONE,
    browser_page,
    deployed_loan,
    needs_chromium,
    screenshot,
    sign_in,
)
from tests.e2e.test_console_access import FOCUSED, LOW_CONTRAST
from tests.e2e.test_console_engines import run_snippet
from tests.receiver import WebhookReceiver
from tests.worker.test_webhook_signing import python_verify

pytestmark = [pytest.mark.e2e, needs_chromium]

INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10, "start_date": "2026-01-01"}
SECRET = re.compile(r"^whsec_[0-9a-f]{64}$")


def both_widths(page, name: str) -> None:
    """Screenshots at laptop and phone width, the page no wider than the phone's screen."""
    screenshot(page, name)
    laptop = page.viewport_size
    page.set_viewport_size(PHONE)
    screenshot(page, name)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], f"{name} is wider than a phone"
    page.set_viewport_size(laptop)


def completed_job(dev_stack, tenant: dict, engine: dict, key: dict) -> dict:
    r = httpx.post(f"{dev_stack.base_url}/jobs/execute/{tenant['slug']}/{engine['slug']}", json={"inputs": INPUTS}, headers=key, timeout=60)
    assert r.status_code == 202, r.text
    job_id = r.json()["job_id"]
    deadline = time.monotonic() + 300  # only a hung stack reaches it
    while time.monotonic() < deadline:
        job = httpx.get(f"{dev_stack.base_url}/jobs/{job_id}", params={"wait": 25}, headers=key, timeout=60).json()
        if job["status"] in ("completed", "failed"):
            assert job["status"] == "completed", job
            return job
    raise AssertionError(f"job {job_id} did not finish")


def test_the_signing_secret_is_shown_once_then_rotated_and_the_new_one_signs_webhooks(dev_stack):
    tenant, engine, key = deployed_loan(dev_stack, "sig")
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.get_by_role("link", name="Settings").click()
        # Opening Settings does not use up the reveal: the secret is read when asked for
        expect(page.locator("#signing-secret")).to_have_count(0)
        page.get_by_role("button", name="Reveal signing secret").click()
        first = page.locator("#signing-secret .secret").inner_text()
        assert SECRET.match(first), first
        expect(page.locator("#signing-secret")).to_contain_text("it will not be shown again")
        # focus lands on its copy button, which copies it
        assert page.evaluate(FOCUSED)["name"] == "Copy"
        page.keyboard.press("Enter")
        assert page.evaluate("navigator.clipboard.readText()") == first
        assert page.evaluate(LOW_CONTRAST) == []
        both_widths(page, "settings-signing-secret")

        # WHEN the page is opened again, the secret is not shown a second time
        page.reload()
        page.get_by_role("button", name="Reveal signing secret").click()
        expect(page.locator("#signing-secret-shown")).to_contain_text("was shown already")
        expect(page.locator("#signing-secret-shown")).to_contain_text("Rotate")
        expect(page.locator("#signing-secret")).to_have_count(0)

        # Rotating asks first; Escape cancels it and gives the focus back to the button
        rotate = page.get_by_role("button", name="Rotate signing secret")
        rotate.focus()
        page.keyboard.press("Enter")
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text("For 24 hours the current one signs too")
        page.keyboard.press("Escape")
        dialog.wait_for(state="detached")
        assert page.evaluate(FOCUSED)["name"] == "Rotate signing secret"
        expect(page.locator("#signing-secret")).to_have_count(0)

        # WHEN confirmed, the new secret is shown once, and until when the old one still signs
        rotate.click()
        page.get_by_role("dialog").get_by_role("button", name="Rotate").click()
        expect(page.locator("#signing-secret h3")).to_have_text("New webhook signing secret")
        new = page.locator("#signing-secret .secret").inner_text()
        assert SECRET.match(new) and new != first
        expect(page.locator("#previous-secret")).to_contain_text("The previous secret also signs until")
        expect(page.locator("#signing-how-to")).to_contain_text("Signed webhooks and the delivery log")
        assert page.evaluate(LOW_CONTRAST) == []
        both_widths(page, "settings-signing-secret-rotated")

    # THEN a real webhook verifies with the new secret (and, for its 24 hours, with the old one)
    with WebhookReceiver() as receiver:
        r = httpx.post(f"{dev_stack.base_url}/jobs/execute/{tenant['slug']}/{engine['slug']}",
                       json={"inputs": INPUTS, "webhook_url": receiver.url}, headers=key, timeout=60)
        assert r.status_code == 202, r.text
        got = receiver.wait_for(1, timeout=300)[0]
    header = got["headers"]["Sheetcalc-Signature"]
    assert python_verify(new, header, got["raw"]) is True
    assert python_verify(first, header, got["raw"]) is True
    assert python_verify("whsec_" + "0" * 64, header, got["raw"]) is False
    # the new secret's signature comes first
    t, newest = header.split(",")[0].removeprefix("t="), header.split(",")[1].removeprefix("v1=")
    assert newest == hmac.new(new.encode(), f"{t}.".encode() + got["raw"], hashlib.sha256).hexdigest()


def test_a_completed_job_is_re_run_from_its_page_and_comes_out_identical(dev_stack):
    tenant, engine, key = deployed_loan(dev_stack, "rer")
    job = completed_job(dev_stack, tenant, engine, key)
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.goto(f"/dashboard/#/engines/{engine['id']}/jobs/{job['job_id']}")
        # The job's details carry the workbook's hash recorded at execute and the engine that calculated it
        facts = page.locator("#job-facts")
        expect(facts).to_contain_text(hashlib.sha256(LOAN.read_bytes()).hexdigest())
        expect(facts).to_contain_text("Calculation engine")
        calc_engine = facts.locator("dt", has_text="Calculation engine").locator("xpath=following-sibling::dd[1]").inner_text()
        assert calc_engine in ("ironcalc", "formulas"), calc_engine

        # WHEN the administrator re-runs it
        page.get_by_role("button", name="Re-run").click()
        # THEN the outputs are identical, with the same hash and engine as the job
        expect(page.locator("#rerun-verdict")).to_contain_text("Identical: every output came out exactly as the job recorded it.")
        expect(page.locator("#rerun-differences")).to_have_count(0)
        rows = page.locator("#rerun-context tbody tr")
        expect(rows.nth(0)).to_contain_text(hashlib.sha256(LOAN.read_bytes()).hexdigest())
        expect(rows.nth(0).locator("td").nth(2)).to_have_text("same")
        expect(rows.nth(1).locator("td").nth(0)).to_have_text(calc_engine)
        expect(rows.nth(1).locator("td").nth(1)).to_have_text(calc_engine)
        expect(rows.nth(1).locator("td").nth(2)).to_have_text("same")
        assert page.evaluate(LOW_CONTRAST) == []
        both_widths(page, "job-rerun")


def test_the_engine_page_snippets_wait_with_an_idempotency_key_and_fetch_the_contract(dev_stack):
    tenant, engine, key = deployed_loan(dev_stack, "snp")
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.get_by_role("link", name="Loan quote").click()
        page.get_by_role("link", name="Code", exact=True).click()
        wait = page.locator("#snippet-wait").inner_text()
        contract = page.locator("#snippet-openapi").inner_text()
        page.get_by_role("button", name="Copy OpenAPI contract").click()
        assert page.evaluate("navigator.clipboard.readText()") == contract
        both_widths(page, "engine-snippets")
    execute_url = f"{dev_stack.base_url}/jobs/execute/{tenant['slug']}/{engine['slug']}?wait=20"
    assert execute_url in wait and "Idempotency-Key: " in wait
    assert f"{dev_stack.base_url}/jobs/openapi/{tenant['slug']}/{engine['slug']}" in contract

    # The wait snippet runs as copied: the finished job in one call, or the usual 202 when the
    # machine is slower than 20 s; sent again with its key, it answers with the same job.
    script = wait.replace("YOUR_API_KEY", key["X-API-Key"])
    first, again = json.loads(run_snippet(["bash", "-c", script])), json.loads(run_snippet(["bash", "-c", script]))
    assert first["job_id"] == again["job_id"]
    assert first["status"] in ("completed", "pending", "processing"), first
    if first["status"] == "completed":
        assert "monthly_payment" in first["outputs"]

    # The contract's curl (its first command) saves the engine's OpenAPI document
    curl = next(line for line in contract.splitlines() if line.startswith("curl ")).replace("YOUR_API_KEY", key["X-API-Key"])
    document = json.loads(run_snippet(["bash", "-c", curl.split(" > ")[0]]))
    assert document["openapi"].startswith("3.1")
    assert f"/jobs/execute/{tenant['slug']}/{engine['slug']}" in document["paths"]


def recorded_outputs_changed(dev_stack, job_id: str, **changes) -> None:
    """Change what the dev stack's database recorded as a job's outputs, as if the workbook's
    answer had drifted since: the re-run then has something to tell apart."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    from shared.db.models import Job

    url = dev_stack.env.get("DATABASE_URL") or f"sqlite:///{(dev_stack.data_dir / 'sheetcalc.db').resolve()}"
    engine = create_engine(url)
    try:
        with Session(engine) as session:
            row = session.get(Job, uuid.UUID(job_id))
            row.outputs = {**row.outputs, **changes}
            session.commit()
    finally:
        engine.dispose()


def test_a_re_run_that_differs_names_the_outputs_beside_their_recorded_values(dev_stack):
    tenant, engine, key = deployed_loan(dev_stack, "dif")
    job = completed_job(dev_stack, tenant, engine, key)
    # GIVEN a job whose recorded monthly payment no longer is what its inputs calculate to
    recorded_outputs_changed(dev_stack, job["job_id"], monthly_payment=1.5)
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.goto(f"/dashboard/#/engines/{engine['id']}/jobs/{job['job_id']}")
        # WHEN it is re-run
        page.get_by_role("button", name="Re-run").click()
        # THEN the page says it differs, names the output, and shows both values
        expect(page.locator("#rerun-verdict")).to_have_text("Different: 1 output changed (monthly_payment).")
        row = page.locator("#rerun-differences tbody tr")
        expect(row).to_have_count(1)
        expect(row.locator("td").nth(0)).to_have_text("monthly_payment")
        expect(row.locator("td").nth(1)).to_have_text("1.5")
        expect(row.locator("td").nth(2)).to_have_text(json.dumps(job["outputs"]["monthly_payment"]))
        assert page.evaluate(LOW_CONTRAST) == []
        both_widths(page, "job-rerun-differs")
