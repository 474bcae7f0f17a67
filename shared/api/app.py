"""The FastAPI application, shared by the API Lambda (through Mangum) and ``sheetcalc dev``."""

from fastapi import FastAPI

from shared import __version__
from shared.api import dashboard, errors
from shared.api.routers import auth, consumers, engines, health, jobs


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
    for module in (health, auth, engines, consumers, jobs):
        app.include_router(module.router)
    app.include_router(__import__("shared.api.routers.stats", fromlist=["router"]).router)
    app.include_router(__import__("shared.api.routers.users", fromlist=["router"]).router)
    app.include_router(__import__("shared.api.routers.tenant", fromlist=["router"]).router)
    dashboard.mount(app)
    return app
