"""The console's lists, in real headless Chromium: a search over engines, consumers and users, the
tenant's jobs across its engines (search, status and engine filters), times in words with the
exact time on hover, a period without calls that says so, and the consumers' row actions on a
phone."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.console import (
    LOAN,
    PHONE,
    api_session,
    browser_page,
    needs_chromium,
    new_tenant,
    sign_in,
)

pytestmark = [pytest.mark.e2e, needs_chromium]

INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30, "start_date": "2026-01-01"}


def tenant_with_two_engines(dev_stack) -> tuple[dict, dict]:
    """Engines "Loan quote" and "Tax table" (the loan workbook both), consumers "Quote site" (allowed
    both) and "Broker portal", a second user; one job on the first engine, two on the second, all
    completed. Answers the tenant and {"engines": {name: id}, "jobs": [(engine name, job id)]} in order made."""
    tenant = new_tenant(dev_stack, "lst")
    ids = {}
    with api_session(dev_stack, tenant) as api:
        site = api.post("/consumers", json={"name": "Quote site"}).json()
        api.post("/consumers", json={"name": "Broker portal"})
        api.post("/users", json={"email": f"analyst@{tenant['slug']}.example"})
        for name in ("Loan quote", "Tax table"):
            engine = api.post("/engines", json={"name": name}).json()
            v = api.post(f"/engines/{engine['id']}/versions", data={"version": "1.0"}, files={"file": ("loan.xlsx", LOAN.read_bytes())}).json()
            assert api.post(f"/engines/{engine['id']}/versions/{v['id']}/activate").status_code == 200
            api.put(f"/engines/{engine['id']}/access/{site['id']}", json={"can_execute": True, "can_view_jobs": True})
            ids[name] = engine["id"], engine["slug"]
    jobs = []
    for name in ("Loan quote", "Tax table", "Tax table"):
        r = httpx.post(f"{dev_stack.base_url}/jobs/execute/{tenant['slug']}/{ids[name][1]}?wait=25", json={"inputs": INPUTS},
                       headers={"X-API-Key": site["api_key"]}, timeout=60)
        job = r.json()
        while job["status"] not in ("completed", "failed"):
            job = httpx.get(f"{dev_stack.base_url}/jobs/{job['job_id']}?wait=25", headers={"X-API-Key": site["api_key"]}, timeout=60).json()
        assert job["status"] == "completed", job
        jobs.append((name, job["job_id"]))
    return tenant, {"engines": {k: v[0] for k, v in ids.items()}, "jobs": jobs}


def test_searching_narrows_engines_consumers_and_users_and_survives_a_redraw(dev_stack):
    tenant, _ = tenant_with_two_engines(dev_stack)
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        # Engines by name or slug, every word typed
        page.get_by_label("Search engines").fill("tax")
        expect(page.locator("#engines tbody tr:visible")).to_have_count(1)
        expect(page.locator("#engines tbody tr:visible td").first).to_have_text("Tax table")
        expect(page.locator("#engine-search-count")).to_have_text("1 of 2 engines")
        page.get_by_label("Search engines").fill("loan-quote")
        expect(page.locator("#engines tbody tr:visible td").first).to_have_text("Loan quote")
        page.get_by_label("Search engines").fill("nothing like it")
        expect(page.locator("#engine-search-count")).to_have_text("No engines match “nothing like it”.")
        expect(page.locator("#engines")).to_be_hidden()
        # Consumers by name; the search stays when the page redraws after an action
        page.locator("#nav").get_by_role("link", name="Consumers").click()
        page.get_by_label("Search consumers").fill("BROKER")
        expect(page.locator("#consumers tbody tr:visible")).to_have_count(1)
        page.get_by_role("button", name="Deactivate Broker portal").click()
        expect(page.locator('#consumers tr[data-consumer="Broker portal"]')).to_contain_text("deactivated")
        expect(page.get_by_label("Search consumers")).to_have_value("BROKER")
        expect(page.locator("#consumers tbody tr:visible")).to_have_count(1)
        # Users by e-mail
        page.locator("#nav").get_by_role("link", name="Users").click()
        page.get_by_label("Search by e-mail").fill("analyst@")
        expect(page.locator("#users tbody tr:visible")).to_have_count(1)
        expect(page.locator("#users tbody tr:visible td").first).to_contain_text("analyst@")
        page.get_by_label("Search by e-mail").fill("")
        expect(page.locator("#users tbody tr:visible")).to_have_count(2)
        expect(page.locator("#user-search-count")).to_have_text("")


def test_the_jobs_page_lists_every_engines_jobs_and_filters_them(dev_stack):
    tenant, made = tenant_with_two_engines(dev_stack)
    newest = made["jobs"][-1][1]
    rows = "#tenant-jobs tbody tr"
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.locator("#nav").get_by_role("link", name="Jobs").click()
        page.get_by_role("heading", name="Jobs", exact=True).wait_for()
        # THEN the jobs of both engines, newest first, each naming its engine
        expect(page.locator(f"{rows} td:nth-child(2)")).to_have_text(["Tax table", "Tax table", "Loan quote"])
        expect(page.locator("#tenant-job-count")).to_have_text("1–3 of 3")
        # AND a time in words, the exact time on hover and the ISO time for machines
        created = page.locator(f"{rows} td:nth-child(6) time").first
        expect(created).to_have_text("just now")
        assert created.get_attribute("datetime").startswith("20") and created.get_attribute("title").endswith(" UTC")
        # WHEN filtered by a status no job has, THEN the list says so
        page.get_by_label("Status", exact=True).select_option("failed")
        expect(page.locator("#tenant-job-list")).to_have_text("No jobs match these filters.")
        # WHEN by status and engine, THEN that engine's jobs in that status
        page.get_by_label("Status", exact=True).select_option("completed")
        page.get_by_label("Engine", exact=True).select_option(label="Tax table")
        expect(page.locator(f"{rows} td:nth-child(2)")).to_have_text(["Tax table", "Tax table"])
        # WHEN searching by a consumer's name across all engines
        page.get_by_label("Status", exact=True).select_option("")
        page.get_by_label("Engine", exact=True).select_option("")
        page.get_by_label("Search", exact=True).fill("quote site")
        expect(page.locator(rows)).to_have_count(3)
        # or by an engine's name, or a job's id
        page.get_by_label("Search", exact=True).fill("loan")
        expect(page.locator(f"{rows} td:nth-child(2)")).to_have_text(["Loan quote"])
        page.get_by_label("Search", exact=True).fill(newest)
        expect(page.locator(f"{rows} td:nth-child(1)")).to_have_text([newest[:8]])
        # AND a job opens on its engine's job page
        page.locator(f"{rows} a").first.click()
        page.get_by_role("heading", name=f"Job {newest[:8]}").wait_for()
        # AND the filter is still there on the way back
        page.locator("#nav").get_by_role("link", name="Jobs").click()
        expect(page.get_by_label("Search", exact=True)).to_have_value(newest)
        expect(page.locator(rows)).to_have_count(1)


def test_a_period_without_calls_has_no_success_rate(dev_stack):
    tenant = new_tenant(dev_stack, "nocalls")
    with api_session(dev_stack, tenant):
        pass
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.locator("#nav").get_by_role("link", name="Statistics").click()
        card = page.locator("#summary .card", has=page.locator("dt", has_text="Success rate"))
        expect(card.locator("dd")).to_have_text("no calls")
        expect(page.locator("#summary .card", has=page.locator("dt", has_text="Calls")).first.locator("dd")).to_have_text("0")


def test_on_a_phone_each_consumers_actions_are_on_screen_and_work(dev_stack):
    tenant, _ = tenant_with_two_engines(dev_stack)
    with browser_page(dev_stack.base_url, viewport=PHONE) as page:
        sign_in(page, tenant)
        page.goto("/dashboard/#/consumers")
        page.get_by_role("heading", name="Consumers", exact=True).wait_for()
        for name in ("Quote site", "Broker portal"):
            for verb in ("Deactivate", "Delete"):
                button = page.get_by_role("button", name=f"{verb} {name}")
                box = button.bounding_box()
                assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], f"{verb} {name} is off screen: {box}"
                assert box["height"] >= 32, f"{verb} {name} is too small to tap: {box}"
        # WHEN tapped, without scrolling sideways
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        page.get_by_role("button", name="Deactivate Quote site").click()
        expect(page.locator('#consumers tr[data-consumer="Quote site"]')).to_contain_text("deactivated")
        page.get_by_role("button", name="Delete Broker portal").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(page.locator('#consumers tr[data-consumer="Broker portal"]')).to_have_count(0)
