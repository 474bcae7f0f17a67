"""An administrator's first day in the console, in real headless Chromium against `sheetcalc dev`:
sign in, change the temporary password, create an engine, upload the sample workbook by drag and
drop, accept the suggested schema, try it, activate, create a consumer and copy its key, grant
access in the matrix; then a consumer calls the engine over HTTP and the job and the statistics
chart appear in the console."""

from __future__ import annotations

import base64
import time

import httpx
import pytest

from tests.e2e.console import LOAN, browser_page, needs_chromium, new_tenant

pytestmark = [pytest.mark.e2e, needs_chromium]

PASSWORD = "first-day-password-1"
INPUTS = {"principal": "250000", "annual_rate": "0.045", "years": "30", "start_date": "2026-01-01"}
# Excel's PMT(4.5%/12, 360, -250000), the sample workbook's monthly payment, as the console shows it.
MONTHLY_PAYMENT = "1,266.71"


def drop_file(page, selector: str, path, name: str) -> None:
    """Drag a file from the desktop onto an element: a real DataTransfer in a drop event."""
    data = base64.b64encode(path.read_bytes()).decode()
    page.evaluate(
        """([selector, data, name]) => {
          const bytes = Uint8Array.from(atob(data), c => c.charCodeAt(0));
          const dt = new DataTransfer();
          dt.items.add(new File([bytes], name, { type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" }));
          const target = document.querySelector(selector);
          for (const type of ["dragenter", "dragover", "drop"]) target.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
        }""",
        [selector, data, name],
    )


