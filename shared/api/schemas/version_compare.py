"""Bodies of a version's comparisons: the diff with another version, and shadow replays."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class VersionDiffResponse(BaseModel):
    """What changed from ``against`` to ``version``: named ranges (added, removed, changed:
    fields among sheet, ref, rows, cols, role, is_date), schema properties (added, removed,
    changed: the keywords that differ; required names), and cells per sheet (formulas changed,
    constants changed: counts in full, at most ``cells_shown_per_sheet`` cells listed each;
    ``complete`` false when the workbooks could not be compared in full within the time limit)."""

    version: dict[str, Any]
    against: dict[str, Any]
    same_workbook: bool = Field(description="True when both versions were uploaded from the same bytes")
    named_ranges: dict[str, list[dict[str, Any]]]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    cells: dict[str, Any]


class ToleranceIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    absolute: float | None = Field(default=None, ge=0, description="A number passes when |candidate − recorded| ≤ absolute")
    relative: float | None = Field(default=None, ge=0, description="... or when |candidate − recorded| ≤ relative × |recorded|")


class ReplayCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    count: int = Field(default=1000, ge=1, le=10_000, description="How many of the active version's last completed production jobs to replay")
    tolerance: ToleranceIn | None = Field(
        default=None, description="For outputs no test case gives a tolerance for; default exact",
    )


class ReplayResponse(BaseModel):
    """A shadow replay: its progress, and its report once completed."""

    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    engine_id: uuid.UUID
    version_id: uuid.UUID = Field(description="The candidate version the jobs were calculated on")
    baseline_version_id: uuid.UUID = Field(description="The version whose recorded jobs were replayed (active when asked for)")
    baseline_version: str
    status: Literal["queued", "running", "completed", "failed"]
    requested: int = Field(description="How many jobs were asked for")
    total: int = Field(description="How many completed production jobs there were to replay (at most requested)")
    processed: int
    tolerance: dict[str, Any] | None = Field(description="default: the request's; outputs: the test cases' per output")
    error: str | None = None
    report: dict[str, Any] | None = Field(
        default=None,
        description="total, identical, within, changed, failed; outputs: per output the counts, its tolerance and the "
                    "distribution of the differences (count, min, max, median); most_changed: the 20 most changed cases "
                    "with their inputs and both outputs; failures: the first 20 cases the candidate could not calculate",
    )
    created_at: datetime
    completed_at: datetime | None = None


class ReplaySummary(BaseModel):
    """A replay in a list: its progress and counts, without the cases."""

    id: uuid.UUID
    baseline_version: str
    status: str
    requested: int
    total: int
    processed: int
    counts: dict[str, int] | None = None
    created_at: datetime
    completed_at: datetime | None = None

    @classmethod
    def of(cls, replay: Any) -> "ReplaySummary":
        report = replay.report
        counts = {k: report.get(k, 0) for k in ("identical", "within", "changed", "failed")} if report else None
        return cls(id=replay.id, baseline_version=replay.baseline_version, status=str(replay.status), requested=replay.requested,
                   total=replay.total, processed=replay.processed, counts=counts, created_at=replay.created_at,
                   completed_at=replay.completed_at)
