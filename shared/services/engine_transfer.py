"""Export an engine to an archive, and import one as a new engine of the caller's tenant.

The archive's format is shared/services/engine_archive.py. An import is an administrator's
uploads replayed, never a copy of rows: each version goes through ``versions.upload`` (the zip
bomb guard, the limits, the fidelity check in the fence, the cost budget), its schemas through
``versions.update_schemas`` (the schema rules), a pinned engine through the same pin (its model
built and its cost judged again), each test case through ``test_cases.create`` (its checks), and
the active version through ``versions.activate``. What it cannot honour is refused with the
upload's own 4xx, naming the version; then nothing of the import is left behind (an upload may
commit so that a worker finds its version: the engine is deleted again, with its stored files).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from shared import calc
from shared.adapters.storage import engine_prefix, get_store
from shared.config import get_settings
from shared.db.models import Tenant
from shared.db.types import utcnow
from shared.errors import Conflict, Invalid, NotFound, SheetcalcError
from shared.repositories import engines as engine_repo
from shared.services import engine_archive, engines, versions
from shared.services.engines import EngineView
from shared.services.inputs import check_schema

log = logging.getLogger(__name__)

try:  # the engine's test cases, where this service keeps them
    from shared.services import test_cases as case_service
except ImportError:  # pragma: no cover - a release without test cases exports none
    case_service = None  # type: ignore[assignment]


@dataclass
class ImportedVersion:
    """A version as the import created it, with its one-time test key."""

    version: Any
    is_active: bool
    test_api_key: str
    warnings: list[str]


@dataclass
class ImportReport:
    """The new engine, its versions, and what the import changed or left out (sentences)."""

    view: EngineView
    versions: list[ImportedVersion] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    test_cases_imported: int | None = None


def export(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID) -> tuple[str, bytes]:
    """This tenant's engine as an archive: its file name and bytes (NotFound for another's)."""
    view = engines.get_view(session, tenant_id=tenant_id, engine_id=engine_id)
    store = get_store()
    active = view.active_version
    archived = [
        engine_archive.ArchivedVersion(
            version=v.version, filename=v.filename, workbook=store.get(v.workbook_key),
            input_schema=v.input_schema, output_schema=v.output_schema, calc_engine=v.calc_engine,
            calc_engine_pinned=bool(v.calc_engine_pinned), fidelity_report=v.fidelity_report,
        )
        for v in sorted(view.versions, key=lambda v: v.created_at)
    ]
    archive = engine_archive.Archive(
        slug=view.engine.slug, name=view.engine.name, description=view.engine.description, versions=archived,
        active_version=active.version if active else None, test_cases=_cases_of(session, tenant_id, engine_id),
        exported_from={"engine_id": str(engine_id), "exported_at": utcnow().isoformat(),
                       "ip_whitelist_enabled": bool(view.engine.ip_whitelist_enabled)},
    )
    return f"{view.engine.slug}.sheetcalc-engine.zip", engine_archive.write(archive)


def _cases_of(session: Session, tenant_id: uuid.UUID, engine_id: uuid.UUID) -> list[dict[str, Any]] | None:
    if case_service is None:
        return None  # the hook: an archive without test cases says so with null
    return [
        {"name": c.name, "inputs": c.inputs, "expected": c.expected, "tolerances": c.tolerances, "enabled": c.enabled}
        for c in case_service.list_for_engine(session, tenant_id=tenant_id, engine_id=engine_id)
    ]


def import_engine(session: Session, *, tenant: Tenant, data: bytes, slug: str | None = None,
                  name: str | None = None) -> ImportReport:
    """A new engine of ``tenant`` from an export archive; see the module docstring for the rules."""
    archive = engine_archive.read(data, max_workbook_bytes=get_settings().max_upload_bytes)
    _precheck(archive)
    changes: list[str] = []
    chosen_slug = _free_slug(session, tenant.id, slug, archive.slug, changes)
    created = engines.create(session, tenant_id=tenant.id, name=name or archive.name, slug=chosen_slug,
                             description=archive.description)
    engine_id = created.engine.id
    try:
        report = _fill(session, tenant, engine_id, archive, changes)
    except BaseException:
        _undo(session, tenant.id, engine_id)
        raise
    return report


def _precheck(archive: engine_archive.Archive) -> None:
    """What can be refused before anything is created: labels, schemas, pinned engines."""
    if not archive.versions:
        raise Invalid("The archive holds no version: there is nothing to import")
    for v in archive.versions:
        if v.calc_engine not in calc.available_engines():
            raise Invalid(f"Version '{v.version}' names the calculation engine '{v.calc_engine}', which this "
                          f"service does not have ({', '.join(calc.available_engines())})")
        for label, schema in (("input_schema", v.input_schema), ("output_schema", v.output_schema)):
            try:
                check_schema(schema, label)
            except Invalid as exc:
                raise Invalid(f"Version '{v.version}': {exc.message}") from None


def _free_slug(session: Session, tenant_id: uuid.UUID, asked: str | None, exported: str, changes: list[str]) -> str:
    """The slug asked for (Conflict when taken), or the exported one, suffixed when taken."""
    if asked is not None:
        if engine_repo.get_engine_by_slug(session, tenant_id=tenant_id, slug=asked):
            raise Conflict(f"An engine with slug '{asked}' already exists")
        return asked
    slug, n = exported, 2
    while engine_repo.get_engine_by_slug(session, tenant_id=tenant_id, slug=slug):
        suffix = f"-{n}"
        slug, n = exported[: 100 - len(suffix)] + suffix, n + 1
    if slug != exported:
        changes.append(f"Slug '{exported}' is taken in this tenant: imported as '{slug}'")
    return slug


def _fill(session: Session, tenant: Tenant, engine_id: uuid.UUID, archive: engine_archive.Archive,
          changes: list[str]) -> ImportReport:
    imported: list[ImportedVersion] = []
    active_id = None
    for v in archive.versions:
        try:
            uploaded = versions.upload(session, tenant=tenant, engine_id=engine_id, version=v.version,
                                       filename=v.filename, data=v.workbook)
            schemas = {k: s for k, s in (("input_schema", v.input_schema), ("output_schema", v.output_schema)) if s is not None}
            pin = {"calc_engine": v.calc_engine} if v.calc_engine_pinned else {}
            checked = uploaded
            if schemas or pin:
                checked = versions.update_schemas(session, tenant_id=tenant.id, engine_id=engine_id,
                                                  version_id=uploaded.version.id, **schemas, **pin)
        except SheetcalcError as exc:
            # The upload's own refusal (its status kept), naming the version it was about.
            exc.message = f"Version '{v.version}' could not be imported: {exc.message}"
            exc.args = (exc.message,)
            raise
        row = uploaded.version
        changes += _engine_notes(v, row)
        warnings = list(uploaded.warnings) + (list(checked.warnings) if checked is not uploaded else [])
        imported.append(ImportedVersion(row, False, uploaded.test_api_key, warnings))
        if v.version == archive.active_version:
            active_id = row.id
    cases = _import_cases(session, tenant.id, engine_id, archive, changes)
    if active_id is not None:
        versions.activate(session, tenant_id=tenant.id, engine_id=engine_id, version_id=active_id)
        for item in imported:
            item.is_active = item.version.id == active_id
    else:
        changes.append("No version was active in the export: none is active here")
    if archive.exported_from.get("ip_whitelist_enabled"):
        changes.append("The exported engine had an IP whitelist: it is not imported (addresses belong to their "
                       "environment); set one for this engine if it needs one")
    changes.append("Not imported, as never exported: API keys, consumers and their access, webhook secrets, "
                   "the IP whitelist, jobs. Each version has a new test key")
    session.flush()
    view = engines.get_view(session, tenant_id=tenant.id, engine_id=engine_id)
    return ImportReport(view=view, versions=imported, changes=changes, test_cases_imported=cases)


def _engine_notes(exported: engine_archive.ArchivedVersion, row: Any) -> list[str]:
    """How the version's check here compares with the export's."""
    label = exported.version
    if exported.calc_engine_pinned:
        return [f"Version '{label}': engine choice pinned to {row.calc_engine}, re-checked here "
                "(its model built and its cost judged again)"]
    notes = []
    here = row.fidelity_report or {}
    pending = [n for n, line in (here.get("engines") or {}).items() if line.get("status") == "pending"]
    if row.calc_engine != exported.calc_engine and not pending:
        notes.append(f"Version '{label}': calculated with {row.calc_engine} here; the export used "
                     f"{exported.calc_engine} (this service's fidelity check chose)")
    elif pending and row.calc_engine != exported.calc_engine:
        notes.append(f"Version '{label}': {', '.join(pending)} checked in the background, as after any upload; "
                     f"the export used {exported.calc_engine}")
    before = exported.fidelity_report or {}
    if before and (before.get("cells_matching"), before.get("cells_compared")) != (here.get("cells_matching"), here.get("cells_compared")) \
            and row.calc_engine == exported.calc_engine:
        notes.append(f"Version '{label}': matches Excel in {here.get('cells_matching', 0)} of "
                     f"{here.get('cells_compared', 0)} cells here; the export recorded "
                     f"{before.get('cells_matching', 0)} of {before.get('cells_compared', 0)}")
    return notes


def _import_cases(session: Session, tenant_id: uuid.UUID, engine_id: uuid.UUID,
                  archive: engine_archive.Archive, changes: list[str]) -> int | None:
    if archive.test_cases is None:
        changes.append("The archive holds no test cases")
        return None
    if case_service is None:  # pragma: no cover - the hook for a release without test cases
        changes.append(f"The archive's {len(archive.test_cases)} test cases were not imported: this service keeps none")
        return None
    for index, case in enumerate(archive.test_cases):
        fields = case_service.CaseFields(
            name=case.get("name"), inputs=case.get("inputs"), expected=case.get("expected"),
            tolerances=case.get("tolerances"), enabled=bool(case.get("enabled", True)),
        )
        try:
            case_service.create(session, tenant_id=tenant_id, engine_id=engine_id, fields=fields)
        except SheetcalcError as exc:
            exc.message = f"Test case #{index + 1} could not be imported: {exc.message}"
            exc.args = (exc.message,)
            raise
    if archive.test_cases:
        changes.append(f"{len(archive.test_cases)} test cases imported")
    return len(archive.test_cases)


def _undo(session: Session, tenant_id: uuid.UUID, engine_id: uuid.UUID) -> None:
    """Nothing of a failed import stays: its rows (committed by an upload, or not) and its files."""
    session.rollback()
    with contextlib.suppress(NotFound):
        engines.delete(session, tenant_id=tenant_id, engine_id=engine_id)
    engines.remove_stored_files(engine_prefix(tenant_id, engine_id))
