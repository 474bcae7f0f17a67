"""Jobs as the consumer API shows them (fields by status) and as management lists show them."""

from __future__ import annotations

from shared.api.schemas.jobs import (
    AboutResponse,
    DownloadResponse,
    ExecuteResponse,
    JobListItem,
    JobListResponse,
    JobResponse,
    RecentJobItem,
    TenantJobListItem,
    TenantJobListResponse,
)
from shared.db.models import Engine, EngineVersion, Job, JobStatus
from shared.services.job_queries import JobPage
from shared.services.jobs import Download

# --- the consumer API -------------------------------------------------------------------------


def accepted(job: Job) -> ExecuteResponse:
    # The answer to the request that made the job (a new job is pending): a request replayed with
    # its Idempotency-Key gets the same answer, whatever the job's status has become since.
    return ExecuteResponse(job_id=job.id, status=JobStatus.PENDING, message="Job queued for processing", created_at=job.created_at)


def job_status(job: Job) -> JobResponse:
    """Only the fields the job's status carries (spec, Consumer: jobs, rule 3): the others stay
    unset, and the route leaves unset fields out of the answer."""
    fields = dict(job_id=job.id, status=job.status, created_at=job.created_at, updated_at=job.updated_at)
    if job.status == JobStatus.COMPLETED:
        fields.update(inputs=job.inputs, outputs=job.outputs, completed_at=job.completed_at, execution_time_ms=job.execution_time_ms)
    elif job.status == JobStatus.FAILED:
        fields.update(inputs=job.inputs, error_message=job.error_message)
    if job.webhook_url:
        fields["webhook_url"] = job.webhook_url
    if job.webhook_sent_at is not None:
        fields["webhook_sent_at"] = job.webhook_sent_at
    if job.webhook_response_status is not None:  # unknown while the POST is in flight: left out
        fields["webhook_response_status"] = job.webhook_response_status
    return JobResponse(**fields)


def about(engine: Engine, version: EngineVersion) -> AboutResponse:
    return AboutResponse(
        name=engine.name, slug=engine.slug, description=engine.description, version=version.version,
        input_schema=version.input_schema, output_schema=version.output_schema, updated_at=version.updated_at,
        calc_ms_p50=(version.cost or {}).get("calc_ms_p50"), calc_ms_p95=(version.cost or {}).get("calc_ms_p95"),
    )


def download(link: Download) -> DownloadResponse:
    return DownloadResponse(download_url=link.url, filename=link.filename, expires_at=link.expires_at)


# --- an engine's jobs (management) ------------------------------------------------------------


def recent_job(job: Job) -> RecentJobItem:
    return RecentJobItem(
        job_id=job.id, status=job.status, consumer_id=job.consumer_id, consumer_name=job.consumer_name,
        version=job.version, is_test=job.is_test, created_at=job.created_at, completed_at=job.completed_at,
        execution_time_ms=job.execution_time_ms,
    )


def job_list_item(job: Job) -> JobListItem:
    return JobListItem(
        **recent_job(job).model_dump(), updated_at=job.updated_at, error_message=job.error_message,
        webhook_url=job.webhook_url, webhook_sent_at=job.webhook_sent_at, webhook_response_status=job.webhook_response_status,
    )


def job_page(page: JobPage, *, limit: int, offset: int) -> JobListResponse:
    return JobListResponse(jobs=[job_list_item(j) for j in page.jobs], total=page.total, limit=limit, offset=offset)


def tenant_job_page(page: JobPage, *, limit: int, offset: int) -> TenantJobListResponse:
    return TenantJobListResponse(
        jobs=[TenantJobListItem(**job_list_item(j).model_dump(), engine_id=j.engine_id, engine_name=j.engine_name, engine_slug=j.engine_slug)
              for j in page.jobs],
        total=page.total, limit=limit, offset=offset,
    )
