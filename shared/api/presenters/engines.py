"""Engines, their versions and who may call them, as the management API shows them."""

from __future__ import annotations

import uuid

from shared.api.schemas.access import (
    AccessListItem,
    AccessPermissionResponse,
    AccessRevokeResponse,
    ConsumerAccessSummary,
    ConsumerEngineAccessItem,
)
from shared.api.presenters.tests_releases import tests_summary
from shared.api.schemas.engines import EngineDeleteResponse, EngineDetail, EngineListItem
from shared.api.schemas.versions import (
    EngineVersionActivateResponse,
    EngineVersionCreateResponse,
    EngineVersionDeleteResponse,
    EngineVersionDetail,
    EngineVersionSummary,
    EngineVersionUpdateResponse,
)
from shared.calc.fidelity.stored_report import report_summary
from shared.db.models import Consumer, Engine, EngineAccess, EngineVersion
from shared.services.consumers import PERMISSIONS
from shared.services.engines import EngineView
from shared.services.versions import CheckedVersion, UploadedVersion


def _flags(access: EngineAccess) -> dict[str, bool]:
    return {flag: getattr(access, flag) for flag in PERMISSIONS}


# --- engines ----------------------------------------------------------------------------------


def engine_list_item(view: EngineView) -> EngineListItem:
    engine, active = view.engine, view.active_version
    return EngineListItem(
        id=engine.id, name=engine.name, slug=engine.slug, description=engine.description,
        ip_whitelist_enabled=engine.ip_whitelist_enabled,
        active_version=version_summary(active, engine.active_version_id) if active else None,
        created_at=engine.created_at,
    )


def engine_detail(view: EngineView) -> EngineDetail:
    engine = view.engine
    return EngineDetail(
        id=engine.id, name=engine.name, slug=engine.slug, description=engine.description,
        active_version_id=engine.active_version_id, ip_whitelist_enabled=engine.ip_whitelist_enabled,
        ip_whitelist=engine.ip_whitelist or [],
        versions=[
            EngineVersionDetail(**_version_detail(v, is_active=v.id == engine.active_version_id), tests=tests_summary(view.test_runs.get(v.id)))
            for v in view.versions
        ],
        consumers=[
            ConsumerAccessSummary(
                consumer_id=consumer.id, consumer_name=consumer.name, last_used_at=consumer.last_used_at, **_flags(access)
            )
            for access, consumer in view.access
        ],
        created_at=engine.created_at,
    )


def engine_deleted(engine: Engine) -> EngineDeleteResponse:
    return EngineDeleteResponse(message=f"Engine '{engine.name}' deleted")


# --- versions ---------------------------------------------------------------------------------


def version_summary(version: EngineVersion, active_id: uuid.UUID | None) -> EngineVersionSummary:
    return EngineVersionSummary(
        id=version.id, version=version.version, filename=version.filename,
        is_active=version.id == active_id, created_at=version.created_at,
    )


def _version_detail(version: EngineVersion, *, is_active: bool) -> dict:
    # The fields of EngineVersionDetail, which the upload and update answers extend.
    return dict(
        id=version.id, version=version.version, filename=version.filename, is_active=is_active,
        created_at=version.created_at, updated_at=version.updated_at, file_size=version.file_size,
        calc_engine=version.calc_engine, calc_engine_pinned=version.calc_engine_pinned,
        fidelity=report_summary(version.fidelity_report), named_ranges=version.named_ranges,
        input_schema=version.input_schema, output_schema=version.output_schema,
        document_storage=version.document_storage, cost=_cost(version),
    )


def _cost(version: EngineVersion) -> dict | None:
    if not version.cost:
        return None
    return {**version.cost, "lane": version.lane}


def version_created(uploaded: UploadedVersion) -> EngineVersionCreateResponse:
    return EngineVersionCreateResponse(
        **_version_detail(uploaded.version, is_active=uploaded.is_active),
        test_api_key=uploaded.test_api_key, warnings=uploaded.warnings,
        suggested_input_schema=(uploaded.suggested_schemas or {}).get("input_schema"),
        suggested_output_schema=(uploaded.suggested_schemas or {}).get("output_schema"),
    )


def version_updated(checked: CheckedVersion) -> EngineVersionUpdateResponse:
    return EngineVersionUpdateResponse(**_version_detail(checked.version, is_active=checked.is_active), warnings=checked.warnings)


def version_activated(version: EngineVersion) -> EngineVersionActivateResponse:
    return EngineVersionActivateResponse(
        id=version.id, engine_id=version.engine_id, version=version.version, is_active=True,
        message=f"Version '{version.version}' is now active",
    )


def version_deleted(version: EngineVersion) -> EngineVersionDeleteResponse:
    return EngineVersionDeleteResponse(id=version.id, version=version.version, message=f"Version '{version.version}' deleted")


# --- access -----------------------------------------------------------------------------------


def access_permission(access: EngineAccess) -> AccessPermissionResponse:
    return AccessPermissionResponse(consumer_id=access.consumer_id, engine_id=access.engine_id, **_flags(access))


def access_list_item(access: EngineAccess, consumer: Consumer) -> AccessListItem:
    return AccessListItem(
        consumer_id=consumer.id, consumer_name=consumer.name, is_active=consumer.is_active, granted_at=access.granted_at,
        **_flags(access),
    )


def access_revoked() -> AccessRevokeResponse:
    return AccessRevokeResponse(message="Access revoked")


def consumer_engine_access(access: EngineAccess, engine: Engine, active: EngineVersion | None) -> ConsumerEngineAccessItem:
    return ConsumerEngineAccessItem(
        engine_id=engine.id, engine_name=engine.name, active_version_slug=active.version if active else None, **_flags(access)
    )
