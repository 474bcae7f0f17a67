"""Bodies about jobs: the consumer API (execute, status, about, download) and an engine's job
history as the management screens list it."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# The values of shared.db.models.JobStatus, spelled out so OpenAPI lists them inline.
JobStatusName = Literal["pending", "processing", "completed", "failed"]


# --- the consumer API -------------------------------------------------------------------------


class ExecuteRequest(BaseModel):
    model_config = ConfigDict(json_schema_extra={"example": {"inputs": {"principal": 250000, "annual_rate": 0.045, "years": 30}}})

    inputs: dict[str, Any] = Field(
        description=(
            "Values keyed by input name (named range). Refused with 400 when they could not be stored and "
            "returned as JSON: NaN or infinities (not JSON, RFC 8259), lone surrogates or NUL characters in "
            "keys or text, nesting over 64 levels, more keys than the service's limit (1,000 by default, "
            "nested objects included); with 413 over its size limit (256 KiB of JSON by default)."
        )
    )
    webhook_url: str | None = Field(
        default=None, max_length=2048,
        description="http:// or https:// address to POST the result to; no spaces, control characters or lone surrogates",
    )

    @field_validator("webhook_url")
    @classmethod
    def _http_only(cls, value: str | None) -> str | None:
        if value is not None and not value.lower().startswith(("http://", "https://")):
            raise ValueError("webhook_url must begin with http:// or https://")
        # Stored, shown back and requested: no NUL (PostgreSQL refuses it), no control
        # characters or spaces (not in a URL), no lone surrogates (not Unicode text).
        if value is not None and any(ch <= " " or "\x7f" <= ch <= "\x9f" or "\ud800" <= ch <= "\udfff" for ch in value):
            raise ValueError("webhook_url must not contain spaces, control characters (such as NUL) or lone surrogates")
        return value


class ExecuteResponse(BaseModel):
    job_id: uuid.UUID
    status: str
    message: str
    created_at: datetime


class JobResponse(BaseModel):
    """Fields by status: see the interface specification, Consumer: jobs, rule 3."""

    job_id: uuid.UUID
    status: str
    inputs: dict[str, Any] | None = None
    outputs: dict[str, Any] | None = None
    error_message: str | None = None
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None = None
    execution_time_ms: int | None = None
    webhook_url: str | None = None
    webhook_sent_at: datetime | None = None
    webhook_response_status: int = Field(
        default=None,
        json_schema_extra=lambda schema: schema.pop("default", None),
        description="The receiver's HTTP status; 0 means connection failure or timeout. Absent while the POST is in flight.",
    )


class AboutResponse(BaseModel):
    name: str
    slug: str
    description: str | None
    version: str
    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    updated_at: datetime
    calc_ms_p50: float | None = Field(default=None, description="Median calculation time of one job on this version, in ms, "
                                      "measured when it was checked (the queue and the network add to it); null if never measured")
    calc_ms_p95: float | None = Field(default=None, description="95th percentile of that time, in ms")


class DownloadResponse(BaseModel):
    download_url: str
    filename: str
    expires_at: datetime


# --- an engine's jobs (management) ------------------------------------------------------------


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


class TenantJobListItem(JobListItem):
    engine_id: uuid.UUID
    engine_name: str = Field(description="The engine's name when the job was made")
    engine_slug: str


class TenantJobListResponse(BaseModel):
    jobs: list[TenantJobListItem] = Field(description="Newest first")
    total: int = Field(description="Jobs matching the filter, across all pages")
    limit: int
    offset: int
