"""Jobs as the administrator's job detail shows them."""

from __future__ import annotations

from shared.api.presenters.jobs import job_list_item
from shared.api.schemas.admin_jobs import JobDetail, RerunResponse, WebhookAttemptItem
from shared.db.models import Job, WebhookAttempt
from shared.services.job_reruns import Rerun


def job_detail(job: Job, attempts: list[WebhookAttempt] = ()) -> JobDetail:
    return JobDetail(
        **job_list_item(job).model_dump(), engine_id=job.engine_id, version_id=job.version_id,
        inputs=job.inputs, outputs=job.outputs, version_sha256=job.version_sha256, calc_engine=job.calc_engine,
        webhook_attempts=[webhook_attempt(a) for a in attempts],
    )


def rerun(result: Rerun) -> RerunResponse:
    job = result.job
    return RerunResponse(
        job_id=job.id, identical=result.identical, differing_outputs=result.differing_outputs,
        outputs=result.outputs, recorded_outputs=job.outputs, calc_engine=result.calc_engine,
        recorded_calc_engine=job.calc_engine, version_sha256=result.version_sha256,
        recorded_version_sha256=job.version_sha256, error_message=result.error_message,
    )


def webhook_attempt(attempt: WebhookAttempt) -> WebhookAttemptItem:
    return WebhookAttemptItem.model_validate(attempt, from_attributes=True)
