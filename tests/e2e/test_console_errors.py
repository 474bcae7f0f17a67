"""Errors in the console: the API's message in plain words, once, beside what caused it, and
nothing the administrator typed is lost: a wrong password, a duplicate slug, an invalid schema, a
file that is not a workbook, an address that is not one, an input Try it's run was refused for;
a success box from before is not left beside a later failure; a session ended by a sign-in
elsewhere says so."""

from __future__ import annotations

import httpx
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
        expect(page.locator("#new-engine .form-error")).to_have_text("")  # once, beside the slug
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
        page.goto(f"/dashboard/#/engines/{engine['id']}/versions")
        page.get_by_label("Version", exact=True).fill("2.0")
        page.locator("#workbook-file").set_input_files(
            {"name": "notes.xlsx", "mimeType": "application/octet-stream", "buffer": b"these are notes, not a workbook"})
        page.get_by_role("button", name="Upload").click()
        field_error(page, "#upload", "file").filter(has_text="not a readable .xlsx").wait_for()
        assert page.get_by_label("Version", exact=True).input_value() == "2.0"
        assert page.locator("#versions tbody tr").count() == 1

        # An address that is not one: flagged while typing, nothing sent until it is fixed
        page.locator("nav.tabs").get_by_role("link", name="Settings").click()
        allowed = page.get_by_label("Allowed addresses (one per line)")
        allowed.fill("203.0.113.7\n10.0.0.300")
        expect(field_error(page, "#engine-settings", "ip_whitelist")).to_have_text("'10.0.0.300' is not an IPv4 or IPv6 address")
        page.get_by_role("button", name="Save settings").click()
        # said once, beside the field (not repeated under the button)
        expect(field_error(page, "#engine-settings", "ip_whitelist")).to_have_text("'10.0.0.300' is not an IPv4 or IPv6 address")
        expect(page.locator("#engine-settings .form-error")).to_have_text("")
        page.reload()
        expect(allowed).to_have_value("")  # nothing was saved
        allowed.fill("203.0.113.7\n10.0.0.300")
        allowed.fill("203.0.113.7\n10.0.0.0/8")
        expect(field_error(page, "#engine-settings", "ip_whitelist")).to_have_text("")
        page.get_by_role("button", name="Save settings").click()
        page.locator("#toast", has_text="Settings saved").wait_for()
        page.reload()
        expect(allowed).to_have_value("203.0.113.7\n10.0.0.0/8")


# An input schema the browser cannot check in full: "multipleOf" is the service's alone.
YEARS_IN_FIVES = {
    "type": "object",
    "properties": {"principal": {"type": "number"}, "annual_rate": {"type": "number"},
                   "years": {"type": "integer", "multipleOf": 5}, "start_date": {"type": "string", "format": "date"}},
    "required": ["principal", "annual_rate", "years", "start_date"],
}


def test_a_refused_run_a_failed_upload_and_an_ended_session_each_say_so_in_their_place(dev_stack):
    tenant = new_tenant(dev_stack, "once")
    with api_session(dev_stack, tenant) as api:
        engine = api.post("/engines", json={"name": "Loan quote"}).json()
        version = api.post(f"/engines/{engine['id']}/versions", data={"version": "1.0"},
                           files={"file": ("loan-quote.xlsx", LOAN.read_bytes())}).json()
        assert api.patch(f"/engines/{engine['id']}/versions/{version['id']}", json={"input_schema": YEARS_IN_FIVES}).status_code == 200

    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        # WHEN Try it runs with inputs the service refuses (years must come in fives)
        page.goto(f"/dashboard/#/engines/{engine['id']}/versions/{version['id']}/try")
        for name, value in {"principal": "250000", "annual_rate": "0.045", "years": "7", "start_date": "2026-01-01"}.items():
            page.get_by_label(name, exact=True).fill(value)
        page.get_by_role("button", name="Run").click()
        # THEN the service's reason is shown beside the years, once, and the years have the focus
        expect(field_error(page, "#try", "years")).to_have_text("7 is not a multiple of 5")
        expect(page.locator("#try .form-error")).to_have_text("")
        expect(page.get_by_label("years", exact=True)).to_be_focused()
        # AND fixed, it runs
        page.get_by_label("years", exact=True).fill("30")
        page.get_by_role("button", name="Run").click()
        expect(page.locator('#outputs [data-output="monthly_payment"]')).to_have_text("1,266.71")
        expect(field_error(page, "#try", "years")).to_have_text("")

        # GIVEN a version uploaded in the console, its test key shown
        page.goto(f"/dashboard/#/engines/{engine['id']}/versions")
        page.get_by_label("Version", exact=True).fill("2.0")
        page.locator("#workbook-file").set_input_files(str(LOAN))
        page.get_by_role("button", name="Upload").click()
        expect(page.locator("#test-key")).to_contain_text("Version 2.0 uploaded")
        # WHEN the next upload fails
        page.get_by_label("Version", exact=True).fill("3.0")
        page.locator("#workbook-file").set_input_files(
            {"name": "notes.xlsx", "mimeType": "application/octet-stream", "buffer": b"these are notes, not a workbook"})
        page.get_by_role("button", name="Upload").click()
        # THEN its error is beside the file, and the earlier success is not left standing beside it
        field_error(page, "#upload", "file").filter(has_text="not a readable .xlsx").wait_for()
        expect(page.locator("#upload-result")).to_be_empty()
        expect(page.locator("#upload .form-error")).to_have_text("")

        # WHEN the same administrator signs in elsewhere, this session ends, and the console says why
        assert httpx.post(f"{dev_stack.base_url}/auth/login", json={"email": tenant["email"], "password": tenant["password"]}).status_code == 200
        page.get_by_role("link", name="Consumers").click()
        expect(page.locator("#login-notice")).to_contain_text("signed in somewhere else")
        expect(page.locator("#nav")).to_be_hidden()
        # AND signing in again leads on
        sign_in(page, tenant)
