"""Each main page of the console at laptop (1280×800) and phone (390×844) width, measured in the DOM:
nothing wider than the screen (tables scroll in their own box), no element past the screen's edge,
a heading, every form control labelled, and the menu usable (each link on screen, big enough to
tap, none covering another).

The laptop screenshots are the administrators' guide's pictures (docs/administrators/img/): they
are committed, so the guide builds from a clean clone, and each run takes them again, so they never
go stale; a page whose picture cannot be taken fails. Every picture the guide shows is one of
them. Phone screenshots are test artefacts (tests/e2e/artefacts/).
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.e2e.console import (
    LOAN,
    api_session,
    browser_page,
    needs_chromium,
    new_tenant,
    screenshot,
    sign_in,
)

pytestmark = [pytest.mark.e2e, needs_chromium]

REPO = Path(__file__).resolve().parents[2]
GUIDE_IMAGES = REPO / "docs" / "administrators" / "img"
LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
# The pages the guide shows, by the picture's name.
GUIDE_PICTURES = ("engines", "engine", "engine-versions", "engine-access", "jobs", "job", "try-it", "tenant-jobs", "statistics",
                  "consumers", "users", "settings")

UNLABELLED = """() => [...document.querySelectorAll('main input, main select, main textarea')]
  .filter(el => el.type !== 'hidden' && !el.labels.length && !el.getAttribute('aria-label') && !el.closest('[hidden]'))
  .map(el => el.name || el.id)"""

# Visible elements whose box reaches past the left or right edge of the screen, unless a box that
# scrolls sideways (a table's wrapper, a code block) holds them: those are read by scrolling it.
PAST_THE_EDGE = """() => {
  const width = document.documentElement.clientWidth;
  const scrolls = (el) => { for (let p = el.parentElement; p; p = p.parentElement) {
    const s = getComputedStyle(p); if (s.overflowX === 'auto' || s.overflowX === 'scroll' || s.overflowX === 'hidden') return true; } return false; };
  return [...document.querySelectorAll('body *')].filter(el => {
    if (el.closest('.sr-only, .visually-hidden-file, .skip, [hidden]')) return false;
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height || getComputedStyle(el).visibility === 'hidden') return false;
    return (r.left < -0.5 || r.right > width + 0.5) && !scrolls(el);
  }).map(el => `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}${el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : ''} [${Math.round(el.getBoundingClientRect().left)}, ${Math.round(el.getBoundingClientRect().right)}]`).slice(0, 10);
}"""

# The menu's links and button: where they are, and whether the point at their centre is theirs.
MENU = """() => [...document.querySelectorAll('#nav a, #nav button')].map(el => {
  const r = el.getBoundingClientRect();
  const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return { name: el.textContent.trim(), left: r.left, right: r.right, top: r.top, bottom: r.bottom,
           width: r.width, height: r.height, reachable: !!top && (top === el || el.contains(top)) };
})"""


def pages_of_a_deployed_tenant(dev_stack) -> tuple[dict, dict[str, str]]:
    """A tenant with the loan engine active, a consumer and one of its jobs: the tenant and its pages."""
    tenant = new_tenant(dev_stack, "scr")
    with api_session(dev_stack, tenant) as api:
        engine = api.post("/engines", json={"name": "Loan quote", "description": "Monthly payment of a fixed-rate loan"}).json()
        v = api.post(f"/engines/{engine['id']}/versions", data={"version": "1.0"}, files={"file": ("loan-quote.xlsx", LOAN.read_bytes())}).json()
        assert api.post(f"/engines/{engine['id']}/versions/{v['id']}/activate").status_code == 200
        consumer = api.post("/consumers", json={"name": "Quote site"}).json()
        api.post("/consumers", json={"name": "Broker portal"})
        api.put(f"/engines/{engine['id']}/access/{consumer['id']}", json={"can_execute": True, "can_view_jobs": True})
        api.post("/users", json={"email": f"analyst@{tenant['slug']}.example"})
    job = httpx.post(f"{dev_stack.base_url}/jobs/execute/{tenant['slug']}/loan-quote?wait=25", headers={"X-API-Key": consumer["api_key"]},
                     json={"inputs": {"principal": 250000, "annual_rate": 0.045, "years": 30, "start_date": "2026-01-01"}}, timeout=60).json()
    pages = {
        "engines": "#/engines", "engine": f"#/engines/{engine['id']}/overview",
        **{f"engine-{tab}": f"#/engines/{engine['id']}/{tab}" for tab in ("versions", "schema", "code", "access", "settings")},
        "jobs": f"#/engines/{engine['id']}/jobs",
        "job": f"#/engines/{engine['id']}/jobs/{job['job_id']}", "try-it": f"#/engines/{engine['id']}/versions/{v['id']}/try",
        "schemas": f"#/engines/{engine['id']}/versions/{v['id']}/schemas", "fidelity": f"#/engines/{engine['id']}/versions/{v['id']}/fidelity",
        "tenant-jobs": "#/jobs", "statistics": "#/stats", "consumers": "#/consumers", "users": "#/users", "settings": "#/settings",
    }
    return tenant, pages


def open_page(page, route: str) -> None:
    page.goto(f"/dashboard/{route}")
    page.locator("main h2").first.wait_for()
    page.locator("main .loading").first.wait_for(state="detached")
    page.locator("[aria-busy=true]").first.wait_for(state="detached")


def assert_fits(page, name: str, viewport: dict) -> None:
    """The DOM checks of the module's docstring, for the page on screen."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= viewport["width"], f"{name} is {width}px wide on a {viewport['width']}px screen"
    assert page.evaluate("document.body.scrollWidth") <= viewport["width"], f"{name}: the body overflows sideways"
    assert page.evaluate(PAST_THE_EDGE) == [], f"{name}: elements past the screen's edge"
    assert page.evaluate(UNLABELLED) == [], f"{name} has unlabelled controls"
    menu = page.evaluate(MENU)
    assert {m["name"] for m in menu} >= {"Engines", "Jobs", "Statistics", "Consumers", "Users", "Settings", "Log out"}, menu
    for item in menu:
        assert 0 <= item["left"] and item["right"] <= viewport["width"], f"{name}: the menu's {item['name']} is off screen: {item}"
        assert item["height"] >= 20 and item["width"] >= 24, f"{name}: the menu's {item['name']} is too small to tap: {item}"
        assert item["reachable"], f"{name}: something covers the menu's {item['name']}"


