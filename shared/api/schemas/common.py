"""Bodies shared by every resource: errors, plain messages, validation issues, the health answer."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class ErrorResponse(BaseModel):
    detail: str


class MessageResponse(BaseModel):
    message: str


class HealthResponse(BaseModel):
    status: str
    version: str


class ValidationIssue(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorResponse(BaseModel):
    """The body of a request that fails validation (FastAPI's HTTPValidationError)."""

    detail: list[ValidationIssue]


# Routes whose 422 comes either from request validation or from a domain rule.
UNPROCESSABLE: dict[int | str, dict[str, Any]] = {
    422: {
        "model": ValidationErrorResponse | ErrorResponse,
        "description": "Validation error: a list of issues when the request is malformed, a message when a value breaks a rule",
    }
}
