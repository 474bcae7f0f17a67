"""Honest empty states in the console, in real headless Chromium: a new tenant's first-run
checklist ticked from what the tenant has really done, the statistics of a period without calls,
and a fidelity report that says what it compared and what it could not."""

from __future__ import annotations

from contextlib import contextmanager

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.console import (
    LOAN,
    PASSWORD,
    api_session,
    browser_page,
    deployed_loan,
    needs_chromium,
    new_tenant,
    sign_in,
)
from tests.e2e.test_console_engines import workbook_saved_with

pytestmark = [pytest.mark.e2e, needs_chromium]

STEPS = ["engine", "upload", "activate", "consumer", "key", "call"]
INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10, "start_date": "2026-01-01"}


@contextmanager
def second_administrator(dev_stack, tenant: dict):
    """A client signed in as another administrator of the tenant: it acts while the browser's
    administrator watches (one session per user, so not the browser's own user)."""
    with api_session(dev_stack, tenant) as api:
        made = api.post("/users", json={"email": f"second@{tenant['slug']}.example"}).json()
    with httpx.Client(base_url=dev_stack.base_url, timeout=60) as client:
        email, temporary = made["user"]["email"], made["temporary_password"]
        assert client.post("/auth/login", json={"email": email, "password": temporary}).status_code == 200
        assert client.post("/auth/change-password", json={"current_password": temporary, "new_password": PASSWORD}).status_code == 200
        assert client.post("/auth/login", json={"email": email, "password": PASSWORD}).status_code == 200
        yield client


def ticked(page) -> list[str]:
    page.reload()
    page.get_by_role("heading", name="Engines", exact=True).wait_for()
    return page.locator("#first-run li.done").evaluate_all("els => els.map(e => e.dataset.step)")


def test_a_new_tenant_is_walked_from_nothing_to_a_first_call(dev_stack):
    tenant = new_tenant(dev_stack, "new")
    with second_administrator(dev_stack, tenant) as api, browser_page(dev_stack.base_url) as page:
        # GIVEN a tenant that has nothing yet: six steps, none done
        sign_in(page, tenant)
        checklist = page.locator("#first-run")
        expect(checklist.get_by_role("heading", name="Get started")).to_be_visible()
        expect(checklist.locator("li")).to_have_count(6)
        expect(checklist.locator("#first-run-count")).to_have_text("0 of 6 steps done.")
        assert ticked(page) == []
        # AND its statistics say there were no calls, not a success rate of 0%
        page.get_by_role("link", name="Statistics").click()
        expect(page.locator("#summary .card", has_text="Success rate").locator("dd")).to_have_text("no calls")
        page.get_by_role("link", name="Engines", exact=True).click()

        # WHEN each step is done (by another administrator), THEN it is ticked, in order
        engine = api.post("/engines", json={"name": "Loan quote"}).json()
        assert ticked(page) == STEPS[:1]
        version = api.post(f"/engines/{engine['id']}/versions", data={"version": "1.0"}, files={"file": ("loan.xlsx", LOAN.read_bytes())}).json()
        assert ticked(page) == STEPS[:2]
        api.post(f"/engines/{engine['id']}/versions/{version['id']}/activate")
        assert ticked(page) == STEPS[:3]
        consumer = api.post("/consumers", json={"name": "Quote site"}).json()
        assert ticked(page) == STEPS[:4]
        api.put(f"/engines/{engine['id']}/access/{consumer['id']}", json={"can_execute": True})
        assert ticked(page) == STEPS[:5]
        expect(checklist.locator("#first-run-count")).to_have_text("5 of 6 steps done.")
        # AND a step's link leads to where it is done
        expect(checklist.locator('li[data-step="call"]').get_by_role("link", name="See the snippets")).to_have_attribute("href", f"#/engines/{engine['id']}")
        # WHEN the consumer makes its first call, THEN the checklist has done its work and goes
        r = httpx.post(f"{dev_stack.base_url}/jobs/execute/{tenant['slug']}/loan-quote", json={"inputs": INPUTS},
                       headers={"X-API-Key": consumer["api_key"]}, timeout=60)
        assert r.status_code == 202, r.text
        page.reload()
        page.get_by_role("heading", name="Engines", exact=True).wait_for()
        expect(page.locator("#engines")).to_contain_text("Loan quote")
        expect(checklist).to_have_count(0)


def test_the_fidelity_page_says_what_was_compared_and_what_was_not(dev_stack):
    tenant, engine, _key = deployed_loan(dev_stack, "fid")
    with httpx.Client(base_url=dev_stack.base_url, timeout=60) as api:  # before the browser signs in, which ends this session
        assert api.post("/auth/login", json={"email": tenant["email"], "password": tenant["password"]}).status_code == 200
        checked = api.post("/engines", json={"name": "Checked"}).json()
        checked_v = api.post(f"/engines/{checked['id']}/versions", data={"version": "1"}, files={"file": ("checked.xlsx", workbook_saved_with("42"))}).json()
        loan = api.get(f"/engines/{engine['id']}").json()["versions"][0]
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        # GIVEN the sample workbook, which carries no values computed by Excel
        page.goto(f"/dashboard/#/engines/{engine['id']}/versions")
        expect(page.locator('#versions tr[data-version="1.0"]')).to_contain_text("not compared with Excel")
        page.goto(f"/dashboard/#/engines/{engine['id']}/versions/{loan['id']}/fidelity")
        # THEN its report does not claim a match: nothing was compared, and it says why
        expect(page.locator("#fidelity-verdict")).to_contain_text("No formula cell could be compared with Excel")
        expect(page.locator('#fidelity-skipped li[data-reason="no_cached_value"]')).to_contain_text("No value saved by Excel")
        expect(page.locator("main")).not_to_contain_text("Every compared cell matches Excel")
        expect(page.locator("main")).not_to_contain_text("match the values Excel saved")
        # WHEN a workbook that does carry Excel's value is checked, THEN the match is stated with its count
        page.goto(f"/dashboard/#/engines/{checked['id']}/versions/{checked_v['id']}/fidelity")
        expect(page.locator("#fidelity-verdict")).to_have_text("The one compared formula cell matches the value Excel saved.")
        expect(page.locator("#fidelity-skipped")).to_have_count(0)
