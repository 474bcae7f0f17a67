"""Bodies of an engine's test cases, its versions' test runs, the release gate and the release history."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.api.schemas.common import RequestModel

TOLERANCES = (
    "Per expected output: {\"absolute\": x, \"relative\": y}. A number passes when it is within either bound of the "
    "expected one (relative is a fraction of the expected value); an output without a tolerance must be identical. "
    "Text, booleans, errors (\"#N/A\") and nulls always compare exactly"
)


class TestCaseTolerance(BaseModel):
    absolute: float | None = Field(default=None, ge=0)
    relative: float | None = Field(default=None, ge=0)


class TestCaseCreate(RequestModel):
    model_config = ConfigDict(json_schema_extra={"example": {
        "name": "30-year loan", "inputs": {"principal": 250000, "annual_rate": 0.045, "years": 30},
        "expected": {"monthly_payment": 1266.71}, "tolerances": {"monthly_payment": {"absolute": 0.005}},
    }})

    name: str | None = Field(default=None, min_length=1, max_length=255, description="Defaults to 'Case <n>'")
    inputs: dict[str, Any] = Field(default_factory=dict, description="Values keyed by input name, as for execute")
    expected: dict[str, Any] = Field(min_length=1, description="The outputs the inputs must give, keyed by output name")
    tolerances: dict[str, TestCaseTolerance] | None = Field(default=None, description=TOLERANCES)
    enabled: bool = Field(default=True, description="Disabled cases are kept but not run, and do not gate activation")


class TestCaseUpdate(RequestModel):
    """Fields left out keep their value."""

    name: str | None = Field(default=None, min_length=1, max_length=255)
    inputs: dict[str, Any] | None = None
    expected: dict[str, Any] | None = Field(default=None, min_length=1)
    tolerances: dict[str, TestCaseTolerance] | None = Field(default=None, description=TOLERANCES)
    enabled: bool | None = None

    @model_validator(mode="after")
    def _no_null_for_required_fields(self) -> "TestCaseUpdate":
        for name in ("name", "inputs", "expected", "enabled"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be null")
        return self


class TestCaseFromJob(RequestModel):
    name: str | None = Field(default=None, min_length=1, max_length=255, description="Defaults to the job's id and version")
    tolerances: dict[str, TestCaseTolerance] | None = Field(default=None, description=TOLERANCES)


class TestCaseItem(BaseModel):
    id: uuid.UUID
    engine_id: uuid.UUID
    name: str
    inputs: dict[str, Any]
    expected: dict[str, Any]
    tolerances: dict[str, TestCaseTolerance]
    enabled: bool
    source_job_id: uuid.UUID | None = Field(description="The completed job the case was made from, if any")
    created_at: datetime
    updated_at: datetime


class TestCaseImportResponse(BaseModel):
    imported: int
    cases: list[TestCaseItem]


class TestCaseDeleteResponse(BaseModel):
    message: str


class TestOutputResult(BaseModel):
    name: str
    expected: Any
    got: Any = Field(description="What the version returned; null when the output was missing or the case failed to calculate")
    difference: float | None = Field(description="got - expected for a number; the largest difference for a range")
    verdict: str = Field(description="'identical', 'within' (its tolerance) or 'changed'")
    missing: bool = Field(default=False, description="True when the version returned no such output")


class TestCaseResult(BaseModel):
    case_id: uuid.UUID
    name: str
    status: str = Field(description="'passed' or 'failed'")
    error: str | None = Field(description="Why the case could not be calculated, if it could not")
    outputs: list[TestOutputResult]


class TestRunDetail(BaseModel):
    id: uuid.UUID
    engine_id: uuid.UUID
    version_id: uuid.UUID
    trigger: str = Field(description="'upload' (run when the version was uploaded) or 'manual'")
    status: str = Field(description="'pending' (queued or calculating), 'passed' or 'failed'")
    passed: int
    failed: int
    total: int
    error: str | None = Field(description="Why the version could not be calculated at all, if it could not")
    results: list[TestCaseResult]
    created_at: datetime
    finished_at: datetime | None


class VersionTestsSummary(BaseModel):
    """The version's latest test run, in brief."""

    run_id: uuid.UUID
    status: str = Field(description="'pending', 'passed' or 'failed'")
    passed: int
    failed: int
    total: int
    differing_outputs: list[str] = Field(description="Outputs that differed beyond their tolerance in some case")
    finished_at: datetime | None


class ActivateRequest(RequestModel):
    override_reason: str | None = Field(
        default=None, max_length=2000,
        description="Activate even though the release gate refuses, for this reason (recorded in the release history)",
    )


class GateReason(BaseModel):
    code: str = Field(description="tests_not_run, tests_pending, tests_failed, tests_stale or unimplemented_outputs")
    message: str


class ActivationRefusedResponse(BaseModel):
    detail: str
    reasons: list[GateReason]


class GateVerdict(BaseModel):
    allowed: bool = Field(description="True when activating needs no override")
    reasons: list[GateReason]
    enabled_test_cases: int


class ReleaseItem(BaseModel):
    id: uuid.UUID
    engine_id: uuid.UUID
    version_id: uuid.UUID
    version: str
    previous_version_id: uuid.UUID | None = Field(description="The version it replaced; null for the engine's first activation")
    previous_version: str | None
    activated_by: uuid.UUID | None = Field(description="The administrator who activated it")
    activated_by_email: str | None
    activated_at: datetime
    test_run: dict[str, Any] | None = Field(description="The version's latest test run when it was activated, in brief")
    replay: dict[str, Any] | None = Field(description="Its latest shadow replay when it was activated, in brief")
    gate_reasons: list[GateReason] | None = Field(description="What the gate refused for, when it was overridden")
    override_reason: str | None
