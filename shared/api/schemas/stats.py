"""Bodies of the statistics endpoints, named as in the interface specification, and the
parsing of their ``start_date`` / ``end_date`` query values."""

from __future__ import annotations

import re
import uuid
from datetime import date, datetime, time, timedelta, timezone

from pydantic import BaseModel, Field

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}.*")

DATE_HELP = (
    "ISO 8601 datetime (`2026-03-01T08:30:00Z`; without an offset it is UTC) or a day "
    "`YYYY-MM-DD`. Anything else is refused with 422."
)
OUT_OF_RANGE = "must be an instant between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z"
START_HELP = f"Count jobs created at or after this instant; a day means its first instant (00:00 UTC). {DATE_HELP}"
END_HELP = f"Count jobs created at or before this instant; a day includes that whole day (UTC). {DATE_HELP}"


def parse_bound(value: str, *, end: bool) -> datetime:
    """A query bound as an aware UTC datetime, inclusive; a day given as an end covers that day."""
    if _DAY.fullmatch(value):
        day = date.fromisoformat(value)
        start_of_day = datetime.combine(day, time.min, tzinfo=timezone.utc)
        # Timestamps are stored to the microsecond, so the day's last microsecond is its end.
        return start_of_day + timedelta(days=1, microseconds=-1) if end else start_of_day
    if not _DATETIME.fullmatch(value):
        raise ValueError("must be an ISO 8601 datetime or a YYYY-MM-DD date")
    parsed = datetime.fromisoformat(value)
    try:
        return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed.astimezone(timezone.utc)
    except OverflowError:
        # An offset can carry an instant past the calendar's ends (9999-12-31T23:00-05:00).
        raise ValueError(OUT_OF_RANGE) from None


class StatsPeriod(BaseModel):
    """The bounds the statistics were computed over, both inclusive, in UTC; null where open."""

    start_date: datetime | None = Field(description="First instant counted (inclusive), or null for no lower bound")
    end_date: datetime | None = Field(
        description="Last instant counted (inclusive; a day given as end_date becomes its 23:59:59.999999), or null"
    )


_TOTAL = "Every job created in the period, whatever its status: pending and processing jobs count here"
_SUCCESSFUL = "Jobs now completed (pending and processing jobs are in neither successful nor failed)"
_FAILED = "Jobs now failed (pending and processing jobs are in neither successful nor failed)"
_RATE = "successful_calls / total_calls as a percentage 0..100, rounded to 2 decimals; 0 when there were no calls"
_AVG = "Mean execution_time_ms over the jobs that recorded one (completed jobs), 2 decimals; null when none did"


def _percentile(n: int) -> str:
    return (
        f"{n}th percentile of execution_time_ms over the jobs that recorded one, by linear interpolation "
        "(PostgreSQL percentile_cont), 2 decimals; null when none did"
    )


class _Counts(BaseModel):
    total_calls: int = Field(description=_TOTAL)
    successful_calls: int = Field(description=_SUCCESSFUL)
    failed_calls: int = Field(description=_FAILED)


class _CountsWithRate(_Counts):
    success_rate: float = Field(description=_RATE)
    avg_execution_time_ms: float | None = Field(description=_AVG)


class DailyStatsBreakdown(_Counts):
    date: str = Field(description="UTC calendar day, YYYY-MM-DD; only days that had calls are listed, ascending")
    avg_execution_time_ms: float | None = Field(description=_AVG)


class EngineStatsBreakdown(_CountsWithRate):
    engine_id: uuid.UUID
    engine_name: str = Field(description="The engine's current name; for a deleted engine, the name its latest job recorded")
    engine_slug: str = Field(description="As engine_name: current, or as last recorded for a deleted engine")
    active_version_slug: str | None = Field(
        default=None, description="Version string of the engine's active version; null if none is active or the engine is deleted"
    )
    is_deleted: bool = Field(description="True when the engine no longer exists; its jobs still count")


class ConsumerStatsBreakdown(_CountsWithRate):
    consumer_id: uuid.UUID
    consumer_name: str = Field(description="The consumer's current name (archived consumers included)")
    is_archived: bool = Field(description="True when the consumer has been deleted (archived); its jobs still count")


class VersionStatsBreakdown(_CountsWithRate):
    version_id: uuid.UUID
    version: str = Field(description="The version string; for a deleted version, the string its latest job recorded")
    is_active: bool = Field(description="True for the engine's active version")
    is_deleted: bool = Field(description="True when the version no longer exists; its jobs still count")


class ConsumerSummaryStats(_CountsWithRate):
    pass


class EngineSummaryStats(_CountsWithRate):
    test_calls: int = Field(
        description=(
            "Jobs run with a version's test key (no consumer). They are real executions and count in every "
            "other figure here, but appear in no by_consumer entry: the by_consumer totals plus test_calls "
            "make total_calls"
        )
    )
    p50_execution_time_ms: float | None = Field(description=_percentile(50))
    p95_execution_time_ms: float | None = Field(description=_percentile(95))
    p99_execution_time_ms: float | None = Field(description=_percentile(99))


class TenantSummaryStats(EngineSummaryStats):
    pass


class TenantStatsResponse(BaseModel):
    tenant_id: uuid.UUID
    period: StatsPeriod
    summary: TenantSummaryStats
    by_day: list[DailyStatsBreakdown]
    by_engine: list[EngineStatsBreakdown] = Field(
        description="Every engine with calls in the period, deleted engines included; most calls first"
    )
    by_consumer: list[ConsumerStatsBreakdown] = Field(
        description="Every consumer with calls in the period, archived consumers included; most calls first. Test-key jobs are not listed (see summary.test_calls)"
    )


class EngineStatsResponse(BaseModel):
    engine_id: uuid.UUID
    engine_name: str
    engine_slug: str
    period: StatsPeriod
    summary: EngineSummaryStats
    by_consumer: list[ConsumerStatsBreakdown] = Field(
        description="Consumers that called this engine in the period, archived ones included; most calls first. Test-key jobs are not listed (see summary.test_calls)"
    )
    by_day: list[DailyStatsBreakdown]
    by_version: list[VersionStatsBreakdown] = Field(
        description="Every version with calls in the period, deleted versions included; most calls first"
    )


class ConsumerStatsResponse(BaseModel):
    consumer_id: uuid.UUID
    consumer_name: str
    is_archived: bool = Field(description="Archived (deleted) consumers keep their statistics and can still be queried")
    period: StatsPeriod
    summary: ConsumerSummaryStats
    by_engine: list[EngineStatsBreakdown] = Field(
        description="Engines this consumer called in the period, deleted engines included; most calls first"
    )
    by_day: list[DailyStatsBreakdown]
