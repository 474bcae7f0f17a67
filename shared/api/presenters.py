"""Shaping rows and service results into response bodies."""

from __future__ import annotations

from shared.api import schemas
from shared.db.models import EngineVersion
from shared.services.engines import EngineView


def version_summary(version: EngineVersion, active_id) -> schemas.EngineVersionSummary:
    return schemas.EngineVersionSummary(
        id=version.id, version=version.version, filename=version.filename,
        is_active=version.id == active_id, created_at=version.created_at,
    )


def version_detail(version: EngineVersion, active_id) -> dict:
    return dict(
        id=version.id, version=version.version, filename=version.filename, is_active=version.id == active_id,
        created_at=version.created_at, updated_at=version.updated_at, file_size=version.file_size,
        calc_engine=version.calc_engine, named_ranges=version.named_ranges,
        input_schema=version.input_schema, output_schema=version.output_schema,
    )


def engine_list_item(view: EngineView) -> schemas.EngineListItem:
    engine, active = view.engine, view.active_version
    return schemas.EngineListItem(
        id=engine.id, name=engine.name, slug=engine.slug, description=engine.description,
        ip_whitelist_enabled=engine.ip_whitelist_enabled,
        active_version=version_summary(active, engine.active_version_id) if active else None,
        created_at=engine.created_at,
    )


def engine_detail(view: EngineView) -> schemas.EngineDetail:
    engine = view.engine
    return schemas.EngineDetail(
        id=engine.id, name=engine.name, slug=engine.slug, description=engine.description,
        active_version_id=engine.active_version_id, ip_whitelist_enabled=engine.ip_whitelist_enabled,
        ip_whitelist=engine.ip_whitelist or [],
        versions=[schemas.EngineVersionDetail(**version_detail(v, engine.active_version_id)) for v in view.versions],
        consumers=[
            schemas.ConsumerAccessSummary(
                consumer_id=consumer.id, consumer_name=consumer.name, last_used_at=consumer.last_used_at,
                can_execute=access.can_execute, can_view_jobs=access.can_view_jobs,
                can_download=access.can_download, can_view_about=access.can_view_about,
            )
            for access, consumer in view.access
        ],
        created_at=engine.created_at,
    )
