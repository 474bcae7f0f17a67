"""Engine versions: upload (store, detect named ranges, test key), schemas, activation, deletion."""

from __future__ import annotations

import hashlib

import uuid
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

from sqlalchemy.orm import Session

from shared import calc
from shared.adapters import queues
from shared.calc import sandbox
from shared.calc.fidelity.stored_report import defer_slower_engines, report_for_engine
from shared.adapters.storage import XLSX_CONTENT_TYPE, get_store, version_prefix
from shared.calc.xlsx.guard import Limits
from shared.config import get_settings
from shared.db.models import EngineVersion, Tenant
from shared.db.types import utcnow
from shared.errors import Conflict, Invalid, NotFound
from shared.repositories import engines as repo
from shared.security import digest, new_api_key
from shared.services import engines as engine_service
from shared.services import output_limits, tenant_settings, test_runs, version_costs
from shared.services.inputs import check_schema
from shared.services.version_checks import NOT_CONFIGURED, PENDING_COPY, document_storage_record

VERSION_NOT_FOUND = "Engine version not found"
ACTIVE_VERSION_UNDELETABLE = "Cannot delete the active version; activate another version first"


@dataclass
class CheckedVersion:
    """A version and the warnings about it: where its schemas, named ranges or engine disagree."""

    version: EngineVersion
    is_active: bool
    warnings: list[str]


@dataclass
class UploadedVersion(CheckedVersion):
    """A new version and its test key, returned only this once."""

    test_api_key: str
    suggested_schemas: dict[str, Any] | None = None


def _clean_filename(filename: str | None) -> str:
    name = (filename or "workbook.xlsx").replace("\\", "/").rsplit("/", 1)[-1].strip() or "workbook.xlsx"
    return name[:255]


def upload(session: Session, *, tenant: Tenant, engine_id: uuid.UUID, version: str, filename: str | None, data: bytes) -> UploadedVersion:
    """Store a workbook as a new version of the engine and return its one-time test key."""
    engine = engine_service.get(session, tenant_id=tenant.id, engine_id=engine_id)
    version = version.strip()
    if not version or len(version) > 100:
        raise Invalid("Version must be 1 to 100 characters")
    if repo.version_exists(session, engine_id=engine.id, version=version):
        raise Conflict(f"Version '{version}' already exists for this engine")
    if not data:
        raise Invalid("The uploaded file is empty")
    # The guard's limits, then IronCalc's check (a second or two) in a child process that a
    # crash, a runaway parse or a memory blow-up cannot take the API with; slower engines are
    # checked by a worker, after the answer.
    settings = get_settings()
    choice, deferred = check_workbook(data, settings)
    named_ranges = choice.named_ranges

    version_id = uuid.uuid4()
    prefix = version_prefix(tenant.id, engine.id, version_id)
    store = get_store()
    store.put(prefix + "workbook.xlsx", data, XLSX_CONTENT_TYPE)
    store.put(prefix + f"prepared.{choice.engine}", choice.prepared)

    test_key = new_api_key(tenant.slug)
    row = EngineVersion(
        id=version_id,
        tenant_id=tenant.id,
        engine_id=engine.id,
        version=version,
        filename=_clean_filename(filename),
        file_size=len(data),
        workbook_key=prefix + "workbook.xlsx",
        prepared_key=prefix + f"prepared.{choice.engine}",
        calc_engine=choice.engine,
        fidelity_report=choice.report,
        named_ranges=named_ranges,
        test_key_hash=digest(test_key),
        content_sha256=hashlib.sha256(data).hexdigest(),
        cost=choice.cost,
        lane=version_costs.lane(choice.cost, choice.engine, settings),
    )
    copy_to_library = tenant_settings.document_library_configured(tenant)
    row.document_storage = document_storage_record(PENDING_COPY if copy_to_library else NOT_CONFIGURED)
    session.add(row)
    session.flush()
    warnings = list(choice.warnings)
    tests = test_runs.queue_for_upload(session, version=row)  # the engine's enabled test cases, run beside the checks
    if deferred or copy_to_library or tests:
        session.commit()  # the worker must find the version
        queues.enqueue_version_check(version_id)
    if tests:
        warnings.append("The engine's test cases run on this version in the background (see its tests)")
    if deferred:
        warnings.append(
            f"Also checking with {', '.join(deferred)} in the background: the version switches engine "
            "if that matches Excel better (see its fidelity report)"
        )
    if copy_to_library:
        warnings.append(
            "The workbook is copied to the tenant's document library in the background "
            "(see the version's document_storage)"
        )
    return UploadedVersion(version=row, test_api_key=test_key, is_active=False, warnings=warnings,
                           suggested_schemas=choice.suggested_schemas)


def check_workbook(data: bytes, settings: Any) -> tuple[sandbox.PreparedUpload, list[str]]:
    """An upload's checks before anything is kept: the guard, IronCalc's check in the fence, the
    output limit and the cost budget; the prepared upload and the slower engines left to check
    in the background (also the library's: ``sheetcalc.Engine``)."""
    choice = sandbox.prepare_upload(data, Limits.from_settings(settings), sandbox.Fence.from_settings(settings))
    # What its jobs would return (a range over the output limit is named), then what they cost.
    output_limits.check_version_outputs(choice.named_ranges, None, settings)
    version_costs.judge(choice.cost, settings)
    return choice, defer_slower_engines(choice.report)


