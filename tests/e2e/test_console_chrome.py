"""The console's frame, in real headless Chromium: the menu only for a signed-in administrator, the
slug's rule checked by the browser before anything is sent, an icon for the browser's tab (and at
/favicon.ico), no request of any page failing, and the statistics chart's y axis in round steps."""

from __future__ import annotations

import itertools

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.console import (
    api_session,
    browser_page,
    deployed_loan,
    needs_chromium,
    new_tenant,
    sign_in,
)

pytestmark = [pytest.mark.e2e, needs_chromium]

SLUG_RULE = "Use lower-case letters, digits and hyphens only (for example loan-quote)."
INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10, "start_date": "2026-01-01"}


def page_errors(page) -> list[str]:
    """Uncaught script errors of the page, collected from now on."""
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def test_the_menu_shows_only_to_a_signed_in_administrator(dev_stack):
    tenant = new_tenant(dev_stack, "nav")
    with browser_page(dev_stack.base_url) as page:
        errors = page_errors(page)
        # GIVEN the sign-in screen: no menu, no Log out
        page.goto("/dashboard/")
        page.get_by_role("heading", name="Log in").wait_for()
        expect(page.locator("#nav")).to_be_hidden()
        expect(page.get_by_role("button", name="Log out")).to_be_hidden()
        # AND none on the screen that asks for a new password
        page.get_by_label("Email").fill(tenant["email"])
        page.get_by_label("Password", exact=True).fill(tenant["temporary_password"])
        page.get_by_role("button", name="Log in").click()
        page.get_by_role("heading", name="Choose a new password").wait_for()
        expect(page.locator("#nav")).to_be_hidden()
        page.get_by_label("New password").fill("menu-password-1")
        page.get_by_role("button", name="Change password").click()
        # THEN the sign-in screen says why it is back
        expect(page.locator("#login-notice")).to_have_text("Password changed. Log in with your new password.")
        expect(page.locator("#nav")).to_be_hidden()
        # WHEN signed in, the menu and Log out show
        sign_in(page, {**tenant, "password": "menu-password-1"})
        expect(page.get_by_role("link", name="Consumers")).to_be_visible()
        expect(page.get_by_role("button", name="Log out")).to_be_visible()
        # AND logging out hides them again, saying so
        page.get_by_role("button", name="Log out").click()
        expect(page.locator("#login-notice")).to_have_text("You are logged out.")
        expect(page.locator("#nav")).to_be_hidden()
        assert errors == []


def test_a_slug_that_breaks_the_rule_is_refused_beside_the_field_before_anything_is_sent(dev_stack):
    tenant = new_tenant(dev_stack, "slug")
    with api_session(dev_stack, tenant):
        pass  # the temporary password changed
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        # The slug's pattern is one the browser compiles (with the v flag, as it does for `pattern`)
        assert page.evaluate("() => [...document.querySelectorAll('input[pattern]')].map(i => new RegExp(`^(?:${i.pattern})$`, 'v').test('loan-quote'))") == [True, True]  # the new engine's slug, and an import's
        sent: list[str] = []
        page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)
        # WHEN a slug with capitals and a space is typed
        form = page.locator("#new-engine")
        form.get_by_label("Name").fill("Loan quote")
        form.get_by_label("Slug (optional)").fill("Loan Quote")
        page.get_by_role("button", name="Create engine").click()
        # THEN the rule is said once, beside the slug, which has the focus, and nothing was sent
        expect(form.locator('[data-field="slug"] .field-error')).to_have_text(SLUG_RULE)
        expect(form.get_by_label("Slug (optional)")).to_have_attribute("aria-invalid", "true")
        expect(form.get_by_label("Slug (optional)")).to_be_focused()
        expect(form.locator(".form-error")).to_have_text("")
        assert sent == []
        # AND a slug that fits is accepted
        form.get_by_label("Slug (optional)").fill("loan-quote")
        page.get_by_role("button", name="Create engine").click()
        page.get_by_role("heading", name="Versions").wait_for()
        # AND the engine's settings check the slug the same way
        page.locator("nav.tabs").get_by_role("link", name="Settings").click()
        settings = page.locator("#engine-settings")
        settings.get_by_label("Slug").fill("loan_quote")
        page.get_by_role("button", name="Save settings").click()
        expect(settings.locator('[data-field="slug"] .field-error')).to_have_text(SLUG_RULE)


def test_every_page_has_an_icon_and_no_request_fails(dev_stack):
    tenant, engine, _key = deployed_loan(dev_stack, "ico")
    with browser_page(dev_stack.base_url) as page:
        errors = page_errors(page)
        sign_in(page, tenant)
        failed: list[str] = []
        page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        for route in ("#/engines", f"#/engines/{engine['id']}", f"#/engines/{engine['id']}/jobs", "#/stats", "#/consumers", "#/users", "#/settings"):
            page.goto(f"/dashboard/{route}")
            page.locator("main h2").first.wait_for()
            page.locator("main .loading").first.wait_for(state="detached")
            # THEN the console names its icon, and the icon is there
            assert page.evaluate("fetch(document.querySelector('link[rel=icon]').href).then(r => [r.status, r.headers.get('content-type')])") == [200, "image/svg+xml"]
        # AND so is the one browsers ask every other page's host for
        icon = page.request.get("/favicon.ico")
        assert (icon.status, icon.headers["content-type"]) == (200, "image/x-icon")
        assert failed == [] and errors == []


def test_the_chart_y_axis_counts_in_round_steps(dev_stack):
    tenant, engine, key = deployed_loan(dev_stack, "tick")
    # GIVEN three calls today
    for _ in range(3):
        r = httpx.post(f"{dev_stack.base_url}/jobs/execute/{tenant['slug']}/{engine['slug']}", json={"inputs": INPUTS}, headers=key, timeout=60)
        assert r.status_code == 202, r.text
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.get_by_role("link", name="Statistics").click()
        # THEN the y axis reads 0 1 2 3, not 0 2 3
        expect(page.locator("#calls-chart g.tick text")).to_have_text(["0", "1", "2", "3"])
        # AND for any count the labels start at 0, go up in one round step, and the last reaches it
        ticks = page.evaluate("""async () => { const { niceTicks } = await import('./chart.js');
            return Object.fromEntries([0, 1, 2, 3, 4, 5, 7, 10, 13, 25, 99, 101, 1234].map(n => [n, niceTicks(n)])); }""")
        for n, labels in ticks.items():
            steps = {b - a for a, b in itertools.pairwise(labels)}
            assert labels[0] == 0 and len(steps) == 1 and labels[-1] >= int(n) and 2 <= len(labels) <= 5, (n, labels)
            (step,) = steps
            assert str(step).rstrip("0") in ("1", "2", "5"), (n, labels)
        assert ticks["3"] == [0, 1, 2, 3] and ticks["25"] == [0, 10, 20, 30]
