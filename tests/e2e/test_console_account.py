"""Actions the API has that the console now offers, in real headless Chromium: changing your own
password, changing another user's e-mail, removing a consumer's access outright (on the engine's
page and in the access matrix), and downloading an engine's OpenAPI contract without a key."""

from __future__ import annotations

import json
from pathlib import Path

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

INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10, "start_date": "2026-01-01"}


def login(base_url: str, email: str, password: str) -> httpx.Response:
    return httpx.post(f"{base_url}/auth/login", json={"email": email, "password": password}, timeout=60)


def test_own_password_and_another_users_email(dev_stack):
    tenant = new_tenant(dev_stack, "acct")
    with api_session(dev_stack, tenant) as api:
        analyst = api.post("/users", json={"email": f"analyst@{tenant['slug']}.example"}).json()
    new_email = f"pricing@{tenant['slug']}.example"
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.get_by_role("link", name="Users").click()
        # WHEN the e-mail of another user is changed to one that is taken, THEN the dialog says so beside it
        page.get_by_role("button", name=f"Change the e-mail of {analyst['user']['email']}").click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_label("New e-mail").fill(tenant["email"])
        dialog.get_by_role("button", name="Save e-mail").click()
        expect(dialog.locator('[data-field="email"] .field-error')).not_to_be_empty()
        expect(dialog.locator(".form-error")).to_have_text("")
        # AND to a free one, it is saved: the list shows it and the user signs in with it
        dialog.get_by_label("New e-mail").fill(new_email)
        dialog.get_by_role("button", name="Save e-mail").click()
        expect(dialog).to_have_count(0)
        expect(page.locator(f'#users tr[data-user="{new_email}"]')).to_have_count(1)
        assert login(dev_stack.base_url, new_email, analyst["temporary_password"]).status_code == 200

        # WHEN the administrator changes their own password with a wrong current one, THEN it is said beside it
        account = page.locator("#own-password")
        account.get_by_label("Current password").fill("not-my-password")
        account.get_by_label("New password").fill("a-new-password-2")
        page.get_by_role("button", name="Change your password").click()
        expect(account.locator('[data-field="current_password"] .field-error')).to_have_text("Current password is incorrect")
        # AND with the right one, the session ends and the sign-in screen says why
        account.get_by_label("Current password").fill(tenant["password"])
        page.get_by_role("button", name="Change your password").click()
        expect(page.locator("#login-notice")).to_have_text("Password changed. Log in with your new password.")
        assert login(dev_stack.base_url, tenant["email"], tenant["password"]).status_code == 401
        sign_in(page, {**tenant, "password": "a-new-password-2"})


def test_access_is_removed_outright_and_the_contract_downloaded(dev_stack):
    tenant, engine, key = deployed_loan(dev_stack, "grant")
    execute = f"{dev_stack.base_url}/jobs/execute/{tenant['slug']}/{engine['slug']}"
    consumers_copy = httpx.get(f"{dev_stack.base_url}/jobs/openapi/{tenant['slug']}/{engine['slug']}", headers=key, timeout=60).json()
    with httpx.Client(base_url=dev_stack.base_url, timeout=60) as api:  # before the browser signs in, which ends this session
        assert api.post("/auth/login", json={"email": tenant["email"], "password": tenant["password"]}).status_code == 200
        other = api.post("/consumers", json={"name": "Reporting"}).json()
        api.put(f"/engines/{engine['id']}/access/{other['id']}", json={"can_execute": True})
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.get_by_role("link", name="Loan quote").click()
        page.get_by_role("link", name="Code", exact=True).click()
        # WHEN the administrator downloads the engine's contract from its page
        with page.expect_download() as download:
            page.get_by_role("button", name="Download the OpenAPI contract").click()
        # THEN it is the document the engine's consumers get with their key
        assert download.value.suggested_filename == f"{engine['slug']}.openapi.json"
        assert json.loads(Path(download.value.path()).read_text()) == consumers_copy

        # WHEN a consumer's access is removed on the engine's page, after confirming
        page.get_by_role("link", name="Access", exact=True).click()
        row = page.locator('#access tr[data-consumer="Pricing app"]')
        row.get_by_role("button", name="Remove Pricing app's access to Loan quote").click()
        page.get_by_role("dialog").get_by_role("button", name="Remove").click()
        # THEN the grant is gone, and the key no longer reaches the engine
        expect(row).to_have_count(0)
        assert httpx.post(execute, json={"inputs": INPUTS}, headers=key, timeout=60).status_code == 403

        # AND in the access matrix, a grant is removed the same way
        page.get_by_role("link", name="Consumers").click()
        cell = page.locator('#matrix tr[data-consumer="Reporting"] td[data-engine="Loan quote"]')
        expect(cell.get_by_label("Execute")).to_be_checked()
        cell.get_by_role("button", name="Remove Reporting's access to Loan quote").click()
        page.get_by_role("dialog").get_by_role("button", name="Remove").click()
        expect(cell.get_by_label("Execute")).not_to_be_checked()
        expect(cell.get_by_role("button")).to_have_count(0)
        assert httpx.post(execute, json={"inputs": INPUTS}, headers={"X-API-Key": other["api_key"]}, timeout=60).status_code == 403