def get(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID) -> EngineVersion:
    """A version of this tenant's engine; NotFound otherwise."""
    engine_service.get(session, tenant_id=tenant_id, engine_id=engine_id)
    version = repo.get_version(session, tenant_id=tenant_id, version_id=version_id)
    if version is None or version.engine_id != engine_id:
        raise NotFound(VERSION_NOT_FOUND)
    return version


def schema_warnings(version: EngineVersion) -> list[str]:
    """Schema properties with no named range, and named ranges no schema mentions."""
    ranges = {r["name"].lower(): r for r in version.named_ranges}
    warnings: list[str] = []
    mentioned: set[str] = set()
    for label, schema in (("input_schema", version.input_schema), ("output_schema", version.output_schema)):
        for prop in ((schema or {}).get("properties") or {}):
            mentioned.add(prop.lower())
            if prop.lower() not in ranges:
                warnings.append(f"{label} property '{prop}' has no matching named range in the workbook")
    if version.input_schema is not None or version.output_schema is not None:
        for key, rng in ranges.items():
            if key not in mentioned:
                warnings.append(f"Named range '{rng['name']}' ({rng['kind']}) is not mentioned in any schema")
    return warnings


class VersionChanges(TypedDict, total=False):
    """What an update may change; a key left out is kept, a schema given as None is removed."""

    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    calc_engine: str | None


def update_schemas(
    session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID, **changes: Unpack[VersionChanges]
) -> CheckedVersion:
    """Set the version's input and/or output schema (each a Draft 7 schema or null), and/or pin its engine."""
    unknown = changes.keys() - VersionChanges.__annotations__.keys()
    if unknown:
        raise TypeError(f"not a version setting: {', '.join(sorted(unknown))}")
    engine = engine_service.get(session, tenant_id=tenant_id, engine_id=engine_id)
    version = get(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version_id)
    if changes.get("calc_engine") is not None:
        pin_engine(version, changes["calc_engine"])
    for field in ("input_schema", "output_schema"):
        if field in changes:
            check_schema(changes[field], field)
            if field == "output_schema":
                output_limits.check_output_schema(version.named_ranges, changes[field], get_settings())
            setattr(version, field, changes[field])
    version.updated_at = utcnow()
    session.flush()
    return CheckedVersion(version=version, is_active=engine.active_version_id == version.id, warnings=schema_warnings(version))


def pin_engine(version: EngineVersion, engine_name: str) -> None:
    """Calculate this version with ``engine_name`` from now on, whatever the check chose."""
    if engine_name not in calc.available_engines():
        raise Invalid(f"Unknown calculation engine '{engine_name}'; choose one of: {', '.join(calc.available_engines())}")
    if engine_name != version.calc_engine:
        store = get_store()
        prepared = model_for_engine(version, engine_name, store.get(version.workbook_key))
        prepared_key = version_prefix(version.tenant_id, version.engine_id, version.id) + f"prepared.{engine_name}"
        store.put(prepared_key, prepared)
        version.prepared_key = prepared_key
    version.calc_engine = engine_name
    version.calc_engine_pinned = True


def model_for_engine(version: EngineVersion, engine_name: str, data: bytes) -> bytes:
    """The version's serialized model for ``engine_name`` (its cost, lane and report set for it),
    for the caller to keep (also the library's: ``sheetcalc.Engine``)."""
    # A pin is a check like the upload's: the engine's model built, calculated and measured
    # in the fence, with its deadline, and its cost judged before anything changes.
    settings = get_settings()
    prepared, cost = sandbox.prepare_engine_model(data, engine_name, sandbox.Fence.from_settings(settings))
    version_costs.judge(cost, settings)
    version.cost, version.lane = cost, version_costs.lane(cost, engine_name, settings)
    if version.fidelity_report:
        version.fidelity_report = report_for_engine(version.fidelity_report, engine_name)
    return prepared


def _lock_engine(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID):
    engine = repo.lock_engine(session, tenant_id=tenant_id, engine_id=engine_id)
    if engine is None:
        raise NotFound(engine_service.ENGINE_NOT_FOUND)
    return engine


def activate(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID) -> EngineVersion:
    """Make this version the engine's only active one.

    The engine row holds the single active version id, so two versions are never active; the
    row lock taken first orders this against concurrent activations and deletions.
    """
    _lock_engine(session, tenant_id=tenant_id, engine_id=engine_id)
    version = get(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version_id)
    version_costs.judge(version.cost, get_settings())  # the limits may have changed since its check
    repo.set_active_version(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version.id)
    session.flush()
    return version


def delete(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID) -> EngineVersion:
    """Remove a version that is not active, with its stored files; its jobs stay in the history."""
    engine = _lock_engine(session, tenant_id=tenant_id, engine_id=engine_id)
    version = get(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version_id)
    if engine.active_version_id == version.id:
        raise Conflict(ACTIVE_VERSION_UNDELETABLE)
    repo.delete_version(session, tenant_id=tenant_id, version_id=version.id)
    session.commit()
    engine_service.remove_stored_files(version_prefix(tenant_id, engine_id, version.id))
    return version
