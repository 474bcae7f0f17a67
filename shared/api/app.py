"""The FastAPI application, shared by the API Lambda (through Mangum) and ``sheetcalc dev``."""

from fastapi import FastAPI

from shared import __version__
from shared.api import dashboard, errors, limits
from shared.api.routers import auth, consumers, engines, health, jobs, stats, tenant, users


def create_app() -> FastAPI:
    """Build the app: every router, the error mapping."""
    app = FastAPI(
        title="sheetcalc",
        version=__version__,
        description=(
            "Excel workbooks as callable calculation engines. Management endpoints take a JWT "
            "(bearer or the auth_token cookie); job endpoints take an API key (X-API-Key or bearer)."
        ),
    )
    errors.install(app)
    limits.install(app)
    for module in (health, auth, users, tenant, engines, consumers, jobs, stats):
        app.include_router(module.router)
    dashboard.mount(app)
    return app
