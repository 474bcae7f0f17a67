"""The administrators' dashboard: static files under /dashboard/, a client of the management API."""

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

DASHBOARD_DIR = Path(__file__).resolve().parent.parent / "dashboard"
# The dashboard loads only its own files and talks only to this origin.
CSP = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"


def mount(app: FastAPI) -> None:
    """Serve the dashboard at /dashboard/ (and send / there)."""
    app.mount("/dashboard", StaticFiles(directory=DASHBOARD_DIR, html=True), name="dashboard")

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/dashboard/")

    # Browsers ask for /favicon.ico on every page without an icon of its own (the API's JSON, /health):
    # the console's icon, not a 404 in every log.
    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        return FileResponse(DASHBOARD_DIR / "favicon.ico", media_type="image/x-icon", headers={"Cache-Control": "public, max-age=86400"})

    app.add_middleware(_SecurityHeaders)


_DASHBOARD_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]


class _SecurityHeaders:
    """The dashboard's own headers on every answer under /dashboard (a pure ASGI middleware:
    other requests pass straight through)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/dashboard"):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in _DASHBOARD_HEADERS}
                kept = [(n, v) for n, v in message.get("headers", []) if n.lower() not in names]
                message = {**message, "headers": [*kept, *_DASHBOARD_HEADERS]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
