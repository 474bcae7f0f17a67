"""Liveness and readiness."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from shared import __version__
from shared.api.schemas.common import ErrorResponse, HealthResponse
from shared.db.session import new_session

router = APIRouter(tags=["health"])


@router.get("/health", response_model=HealthResponse, responses={503: {"model": ErrorResponse}})
def health():
    """200 when the service and its database answer; 503 when the database does not."""
    try:
        with new_session() as session:
            session.execute(text("SELECT 1"))
    except SQLAlchemyError:
        return JSONResponse({"detail": "Database unavailable"}, status_code=503)
    return HealthResponse(status="ok", version=__version__)
