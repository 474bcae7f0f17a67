"""Runs of an engine's enabled test cases on a version, and what they say about activating it.

A run is queued (``pending``) when a version is uploaded to an engine with enabled cases, or when
an administrator asks; the checks function calculates it beside the version's fidelity check
(``run_pending``): every case through the fenced child, within the job budget, on the engine the
version is calculated with, in a run context of its own (the run's time; each case's id as the
seed). Each expected output is compared with ``output_compare``: a run passes when every output
of every case is identical or within its tolerance, and fails otherwise (a case that could not be
calculated fails too).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from shared.adapters import queues
from shared.db.models import EngineVersion, TestCase, TestRun
from shared.db.session import session_scope
from shared.db.types import utcnow
from shared.errors import Invalid, NotFound, WorkbookError
from shared.repositories import engines as engine_repo
from shared.repositories import test_cases as repo
from shared.services import engines, job_runner
from shared.services.output_compare import Tolerance, compare_outputs

log = logging.getLogger(__name__)

PENDING, PASSED, FAILED = "pending", "passed", "failed"
UPLOAD, MANUAL = "upload", "manual"
NO_RUN = "This version has no test run yet"
NO_ENABLED_CASES = "The engine has no enabled test cases to run"
VERSION_NOT_FOUND = "Engine version not found"


@dataclass
class _CaseJob:
    """A test case as the calculation asks for a job: inputs, an id (the seed) and a time (NOW)."""

    id: uuid.UUID
    inputs: dict[str, Any]
    created_at: datetime


def _version(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID) -> EngineVersion:
    engines.get(session, tenant_id=tenant_id, engine_id=engine_id)
    version = engine_repo.get_version(session, tenant_id=tenant_id, version_id=version_id)
    if version is None or version.engine_id != engine_id:
        raise NotFound(VERSION_NOT_FOUND)
    return version


def queue_for_upload(session: Session, *, version: EngineVersion) -> TestRun | None:
    """A pending run for a new version when its engine has enabled cases (the caller commits and
    asks the checks function); None otherwise."""
    if not repo.count_cases(session, tenant_id=version.tenant_id, engine_id=version.engine_id, enabled_only=True):
        return None
    return repo.add_run(session, TestRun(tenant_id=version.tenant_id, engine_id=version.engine_id, version_id=version.id,
                                         trigger=UPLOAD, status=PENDING, passed=0, failed=0))


def run_now(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID) -> TestRun:
    """Queue a run of the engine's enabled cases on the version, for the checks function."""
    version = _version(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version_id)
    if not repo.count_cases(session, tenant_id=tenant_id, engine_id=engine_id, enabled_only=True):
        raise Invalid(NO_ENABLED_CASES)
    run = repo.add_run(session, TestRun(tenant_id=tenant_id, engine_id=engine_id, version_id=version.id,
                                        trigger=MANUAL, status=PENDING, passed=0, failed=0))
    session.commit()  # the checks function must find it
    queues.enqueue_version_check(version.id)
    return run


def latest(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID) -> TestRun:
    """The version's most recent run; NotFound when it has none."""
    version = _version(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version_id)
    run = repo.latest_run(session, tenant_id=tenant_id, version_id=version.id)
    if run is None:
        raise NotFound(NO_RUN)
    return run


def latest_by_version(session: Session, *, tenant_id: uuid.UUID, version_ids: list[uuid.UUID]) -> dict[uuid.UUID, TestRun]:
    """Each version's most recent run, for the engine's detail."""
    return repo.latest_runs(session, tenant_id=tenant_id, version_ids=version_ids)


