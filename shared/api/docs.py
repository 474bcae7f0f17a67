"""``/docs``: Swagger UI served from this service, with no request to a CDN.

Swagger UI's files come from the ``swagger-ui-py`` package (a Python package that ships Swagger
UI 5, which renders OpenAPI 3.1); only its static folder is used, served under
``/docs-assets/``, so the page works on a machine without internet.
"""

from importlib.util import find_spec
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS_URL = "/docs-assets"


def swagger_ui_dir() -> Path:
    """The static folder of the installed swagger-ui-py package (found without importing it)."""
    spec = find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("swagger-ui-py is not installed; it provides /docs")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


def mount(app: FastAPI) -> None:
    """Serve Swagger UI at /docs (the app is created with docs_url=None) from packaged files."""
    app.mount(ASSETS_URL, StaticFiles(directory=swagger_ui_dir()), name="docs-assets")
    oauth2_redirect = "/docs/oauth2-redirect"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_URL}/favicon-32x32.png",
            oauth2_redirect_url=oauth2_redirect,
        )

    @app.get(oauth2_redirect, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()
