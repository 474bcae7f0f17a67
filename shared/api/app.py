"""The FastAPI application, shared by the API Lambda (through Mangum) and ``sheetcalc dev``."""

from fastapi import Depends, FastAPI
from fastapi.openapi.utils import get_openapi

from shared import __version__
from shared.api import admission, dashboard, docs, errors, guide, limits, rate_headers
from shared.api.deps import Authenticated, url_without_nul
from shared.api.routers import admin_jobs, auth, batches, consumers, engines, health, jobs, stats, tenant, users, version_reports
from shared.api.routers import tests_releases, version_compare, webhook_signing
from shared.api.routers import tenant_jobs
from shared.api.routers import functions
from shared.api.routers import engine_transfer

# In the order the OpenAPI document lists them.
ROUTERS = (health, auth, users, tenant, engines, consumers, jobs, batches, stats, admin_jobs, version_reports)
ROUTERS += (webhook_signing,)
ROUTERS += (version_compare,)
ROUTERS += (tests_releases,)
ROUTERS += (tenant_jobs,)
ROUTERS += (functions,)
ROUTERS += (engine_transfer,)
# The routers that authenticate on their own terms: health is open, login starts a session (and
# change-password admits a user who must change it), the consumer API checks its API keys.
# Every other router needs an administrator's session, attached here once: authenticated by default.
PUBLIC = (health, auth, jobs, batches)
# Matched first: FastAPI tries included routes one after another (twice per request), so the
# consumer API, which carries the volume, is not matched after the thirty-odd management routes.
# No other router's paths begin with /jobs, and jobs stays before batches, so no request changes
# route; the OpenAPI document keeps the order of ROUTERS.
MATCHED_FIRST = (health, jobs, batches)


def create_app() -> FastAPI:
    """Build the app: every router, the error mapping."""
    app = FastAPI(
        title="sheetcalc",
        version=__version__,
        docs_url=None,  # /docs: shared/api/docs.py serves Swagger UI from a package, not a CDN
        redoc_url=None,  # ReDoc loads from a CDN: off (the guide at /guide/ and /docs work offline)
        description=(
            "Excel workbooks as callable calculation engines. Management endpoints take a JWT "
            "(bearer or the auth_token cookie); job endpoints take an API key (X-API-Key or bearer). "
            "Request bodies are limited while they arrive, before any credential is checked: a "
            "workbook upload to the upload limit (25 MB by default), any other body to 2 MB by "
            "default; past the limit the answer is 413 with a detail message."
        ),
        dependencies=[Depends(url_without_nul)],
    )
    errors.install(app)
    limits.install(app)
    rate_headers.install(app)
    admission.install(app)  # last: the outermost, so a refused burst costs only its answers
    routing_order = MATCHED_FIRST + tuple(m for m in ROUTERS if m not in MATCHED_FIRST)
    included = {}
    for module in routing_order:
        if module in PUBLIC:
            app.include_router(module.router)
        else:
            app.include_router(module.router, dependencies=[Authenticated], responses=errors.responses(401, 403))
        included[module] = app.router.routes[-1]
    dashboard.mount(app)
    docs.mount(app)
    guide.mount(app)  # /guide/: the documentation site, once built (shared/api/guide.py)
    _document_in_order(app, [included[m] for m in ROUTERS])
    return app


def _document_in_order(app: FastAPI, documented: list) -> None:
    """The OpenAPI document lists the routers in ``documented`` order, then the app's own routes."""

    def openapi() -> dict:
        if not app.openapi_schema:
            rest = [r for r in app.routes if all(r is not d for d in documented)]
            app.openapi_schema = get_openapi(
                title=app.title, version=app.version, openapi_version=app.openapi_version, description=app.description,
                routes=documented + rest,
            )
            _security_in_place(app.openapi_schema, [route for module in ROUTERS for route in module.router.routes])
        return app.openapi_schema

    app.openapi = openapi


def _security_in_place(document: dict, routes: list) -> None:
    """A route that documents its security through ``openapi_extra`` (the hot consumer routes,
    shared/api/routers/jobs.py) gets it last among the operation's fields; put it where FastAPI
    writes a declared one (before the parameters), so the document is the same byte for byte."""
    for route in routes:
        if "security" not in (getattr(route, "openapi_extra", None) or {}):
            continue
        for method in route.methods:
            operation = document["paths"][route.path_format][method.lower()]
            security = operation.pop("security")
            head = [k for k in ("tags", "summary", "description", "operationId") if k in operation]
            document["paths"][route.path_format][method.lower()] = {
                **{k: operation[k] for k in head}, "security": security, **{k: v for k, v in operation.items() if k not in head},
            }