def summary(run: TestRun | None) -> dict[str, Any] | None:
    """A run in a few fields: status, counts, which outputs differed (the version item, a release)."""
    if run is None:
        return None
    differing = sorted({o["name"] for case in run.results or [] for o in case["outputs"] if o["verdict"] == "changed"})
    return {
        "run_id": str(run.id), "status": run.status, "passed": run.passed, "failed": run.failed,
        "total": run.passed + run.failed, "differing_outputs": differing, "trigger": run.trigger,
        "created_at": run.created_at.isoformat(), "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }


# --- the gate ------------------------------------------------------------------------------------


def gate_reasons(session: Session, *, version: EngineVersion) -> list[dict[str, str]]:
    """Why the version's test results do not allow activating it; empty when they do (always,
    for an engine without enabled cases)."""
    cases = repo.list_cases(session, tenant_id=version.tenant_id, engine_id=version.engine_id, enabled_only=True)
    if not cases:
        return []
    run = repo.latest_run(session, tenant_id=version.tenant_id, version_id=version.id)
    if run is None:
        return [{"code": "tests_not_run", "message": f"The engine's {len(cases)} enabled test cases have not been run on this version"}]
    if run.status == PENDING:
        return [{"code": "tests_pending", "message": "The test run of this version has not finished yet"}]
    if run.status != PASSED and run.error:
        return [{"code": "tests_failed", "message": f"The test run could not calculate this version: {run.error}"}]
    if run.status != PASSED:
        names = summary(run)["differing_outputs"]
        detail = f"; outputs that differ: {', '.join(names)}" if names else ""
        return [{"code": "tests_failed", "message": f"{run.failed} of {run.passed + run.failed} test cases failed on this version{detail}"}]
    covered = {case["case_id"] for case in run.results or []}
    changed = [c for c in cases if str(c.id) not in covered or c.updated_at > run.created_at]
    if changed:
        return [{"code": "tests_stale", "message": f"{len(changed)} enabled test cases were added or changed since the last run: run the tests again"}]
    return []


# --- running -------------------------------------------------------------------------------------


def run_pending(version_id: uuid.UUID) -> None:
    """Calculate the version's pending runs (the checks function): all of them at once, since
    they would calculate the same cases. A storage or database failure raises and leaves them
    pending, so the message comes again."""
    with session_scope() as session:
        runs = repo.pending_runs_any_tenant(session, version_id=version_id)
        version = engine_repo.get_version_to_calculate(session, version_id=version_id)
        if not runs or version is None:
            return
        cases = repo.list_cases(session, tenant_id=version.tenant_id, engine_id=version.engine_id, enabled_only=True)
        session.expunge_all()  # read after the session: plain values from here on
    started = utcnow()
    error = None
    try:
        results = _calculate(version, cases, started) if cases else []
    except WorkbookError as exc:  # the version's model could not be had: every delivery would fail so
        results, error = [], exc.message
    failed = sum(1 for case in results if case["status"] != PASSED)
    with session_scope() as session:
        for run in repo.pending_runs_any_tenant(session, version_id=version_id):
            if run.created_at > started:
                continue  # asked for after these cases were read: its own message runs it
            run.results, run.passed, run.failed, run.error = results, len(results) - failed, failed, error
            run.status, run.finished_at = (FAILED if failed or error else PASSED), utcnow()
    log.info("version %s: test run %s (%d of %d cases failed)", version_id, FAILED if failed else PASSED, failed, len(results))


def _calculate(version: EngineVersion, cases: list[TestCase], at: datetime) -> list[dict[str, Any]]:
    outcomes = job_runner.calculate_jobs(version, [_CaseJob(id=c.id, inputs=c.inputs, created_at=at) for c in cases])
    return [_case_result(case, outcome) for case, outcome in zip(cases, outcomes)]


def _case_result(case: TestCase, outcome) -> dict[str, Any]:
    head = {"case_id": str(case.id), "name": case.name}
    if outcome.outcome != "ok":
        message = outcome.message if outcome.outcome in ("invalid", "budget") and outcome.message else job_runner.CALCULATION_FAILED
        outputs = [{"name": name, "expected": want, "got": None, "difference": None, "verdict": "changed"}
                   for name, want in case.expected.items()]
        return {**head, "status": FAILED, "error": message, "outputs": outputs}
    got = outcome.outputs or {}
    tolerances = {name: Tolerance(**bounds) for name, bounds in (case.tolerances or {}).items()}
    compared = compare_outputs(case.expected, got, tolerances)
    outputs = [
        {"name": name, "expected": case.expected[name], "got": got.get(name), "difference": c.difference, "verdict": c.verdict,
         **({"missing": True} if name not in got else {})}
        for name, c in compared.items()
    ]
    passed = all(c.passed for c in compared.values())
    return {**head, "status": PASSED if passed else FAILED, "error": None, "outputs": outputs}


def give_up(version_id: uuid.UUID) -> None:
    """Record that the version's pending runs never finished (its check message was dead-lettered)."""
    with session_scope() as session:
        for run in repo.pending_runs_any_tenant(session, version_id=version_id):
            run.status, run.error, run.finished_at = FAILED, "The test run did not finish", utcnow()
