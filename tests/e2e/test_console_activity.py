"""What the engines are doing, in the console: an engine's jobs filtered and paged, the
statistics over a date range with sortable breakdowns, consumers deactivated, reactivated and
deleted."""

from __future__ import annotations

import time

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.console import LOAN, api_session, browser_page, needs_chromium, new_tenant, sign_in

pytestmark = [pytest.mark.e2e, needs_chromium]

ALL = {"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}
INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10, "start_date": "2026-01-01"}


def run_jobs(base_url: str, path: str, key: str, n: int) -> list[str]:
    """``n`` executions with ``key``, each waited for (hang-sized deadline)."""
    ids = []
    with httpx.Client(base_url=base_url, headers={"X-API-Key": key}, timeout=60) as client:
        for _ in range(n):
            r = client.post(path, json={"inputs": INPUTS})
            assert r.status_code == 202, r.text
            ids.append(r.json()["job_id"])
        deadline = time.monotonic() + 120
        for job_id in ids:
            while client.get(f"/jobs/{job_id}").json()["status"] != "completed":
                assert time.monotonic() < deadline, f"job {job_id} did not complete"
                time.sleep(0.2)
    return ids


def test_jobs_statistics_and_consumers(dev_stack):
    tenant = new_tenant(dev_stack, "act")
    with api_session(dev_stack, tenant) as api:
        engine = api.post("/engines", json={"name": "Loan quote"}).json()
        v = api.post(f"/engines/{engine['id']}/versions", data={"version": "1.0"}, files={"file": ("loan.xlsx", LOAN.read_bytes())}).json()
        api.post(f"/engines/{engine['id']}/versions/{v['id']}/activate")
        keys = {}
        for name in ("Alpha app", "Beta app"):
            c = api.post("/consumers", json={"name": name}).json()
            api.put(f"/engines/{engine['id']}/access/{c['id']}", json=ALL)
            keys[name] = c["api_key"]
    path = f"/jobs/execute/{tenant['slug']}/{engine['slug']}"
    run_jobs(dev_stack.base_url, path, keys["Alpha app"], 22)
    run_jobs(dev_stack.base_url, path, keys["Beta app"], 3)

    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        # The list shows the last 7 days' calls
        expect(page.locator("#engines tbody tr")).to_contain_text("25")

        # Jobs: 20 a page, paged, filtered by status
        page.goto(f"/dashboard/#/engines/{engine['id']}/jobs")
        expect(page.locator("#job-count")).to_have_text("1–20 of 25")
        expect(page.locator("#jobs tbody tr")).to_have_count(20)
        page.get_by_role("button", name="Next").click()
        expect(page.locator("#job-count")).to_have_text("21–25 of 25")
        expect(page.get_by_role("button", name="Next")).to_be_disabled()
        page.get_by_label("Status").select_option("failed")
        expect(page.locator("#job-list")).to_have_text("No failed jobs.")
        page.get_by_label("Status").select_option("completed")
        expect(page.locator("#job-count")).to_have_text("1–20 of 25")

        # Statistics: breakdowns sort by any column
        page.get_by_role("link", name="Statistics").click()
        first_consumer = page.locator("#by-consumer tbody tr").first
        expect(first_consumer).to_contain_text("Alpha app")  # most calls first, as the API lists them
        page.locator("#by-consumer").get_by_role("button", name="Calls").click()
        expect(first_consumer).to_contain_text("Beta app")  # ascending: 3 calls before 22
        expect(page.locator("#by-consumer th", has_text="Calls")).to_have_attribute("aria-sort", "ascending")
        page.locator("#by-consumer").get_by_role("button", name="Consumer").click()
        page.locator("#by-consumer").get_by_role("button", name="Consumer").click()
        expect(first_consumer).to_contain_text("Beta app")  # names descending
        assert page.locator("#summary").inner_text().count("25") >= 1
        # a date range without calls, and one that is backwards
        page.get_by_label("From", exact=True).fill("2026-01-01")
        page.get_by_label("To", exact=True).fill("2026-01-31")
        page.get_by_role("button", name="Show").click()
        expect(page.locator("#calls-chart")).to_have_attribute("aria-label", "Calls per day from 2026-01-01 to 2026-01-31: 0 calls")
        expect(page.locator("#calls-chart g.day")).to_have_count(31)
        page.get_by_label("From", exact=True).fill("2026-02-01")
        page.get_by_role("button", name="Show").click()
        expect(page.locator('#range [data-field="start"] .field-error')).to_have_text("after the end date")
        # an engine's view, from its breakdown row
        page.get_by_label("From", exact=True).fill("2026-01-01")
        page.get_by_label("To", exact=True).fill(time.strftime("%Y-%m-%d", time.gmtime()))
        page.get_by_role("button", name="Show").click()
        page.locator("#by-engine").get_by_role("link", name="Loan quote").click()
        page.get_by_role("heading", name="Statistics of Loan quote").wait_for()
        expect(page.locator("#by-version")).to_contain_text("1.0 (active)")

        # Consumers: deactivating stops the key at once, reactivating restores it
        page.get_by_role("link", name="Consumers").click()
        page.get_by_role("button", name="Deactivate Beta app").click()
        expect(page.locator('#consumers tr[data-consumer="Beta app"]')).to_contain_text("deactivated")
        assert httpx.post(f"{dev_stack.base_url}{path}", json={"inputs": INPUTS}, headers={"X-API-Key": keys["Beta app"]}).status_code == 401
        page.get_by_role("button", name="Reactivate Beta app").click()
        expect(page.locator('#consumers tr[data-consumer="Beta app"]')).to_contain_text("active")
        assert httpx.post(f"{dev_stack.base_url}{path}", json={"inputs": INPUTS}, headers={"X-API-Key": keys["Beta app"]}).status_code == 202
        # and deleting, after confirming, removes it from the list and the matrix
        page.get_by_role("button", name="Delete Beta app").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(page.locator('#consumers tr[data-consumer="Beta app"]')).to_have_count(0)
        expect(page.locator('#matrix tr[data-consumer="Beta app"]')).to_have_count(0)
