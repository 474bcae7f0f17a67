"""Usage statistics for the tenant, an engine and a consumer (management)."""

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.exceptions import RequestValidationError
from pydantic import AfterValidator

from shared.api.deps import CurrentUser, SessionDep
from shared.api.errors import responses
from shared.api.presenters import stats as present
from shared.api.schemas import stats as schemas
from shared.services import stats

router = APIRouter(tags=["statistics"])

_COUNTING = (
    " Figures are computed in the database over the jobs created in the period. Every job counts in "
    "total_calls; completed jobs are successful, failed jobs failed, and pending or processing jobs "
    "count in total_calls only (neither successful nor failed). success_rate is a percentage 0..100 "
    "with 2 decimals (0 when there were no calls). Execution times (average, percentiles) cover the "
    "jobs that recorded one. by_day lists the UTC calendar days that had calls, ascending. A "
    "start_date after end_date is refused with 422."
)
_TEST_JOBS = (
    " Jobs run with a version's test key are real executions of that version: they count in every "
    "figure, and in summary.test_calls, but never appear in by_consumer."
)


def _start(value: str | None) -> datetime | None:
    return None if value is None else schemas.parse_bound(value, end=False)


def _end(value: str | None) -> datetime | None:
    return None if value is None else schemas.parse_bound(value, end=True)


@dataclass(frozen=True)
class Period:
    start: datetime | None
    end: datetime | None


def _period(
    start_date: Annotated[str | None, Query(description=schemas.START_HELP), AfterValidator(_start)] = None,
    end_date: Annotated[str | None, Query(description=schemas.END_HELP), AfterValidator(_end)] = None,
) -> Period:
    if start_date is not None and end_date is not None and start_date > end_date:
        raise RequestValidationError(
            [{"type": "value_error", "loc": ("query", "end_date"), "msg": "end_date is before start_date", "input": None}]
        )
    return Period(start_date, end_date)


PeriodDep = Annotated[Period, Depends(_period)]


@router.get(
    "/tenant/stats", response_model=schemas.TenantStatsResponse, responses=responses(422),
    description="Usage across all the tenant's engines and consumers, deleted engines and archived consumers included." + _COUNTING + _TEST_JOBS,
)
def tenant_stats(session: SessionDep, user: CurrentUser, period: PeriodDep):
    """The tenant's usage statistics."""
    return present.tenant_stats(stats.for_tenant(session, tenant_id=user.tenant_id, start=period.start, end=period.end))


@router.get(
    "/engines/{engine_id}/stats", response_model=schemas.EngineStatsResponse, responses=responses(404, 422),
    description="Usage of one engine, by consumer, day and version. 404 `Engine not found` for an engine that does "
    "not exist or was deleted (its jobs still count in the tenant statistics)." + _COUNTING + _TEST_JOBS,
)
def engine_stats(engine_id: uuid.UUID, session: SessionDep, user: CurrentUser, period: PeriodDep):
    """An engine's usage statistics."""
    return present.engine_stats(stats.for_engine(session, tenant_id=user.tenant_id, engine_id=engine_id, start=period.start, end=period.end))


@router.get(
    "/consumers/{consumer_id}/stats", response_model=schemas.ConsumerStatsResponse, responses=responses(404, 422),
    description="Usage by one consumer, by engine and day. Archived (deleted) consumers keep their history and are "
    "answered too (is_archived tells); 404 `Consumer not found` only for an id this tenant never had." + _COUNTING,
)
def consumer_stats(consumer_id: uuid.UUID, session: SessionDep, user: CurrentUser, period: PeriodDep):
    """A consumer's usage statistics."""
    return present.consumer_stats(
        stats.for_consumer(session, tenant_id=user.tenant_id, consumer_id=consumer_id, start=period.start, end=period.end)
    )
