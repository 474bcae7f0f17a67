"""Each main page of the console at laptop and phone width: saved as a screenshot (a test
artefact under tests/e2e/artefacts/), with nothing wider than the screen (tables scroll in
their own box), a heading, and every form control labelled."""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.console import LAPTOP, LOAN, PHONE, api_session, browser_page, needs_chromium, new_tenant, screenshot, sign_in

pytestmark = [pytest.mark.e2e, needs_chromium]

UNLABELLED = """() => [...document.querySelectorAll('main input, main select, main textarea')]
  .filter(el => el.type !== 'hidden' && !el.labels.length && !el.getAttribute('aria-label') && !el.closest('[hidden]'))
  .map(el => el.name || el.id)"""


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_each_main_page_fits_the_screen(dev_stack, viewport):
    tenant = new_tenant(dev_stack, "scr")
    with api_session(dev_stack, tenant) as api:
        engine = api.post("/engines", json={"name": "Loan quote", "description": "Monthly payment of a fixed-rate loan"}).json()
        v = api.post(f"/engines/{engine['id']}/versions", data={"version": "1.0"}, files={"file": ("loan-quote.xlsx", LOAN.read_bytes())}).json()
        api.post(f"/engines/{engine['id']}/versions/{v['id']}/activate")
        consumer = api.post("/consumers", json={"name": "Quote site"}).json()
        api.put(f"/engines/{engine['id']}/access/{consumer['id']}", json={"can_execute": True, "can_view_jobs": True})
        job = httpx.post(f"{dev_stack.base_url}/jobs/execute/{tenant['slug']}/loan-quote", headers={"X-API-Key": consumer["api_key"]},
                         json={"inputs": {"principal": 250000, "annual_rate": 0.045, "years": 30, "start_date": "2026-01-01"}}).json()
    pages = {
        "engines": "#/engines", "engine": f"#/engines/{engine['id']}/overview",
        **{f"engine-{tab}": f"#/engines/{engine['id']}/{tab}" for tab in ("versions", "schema", "code", "access", "settings")},
        "jobs": f"#/engines/{engine['id']}/jobs",
        "job": f"#/engines/{engine['id']}/jobs/{job['job_id']}", "try-it": f"#/engines/{engine['id']}/versions/{v['id']}/try",
        "schemas": f"#/engines/{engine['id']}/versions/{v['id']}/schemas", "fidelity": f"#/engines/{engine['id']}/versions/{v['id']}/fidelity",
        "statistics": "#/stats", "consumers": "#/consumers", "users": "#/users", "settings": "#/settings",
    }
    with browser_page(dev_stack.base_url, viewport=viewport) as page:
        sign_in(page, tenant)
        for name, route in pages.items():
            page.goto(f"/dashboard/{route}")
            page.locator("main h2").first.wait_for()
            page.locator("main .loading").first.wait_for(state="detached")
            screenshot(page, name)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= viewport["width"], f"{name} is {width}px wide on a {viewport['width']}px screen"
            assert page.evaluate(UNLABELLED) == [], f"{name} has unlabelled controls"
