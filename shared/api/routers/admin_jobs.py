"""An engine's jobs for a signed-in administrator: run a version as a test job (no test key to
paste), open one job, download its filled workbook, redeliver its webhook. Used by the console's
Try it and Jobs pages."""

import uuid

from fastapi import APIRouter

from shared.api.deps import CurrentUser, SessionDep
from shared.api.errors import responses
from shared.api.presenters import admin_jobs as present
from shared.api.presenters import jobs as present_jobs
from shared.api.schemas.admin_jobs import JobDetail, RerunResponse, TestRunRequest, WebhookAttemptItem
from shared.api.schemas.jobs import DownloadResponse, ExecuteResponse
from shared.services import admin_jobs, job_reruns

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
    """One of the engine's jobs in full: status, inputs, outputs, error, webhook outcome and delivery log, timings."""
    job = admin_jobs.get(session, tenant_id=user.tenant_id, engine_id=engine_id, job_id=job_id)
    return present.job_detail(job, admin_jobs.webhook_attempts(session, job=job))


@router.get("/{engine_id}/jobs/{job_id}/download", response_model=DownloadResponse, responses=responses(400, 404))
def download(engine_id: uuid.UUID, job_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """A temporary (about one hour) URL to the filled workbook of one of the engine's completed jobs."""
    return present_jobs.download(admin_jobs.download(session, tenant_id=user.tenant_id, engine_id=engine_id, job_id=job_id))


@router.post("/{engine_id}/jobs/{job_id}/rerun", response_model=RerunResponse, responses=responses(400, 404))
def rerun(engine_id: uuid.UUID, job_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Calculate a completed job again, in its own run context, and say whether its outputs are identical.

    NOW() and TODAY() answer the job's creation time (UTC) and RAND()/RANDBETWEEN() draw from a
    seed of the job's id, in the job and in every re-run. Nothing is stored: the job, its result
    file and the statistics stay as they are."""
    return present.rerun(job_reruns.rerun(session, tenant_id=user.tenant_id, engine_id=engine_id, job_id=job_id))


@router.post(
    "/{engine_id}/jobs/{job_id}/webhook-redeliveries", status_code=202, response_model=WebhookAttemptItem,
    responses=responses(400, 404, 409, 503),
)
def redeliver_webhook(engine_id: uuid.UUID, job_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Queue one more POST of the job's webhook, signed like the first, to its webhook_url.

    The attempt appears in the job's `webhook_attempts` and is made once by the webhook function;
    the job's `webhook_sent_at` and `webhook_response_status` keep describing its first attempt.
    400 when the job has no webhook_url; 409 when its first attempt has not been made yet."""
    return present.webhook_attempt(admin_jobs.redeliver_webhook(session, tenant_id=user.tenant_id, engine_id=engine_id, job_id=job_id))
