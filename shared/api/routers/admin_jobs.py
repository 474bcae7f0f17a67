"""An engine's jobs for a signed-in administrator: run a version as a test job (no test key to
paste), open one job, download its filled workbook. Used by the console's Try it and Jobs pages."""

import uuid

from fastapi import APIRouter

from shared.api.deps import CurrentUser, SessionDep
from shared.api.errors import responses
from shared.api.presenters import admin_jobs as present
from shared.api.presenters import jobs as present_jobs
from shared.api.schemas.admin_jobs import JobDetail, TestRunRequest
from shared.api.schemas.jobs import DownloadResponse, ExecuteResponse
from shared.services import admin_jobs

router = APIRouter(prefix="/engines", tags=["engines"])


@router.post(
    "/{engine_id}/versions/{version_id}/test-jobs", status_code=202, response_model=ExecuteResponse,
    responses=responses(400, 404, 503),
)
def run_test(engine_id: uuid.UUID, version_id: uuid.UUID, body: TestRunRequest, session: SessionDep, user: CurrentUser):
    """Queue a test job on a version (active or not), as its test key would, for an administrator.

    The job is a test job like those of `POST /jobs/test/...`: no consumer, `is_test` true,
    counted in `test_calls`. Poll it with `GET /engines/{engine_id}/jobs/{job_id}`."""
    job = admin_jobs.run_test(session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id, inputs=body.inputs)
    return present_jobs.accepted(job)


@router.get("/{engine_id}/jobs/{job_id}", response_model=JobDetail, responses=responses(404))
def get_job(engine_id: uuid.UUID, job_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """One of the engine's jobs in full: status, inputs, outputs, error, webhook outcome, timings."""
    return present.job_detail(admin_jobs.get(session, tenant_id=user.tenant_id, engine_id=engine_id, job_id=job_id))


@router.get("/{engine_id}/jobs/{job_id}/download", response_model=DownloadResponse, responses=responses(400, 404))
def download(engine_id: uuid.UUID, job_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """A temporary (about one hour) URL to the filled workbook of one of the engine's completed jobs."""
    return present_jobs.download(admin_jobs.download(session, tenant_id=user.tenant_id, engine_id=engine_id, job_id=job_id))
