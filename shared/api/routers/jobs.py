"""The consumer API: execute, test, about, job status, download (API key auth)."""

import uuid

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from shared.api import schemas
from shared.api.deps import ApiKey, ClientIp, SessionDep
from shared.api.errors import responses
from shared.services import jobs

router = APIRouter(prefix="/jobs", tags=["jobs"], responses=responses(401, 403))


def _accepted(job) -> schemas.ExecuteResponse:
    return schemas.ExecuteResponse(job_id=job.id, status=job.status, message="Job queued for processing", created_at=job.created_at)


@router.post(
    "/execute/{tenant_slug}/{engine_slug}", status_code=202, response_model=schemas.ExecuteResponse,
    responses=responses(400, 404, 503),
)
def execute(tenant_slug: str, engine_slug: str, body: schemas.ExecuteRequest, session: SessionDep, api_key: ApiKey, client_ip: ClientIp):
    """Queue a calculation on the engine's active version. Poll the job, or give a webhook_url."""
    job = jobs.execute(
        session, tenant_slug=tenant_slug, engine_slug=engine_slug, api_key=api_key, client_ip=client_ip,
        body=body.model_dump(),
    )
    return _accepted(job)


@router.post(
    "/test/{tenant_slug}/{engine_slug}/{version_id}", status_code=202, response_model=schemas.ExecuteResponse,
    responses=responses(400, 404, 503),
)
def test_execute(
    tenant_slug: str, engine_slug: str, version_id: uuid.UUID, body: schemas.ExecuteRequest,
    session: SessionDep, api_key: ApiKey, client_ip: ClientIp,
):
    """Queue a calculation on a given version, active or not, with that version's test key."""
    job = jobs.test_execute(
        session, tenant_slug=tenant_slug, engine_slug=engine_slug, version_id=version_id, api_key=api_key,
        client_ip=client_ip, body=body.model_dump(),
    )
    return _accepted(job)


@router.get("/about/{tenant_slug}/{engine_slug}", response_model=schemas.AboutResponse, responses=responses(400, 404))
def about(tenant_slug: str, engine_slug: str, session: SessionDep, api_key: ApiKey, client_ip: ClientIp):
    """The engine's name, active version and schemas."""
    engine, version = jobs.about(session, tenant_slug=tenant_slug, engine_slug=engine_slug, api_key=api_key, client_ip=client_ip)
    return schemas.AboutResponse(
        name=engine.name, slug=engine.slug, description=engine.description, version=version.version,
        input_schema=version.input_schema, output_schema=version.output_schema, updated_at=version.updated_at,
    )


@router.get("/{job_id}", response_model=schemas.JobResponse, responses=responses(404))
def get_job(job_id: uuid.UUID, session: SessionDep, api_key: ApiKey, client_ip: ClientIp):
    """The job's status; inputs and outputs once it has finished."""
    job = jobs.get_job(session, job_id=job_id, api_key=api_key, client_ip=client_ip)
    # Only the fields the job's status carries (spec rule 3), so unset fields are left out.
    return JSONResponse(schemas.JobResponse(**jobs.job_view(job)).model_dump(mode="json", exclude_unset=True))


@router.get("/{job_id}/download", response_model=schemas.DownloadResponse, responses=responses(400, 404))
def download(job_id: uuid.UUID, session: SessionDep, api_key: ApiKey, client_ip: ClientIp):
    """A temporary (about one hour) URL to the filled workbook of a completed job."""
    return schemas.DownloadResponse(**jobs.download(session, job_id=job_id, api_key=api_key, client_ip=client_ip))
