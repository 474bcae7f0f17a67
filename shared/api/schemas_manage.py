"""Request and response bodies of the management endpoints that change and list things:
engine settings and deletion, version deletion, access lists, consumers, an engine's jobs."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from shared.api.schemas import ErrorResponse
from shared.errors import Invalid
from shared.services import ip_policy

JobStatusName = Literal["pending", "processing", "completed", "failed"]


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


# --- engines ----------------------------------------------------------------------------------


class EngineUpdate(BaseModel):
    """Fields left out keep their value. Changing ``slug`` changes the consumer URLs of the engine;
    enabling the whitelist while it is empty refuses every consumer call."""

    name: str | None = Field(default=None, min_length=1, max_length=255)
    slug: str | None = Field(default=None, min_length=1, max_length=100, pattern=r"^[a-z0-9-]+$")
    description: str | None = Field(default=None, description="null removes the description")
    ip_whitelist_enabled: bool | None = Field(
        default=None, description="When true, consumer calls from addresses not in ip_whitelist get 403"
    )
    ip_whitelist: list[str] | None = Field(
        default=None, max_length=500,
        description="IPv4/IPv6 addresses or CIDR ranges (e.g. 203.0.113.7, 10.0.0.0/8, 2001:db8::/32); "
        "stored in canonical form, duplicates dropped; null empties the list",
        examples=[["203.0.113.7", "10.0.0.0/8", "2001:db8::/32"]],
    )

    @model_validator(mode="after")
    def _no_null_for_required_fields(self) -> "EngineUpdate":
        for name in ("name", "slug", "ip_whitelist_enabled"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be null")
        return self

    @field_validator("ip_whitelist")
    @classmethod
    def _addresses_or_ranges(cls, entries: list[str] | None) -> list[str] | None:
        if entries is None:
            return None
        canonical: list[str] = []
        for entry in entries:
            try:
                value = ip_policy.normalise_entry(entry)
            except Invalid as exc:
                raise ValueError(exc.message) from None
            if value not in canonical:
                canonical.append(value)
        return canonical


class EngineDeleteResponse(BaseModel):
    message: str


class EngineVersionDeleteResponse(BaseModel):
    id: uuid.UUID
    version: str
    message: str


# --- access -----------------------------------------------------------------------------------


class AccessListItem(BaseModel):
    consumer_id: uuid.UUID
    consumer_name: str
    is_active: bool = Field(description="Whether the consumer's key currently works")
    can_execute: bool
    can_view_jobs: bool
    can_download: bool
    can_view_about: bool
    granted_at: datetime


class AccessRevokeResponse(BaseModel):
    message: str


class ConsumerEngineAccessItem(BaseModel):
    engine_id: uuid.UUID
    engine_name: str
    active_version_slug: str | None = Field(
        description="The version string of the engine's active version; null while the engine has none"
    )
    can_execute: bool
    can_view_jobs: bool
    can_download: bool
    can_view_about: bool


# --- consumers --------------------------------------------------------------------------------


class ConsumerListItem(BaseModel):
    id: uuid.UUID
    name: str
    api_key: str = Field(description="Masked: the tenant prefix and the last four characters")
    created_at: datetime
    last_used_at: datetime | None = None
    is_active: bool


class ConsumerUpdate(BaseModel):
    is_active: bool | None = Field(default=None, description="false stops the key working at once; true restores it")


class ConsumerUpdateResponse(BaseModel):
    id: uuid.UUID
    name: str
    is_active: bool


class ConsumerDeleteResponse(BaseModel):
    message: str


# --- an engine's jobs -------------------------------------------------------------------------


class RecentJobItem(BaseModel):
    job_id: uuid.UUID
    status: JobStatusName
    consumer_id: uuid.UUID | None = Field(description="null for jobs run with a version's test key")
    consumer_name: str | None
    version: str = Field(description="The version string the job ran on")
    is_test: bool
    created_at: datetime
    completed_at: datetime | None
    execution_time_ms: int | None


class JobListItem(RecentJobItem):
    updated_at: datetime
    error_message: str | None
    webhook_url: str | None
    webhook_sent_at: datetime | None
    webhook_response_status: int | None = Field(description="0 means connection failure or timeout")


class JobListResponse(BaseModel):
    jobs: list[JobListItem] = Field(description="Newest first")
    total: int = Field(description="Jobs matching the filter, across all pages")
    limit: int
    offset: int
