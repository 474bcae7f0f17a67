"""Bodies shared by every resource: errors, plain messages, validation issues, the health answer."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, field_validator

# PostgreSQL cannot store a NUL character in text: one sent in a request is refused with 422.
NUL_REFUSED = "Text may not contain NUL characters"


def refuse_nul(value: Any) -> Any:
    """``value`` unchanged, unless it is text (or a list of text) holding a NUL character."""
    texts = value if isinstance(value, (list, tuple)) else [value]
    if any(isinstance(text, str) and "\x00" in text for text in texts):
        raise ValueError(NUL_REFUSED)
    return value


class RequestModel(BaseModel):
    """A JSON request body: none of its text fields may hold a NUL character."""

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        return refuse_nul(value)


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
