"""Bodies of the administrator's job endpoints: a test run of a version, one job in full."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shared.api.schemas.jobs import JobListItem


class TestRunRequest(BaseModel):
    model_config = ConfigDict(json_schema_extra={"example": {"inputs": {"principal": 250000, "annual_rate": 0.045, "years": 30}}})

    inputs: dict[str, Any] = Field(description="Values keyed by input name (named range), as for execute")


class JobDetail(JobListItem):
    """Everything the job recorded: the list's fields plus its inputs and outputs."""

    engine_id: uuid.UUID = Field(description="The engine the job ran on")
    version_id: uuid.UUID = Field(description="The version the job ran on (it may since have been deleted)")
    inputs: dict[str, Any] | None
    outputs: dict[str, Any] | None = Field(description="Set once the job has completed")
