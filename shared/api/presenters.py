"""Shaping rows and service results into response bodies."""

from __future__ import annotations

from shared.api import schemas, schemas_manage
from shared.calc.fidelity.stored_report import report_summary
from shared.db.models import Consumer, Engine, EngineAccess, EngineVersion, Job
from shared.services.engines import EngineView

_FLAGS = ("can_execute", "can_view_jobs", "can_download", "can_view_about")


def _flags(access: EngineAccess) -> dict[str, bool]:
    return {flag: getattr(access, flag) for flag in _FLAGS}


def version_summary(version: EngineVersion, active_id) -> schemas.EngineVersionSummary:
    return schemas.EngineVersionSummary(
        id=version.id, version=version.version, filename=version.filename,
        is_active=version.id == active_id, created_at=version.created_at,
    )


def version_detail(version: EngineVersion, active_id) -> dict:
    return dict(
        id=version.id, version=version.version, filename=version.filename, is_active=version.id == active_id,
        created_at=version.created_at, updated_at=version.updated_at, file_size=version.file_size,
        calc_engine=version.calc_engine, calc_engine_pinned=version.calc_engine_pinned,
        fidelity=report_summary(version.fidelity_report), named_ranges=version.named_ranges,
        input_schema=version.input_schema, output_schema=version.output_schema,
        document_storage=version.document_storage,
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
                consumer_id=consumer.id, consumer_name=consumer.name, last_used_at=consumer.last_used_at, **_flags(access)
            )
            for access, consumer in view.access
        ],
        created_at=engine.created_at,
    )


def access_permission(access: EngineAccess) -> schemas.AccessPermissionResponse:
    return schemas.AccessPermissionResponse(consumer_id=access.consumer_id, engine_id=access.engine_id, **_flags(access))


def access_list_item(access: EngineAccess, consumer: Consumer) -> schemas_manage.AccessListItem:
    return schemas_manage.AccessListItem(
        consumer_id=consumer.id, consumer_name=consumer.name, is_active=consumer.is_active, granted_at=access.granted_at,
        **_flags(access),
    )


def consumer_engine_access(access: EngineAccess, engine: Engine, active: EngineVersion | None) -> schemas_manage.ConsumerEngineAccessItem:
    return schemas_manage.ConsumerEngineAccessItem(
        engine_id=engine.id, engine_name=engine.name, active_version_slug=active.version if active else None, **_flags(access)
    )


def consumer_list_item(consumer: Consumer) -> schemas_manage.ConsumerListItem:
    return schemas_manage.ConsumerListItem(
        id=consumer.id, name=consumer.name, api_key=consumer.api_key_hint, created_at=consumer.created_at,
        last_used_at=consumer.last_used_at, is_active=consumer.is_active,
    )


def consumer_update(consumer: Consumer) -> schemas_manage.ConsumerUpdateResponse:
    return schemas_manage.ConsumerUpdateResponse(id=consumer.id, name=consumer.name, is_active=consumer.is_active)


def recent_job(job: Job) -> schemas_manage.RecentJobItem:
    return schemas_manage.RecentJobItem(
        job_id=job.id, status=job.status, consumer_id=job.consumer_id, consumer_name=job.consumer_name,
        version=job.version, is_test=job.is_test, created_at=job.created_at, completed_at=job.completed_at,
        execution_time_ms=job.execution_time_ms,
    )


def job_list_item(job: Job) -> schemas_manage.JobListItem:
    return schemas_manage.JobListItem(
        **recent_job(job).model_dump(), updated_at=job.updated_at, error_message=job.error_message,
        webhook_url=job.webhook_url, webhook_sent_at=job.webhook_sent_at, webhook_response_status=job.webhook_response_status,
    )
