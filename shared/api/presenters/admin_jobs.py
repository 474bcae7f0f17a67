"""Jobs as the administrator's job detail shows them."""

from __future__ import annotations

from shared.api.presenters.jobs import job_list_item
from shared.api.schemas.admin_jobs import JobDetail
from shared.db.models import Job


def job_detail(job: Job) -> JobDetail:
    return JobDetail(
        **job_list_item(job).model_dump(), engine_id=job.engine_id, version_id=job.version_id,
        inputs=job.inputs, outputs=job.outputs,
    )
