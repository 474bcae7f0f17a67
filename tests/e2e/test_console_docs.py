"""`/docs` works offline: Swagger UI comes from the service itself, never from a CDN."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.e2e.console import browser_page, needs_chromium

pytestmark = [pytest.mark.e2e, needs_chromium]


def test_docs_render_the_operations_with_the_network_to_anything_but_the_service_blocked(dev_stack):
    service = urlsplit(dev_stack.base_url).netloc
    elsewhere: list[str] = []

    def only_the_service(route):
        if urlsplit(route.request.url).netloc == service:
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    with browser_page(dev_stack.base_url) as page:
        page.route("**/*", only_the_service)
        page.goto("/docs")
        # Swagger UI lists every operation; one from each end of the API is enough to show it rendered.
        page.locator(".opblock-summary-path", has_text="/auth/login").first.wait_for()
        page.locator(".opblock-summary-path", has_text="/jobs/execute/{tenant_slug}/{engine_slug}").first.wait_for()
        assert page.locator(".opblock").count() > 30
        assert not page.get_by_text("Unable to render this definition").count()

    assert elsewhere == [], f"/docs asked for files outside the service: {elsewhere}"
