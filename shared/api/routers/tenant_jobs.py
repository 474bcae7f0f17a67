"""The tenant's jobs across all its engines, for a signed-in administrator: the console's Jobs page.
One job in full, its download and its webhook stay under its engine (shared/api/routers/admin_jobs.py)."""

import uuid
from typing import Annotated

from fastapi import APIRouter, Query

from shared.api.deps import CurrentUser, SessionDep
from shared.api.presenters import jobs as present_jobs
from shared.api.schemas.jobs import JobStatusName, TenantJobListResponse
from shared.services import job_queries

router = APIRouter(prefix="/tenant", tags=["tenant"])

MAX_OFFSET = 2**63 - 1


@router.get("/jobs", response_model=TenantJobListResponse)
def list_jobs(
    session: SessionDep,
    user: CurrentUser,
    status: Annotated[JobStatusName | None, Query(description="Only jobs in this state")] = None,
    engine_id: Annotated[uuid.UUID | None, Query(description="Only this engine's jobs")] = None,
    q: Annotated[str | None, Query(max_length=255, description="Part of an engine's name or slug or of a consumer's name, or a job id")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
):
    """The tenant's jobs on all its engines, newest first, with the number matching the filter."""
    page = job_queries.list_for_tenant(
        session, tenant_id=user.tenant_id, status=status, engine_id=engine_id, search=q, limit=limit, offset=offset
    )
    return present_jobs.tenant_job_page(page, limit=limit, offset=offset)
