"""A new version's background work, run by a worker after the upload: the slower engines'
fidelity check, then the copy of its workbook to the tenant's document library.

The upload checks IronCalc at once and answers; when IronCalc does not match every cell Excel
saved, a worker checks the other engines (formulas, in a child process with a deadline) and the
version switches to whichever matches Excel best, unless an administrator pinned its engine.

When the tenant has a document library configured (Microsoft Graph credentials and a drive), the
worker then uploads the workbook to ``sheetcalc/<engine slug>/<version>/<filename>`` there and
records the outcome in ``EngineVersion.document_storage``. A recorded outcome is final: a
redelivered message uploads nothing, and a Graph failure is recorded, not retried.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections import OrderedDict

from shared.calc import sandbox
from shared.adapters.storage import get_store, version_prefix
from shared.calc.fidelity import unimplemented
from shared.calc.fidelity.choice import check_engine
from shared.calc.fidelity.report import FidelityReport
from shared.calc.fidelity.stored_report import PENDING, merge_background_check, report_for_engine
from shared.config import get_settings
from shared.db.models import EngineVersion
from shared.db.session import session_scope
from shared.db.types import utcnow
from shared.errors import NotFound, SheetcalcError, WorkbookError, WorkbookRefused
from shared.repositories import engines as repo
from shared.services import tenant_settings, test_runs, version_costs

log = logging.getLogger(__name__)

# document_storage statuses
PENDING_COPY, STORED, COPY_FAILED, NOT_CONFIGURED = "pending", "stored", "failed", "not_configured"
LIBRARY_FOLDER = "sheetcalc"
# Characters SharePoint refuses in file and folder names, and control characters.
_UNSAFE_NAME = re.compile(r'["*:<>?/\\|\x00-\x1f]')


def background_check(data: bytes, engine: str) -> FidelityReport:
    """One slower engine's fidelity check, as a worker runs it (its deadline and memory from the settings)."""
    settings = get_settings()
    try:
        return check_engine(data, engine, timeout_s=settings.fidelity_timeout_seconds, memory_mb=settings.fidelity_memory_mb)
    except WorkbookError as exc:
        return FidelityReport(engine=engine, status="failed", error=exc.message)


class CheckDeadlineExpired(Exception):
    """An engine check ran out of time: the check stays pending and its message is redelivered,
    so how loaded the machine was never decides the engine."""


def has_pending_work(fidelity_report: dict | None, document_storage: dict | None) -> bool:
    """Whether a version still waits for its background work: an engine check or the copy."""
    engines = (fidelity_report or {}).get("engines", {})
    return (
        any(line.get("status") == PENDING for line in engines.values())
        or (document_storage or {}).get("status") == PENDING_COPY
    )


def check_in_background(version_id: uuid.UUID) -> str | None:
    """Run a version's pending engine checks, then copy it to the document library, then run its
    pending test runs (shared.services.test_runs); returns its engine. Raises CheckDeadlineExpired
    (after the copy, before the tests: they wait for the engine) when a check ran out of time."""
    try:
        engine = _check_engines(version_id)
    except CheckDeadlineExpired:
        copy_to_document_library(version_id)
        raise
    copy_to_document_library(version_id)
    test_runs.run_pending(version_id)  # the engine's test cases, on the engine the checks chose
    return engine


def _check_engines(version_id: uuid.UUID) -> str | None:
    """Run a version's pending engine checks; the engine it is calculated with afterwards."""
    with session_scope() as session:
        version = repo.get_version_any_tenant(session, version_id=version_id)
        engines = (version.fidelity_report or {}).get("engines", {}) if version else {}
        pending = [name for name, line in engines.items() if line.get("status") == PENDING]
        workbook_key = version.workbook_key if version else None
    if not pending:
        log.info("version %s has no engine check pending", version_id)
        return None
    data = get_store().get(workbook_key)
    results = [background_check(data, name) for name in pending]
    expired = [r for r in results if r.status == "timeout"]

    engine = None
    with session_scope() as session:
        version = repo.get_version_any_tenant(session, version_id=version_id)
        if version is None:
            return None
        report = version.fidelity_report
        if expired:
            # Reported as such and kept pending, with no switch on the other checks' partial
            # results: the message comes back and the version is checked again.
            engines = dict(report["engines"])
            for result in expired:
                line = engines[result.engine]
                attempts = int(line.get("timeouts", 0)) + 1
                engines[result.engine] = {
                    **line, "status": PENDING, "timeouts": attempts,
                    "error": f"{result.error} (attempt {attempts}); checked again",
                }
            version.fidelity_report = {**report, "engines": engines}
        else:
            engine = _merge(version, report, results, data)
    if expired:  # raised once the record above is committed
        log.warning("version %s: %s check ran out of time; it will be checked again",
                    version_id, ", ".join(r.engine for r in expired))
        raise CheckDeadlineExpired(version_id)
    return engine


