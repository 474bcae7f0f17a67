"""The slower engines' fidelity check of a new version, run by a worker after the upload.

The upload checks IronCalc at once and answers; when IronCalc does not match every cell Excel
saved, a worker checks the other engines (formulas, in a child process with a deadline) and the
version switches to whichever matches Excel best, unless an administrator pinned its engine.
"""

from __future__ import annotations

import logging
import uuid

from shared import calc
from shared.adapters.storage import get_store, version_prefix
from shared.calc.choice import PENDING, check_engine, merge_background_check, report_for_engine
from shared.calc.fidelity import FidelityReport
from shared.config import get_settings
from shared.db.session import session_scope
from shared.errors import WorkbookError
from shared.repositories import engines as repo

log = logging.getLogger(__name__)


def _check(data: bytes, engine: str) -> FidelityReport:
    settings = get_settings()
    try:
        return check_engine(data, engine, timeout_s=settings.fidelity_timeout_seconds, memory_mb=settings.fidelity_memory_mb)
    except WorkbookError as exc:
        return FidelityReport(engine=engine, status="failed", error=exc.message)


def check_in_background(version_id: uuid.UUID) -> str | None:
    """Run a version's pending engine checks; returns the engine it is calculated with afterwards."""
    with session_scope() as session:
        version = repo.get_version_any_tenant(session, version_id=version_id)
        engines = (version.fidelity_report or {}).get("engines", {}) if version else {}
        pending = [name for name, line in engines.items() if line.get("status") == PENDING]
        workbook_key = version.workbook_key if version else None
    if not pending:
        log.info("version %s has no engine check pending", version_id)
        return None
    data = get_store().get(workbook_key)
    results = [_check(data, name) for name in pending]

    with session_scope() as session:
        version = repo.get_version_any_tenant(session, version_id=version_id)
        if version is None:
            return None
        report = version.fidelity_report
        for result in results:
            report = merge_background_check(report, result)
        if version.calc_engine_pinned:
            report = report_for_engine(report, version.calc_engine)
        elif report["engine"] != version.calc_engine:
            workbook = calc.get_engine(report["engine"]).load_xlsx(data)
            key = version_prefix(version.tenant_id, version.engine_id, version.id) + f"prepared.{report['engine']}"
            get_store().put(key, workbook.serialize())
            version.prepared_key, version.calc_engine = key, report["engine"]
            log.info("version %s switched to %s", version_id, report["engine"])
        version.fidelity_report = report
        return version.calc_engine


def give_up(version_id: uuid.UUID) -> None:
    """Record that a version's background check never finished (its message was dead-lettered)."""
    with session_scope() as session:
        version = repo.get_version_any_tenant(session, version_id=version_id)
        if version is None or not version.fidelity_report:
            return
        engines = dict(version.fidelity_report.get("engines", {}))
        for name, line in engines.items():
            if line.get("status") == PENDING:
                engines[name] = {**line, "status": "failed", "error": "the check did not finish"}
        version.fidelity_report = {**version.fidelity_report, "engines": engines}
