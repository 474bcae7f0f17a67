"""Settings and users in the console: document storage saved against the Microsoft Graph
stand-in, a site and drive discovered and picked, a version's copy status; a user created and
their password reset; the administrator's own row left alone."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.console import LOAN, api_session, browser_page, needs_chromium, new_tenant, sign_in
from tests.e2e.conftest import REPO, DevStack, _stop, _wait_until_ready, dev_stack_env, free_port
from tests.graph_standin import GraphStandin

pytestmark = [pytest.mark.e2e, needs_chromium]

SITES = [{"id": f"contoso.sharepoint.com,{uuid.UUID(int=i)},{uuid.UUID(int=100 + i)}", "name": f"site{i}",
          "displayName": f"Site {i}", "webUrl": f"https://contoso.sharepoint.com/sites/site{i}"} for i in range(3)]
DRIVES = [{"id": "b!finance-docs", "name": "Documents", "driveType": "documentLibrary", "webUrl": "https://contoso.sharepoint.com/sites/site1/Docs"},
          {"id": "b!finance-models", "name": "Models", "driveType": "documentLibrary", "webUrl": "https://contoso.sharepoint.com/sites/site1/Models"}]


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    server = GraphStandin(tmp_path_factory.mktemp("graph"), page_size=2).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def graph_dev_stack(tmp_path_factory, graph):
    """``sheetcalc dev`` pointed at the Graph stand-in (and trusting its certificate)."""
    root = tmp_path_factory.mktemp("graph-dev-stack")
    env = {**dev_stack_env(), "SHEETCALC_GRAPH_AUTHORITY_HOST": graph.authority_host, "SHEETCALC_GRAPH_BASE_URL": graph.graph_base_url,
           "SSL_CERT_FILE": str(graph.cert_path), "REQUESTS_CA_BUNDLE": str(graph.cert_path)}
    port = free_port()
    log_path = root / "dev-stack.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "shared.cli", "dev", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(root / "data")],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    stack = DevStack(f"http://127.0.0.1:{port}", root / "data", process, log_path, env)
    try:
        _wait_until_ready(stack)
        yield stack
    finally:
        _stop(stack)


def test_storage_is_set_up_from_the_console_and_each_versions_copy_is_shown(graph_dev_stack, graph):
    directory = f"{uuid.uuid4().hex[:12]}.onmicrosoft.com"
    app = graph.add_directory(directory, client_id=str(uuid.uuid4()), client_secret=f"secret~{uuid.uuid4().hex}",
                              sites=SITES, drives={SITES[1]["id"]: DRIVES})
    tenant = new_tenant(graph_dev_stack, "set")
    with api_session(graph_dev_stack, tenant):
        pass  # the temporary password changed
    with browser_page(graph_dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.get_by_role("link", name="Settings").click()
        # The tenant's name
        page.get_by_label("Tenant name").fill("Set Co Insurance")
        page.get_by_role("button", name="Save name").click()
        page.locator("#toast", has_text="Name saved").wait_for()
        # WHEN the administrator saves the app registration's credentials
        page.get_by_label("Client (application) ID").fill(app.client_id)
        page.get_by_label("Directory (tenant) ID").fill(directory)
        page.get_by_label("Client secret").fill(app.client_secret)
        page.get_by_role("button", name="Save credentials").click()
        # THEN the secret reads masked, and the connection test passes
        expect(page.get_by_label("Client secret")).to_have_value("********")
        page.get_by_role("button", name="Test connection").click()
        expect(page.locator("#storage-result .ok")).to_be_visible()
        # WHEN they discover the sites and pick a document library
        page.get_by_role("button", name="Discover sites").click()
        page.get_by_label("SharePoint site").select_option(label="Site 1")
        page.get_by_role("button", name="Show document libraries").click()
        page.get_by_label("Document library").select_option(label="Models")
        page.get_by_role("button", name="Use this library").click()
        expect(page.locator("#chosen-drive")).to_have_text("Copies go to Models on Site 1.")
        # AND upload a version: its copy goes to that library, and Settings shows where
        page.get_by_role("link", name="Engines").click()
        page.locator("#new-engine").get_by_label("Name").fill("Loan quote")
        page.get_by_role("button", name="Create engine").click()
        page.get_by_label("Version", exact=True).fill("1.0")
        page.locator("#workbook-file").set_input_files(str(LOAN))
        page.get_by_role("button", name="Upload").click()
        page.locator("#test-key").wait_for()
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
        row = page.locator("#copies tbody tr", has_text="Loan quote")
        deadline = time.monotonic() + 60  # hang-sized: the checks queue copies it in well under a second
        while "stored" not in row.inner_text() and time.monotonic() < deadline:
            page.reload()
            page.locator("#copies").wait_for()
        expect(row).to_contain_text("stored")
        expect(row).to_contain_text("sheetcalc/loan-quote/1.0/loan-quote.xlsx")
    assert ("b!finance-models", "sheetcalc/loan-quote/1.0/loan-quote.xlsx") in graph.files


def test_users_are_created_and_reset_and_the_own_row_is_left_alone(dev_stack):
    tenant = new_tenant(dev_stack, "usr")
    with api_session(dev_stack, tenant):
        pass  # the temporary password changed
    email = f"analyst@{tenant['slug']}.example"
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.get_by_role("link", name="Users").click()
        own = page.locator(f'#users tr[data-user="{tenant["email"]}"]')
        expect(own).to_contain_text("Your own account: change your password under Your account.")
        assert own.get_by_role("button").count() == 0
        # WHEN they create a user, the temporary password is shown once
        page.locator("#new-user").get_by_label("Email").fill(email)
        page.get_by_role("button", name="Create user").click()
        first = page.locator("#temp-password .secret").inner_text()
        assert "will not be shown again" in page.locator("#temp-password").inner_text()
        # AND resetting their password (after confirming) shows a new one, which works
        page.get_by_role("button", name=f"Reset password of {email}").click()
        page.get_by_role("dialog").get_by_role("button", name="Reset").click()
        expect(page.locator("#temp-password h3")).to_have_text(f"New temporary password for {email}")
        second = page.locator("#temp-password .secret").inner_text()
        assert second != first
        assert httpx.post(f"{dev_stack.base_url}/auth/login", json={"email": email, "password": first}).status_code == 401
        login = httpx.post(f"{dev_stack.base_url}/auth/login", json={"email": email, "password": second})
        assert login.status_code == 200 and login.json()["must_change_password"] is True
        # AND deactivating and deleting (after confirming) take effect
        page.get_by_role("button", name=f"Deactivate {email}").click()
        expect(page.locator(f'#users tr[data-user="{email}"]')).to_contain_text("deactivated")
        page.get_by_role("button", name=f"Delete {email}").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(page.locator(f'#users tr[data-user="{email}"]')).to_have_count(0)
