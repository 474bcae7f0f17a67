"""A version compared in the console: "Compare…" lists what changed from the active version, and
"Replay…" replays recorded production jobs on it, with progress and then the report."""

from __future__ import annotations

import io

import httpx
import openpyxl
import pytest
from playwright.sync_api import expect

from tests.e2e.console import LOAN, browser_page, deployed_loan, needs_chromium, sign_in

pytestmark = [pytest.mark.e2e, needs_chromium]


def plus_100() -> bytes:
    book = openpyxl.load_workbook(io.BytesIO(LOAN.read_bytes()))
    book["Quote"]["B10"] = "=monthly_payment*years*12+100"
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def test_compare_and_replay_a_candidate_version(dev_stack):
    tenant, engine, key = deployed_loan(dev_stack, "rpl")
    # GIVEN three completed production jobs and a candidate whose total paid is 100 more
    with httpx.Client(base_url=dev_stack.base_url, timeout=60) as consumer:
        for principal in (1000, 2000, 3000):
            r = consumer.post(f"/jobs/execute/{tenant['slug']}/{engine['slug']}", params={"wait": 20}, headers=key,
                              json={"inputs": {"principal": principal, "annual_rate": 0.05, "years": 10}})
            assert r.json()["status"] == "completed", r.text
    with httpx.Client(base_url=dev_stack.base_url, timeout=60) as api:
        api.post("/auth/login", json={"email": tenant["email"], "password": tenant["password"]}).raise_for_status()
        api.post(f"/engines/{engine['id']}/versions", data={"version": "2.0"}, files={"file": ("loan2.xlsx", plus_100())}).raise_for_status()

    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.goto(f"/dashboard/#/engines/{engine['id']}/versions")
        row = page.locator('#versions tr[data-version="2.0"]')
        # WHEN the administrator compares 2.0 with the active version
        row.get_by_role("link", name="Compare…").click()
        # THEN the edited formula is listed with both texts
        cells = page.locator(".diff-sheet[data-sheet='Quote']")
        expect(cells).to_contain_text("1 formula and 0 constants changed")
        expect(cells.locator("tr", has_text="B10")).to_contain_text("=monthly_payment*years*12+100")
        expect(page.get_by_text("No named range changed.")).to_be_visible()

        # WHEN they replay the three jobs on it, exactly
        page.goto(f"/dashboard/#/engines/{engine['id']}/versions")
        page.locator('#versions tr[data-version="2.0"]').get_by_role("link", name="Replay…").click()
        page.get_by_label("Jobs to replay").fill("3")
        page.get_by_role("button", name="Start replay").click()
        # THEN the report comes: three cases changed, total paid moved by 100 in each
        expect(page.locator("#replay-status")).to_contain_text("3 changed", timeout=60_000)
        expect(page.locator('#replay-counts [data-count="changed"] dd')).to_have_text("3")
        paid = page.locator('#replay-outputs tr[data-output="total_paid"]')
        expect(paid).to_contain_text("exact")
        expect(page.locator('#replay-outputs tr[data-output="monthly_payment"] td').nth(2)).to_have_text("3")
        expect(page.locator("#replay-cases tbody tr")).to_have_count(3)
        expect(page.locator("#replays tbody tr")).to_have_count(1)
