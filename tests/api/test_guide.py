"""/guide/: the documentation site (docs/, mkdocs.yml), built with ``mkdocs build --strict`` and
served by the API once built.

The strict build is the guide's own test: a broken link, a page left out of the nav or a missing
anchor fails it. The built site loads nothing from another host, so the guide works offline
beside /docs; and the API serves it at /guide/ when it is built, and answers 404 there before.
MkDocs comes with the test extra, so a machine without it fails here rather than skipping.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient

from shared.api import guide
from shared.api.app import create_app

REPO = Path(__file__).resolve().parents[2]
# Long enough that only a hung build reaches it (a build takes seconds).
BUILD_TIMEOUT_SECONDS = 600

# The attributes through which a page makes the browser fetch something (links a reader follows,
# <a href>, are not requests).
FETCHED = {
    "script": ("src",), "link": ("href",), "img": ("src", "srcset"), "source": ("src", "srcset"),
    "iframe": ("src",), "video": ("src", "poster"), "audio": ("src",), "embed": ("src",),
    "object": ("data",), "track": ("src",),
}
CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)|@import\s+['"]([^'"]+)""")


class _Fetches(HTMLParser):
    """Every address a page makes the browser fetch: from the tags above and inline styles."""

    def __init__(self) -> None:
        super().__init__()
        self.addresses: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in FETCHED.get(tag, ()):
                self.addresses += [part.split()[0] for part in value.split(",") if part.strip()] if name.endswith("srcset") else [value]
            elif name == "style":
                self.addresses += css_addresses(value)


def css_addresses(css: str) -> list[str]:
    return [a or b for a, b in CSS_URL.findall(css)]


def page_fetches(html: str) -> list[str]:
    parser = _Fetches()
    parser.feed(html)
    return parser.addresses


def external(address: str) -> bool:
    """True for an address on another host (``https://...``, ``//host/...``); ``data:`` is local."""
    parts = urlsplit(address.strip())
    return bool(parts.netloc) or parts.scheme not in ("", "data")


@pytest.fixture(scope="module")
def built_site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("guide-site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO, capture_output=True, text=True, timeout=BUILD_TIMEOUT_SECONDS,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, "mkdocs build --strict failed (the test extra installs MkDocs):\n" + done.stdout + done.stderr
    return site


def test_the_check_for_other_hosts_finds_what_a_page_would_fetch():
    # GIVEN a page fetching a web font and a CDN script, as Material's defaults and a CDN would
    page = ('<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">'
            '<script src="//cdn.example.com/x.js"></script><img src="data:image/png;base64,AA==">'
            '<div style="background: url(https://example.com/a.png)"></div><a href="https://example.com/">a link</a>')
    # THEN the fetched addresses are found, the other hosts among them told apart, and a link is not a fetch
    fetched = page_fetches(page)
    assert [a for a in fetched if external(a)] == [
        "https://fonts.googleapis.com/css?family=Roboto", "//cdn.example.com/x.js", "https://example.com/a.png",
    ]
    assert css_addresses("@import 'https://x.example/y.css'; a { background: url(../img/z.png) }") == [
        "https://x.example/y.css", "../img/z.png",
    ]


def test_the_built_guide_fetches_nothing_from_another_host(built_site):
    # GIVEN every page and stylesheet of the guide as built
    pages = sorted(built_site.rglob("*.html"))
    assert len(pages) >= 20, [p.relative_to(built_site) for p in pages]
    fetched = {page.relative_to(built_site): page_fetches(page.read_text()) for page in pages}
    styles = {css.relative_to(built_site): css_addresses(css.read_text()) for css in built_site.rglob("*.css")}
    # THEN each page fetches its scripts and stylesheets, all from the guide itself
    assert all(any(a.endswith(".js") for a in found) and any(".css" in a for a in found) for found in fetched.values())
    elsewhere = {str(path): [a for a in found if external(a)] for path, found in {**fetched, **styles}.items()}
    assert {path: found for path, found in elsewhere.items() if found} == {}


def test_the_api_serves_the_built_guide_at_guide(built_site, monkeypatch):
    # GIVEN the site built where the API looks for it
    monkeypatch.setattr(guide, "SITE_DIR", built_site)
    client = TestClient(create_app())
    # WHEN a reader opens /guide/ (or /guide)
    home = client.get("/guide/")
    # THEN it is the built index, and every page and asset of the site is there under /guide/
    assert home.status_code == 200 and home.headers["content-type"].startswith("text/html")
    assert home.text == (built_site / "index.html").read_text()
    assert client.get("/guide").text == home.text
    webhooks = client.get("/guide/consumers/webhooks/")
    assert webhooks.status_code == 200 and "Verifying a signature" in webhooks.text
    stylesheet = next(a for a in page_fetches(home.text) if a.endswith(".css") or ".css?" in a)
    assert client.get("/guide/" + stylesheet.split("?")[0]).status_code == 200
    # AND a page the guide does not have is a 404
    assert client.get("/guide/no-such-page/").status_code == 404


def test_before_the_guide_is_built_guide_is_a_404_and_the_api_serves_on(tmp_path, monkeypatch):
    # GIVEN no built site (a fresh clone before scripts/dev.sh, or a Lambda image)
    monkeypatch.setattr(guide, "SITE_DIR", tmp_path / "site-not-built")
    client = TestClient(create_app())
    # THEN /guide/ answers 404, not an error, and the rest of the service answers as ever
    assert client.get("/guide/").status_code == 404
    assert client.get("/guide/index.html").status_code == 404
    assert client.get("/docs").status_code == 200


def test_no_page_of_the_api_loads_from_a_cdn(client):
    # /docs is Swagger UI from a package; ReDoc would load its script from a CDN, so it is off
    assert client.get("/redoc").status_code == 404
    page = client.get("/docs")
    assert page.status_code == 200
    hosts = {urlsplit(url).netloc for url in re.findall(r'(?:src|href)="([^"]+)"', page.text)}
    assert hosts <= {""}, hosts
