"""Re-running a job, for an administrator: the same calculation the worker made, compared.

A job is reproducible by construction: it records the version's content hash and the engine
that calculated it, and NOW/TODAY/RAND/RANDBETWEEN answer from the job's own run context (its
creation time, a seed from its id: shared/calc/run_context.py). A re-run calculates the job's
inputs on its version with the worker's own calculation (job_runner) and reports whether every
output came out identical. Nothing is stored but a missing content hash of the version, which
a re-run reads the workbook for anyway; the job, its statistics and its result file stay as
they are.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from shared.adapters.storage import get_store
from shared.db.models import EngineVersion, Job, JobStatus
from shared.errors import BadRequest, InputValidationError, NotFound, WorkbookError
from shared.repositories import engines as engine_repo
from shared.services import admin_jobs, job_runner

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rerun:
    """A job calculated again, next to what it recorded."""

    job: Job
    outputs: dict[str, Any] | None  # None when the calculation failed this time
    differing_outputs: list[str]  # output names whose values differ (or that one side lacks)
    calc_engine: str
    version_sha256: str
    error_message: str | None = None

    @property
    def identical(self) -> bool:
        return self.outputs is not None and not self.differing_outputs


def _content_sha256(version: EngineVersion) -> str:
    # Versions uploaded before hashes were kept get theirs now, from the stored workbook.
    if version.content_sha256 is None:
        version.content_sha256 = hashlib.sha256(get_store().get(version.workbook_key)).hexdigest()
    return version.content_sha256


def differing(recorded: dict[str, Any], again: dict[str, Any]) -> list[str]:
    """Output names whose values are not exactly equal, in the recorded order then the new."""
    names = list(recorded) + [n for n in again if n not in recorded]
    return [n for n in names if n not in recorded or n not in again or recorded[n] != again[n]]


def rerun(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, job_id: uuid.UUID) -> Rerun:
    """Calculate a completed job of this tenant's engine again and compare its outputs."""
    job = admin_jobs.get(session, tenant_id=tenant_id, engine_id=engine_id, job_id=job_id)
    if job.status != JobStatus.COMPLETED:
        raise BadRequest(f"Only a completed job can be re-run. Current status: {job.status}")
    version = engine_repo.get_version(session, tenant_id=tenant_id, version_id=job.version_id)
    if version is None:
        raise NotFound(job_runner.VERSION_GONE)
    sha256 = _content_sha256(version)
    try:
        # The worker's own calculation, in the job's run context: same clock, same seed.
        outputs = job_runner.recalculate(job, version)
    except (InputValidationError, WorkbookError, ArithmeticError, LookupError, ValueError, TypeError):
        log.exception("re-run of job %s failed to calculate", job.id)
        return Rerun(job, None, list(job.outputs or {}), version.calc_engine, sha256, job_runner.CALCULATION_FAILED)
    return Rerun(job, outputs, differing(job.outputs or {}, outputs), version.calc_engine, sha256)
