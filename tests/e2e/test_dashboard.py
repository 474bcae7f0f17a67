"""The dashboard in real headless Chromium against `sheetcalc dev`: an administrator's first hour."""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
LOAN = Path(__file__).resolve().parents[2] / "examples" / "loan-quote.xlsx"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian chromium is not installed (scripts/test.sh installs it)"),
]


@pytest.fixture()
def page(dev_stack):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"],
        )
        context = browser.new_context(base_url=dev_stack.base_url)
        pg = context.new_page()
        pg.set_default_timeout(60000)  # only a hung page reaches it, not a busy machine
        yield pg
        browser.close()


def test_admin_logs_in_deploys_a_workbook_and_grants_a_consumer(dev_stack, page):
    slug = f"dash-{uuid.uuid4().hex[:6]}"
    made = dev_stack.cli("create-tenant", "--slug", slug, "--name", "Dash Co", "--admin-email", f"admin@{slug}.example",
                         "--data-dir", str(dev_stack.data_dir), timeout=120)
    temp = json.loads(made.stdout)["temporary_password"]

    # GIVEN a new administrator with a temporary password
    page.goto("/dashboard/")
    page.get_by_label("Email").fill(f"admin@{slug}.example")
    page.get_by_label("Password").fill(temp)
    page.get_by_role("button", name="Log in").click()
    # THEN the dashboard asks for a new password first
    page.get_by_label("New password").fill("dashboard-password-1")
    page.get_by_role("button", name="Change password").click()
    page.get_by_role("heading", name="Log in").wait_for()
    page.get_by_label("Email").fill(f"admin@{slug}.example")
    page.get_by_label("Password").fill("dashboard-password-1")
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Engines").wait_for()
    assert "No engines yet." in page.content()

    # WHEN they create an engine and upload the sample workbook
    page.get_by_label("Name").fill("Loan quote")
    page.get_by_role("button", name="Create engine").click()
    page.get_by_role("heading", name="Versions").wait_for()
    page.get_by_label("Version").fill("1.0")
    page.get_by_label("Workbook (.xlsx)").set_input_files(str(LOAN))
    page.get_by_role("button", name="Upload").click()
    key = page.locator("#test-key .secret").inner_text()
    assert key.startswith(f"{slug}_")
    assert "monthly_payment (output)" in page.locator("#versions").inner_text()
    page.get_by_role("button", name="Activate").click()
    page.locator("#versions .badge", has_text="active").wait_for()

    # AND create a consumer, whose key is shown once, and grant it access
    page.get_by_role("link", name="Consumers").click()
    page.get_by_label("Name").fill("Quote site")
    page.get_by_role("button", name="Create consumer").click()
    api_key = page.locator("#new-key .secret").inner_text()
    assert api_key.startswith(f"{slug}_")
    page.get_by_role("link", name="Engines").click()
    page.get_by_role("link", name="Loan quote").click()
    page.get_by_role("button", name="Grant access").click()
    page.locator("#access", has_text="Quote site").wait_for()

    # THEN the consumer can execute the engine with that key
    import httpx

    r = httpx.post(f"{dev_stack.base_url}/jobs/execute/{slug}/loan-quote", headers={"X-API-Key": api_key},
                   json={"inputs": {"principal": 1000, "annual_rate": 0.12, "years": 1}})
    assert r.status_code == 202, r.text

    # AND a wrong upload shows the service's clear message
    page.get_by_label("Version").fill("2.0")
    page.get_by_label("Workbook (.xlsx)").set_input_files({"name": "bad.xlsx", "mimeType": "application/octet-stream", "buffer": b"not a workbook"})
    page.get_by_role("button", name="Upload").click()
    page.get_by_role("alert").filter(has_text=re.compile("not a readable .xlsx", re.I)).wait_for()

    # AND logging out ends the session
    page.get_by_role("button", name="Log out").click()
    page.get_by_role("heading", name="Log in").wait_for()
