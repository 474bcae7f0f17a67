"""Mapping of the project's exceptions to HTTP answers, in one place."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from shared.api.schemas.common import UNPROCESSABLE, ErrorResponse
from shared.errors import SheetcalcError, TooManyRequests

log = logging.getLogger(__name__)


async def _sheetcalc_error(_request: Request, exc: SheetcalcError) -> JSONResponse:
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, TooManyRequests) else None
    return JSONResponse({"detail": exc.message}, status_code=exc.status_code, headers=headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return JSONResponse({"detail": "Internal server error"}, status_code=500)


def install(app: FastAPI) -> None:
    """Register the handlers that turn exceptions into ``{"detail": ...}`` bodies."""
    app.add_exception_handler(SheetcalcError, _sheetcalc_error)
    app.add_exception_handler(Exception, _unexpected)


def responses(*statuses: int) -> dict[int, dict]:
    """OpenAPI entries for the error statuses a route can answer."""
    descriptions = {
        400: "Bad request", 401: "Not authenticated", 403: "Forbidden", 404: "Not found",
        409: "Conflict", 413: "Payload too large", 429: "Too many requests", 502: "Bad gateway", 503: "Service unavailable",
    }
    out = {s: {"model": ErrorResponse, "description": descriptions.get(s, "Error")} for s in statuses if s != 422}
    if 429 in out:
        out[429]["headers"] = {"Retry-After": {"description": "Seconds to wait before trying again", "schema": {"type": "integer"}}}
    if 422 in statuses:
        out.update(UNPROCESSABLE)
    return out