def test_an_administrators_first_day(dev_stack):
    tenant = new_tenant(dev_stack, "day")
    with browser_page(dev_stack.base_url) as page:
        # GIVEN a new administrator with a temporary password, who must change it first
        page.goto("/dashboard/")
        page.get_by_label("Email").fill(tenant["email"])
        page.get_by_label("Password", exact=True).fill(tenant["temporary_password"])
        page.get_by_role("button", name="Log in").click()
        page.get_by_label("New password").fill(PASSWORD)
        page.get_by_role("button", name="Change password").click()
        page.get_by_role("heading", name="Log in").wait_for()
        page.get_by_label("Email").fill(tenant["email"])
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.get_by_role("heading", name="Engines", exact=True).wait_for()
        assert page.get_by_text("No engines yet.").is_visible()

        # WHEN they create an engine and drop the sample workbook on it
        page.locator("#new-engine").get_by_label("Name").fill("Loan quote")
        page.get_by_role("button", name="Create engine").click()
        page.get_by_role("heading", name="Versions").wait_for()
        page.get_by_label("Version", exact=True).fill("1.0")
        drop_file(page, "#drop-zone", LOAN, "loan-quote.xlsx")
        assert page.locator("#drop-zone .chosen").inner_text() == "loan-quote.xlsx"
        page.get_by_role("button", name="Upload").click()
        # THEN its test key is shown once, with the warning, and its named ranges are listed
        assert page.locator("#test-key .secret").inner_text().startswith(f"{tenant['slug']}_")
        assert "will not be shown again" in page.locator("#test-key").inner_text()
        ranges = page.locator("#ranges").inner_text()
        assert "monthly_payment" in ranges and "12 × 4 block" in ranges

        # WHEN they accept the schema suggested from the workbook
        page.locator("#upload-result").get_by_role("link", name="Set its schemas").click()
        page.get_by_role("button", name="Use the suggested schema").click()
        assert '"format": "date"' in page.get_by_label("Input schema (JSON Schema Draft 7)").input_value()
        page.get_by_role("button", name="Save schemas").click()
        page.locator("#schema-warnings", has_text="match the workbook").wait_for()

        # AND try it: the form follows the schema, and the monthly payment is Excel's
        page.get_by_role("link", name="Loan quote").click()
        page.locator("#versions").get_by_role("link", name="Try it").click()
        for name, value in INPUTS.items():
            page.get_by_label(name, exact=True).fill(value)
        page.get_by_role("button", name="Run").click()
        assert page.locator('#outputs [data-output="monthly_payment"]').inner_text() == MONTHLY_PAYMENT
        assert "Calculated in" in page.locator("#timing").inner_text()
        page.get_by_role("button", name="Download the filled workbook").click()
        href = page.locator("#download-link").get_attribute("href")
        assert httpx.get(href, timeout=60).content[:2] == b"PK"

        # AND activate the version
        page.get_by_role("link", name="Loan quote").click()
        page.locator("#versions").get_by_role("button", name="Activate").click()
        page.locator("#versions .badge", has_text="active").wait_for()

        # AND create a consumer, whose key is shown once and copied with the button
        page.get_by_role("link", name="Consumers").click()
        page.locator("#new-consumer").get_by_label("Name").fill("Quote site")
        page.get_by_role("button", name="Create consumer").click()
        api_key = page.locator("#new-key .secret").inner_text()
        assert api_key.startswith(f"{tenant['slug']}_")
        assert "will not be shown again" in page.locator("#new-key").inner_text()
        page.locator("#new-key").get_by_role("button", name="Copy").click()
        assert page.evaluate("navigator.clipboard.readText()") == api_key

        # AND grant it execute access in the matrix
        cell = page.locator('#matrix tr[data-consumer="Quote site"] td[data-engine="Loan quote"]')
        cell.get_by_label("Execute").check()
        page.locator("#toast", has_text="Execute granted to Quote site on Loan quote").wait_for()

        # THEN the consumer can execute the engine over HTTP with that key
        r = httpx.post(f"{dev_stack.base_url}/jobs/execute/{tenant['slug']}/loan-quote", headers={"X-API-Key": api_key},
                       json={"inputs": {"principal": 250000, "annual_rate": 0.045, "years": 30, "start_date": "2026-01-01"}}, timeout=60)
        assert r.status_code == 202, r.text
        job_id = r.json()["job_id"]

        # AND the job appears in the console, completed, with its outputs
        page.get_by_role("link", name="Engines", exact=True).click()
        page.get_by_role("link", name="Loan quote").click()
        page.locator("#engine-actions").get_by_role("link", name="Jobs", exact=True).click()  # the menu has a Jobs of its own
        row = page.locator("#jobs tr", has_text="Quote site")
        deadline = time.monotonic() + 60  # hang-sized: the job takes milliseconds
        while "completed" not in (row.inner_text() if row.count() else "") and time.monotonic() < deadline:
            page.reload()
            page.get_by_role("heading", name="Jobs of Loan quote").wait_for()
        row.get_by_role("link", name=job_id[:8]).click()
        assert "Quote site" in page.locator("#job-facts").inner_text()
        # shaped as Try it shows them, the raw JSON a click away
        assert page.locator('#job-outputs [data-output="monthly_payment"]').inner_text() == MONTHLY_PAYMENT
        assert page.locator('#job-outputs [data-output="schedule"] table tr').count() == 12  # the 12 × 4 block, as a table
        outputs = page.get_by_role("heading", name="Outputs", exact=True).locator("xpath=..")
        outputs.get_by_text("Raw JSON").click()
        assert '"monthly_payment": 1266.71' in outputs.inner_text()

        # AND the statistics chart shows today's calls: the try-it run and the consumer's call
        page.get_by_role("link", name="Statistics").click()
        today = time.strftime("%Y-%m-%d", time.gmtime())
        assert page.locator(f'#calls-chart g.day[data-date="{today}"] title').text_content() == f"{today}: 2 calls, 2 successful, 0 failed"
        assert float(page.locator(f'#calls-chart g.day[data-date="{today}"] rect.ok').get_attribute("height")) > 0
        assert "Quote site" in page.locator("#by-consumer").inner_text()
        assert page.locator("#summary").get_by_text("Test calls").is_visible()
