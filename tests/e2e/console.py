"""Helpers shared by the console's Playwright tests: a headless Debian Chromium, a tenant whose
administrator has signed in, screenshots saved as test artefacts."""

from __future__ import annotations

import json
import os
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[2]
LOAN = REPO / "examples" / "loan-quote.xlsx"
# Screenshots of each page at laptop and phone widths; kept after the run as artefacts.
ARTEFACTS = Path(os.environ.get("SHEETCALC_E2E_ARTEFACTS", REPO / "tests" / "e2e" / "artefacts"))
LAPTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}
PASSWORD = "console-password-1"

MISSING_CHROMIUM = f"Debian's chromium is not installed at {CHROMIUM} (scripts/test.sh installs it when run as root)"
# Without it the console's tests are skipped on a developer's machine, but fail in CI (CI=true),
# where scripts/test.sh installs it: a missing browser must not pass for a tested console.
IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM) and not IN_CI, reason=MISSING_CHROMIUM)


@contextmanager
def browser_page(base_url: str, *, viewport: dict | None = None):
    """A page in a fresh headless Chromium whose relative URLs go to ``base_url``."""
    from playwright.sync_api import expect, sync_playwright

    if not os.path.exists(CHROMIUM):
        pytest.fail(MISSING_CHROMIUM, pytrace=False)
    expect.set_options(timeout=60000)  # only a hung page reaches it, not a busy machine
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"],
        )
        try:
            context = browser.new_context(base_url=base_url, viewport=viewport or LAPTOP, accept_downloads=True)
            context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url)
            page = context.new_page()
            page.set_default_timeout(60000)  # only a hung page reaches it, not a busy machine
            yield page
        finally:
            browser.close()


def new_tenant(dev_stack, prefix: str = "con") -> dict:
    """A tenant made with the CLI: slug, admin email and temporary password."""
    slug = f"{prefix}-{uuid.uuid4().hex[:6]}"
    made = dev_stack.cli("create-tenant", "--slug", slug, "--name", f"{prefix.title()} Co", "--admin-email",
                         f"admin@{slug}.example", "--data-dir", str(dev_stack.data_dir), timeout=120)
    assert made.returncode == 0, made.stderr
    return {"slug": slug, "email": f"admin@{slug}.example", "temporary_password": json.loads(made.stdout)["temporary_password"]}


@contextmanager
def api_session(dev_stack, tenant: dict):
    """An httpx client signed in as the tenant's administrator (the temporary password changed),
    closed after the block. Signing in in the browser later ends its session."""
    import httpx

    with httpx.Client(base_url=dev_stack.base_url, timeout=60) as client:
        r = client.post("/auth/login", json={"email": tenant["email"], "password": tenant["temporary_password"]})
        assert r.status_code == 200, r.text
        r = client.post("/auth/change-password", json={"current_password": tenant["temporary_password"], "new_password": PASSWORD})
        assert r.status_code == 200, r.text
        r = client.post("/auth/login", json={"email": tenant["email"], "password": PASSWORD})
        assert r.status_code == 200, r.text
        tenant["password"] = PASSWORD
        yield client


def sign_in(page, tenant: dict) -> None:
    """Sign in through the console's form with the tenant's (already changed) password."""
    page.goto("/dashboard/")
    page.get_by_label("Email").fill(tenant["email"])
    page.get_by_label("Password", exact=True).fill(tenant["password"])
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Engines", exact=True).wait_for()


def screenshot(page, name: str) -> None:
    """Save the page as ``<name>-<width>.png`` under the artefacts folder."""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTEFACTS / f"{name}-{page.viewport_size['width']}.png"), full_page=True)


def deployed_loan(dev_stack, prefix: str) -> tuple[dict, dict, dict]:
    """A new tenant with the loan workbook active and a consumer allowed everything: tenant, engine, key headers."""
    tenant = new_tenant(dev_stack, prefix)
    with api_session(dev_stack, tenant) as api:
        engine = api.post("/engines", json={"name": "Loan quote"}).json()
        v = api.post(f"/engines/{engine['id']}/versions", data={"version": "1.0"}, files={"file": ("loan.xlsx", LOAN.read_bytes())}).json()
        api.post(f"/engines/{engine['id']}/versions/{v['id']}/activate")
        consumer = api.post("/consumers", json={"name": "Pricing app"}).json()
        api.put(f"/engines/{engine['id']}/access/{consumer['id']}", json={"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True})
    return tenant, engine, {"X-API-Key": consumer["api_key"]}