def _merge(version, report: dict, results: list[FidelityReport], data: bytes) -> str:
    """The version with its background checks merged in, switched to the best engine unless
    pinned (its model stored); returns the engine it is calculated with."""
    prepared = merge_checks(version, report, results, data)
    if prepared is not None:
        key = version_prefix(version.tenant_id, version.engine_id, version.id) + f"prepared.{version.calc_engine}"
        get_store().put(key, prepared)
        version.prepared_key = key
        log.info("version %s switched to %s", version.id, version.calc_engine)
    return version.calc_engine


def merge_checks(version, report: dict, results: list[FidelityReport], data: bytes) -> bytes | None:
    """Merge background checks into ``version`` (its report, and its engine, cost and lane when
    a better engine's model is built within the limits, unless pinned); the new engine's
    serialized model when it switched, for the caller to keep (also the library's:
    ``sheetcalc.Engine``)."""
    for result in results:
        report = merge_background_check(report, result)
    prepared = None
    if version.calc_engine_pinned:
        report = report_for_engine(report, version.calc_engine)
    elif report["engine"] != version.calc_engine:
        # The better engine's model, built and measured in the fence; kept only within the limits.
        settings = get_settings()
        try:
            built, cost = sandbox.prepare_engine_model(data, report["engine"], sandbox.Fence.from_settings(settings))
            version_costs.judge(cost, settings)
        except WorkbookRefused as exc:
            log.warning("version %s stays on %s: %s", version.id, version.calc_engine, exc.message)
            better = report["engine"]
            report = report_for_engine(report, version.calc_engine)
            engines = dict(report.get("engines") or {})
            engines[better] = {**engines.get(better, {}), "not_used": exc.message}
            report = {**report, "engines": engines}
        else:
            prepared, version.calc_engine, version.cost = built, report["engine"], cost
            version.lane = version_costs.lane(cost, report["engine"], settings)
    version.fidelity_report = report
    return prepared


def document_storage_record(status: str, **fields) -> dict:
    """A ``document_storage`` value: the status, and every other field present (null until known)."""
    return {"status": status, "web_url": None, "path": None, "error": None, "stored_at": None, **fields}


def document_path(engine_slug: str, version: str, filename: str) -> str:
    """Where a version goes in the drive: ``sheetcalc/<engine slug>/<version>/<filename>``."""
    return "/".join(_safe_name(part) for part in (LIBRARY_FOLDER, engine_slug, version, filename))


def _safe_name(name: str) -> str:
    # One folder or file name SharePoint accepts: no reserved characters, no leading or trailing
    # spaces or dots (a version "1.0." or " 2 " would be refused or renamed).
    return _UNSAFE_NAME.sub("_", name).strip(" .") or "_"


