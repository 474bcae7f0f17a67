"""Safe releases in the console, on ``sheetcalc dev``: a completed job made a test case from its
page, more cases imported from a CSV file, a run on a new version showing expected, got and the
difference, the activation dialog showing the gate's refusal and taking an override reason, and
the release history with a rollback through the same gate."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.console import LOAN, browser_page, deployed_loan, needs_chromium, screenshot, sign_in
from tests.e2e.test_console_signing_rerun import completed_job

pytestmark = [pytest.mark.e2e, needs_chromium]

# A case whose expected payment is deliberately wrong: it fails on every version.
CSV = b"case.name,principal,annual_rate,years,expected.monthly_payment\nwrong on purpose,100000,0.05,10,1.0\n"


def test_cases_gate_activation_and_the_history_records_override_and_rollback(dev_stack):
    tenant, engine, key = deployed_loan(dev_stack, "rel")
    job = completed_job(dev_stack, tenant, engine, key)
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        # GIVEN a completed job, made a test case from its page
        page.goto(f"/dashboard/#/engines/{engine['id']}/jobs/{job['job_id']}")
        page.get_by_role("button", name="Make it a test case").click()
        expect(page.locator("#test-cases")).to_contain_text(f"Job {job['job_id'][:8]}")
        # AND a failing case imported from a CSV file
        page.locator("#import-test-cases input[type=file]").set_input_files(
            {"name": "cases.csv", "mimeType": "text/csv", "buffer": CSV})
        page.locator("#import-test-cases").get_by_role("button", name="Import").click()
        expect(page.locator("#test-cases")).to_contain_text("wrong on purpose")

    # WHEN version 2.0 is uploaded (its tests run in the background)
    with httpx.Client(base_url=dev_stack.base_url, timeout=60) as api:
        assert api.post("/auth/login", json={"email": tenant["email"], "password": tenant["password"]}).status_code == 200
        r = api.post(f"/engines/{engine['id']}/versions", data={"version": "2.0"}, files={"file": ("loan.xlsx", LOAN.read_bytes())})
        assert r.status_code == 201, r.text
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.goto(f"/dashboard/#/engines/{engine['id']}/tests")
        # THEN running its tests shows each output's expected value, the value got and the verdict
        page.locator("#test-version").select_option(label="2.0")
        page.get_by_role("button", name="Run tests").click()
        expect(page.locator("#test-verdict")).to_contain_text("Failed: 1 of 2 failed")
        wrong = page.locator('#test-results tr[data-case="wrong on purpose"][data-output="monthly_payment"]')
        expect(wrong).to_contain_text("changed")
        expect(wrong.locator("td").nth(2)).to_have_text("1")
        screenshot(page, "engine-tests")

        # WHEN 2.0 is activated, the dialog shows the gate's refusal; a reason activates it anyway
        page.get_by_role("link", name="Versions", exact=True).click()
        page.locator('#versions tr[data-version="2.0"]').get_by_role("button", name="Activate").click()
        dialog = page.get_by_role("dialog")
        expect(dialog.locator("#gate-reasons")).to_contain_text("1 of 2 test cases failed")
        dialog.get_by_label("Reason for activating anyway").fill("Known difference, accepted by finance")
        dialog.get_by_role("button", name="Activate anyway").click()
        page.locator('#versions tr[data-version="2.0"] .badge', has_text="active").wait_for()

        # THEN the history records the override; rolling back to 1.0 goes through the same gate
        page.get_by_role("link", name="Tests", exact=True).click()
        first = page.locator("#releases tbody tr").first
        expect(first).to_contain_text("2.0")
        expect(first).to_contain_text("Known difference, accepted by finance")
        page.get_by_role("button", name="Roll back to 1.0").click()
        dialog = page.get_by_role("dialog")
        expect(dialog.locator("#gate-reasons")).to_contain_text("have not been run on this version")
        dialog.get_by_label("Reason for activating anyway").fill("Rolling back")
        dialog.get_by_role("button", name="Activate anyway").click()
        expect(page.locator("#releases tbody tr").first).to_contain_text("Rolling back")
        rows = page.locator("#releases tbody tr")
        expect(rows).to_have_count(3)  # 1.0 at deploy, 2.0, then 1.0 again
        screenshot(page, "engine-releases")
