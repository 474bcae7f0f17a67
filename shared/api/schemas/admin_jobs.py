"""Bodies of the administrator's job endpoints: a test run of a version, one job in full."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shared.api.schemas.jobs import JobListItem


class TestRunRequest(BaseModel):
    model_config = ConfigDict(json_schema_extra={"example": {"inputs": {"principal": 250000, "annual_rate": 0.045, "years": 30}}})

    inputs: dict[str, Any] = Field(description="Values keyed by input name (named range), as for execute")


class WebhookAttemptItem(BaseModel):
    """One POST of the job's webhook: its first attempt or a redelivery an administrator asked for."""

    id: uuid.UUID
    redelivery: bool = Field(description="False for the job's first attempt (the one webhook_sent_at reports)")
    requested_at: datetime
    attempted_at: datetime | None = Field(description="When the POST began; null while a redelivery waits for the webhook function")
    target_url: str
    status_code: int | None = Field(description="The receiver's HTTP status; 0 when no answer came; null until the attempt ends")
    duration_ms: int | None
    response_excerpt: str | None = Field(description="The first 1 KB of the receiver's answer, as text")
    error_class: str | None = Field(
        description="Why the attempt did not succeed: timeout, connection, unresolvable, refused_private_address or "
        "http_error (an answer outside 2xx); null for a 2xx answer or while in flight"
    )


class JobDetail(JobListItem):
    """Everything the job recorded: the list's fields plus its inputs and outputs, and its webhook's delivery log."""

    engine_id: uuid.UUID = Field(description="The engine the job ran on")
    version_id: uuid.UUID = Field(description="The version the job ran on (it may since have been deleted)")
    inputs: dict[str, Any] | None
    outputs: dict[str, Any] | None = Field(description="Set once the job has completed")
    version_sha256: str | None = Field(default=None, description="SHA-256 of the version's workbook, recorded at execute (null before it was kept)")
    calc_engine: str | None = Field(default=None, description="The calculation engine that calculated the job (null until it completes)")
    webhook_attempts: list[WebhookAttemptItem] = Field(default_factory=list, description="Every POST of the job's webhook, oldest first")


class RerunResponse(BaseModel):
    """A completed job calculated again in its own run context (same clock, same seed)."""

    job_id: uuid.UUID
    identical: bool = Field(description="True when every output came out exactly as the job recorded it")
    differing_outputs: list[str] = Field(description="Names of the outputs whose values differ (empty when identical)")
    outputs: dict[str, Any] | None = Field(description="The outputs of the re-run; null when it failed to calculate")
    recorded_outputs: dict[str, Any] | None = Field(description="The outputs the job recorded")
    calc_engine: str = Field(description="The calculation engine of the re-run")
    recorded_calc_engine: str | None = Field(description="The engine that calculated the job; null for jobs from before it was recorded")
    version_sha256: str = Field(description="SHA-256 of the version's uploaded workbook")
    recorded_version_sha256: str | None = Field(description="The hash the job recorded at execute; null for jobs from before it was recorded")
    error_message: str | None = Field(description="Set when the re-run failed to calculate")