def copy_to_document_library(version_id: uuid.UUID) -> None:
    """Upload a version's workbook to its tenant's document library once, and record the outcome.

    Only a version whose copy is pending is uploaded. A storage outage reading the workbook
    raises (the message is retried); a Graph failure is recorded as failed and returns.
    """
    with session_scope() as session:
        version = repo.get_version_any_tenant(session, version_id=version_id)
        if version is None or (version.document_storage or {}).get("status") != PENDING_COPY:
            return  # nothing asked, or already recorded (a redelivered message)
        library = tenant_settings.document_library(session, tenant_id=version.tenant_id)
        if library is None:  # the settings changed since the upload
            version.document_storage = document_storage_record(NOT_CONFIGURED)
            return
        engine = repo.get_engine(session, tenant_id=version.tenant_id, engine_id=version.engine_id)
        if engine is None:
            return  # deleted with its versions meanwhile
        path = document_path(engine.slug, version.version, version.filename)
        workbook_key = version.workbook_key
    data = get_store().get(workbook_key)
    try:
        item = library.client.upload_file(library.drive_id, path, data)
        outcome = document_storage_record(STORED, web_url=item.get("web_url"), path=path, stored_at=utcnow().isoformat())
    except SheetcalcError as exc:  # the adapter's errors carry messages safe to show
        log.warning("version %s: copy to the document library failed: %s", version_id, exc.message)
        outcome = document_storage_record(COPY_FAILED, path=path, error=f"Copying to the document library failed: {exc.message}")
    except Exception:  # a copy must never fail the version's other work
        log.exception("version %s: copy to the document library failed", version_id)
        outcome = document_storage_record(COPY_FAILED, path=path, error="Copying to the document library failed")

    with session_scope() as session:
        version = repo.get_version_any_tenant(session, version_id=version_id)
        # The first outcome recorded stands (a duplicate delivery may have finished first).
        if version is not None and (version.document_storage or {}).get("status") == PENDING_COPY:
            version.document_storage = outcome
            log.info("version %s: document library copy %s", version_id, outcome["status"])


def give_up(version_id: uuid.UUID) -> None:
    """Record that a version's background work never finished (its message was dead-lettered)."""
    test_runs.give_up(version_id)
    with session_scope() as session:
        version = repo.get_version_any_tenant(session, version_id=version_id)
        if version is None:
            return
        if (version.document_storage or {}).get("status") == PENDING_COPY:
            version.document_storage = document_storage_record(
                COPY_FAILED, error="Copying to the document library did not finish"
            )
        if not version.fidelity_report:
            return
        engines = dict(version.fidelity_report.get("engines", {}))
        for name, line in engines.items():
            if line.get("status") == PENDING and line.get("timeouts"):
                engines[name] = {**line, "status": "timeout",
                                 "error": f"no answer within the deadline in {line['timeouts']} attempts"}
            elif line.get("status") == PENDING:
                engines[name] = {**line, "status": "failed", "error": "the check did not finish"}
        version.fidelity_report = {**version.fidelity_report, "engines": engines}


def unimplemented_outputs(session, *, tenant_id: uuid.UUID, version) -> list[dict]:
    """The version's named outputs that depend on a cell calling a function its engine does not
    implement: [{"output", "cell", "function"}] ("cell" is the calling cell, "Sheet1!B2"),
    sorted by output name; [] when none. `version` is an EngineVersion or its id. A version
    whose stored report predates this record is analysed from its workbook once, and the
    result kept in its fidelity report."""
    if not isinstance(version, EngineVersion):
        version = repo.get_version(session, tenant_id=tenant_id, version_id=version)
    if version is None or version.tenant_id != tenant_id:
        raise NotFound("Engine version not found")
    report = version.fidelity_report or {}
    if unimplemented.REPORT_KEY not in report:
        section = unimplemented.analyse_workbook(get_store().get(version.workbook_key), version.calc_engine)
        version.fidelity_report = {**report, unimplemented.REPORT_KEY: section}
    else:
        section = report[unimplemented.REPORT_KEY]
    return [dict(o) for o in (section or {}).get("outputs") or []]


# The unimplemented section of each version a worker calculates, read once per process: the
# worker's read of a version leaves the report out (repositories.engines). Keyed by what changes
# whenever the report is re-centred on another engine.
_SECTIONS: "OrderedDict[tuple, dict]" = OrderedDict()
_SECTIONS_LIMIT = 512
_sections_lock = threading.Lock()


def unimplemented_for_jobs(version) -> dict:
    """The version's unimplemented section as its jobs check their outputs against it."""
    key = (version.id, version.calc_engine, version.prepared_key)
    with _sections_lock:
        if key in _SECTIONS:
            _SECTIONS.move_to_end(key)
            return _SECTIONS[key]
    with session_scope() as session:
        row = repo.get_version_any_tenant(session, version_id=version.id)
        section = ((row.fidelity_report if row is not None else None) or {}).get(unimplemented.REPORT_KEY) or {}
    with _sections_lock:
        _SECTIONS[key] = section
        while len(_SECTIONS) > _SECTIONS_LIMIT:
            _SECTIONS.popitem(last=False)
    return section