def test_each_page_fits_a_laptop_and_its_picture_in_the_guide_is_taken_again(dev_stack):
    tenant, pages = pages_of_a_deployed_tenant(dev_stack)
    GUIDE_IMAGES.mkdir(parents=True, exist_ok=True)
    with browser_page(dev_stack.base_url, viewport=LAPTOP) as page:
        sign_in(page, tenant)
        for name, route in pages.items():
            open_page(page, route)
            assert_fits(page, name, LAPTOP)
            if name in GUIDE_PICTURES:
                picture = GUIDE_IMAGES / f"{name}.png"
                picture.unlink(missing_ok=True)
                # The screen as a laptop shows it (not the whole page): what a reader sees first.
                page.screenshot(path=str(picture))
                assert picture.stat().st_size > 10_000, f"{name}: the picture is {picture.stat().st_size} bytes"
            screenshot(page, name)


def test_each_page_fits_a_phone_and_its_menu_is_usable(dev_stack):
    tenant, pages = pages_of_a_deployed_tenant(dev_stack)
    with browser_page(dev_stack.base_url, viewport=PHONE) as page:
        sign_in(page, tenant)
        for name, route in pages.items():
            open_page(page, route)
            screenshot(page, name)
            assert_fits(page, name, PHONE)
        # AND the menu takes you where it says, on a phone too
        page.locator("#nav").get_by_role("link", name="Jobs").click()
        page.get_by_role("heading", name="Jobs", exact=True).wait_for()
        # AND the checks see what they look for: a box wider than the phone, and a menu link covered
        page.evaluate("document.querySelector('main section').append(Object.assign(document.createElement('div'), {id: 'too-wide', style: 'width: 600px; height: 10px'}))")
        with pytest.raises(AssertionError, match="wide|past the screen"):
            assert_fits(page, "with a wide box", PHONE)
        page.evaluate("document.getElementById('too-wide').remove()")
        assert_fits(page, "without it", PHONE)
        page.evaluate("document.body.append(Object.assign(document.createElement('div'), {style: 'position: fixed; inset: 0 0 auto 0; height: 200px; z-index: 99'}))")
        with pytest.raises(AssertionError, match="covers the menu"):
            assert_fits(page, "with the menu covered", PHONE)


def test_every_picture_in_the_guide_is_one_the_console_tests_take():
    shown = set()
    for md in (REPO / "docs" / "administrators").glob("*.md"):
        shown |= set(re.findall(r"\]\(img/([\w-]+)\.png\)", md.read_text()))
    assert shown == set(GUIDE_PICTURES), (sorted(shown - set(GUIDE_PICTURES)), sorted(set(GUIDE_PICTURES) - shown))
    assert sorted(p.stem for p in GUIDE_IMAGES.glob("*.png")) == sorted(GUIDE_PICTURES), "a picture no test takes, or one missing"
