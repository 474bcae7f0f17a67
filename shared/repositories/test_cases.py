"""An engine's test cases and the runs of them on its versions."""

from __future__ import annotations

import uuid

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from shared.db.models import TestCase, TestRun


def add_case(session: Session, case: TestCase) -> TestCase:
    """Insert a test case."""
    session.add(case)
    session.flush()
    return case


def get_case(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, case_id: uuid.UUID) -> TestCase | None:
    """One case of this tenant's engine."""
    return session.scalar(
        select(TestCase).where(TestCase.tenant_id == tenant_id, TestCase.engine_id == engine_id, TestCase.id == case_id)
    )


def list_cases(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, enabled_only: bool = False) -> list[TestCase]:
    """The engine's cases, oldest first (the order runs report them in)."""
    query = select(TestCase).where(TestCase.tenant_id == tenant_id, TestCase.engine_id == engine_id)
    if enabled_only:
        query = query.where(TestCase.enabled.is_(True))
    return list(session.scalars(query.order_by(TestCase.created_at, TestCase.id)))


def count_cases(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, enabled_only: bool = False) -> int:
    """How many cases the engine has (enabled ones only, when asked)."""
    query = select(func.count()).select_from(TestCase).where(TestCase.tenant_id == tenant_id, TestCase.engine_id == engine_id)
    if enabled_only:
        query = query.where(TestCase.enabled.is_(True))
    return session.scalar(query) or 0


def delete_case(session: Session, *, tenant_id: uuid.UUID, case_id: uuid.UUID) -> None:
    """Remove one case."""
    session.execute(
        delete(TestCase).where(TestCase.tenant_id == tenant_id, TestCase.id == case_id).execution_options(synchronize_session=False)
    )


def add_run(session: Session, run: TestRun) -> TestRun:
    """Insert a run."""
    session.add(run)
    session.flush()
    return run


def get_run_any_tenant(session: Session, *, run_id: uuid.UUID) -> TestRun | None:
    """A run by id alone (the checks function, which holds only ids)."""
    return session.get(TestRun, run_id)


def pending_runs_any_tenant(session: Session, *, version_id: uuid.UUID) -> list[TestRun]:
    """The version's runs waiting for the checks function, oldest first."""
    return list(session.scalars(
        select(TestRun).where(TestRun.version_id == version_id, TestRun.status == "pending").order_by(TestRun.created_at)
    ))


def latest_run(session: Session, *, tenant_id: uuid.UUID, version_id: uuid.UUID) -> TestRun | None:
    """The version's most recent run."""
    return session.scalar(
        select(TestRun).where(TestRun.tenant_id == tenant_id, TestRun.version_id == version_id)
        .order_by(TestRun.created_at.desc(), TestRun.id.desc()).limit(1)
    )


def latest_runs(session: Session, *, tenant_id: uuid.UUID, version_ids: list[uuid.UUID]) -> dict[uuid.UUID, TestRun]:
    """Each version's most recent run (one query, whatever the count)."""
    if not version_ids:
        return {}
    newest = (
        select(TestRun.version_id, func.max(TestRun.created_at).label("at"))
        .where(TestRun.tenant_id == tenant_id, TestRun.version_id.in_(version_ids))
        .group_by(TestRun.version_id).subquery()
    )
    rows = session.scalars(
        select(TestRun).join(newest, (TestRun.version_id == newest.c.version_id) & (TestRun.created_at == newest.c.at))
        .where(TestRun.tenant_id == tenant_id).order_by(TestRun.id)
    )
    return {run.version_id: run for run in rows}
