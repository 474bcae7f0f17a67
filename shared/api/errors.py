"""Mapping of the project's exceptions to HTTP answers, in one place."""

from __future__ import annotations

import logging

import math

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from sqlalchemy.exc import DBAPIError, TimeoutError as PoolTimeout
from starlette.routing import compile_path

from shared.api.schemas.common import UNPROCESSABLE, ErrorResponse
from shared.errors import ActivationRefused, SheetcalcError, TooManyRequests

log = logging.getLogger(__name__)


async def _sheetcalc_error(_request: Request, exc: SheetcalcError) -> JSONResponse:
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, TooManyRequests) else None
    extra = {"reasons": exc.reasons} if isinstance(exc, ActivationRefused) else {}
    return JSONResponse({"detail": exc.message, **extra}, status_code=exc.status_code, headers=headers)


def _echoable(value, depth: int = 0):
    """The part of a refused body a 422 echoes, made JSON that can always be sent: lone
    surrogates escaped, NaN and infinities spelled as text, nesting cut at 16 levels."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, (dict, list, tuple)):
        if depth >= 16:
            return "..."
        if isinstance(value, dict):
            return {_echoable(k, depth + 1): _echoable(v, depth + 1) for k, v in value.items()}
        return [_echoable(v, depth + 1) for v in value]
    return value


async def _invalid_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
    # FastAPI's own body, except that what it echoes of the request can always be encoded.
    return JSONResponse({"detail": jsonable_encoder(_echoable(exc.errors()))}, status_code=422)


def _allowed_methods(app: FastAPI, path: str) -> set[str]:
    """Every method some documented route answers at ``path`` (the router names only the first route it matched)."""
    allowed = set()
    for template, operations in app.openapi()["paths"].items():
        if compile_path(template)[0].match(path):
            allowed.update(method.upper() for method in operations)
    return allowed


async def _method_not_allowed(request: Request, exc: HTTPException) -> JSONResponse:
    # RFC 9110, 15.5.6: a 405 carries Allow with the target resource's methods, all of them.
    routed = {m.strip() for m in (exc.headers or {}).get("Allow", "").split(",") if m.strip()}  # undocumented routes
    allowed = _allowed_methods(request.app, request.url.path) | routed
    return JSONResponse({"detail": "Method Not Allowed"}, status_code=405, headers={"Allow": ", ".join(sorted(allowed))})


BUSY = "Service temporarily unavailable, try again shortly"
BUSY_RETRY_AFTER_SECONDS = 1


async def _database_busy(request: Request, exc: Exception) -> JSONResponse:
    # Every pooled connection taken for the pool's whole timeout, or the connection lost (SQLAlchemy's
    # dialect calls it a disconnect): the request can be retried as it is, so 503 with Retry-After.
    if isinstance(exc, DBAPIError) and not exc.connection_invalidated:
        return await _unexpected(request, exc)
    log.warning("database unavailable on %s %s: %s", request.method, request.url.path, type(exc).__name__)
    return JSONResponse({"detail": BUSY}, status_code=503, headers={"Retry-After": str(BUSY_RETRY_AFTER_SECONDS)})


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return JSONResponse({"detail": "Internal server error"}, status_code=500)


def install(app: FastAPI) -> None:
    """Register the handlers that turn exceptions into ``{"detail": ...}`` bodies."""
    app.add_exception_handler(SheetcalcError, _sheetcalc_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(405, _method_not_allowed)
    app.add_exception_handler(PoolTimeout, _database_busy)
    app.add_exception_handler(DBAPIError, _database_busy)
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
