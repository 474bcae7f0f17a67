"""Liveness and readiness."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from shared import __version__
from shared.api.schemas.common import ErrorResponse, HealthResponse
from shared.config import get_settings
from shared.db.health import database_answers

router = APIRouter(tags=["health"])


# async, touching nothing that blocks: it never waits for the request threads or their connections.
@router.get("/health", response_model=HealthResponse, responses={503: {"model": ErrorResponse}})
async def health():
    """200 when the service and its database answer; 503 when the database does not."""
    if not await database_answers(timeout_seconds=get_settings().health_timeout_seconds):
        return JSONResponse({"detail": "Database unavailable"}, status_code=503)
    return HealthResponse(status="ok", version=__version__)
