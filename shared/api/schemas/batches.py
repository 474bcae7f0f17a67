"""Bodies of the consumer API's batches."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shared.api.schemas.jobs import ExecuteRequest


class BatchRequest(ExecuteRequest):
    model_config = ConfigDict(json_schema_extra={"example": {"inputs": [
        {"principal": 250000, "annual_rate": 0.045, "years": 30}, {"principal": 120000, "annual_rate": 0.05, "years": 15},
    ]}})

    inputs: list[Any] = Field(
        description=(
            "1 to 10,000 input sets, each an object as execute's inputs, checked with execute's rules; "
            "the refused ones are reported by index and get no job. More than 10,000: 413."
        )
    )


class InvalidInputSet(BaseModel):
    index: int
    error: str


class BatchCounts(BaseModel):
    pending: int
    processing: int
    completed: int
    failed: int
    invalid: int = Field(description="input sets refused at submission (no job)")


class BatchAccepted(BaseModel):
    batch_id: uuid.UUID
    message: str
    total: int = Field(description="input sets sent")
    jobs: int = Field(description="jobs queued, one per valid input set")
    counts: BatchCounts
    invalid: list[InvalidInputSet]
    created_at: datetime


class BatchStatus(BaseModel):
    batch_id: uuid.UUID
    engine_slug: str
    total: int
    counts: BatchCounts
    done: bool = Field(description="true once no job of the batch is pending or processing")
    created_at: datetime
    completed_at: datetime | None = None
    webhook_url: str | None = None
    webhook_sent_at: datetime | None = None
    webhook_response_status: int | None = None
