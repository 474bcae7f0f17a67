"""An engine's page in the console: copy-ready snippets that run as copied (Code tab), version
deletion after confirming (Versions tab), the fidelity report with its differing cells and the
engine override, and deleting the engine (Settings tab, danger zone)."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import zipfile

import httpx
import pytest
from openpyxl import Workbook
from openpyxl.workbook.defined_name import DefinedName
from playwright.sync_api import expect

from tests.e2e.console import LOAN, api_session, browser_page, deployed_loan, needs_chromium, new_tenant, sign_in

pytestmark = [pytest.mark.e2e, needs_chromium]

ALL = {"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}


def workbook_saved_with(cached: str, flagged_output: bool = False) -> bytes:
    """A workbook whose formula B2 (=B1*2, B1 = 21) was saved with ``cached`` as its value, as a
    file last saved by another program might be: the fidelity check must show the difference.
    With `flagged_output`, its output z (C1) is calculated with a TEXT format code the service
    does not implement."""
    wb = Workbook()
    ws = wb.active
    ws.title = "Calc"
    ws["B1"] = 21
    ws["B2"] = "=B1*2"
    wb.defined_names["x"] = DefinedName("x", attr_text="Calc!$B$1")
    wb.defined_names["y"] = DefinedName("y", attr_text="Calc!$B$2")
    if flagged_output:
        ws["C1"] = '=TEXT(B1,"[DBNum1]0")'
        wb.defined_names["z"] = DefinedName("z", attr_text="Calc!$C$1")
    buf = io.BytesIO()
    wb.save(buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(b"<f>B1*2</f><v />", b"<f>B1*2</f><v>" + cached.encode() + b"</v>")
                assert cached.encode() in data
            dst.writestr(item, data)
    return out.getvalue()


def run_snippet(args: list[str]) -> str:
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_an_engines_page_from_snippets_to_deletion(dev_stack):
    tenant = new_tenant(dev_stack, "eng")
    with api_session(dev_stack, tenant) as api:
        engine = api.post("/engines", json={"name": "Loan quote"}).json()
        v1 = api.post(f"/engines/{engine['id']}/versions", data={"version": "1.0"}, files={"file": ("loan.xlsx", LOAN.read_bytes())}).json()
        api.post(f"/engines/{engine['id']}/versions", data={"version": "2.0"}, files={"file": ("loan.xlsx", LOAN.read_bytes())})
        api.post(f"/engines/{engine['id']}/versions/{v1['id']}/activate")
        consumer = api.post("/consumers", json={"name": "Quote site"}).json()
        api.put(f"/engines/{engine['id']}/access/{consumer['id']}", json=ALL)
        odd = api.post("/engines", json={"name": "Odd"}).json()
        odd_v = api.post(f"/engines/{odd['id']}/versions", data={"version": "1"}, files={"file": ("odd.xlsx", workbook_saved_with("43", flagged_output=True))}).json()

    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.get_by_role("link", name="Loan quote").click()
        page.get_by_role("link", name="Code", exact=True).click()

        # The snippets carry the engine's real URL and run as copied, once the key is filled in
        curl = page.locator("#snippet-curl").inner_text()
        assert f"{dev_stack.base_url}/jobs/execute/{tenant['slug']}/loan-quote" in curl
        page.get_by_role("button", name="Copy curl").click()
        assert page.evaluate("navigator.clipboard.readText()") == curl
        execute = curl.split("\n\n")[0].replace("YOUR_API_KEY", consumer["api_key"])
        job = json.loads(run_snippet(["bash", "-c", execute]))
        assert job["status"] == "pending"
        python = page.locator("#snippet-python").inner_text().replace("YOUR_API_KEY", consumer["api_key"])
        printed = run_snippet([sys.executable, "-c", python]).splitlines()
        assert "monthly_payment" in printed[0] and printed[1].startswith("http")

        # A version is deleted only after confirming
        page.get_by_role("link", name="Versions", exact=True).click()
        row = page.locator('#versions tr[data-version="2.0"]')
        row.get_by_role("button", name="Delete version 2.0").click()
        page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
        expect(row).to_have_count(1)
        row.get_by_role("button", name="Delete version 2.0").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(row).to_have_count(0)
        page.locator("#toast", has_text="Version 2.0 deleted").wait_for()
        # and the active one offers no delete
        expect(page.locator('#versions tr[data-version="1.0"]').get_by_role("button", name=re.compile("Delete"))).to_have_count(0)

        # The fidelity report lists the differing cell with the file's value and ours
        page.goto(f"/dashboard/#/engines/{odd['id']}/versions/{odd_v['id']}/fidelity")
        differing = page.locator("#mismatches tbody tr")
        expect(differing).to_have_count(1)
        cells = [c.inner_text() for c in differing.locator("td").all()]
        assert cells[0] == "Calc" and cells[1] == "B2" and "B1*2" in cells[2] and cells[3] == "43" and cells[4] == "42"
        # and names the output calculated from a cell the service cannot reproduce
        expect(page.locator("#flagged-outputs")).to_contain_text("z: calculated from Calc!C1")
        # and the engine can be pinned
        page.get_by_label("Calculation engine").select_option("formulas")
        page.get_by_role("button", name="Pin engine").click()
        expect(page.locator("#fidelity-summary")).to_contain_text("formulas (pinned)")

        # Deleting the engine, from its settings' danger zone after confirming, takes it off the list
        page.goto(f"/dashboard/#/engines/{odd['id']}/settings")
        page.locator("#danger-zone").get_by_role("button", name="Delete engine").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        page.get_by_role("heading", name="Engines", exact=True).wait_for()
        expect(page.locator("#engines")).not_to_contain_text("Odd")
        expect(page.locator("#engines")).to_contain_text("Loan quote")


TABS = ["Overview", "Versions", "Schema", "Code", "Access", "Tests", "Settings"]


def test_the_engine_page_is_seven_tabs_under_one_header(dev_stack):
    tenant, engine, _key = deployed_loan(dev_stack, "tabs")
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.get_by_role("link", name="Loan quote").click()
        tabs = page.get_by_role("navigation", name="Sections of Loan quote")
        expect(tabs.get_by_role("link")).to_have_text(TABS)
        # GIVEN an engine with a version, it opens on its overview
        expect(tabs.locator("[aria-current=page]")).to_have_text("Overview")
        expect(page.locator("#engine-facts")).to_contain_text("Consumers with access")
        for name in TABS:
            # WHEN a tab is chosen, THEN it has its own address and is marked as the current one
            tabs.get_by_role("link", name=name).click()
            expect(page).to_have_url(re.compile(f"#/engines/{engine['id']}/{name.lower()}$"))
            expect(tabs.locator("[aria-current=page]")).to_have_text(name)
            # AND the header's actions are there on every tab
            expect(page.locator("#engine-actions").get_by_role("link")).to_have_text(["Try the active version", "Upload a version", "Jobs", "Statistics", "Export"])
            # AND no tab is the long scroll the page used to be (3,100 px at this width)
            assert page.evaluate("document.documentElement.scrollHeight") < 2000, name
        # The settings end with the danger zone
        expect(page.locator("main section").last).to_have_id("danger-zone")
        # AND the engine opens again on the tab last shown
        page.get_by_role("link", name="Engines", exact=True).first.click()
        page.get_by_role("link", name="Loan quote").click()
        expect(tabs.locator("[aria-current=page]")).to_have_text("Settings")


def test_times_read_as_how_long_ago_with_the_exact_time_at_hand(dev_stack):
    tenant, _engine, key = deployed_loan(dev_stack, "ago")
    r = httpx.post(f"{dev_stack.base_url}/jobs/execute/{tenant['slug']}/loan-quote", headers=key, timeout=60,
                   json={"inputs": {"principal": 250000, "annual_rate": 0.045, "years": 30, "start_date": "2026-01-01"}})
    assert r.status_code == 202, r.text
    with browser_page(dev_stack.base_url) as page:
        sign_in(page, tenant)
        page.get_by_role("link", name="Consumers").click()
        last_used = page.locator('#consumers tr[data-consumer="Pricing app"] time')
        expect(last_used).to_have_text("just now")
        expect(last_used).to_have_attribute("title", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d UTC$"))
        words = page.evaluate("""async () => { const { ago } = await import('./lib.js'); const now = Date.parse('2026-05-10T12:00:00Z');
            return ['2026-05-10T11:57:00Z', '2026-05-10T09:00:00Z', '2026-05-09T11:00:00Z', '2026-04-10T12:00:00Z', '2026-05-10T12:02:00Z', null]
              .map(t => { const x = ago(t, now); return typeof x === 'string' ? x : x.textContent; }); }""")
        assert words == ["3 minutes ago", "3 hours ago", "yesterday", "last month", "just now", "never"]
