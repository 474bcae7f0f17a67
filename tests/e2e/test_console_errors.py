"""Errors in the console: the API's message in plain words beside what caused it, and nothing the
administrator typed is lost: a wrong password, a duplicate slug, an invalid schema, a file that
is not a workbook, an address that is not one."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.console import LOAN, api_session, browser_page, needs_chromium, new_tenant, sign_in

pytestmark = [pytest.mark.e2e, needs_chromium]


def field_error(page, form: str, name: str):
    return page.locator(f'{form} [data-field="{name}"] .field-error')


def test_errors_are_shown_beside_their_cause_and_keep_what_was_typed(dev_stack):
    tenant = new_tenant(dev_stack, "err")
    with api_session(dev_stack, tenant) as api:  # signing in in the browser ends this session
        engine = api.post("/engines", json={"name": "Loan quote"}).json()
        version = api.post(f"/engines/{engine['id']}/versions", data={"version": "1.0"},
                           files={"file": ("loan-quote.xlsx", LOAN.read_bytes())}).json()

    with browser_page(dev_stack.base_url) as page:
        # A wrong password: the service's message, and the email stays
        page.goto("/dashboard/")
        page.get_by_label("Email").fill(tenant["email"])
        page.get_by_label("Password", exact=True).fill("not-the-password")
        page.get_by_role("button", name="Log in").click()
        page.locator("#login .error", has_text="Invalid email or password").wait_for()
        assert page.get_by_label("Email").input_value() == tenant["email"]
        sign_in(page, tenant)

        # A duplicate slug: said beside the slug; the name typed stays
        page.locator("#new-engine").get_by_label("Name").fill("Loan quote again")
        page.locator("#new-engine").get_by_label("Slug (optional)").fill("loan-quote")
        page.get_by_role("button", name="Create engine").click()
        expect(field_error(page, "#new-engine", "slug")).to_have_text("An engine with slug 'loan-quote' already exists")
        expect(page.locator("#new-engine").get_by_label("Slug (optional)")).to_have_attribute("aria-invalid", "true")
        assert page.locator("#new-engine").get_by_label("Name").input_value() == "Loan quote again"

        # An invalid schema: JSON that does not parse is caught as it is typed; a schema the
        # service refuses is explained beside it, and the text stays for fixing
        page.goto(f"/dashboard/#/engines/{engine['id']}/versions/{version['id']}/schemas")
        schema = page.get_by_label("Input schema (JSON Schema Draft 7)")
        schema.fill('{"type": "object",')
        expect(field_error(page, "#schemas", "input_schema")).to_contain_text("Not valid JSON")
        schema.fill('{"type": "nonsense"}')
        page.get_by_role("button", name="Save schemas").click()
        message = field_error(page, "#schemas", "input_schema")
        message.filter(has_text="input_schema is not a valid JSON Schema (Draft 7)").wait_for()
        assert schema.input_value() == '{"type": "nonsense"}'

        # A file that is not a workbook: the service's message beside the file; the version stays
        page.goto(f"/dashboard/#/engines/{engine['id']}")
        page.get_by_label("Version", exact=True).fill("2.0")
        page.locator("#workbook-file").set_input_files(
            {"name": "notes.xlsx", "mimeType": "application/octet-stream", "buffer": b"these are notes, not a workbook"})
        page.get_by_role("button", name="Upload").click()
        field_error(page, "#upload", "file").filter(has_text="not a readable .xlsx").wait_for()
        assert page.get_by_label("Version", exact=True).input_value() == "2.0"
        assert page.locator("#versions tbody tr").count() == 1

        # An address that is not one: flagged while typing, nothing sent until it is fixed
        allowed = page.get_by_label("Allowed addresses (one per line)")
        allowed.fill("203.0.113.7\n10.0.0.300")
        expect(field_error(page, "#engine-settings", "ip_whitelist")).to_have_text("'10.0.0.300' is not an IPv4 or IPv6 address")
        page.get_by_role("button", name="Save settings").click()
        page.locator("#engine-settings > .error", has_text="Fix the allowed addresses").wait_for()
        page.reload()
        expect(allowed).to_have_value("")  # nothing was saved
        allowed.fill("203.0.113.7\n10.0.0.300")
        allowed.fill("203.0.113.7\n10.0.0.0/8")
        expect(field_error(page, "#engine-settings", "ip_whitelist")).to_have_text("")
        page.get_by_role("button", name="Save settings").click()
        page.locator("#toast", has_text="Settings saved").wait_for()
        page.reload()
        expect(allowed).to_have_value("203.0.113.7\n10.0.0.0/8")
