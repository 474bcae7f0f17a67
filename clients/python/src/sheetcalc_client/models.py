"""The consumer API's answers as pydantic models (extra fields kept, so a newer service reads fine)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

JobStatus = Literal["pending", "processing", "completed", "failed"]
FINISHED = ("completed", "failed")


class _Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


class Accepted(_Answer):
    """202 of execute: the job is stored and queued."""

    job_id: str
    status: str
    message: str | None = None
    created_at: datetime | None = None


class Job(_Answer):
    """A job as ``GET /jobs/{job_id}`` shows it: the fields its status carries."""

    job_id: str
    status: str
    inputs: dict[str, Any] | None = None
    outputs: dict[str, Any] | None = None
    error_message: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    completed_at: datetime | None = None
    execution_time_ms: int | None = None
    webhook_url: str | None = None
    webhook_sent_at: datetime | None = None
    webhook_response_status: int | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class About(_Answer):
    name: str
    slug: str
    description: str | None = None
    version: str
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    updated_at: datetime | None = None


class Download(_Answer):
    download_url: str
    filename: str
    expires_at: datetime | None = None


class BatchCounts(_Answer):
    pending: int = 0
    processing: int = 0
    completed: int = 0
    failed: int = 0
    invalid: int = 0

    @property
    def finished(self) -> int:
        return self.completed + self.failed + self.invalid


class InvalidInputSet(_Answer):
    index: int
    error: str


class BatchAccepted(_Answer):
    batch_id: str
    message: str | None = None
    total: int
    jobs: int
    counts: BatchCounts
    invalid: list[InvalidInputSet] = []
    created_at: datetime | None = None


class BatchStatus(_Answer):
    batch_id: str
    engine_slug: str | None = None
    total: int
    counts: BatchCounts
    done: bool
    created_at: datetime | None = None
    completed_at: datetime | None = None
    webhook_url: str | None = None
    webhook_sent_at: datetime | None = None
    webhook_response_status: int | None = None


class BatchResult(_Answer):
    """One line of a batch's results: an input set's job, in index order."""

    index: int
    job_id: str | None = None
    status: str
    outputs: dict[str, Any] | None = None
    error: str | None = None
