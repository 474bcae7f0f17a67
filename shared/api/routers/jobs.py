"""The consumer API: execute, test, about, job status, download (API key auth, checked by the services)."""

import uuid

from fastapi import APIRouter

from shared.api.deps import CurrentConsumer, SessionDep
from shared.api.errors import responses
from shared.api.presenters import jobs as present
from shared.api.schemas.jobs import AboutResponse, DownloadResponse, ExecuteRequest, ExecuteResponse, JobResponse
from shared.services import jobs

router = APIRouter(prefix="/jobs", tags=["jobs"], responses=responses(401, 403))


@router.post(
    "/execute/{tenant_slug}/{engine_slug}", status_code=202, response_model=ExecuteResponse,
    responses=responses(400, 404, 413, 503),
)
def execute(tenant_slug: str, engine_slug: str, body: ExecuteRequest, session: SessionDep, consumer: CurrentConsumer):
    """Queue a calculation on the engine's active version. Poll the job, or give a webhook_url.

    The inputs are checked before anything is queued: against the input schema (whose `$ref`s
    stay inside it and whose patterns run in linear time), then against the named ranges.
    """
    job = jobs.execute(
        session, request=consumer, tenant_slug=tenant_slug, engine_slug=engine_slug, inputs=body.inputs, webhook_url=body.webhook_url
    )
    return present.accepted(job)


@router.post(
    "/test/{tenant_slug}/{engine_slug}/{version_id}", status_code=202, response_model=ExecuteResponse,
    responses=responses(400, 404, 413, 503),
)
def test_execute(
    tenant_slug: str, engine_slug: str, version_id: uuid.UUID, body: ExecuteRequest, session: SessionDep, consumer: CurrentConsumer
):
    """Queue a calculation on a given version, active or not, with that version's test key."""
    job = jobs.test_execute(
        session, request=consumer, tenant_slug=tenant_slug, engine_slug=engine_slug, version_id=version_id,
        inputs=body.inputs, webhook_url=body.webhook_url,
    )
    return present.accepted(job)


@router.get("/about/{tenant_slug}/{engine_slug}", response_model=AboutResponse, responses=responses(400, 404))
def about(tenant_slug: str, engine_slug: str, session: SessionDep, consumer: CurrentConsumer):
    """The engine's name, active version and schemas."""
    return present.about(*jobs.about(session, request=consumer, tenant_slug=tenant_slug, engine_slug=engine_slug))


# Only the fields the job's status carries are set (spec rule 3), so unset fields are left out.
@router.get("/{job_id}", response_model=JobResponse, response_model_exclude_unset=True, responses=responses(404))
def get_job(job_id: uuid.UUID, session: SessionDep, consumer: CurrentConsumer):
    """The job's status; inputs and outputs once it has finished."""
    return present.job_status(jobs.get_job(session, request=consumer, job_id=job_id))


@router.get("/{job_id}/download", response_model=DownloadResponse, responses=responses(400, 404))
def download(job_id: uuid.UUID, session: SessionDep, consumer: CurrentConsumer):
    """A temporary (about one hour) URL to the filled workbook of a completed job."""
    return present.download(jobs.download(session, request=consumer, job_id=job_id))
