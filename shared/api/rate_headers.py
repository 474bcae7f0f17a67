"""X-RateLimit-* headers on consumer responses, once the caller's key has been counted.

The services count a request only after the engine's whitelist and the key are checked
(``shared.services.callers``), and whatever the answer turns out to be (2xx, 4xx, 429), it carries
where the key stands. The count is remembered on the request's state and written into the
response's headers here, in one place for answers and errors alike.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.services.rate_limits import Allowance

_STATE_KEY = "rate_allowance"

# For the OpenAPI description of consumer routes.
HEADERS = {
    "X-RateLimit-Limit": "Requests this API key may make per window (present when a rate limit is configured)",
    "X-RateLimit-Remaining": "Requests left in the current window",
    "X-RateLimit-Reset": "Seconds until the current window ends",
}


def remember(request: Request, allowance: Allowance) -> None:
    """Keep the key's allowance for the response."""
    request.state.rate_allowance = allowance


def openapi_headers() -> dict[str, dict]:
    """The headers' entries for a response of the OpenAPI document."""
    return {name: {"description": text, "schema": {"type": "integer"}} for name, text in HEADERS.items()}


class _RateHeaders:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            allowance = scope.get("state", {}).get(_STATE_KEY) if message["type"] == "http.response.start" else None
            if allowance is not None:
                values = (allowance.limit, allowance.remaining, allowance.reset_seconds)
                extra = [(name.lower().encode(), str(value).encode()) for name, value in zip(HEADERS, values)]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def install(app: FastAPI) -> None:
    """Add the headers to every response whose request counted against a rate limit."""
    app.add_middleware(_RateHeaders)
