"""Engines, their versions, who may call them and the jobs they ran (management)."""

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, Query, UploadFile

from shared.api import presenters, schemas, schemas_manage
from shared.api.deps import CurrentTenant, CurrentUser, SessionDep, _current_user
from shared.api.errors import responses
from shared.api.schemas_manage import JobStatusName
from shared.config import get_settings
from shared.errors import PayloadTooLarge
from shared.services import consumers, engines, job_queries, versions

router = APIRouter(prefix="/engines", tags=["engines"], dependencies=[Depends(_current_user)], responses=responses(401, 403))


@router.get("", response_model=list[schemas.EngineListItem])
def list_engines(session: SessionDep, user: CurrentUser):
    """The tenant's engines with their active versions."""
    return [presenters.engine_list_item(v) for v in engines.list_views(session, tenant_id=user.tenant_id)]


@router.post("", status_code=201, response_model=schemas.EngineListItem, responses=responses(409))
def create_engine(body: schemas.EngineCreate, session: SessionDep, user: CurrentUser):
    """Create an engine; the slug is generated from the name when omitted."""
    view = engines.create(session, tenant_id=user.tenant_id, name=body.name, slug=body.slug, description=body.description)
    return presenters.engine_list_item(view)


@router.get("/{engine_id}", response_model=schemas.EngineDetail, responses=responses(404))
def get_engine(engine_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """An engine with all its versions and consumers."""
    return presenters.engine_detail(engines.get_view(session, tenant_id=user.tenant_id, engine_id=engine_id))


@router.patch("/{engine_id}", response_model=schemas.EngineDetail, responses=responses(404, 409))
def update_engine(engine_id: uuid.UUID, body: schemas_manage.EngineUpdate, session: SessionDep, user: CurrentUser):
    """Change the engine's name, slug, description or IP whitelist; fields left out are kept.

    Each whitelist entry is an IPv4/IPv6 address or CIDR range (422 otherwise); while the whitelist
    is enabled, consumer calls from other addresses get 403 before their key is checked.
    """
    view = engines.update(session, tenant_id=user.tenant_id, engine_id=engine_id, changes=body.model_dump(include=body.model_fields_set))
    return presenters.engine_detail(view)


@router.delete("/{engine_id}", response_model=schemas_manage.EngineDeleteResponse, responses=responses(404))
def delete_engine(engine_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Delete the engine with its versions, access records and stored workbooks; its job history is kept."""
    engine = engines.delete(session, tenant_id=user.tenant_id, engine_id=engine_id)
    return schemas_manage.EngineDeleteResponse(message=f"Engine '{engine.name}' deleted")


def _read_limited(upload: UploadFile) -> bytes:
    limit = get_settings().max_upload_bytes
    data = upload.file.read(limit + 1)
    if len(data) > limit:
        raise PayloadTooLarge(f"The workbook is larger than the {limit // (1024 * 1024)} MB limit")
    return data


@router.post(
    "/{engine_id}/versions", status_code=201, response_model=schemas.EngineVersionCreateResponse,
    responses=responses(404, 409, 413, 422),
)
def upload_version(
    engine_id: uuid.UUID,
    session: SessionDep,
    tenant: CurrentTenant,
    version: Annotated[str, Form(min_length=1, max_length=100)],
    file: Annotated[UploadFile, File(description="The .xlsx workbook")],
):
    """Upload a workbook as a new version: named ranges are detected and a test key is returned once."""
    uploaded = versions.upload(
        session, tenant=tenant, engine_id=engine_id, version=version, filename=file.filename, data=_read_limited(file)
    )
    detail = presenters.version_detail(uploaded.version, None)
    return schemas.EngineVersionCreateResponse(**detail, test_api_key=uploaded.test_api_key, warnings=uploaded.warnings)


@router.patch(
    "/{engine_id}/versions/{version_id}", response_model=schemas.EngineVersionUpdateResponse,
    responses=responses(404, 422),
)
def update_version(engine_id: uuid.UUID, version_id: uuid.UUID, body: schemas.EngineVersionUpdate, session: SessionDep, user: CurrentUser):
    """Set the input and/or output schema; warnings name mismatches with the workbook's named ranges."""
    changes = body.model_dump(include=body.model_fields_set)
    version, warnings = versions.update_schemas(
        session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id, changes=changes
    )
    engine = engines.get(session, tenant_id=user.tenant_id, engine_id=engine_id)
    return schemas.EngineVersionUpdateResponse(**presenters.version_detail(version, engine.active_version_id), warnings=warnings)


@router.delete(
    "/{engine_id}/versions/{version_id}", response_model=schemas_manage.EngineVersionDeleteResponse, responses=responses(404, 409)
)
def delete_version(engine_id: uuid.UUID, version_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Delete a version that is not active (409 for the active one) and its stored workbook; its jobs are kept."""
    version = versions.delete(session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id)
    return schemas_manage.EngineVersionDeleteResponse(id=version.id, version=version.version, message=f"Version '{version.version}' deleted")


@router.post(
    "/{engine_id}/versions/{version_id}/activate", response_model=schemas.EngineVersionActivateResponse, responses=responses(404)
)
def activate_version(engine_id: uuid.UUID, version_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Make this version the engine's active one; the previously active version is deactivated."""
    version = versions.activate(session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id)
    return schemas.EngineVersionActivateResponse(
        id=version.id, engine_id=engine_id, version=version.version, is_active=True,
        message=f"Version '{version.version}' is now active",
    )


@router.get("/{engine_id}/access", response_model=list[schemas_manage.AccessListItem], responses=responses(404))
def list_access(engine_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """The consumers that have access to this engine, with their permissions."""
    rows = consumers.list_engine_access(session, tenant_id=user.tenant_id, engine_id=engine_id)
    return [presenters.access_list_item(access, consumer) for access, consumer in rows]


@router.put("/{engine_id}/access/{consumer_id}", response_model=schemas.AccessPermissionResponse, responses=responses(404))
def grant_access(engine_id: uuid.UUID, consumer_id: uuid.UUID, body: schemas.GrantAccessRequest, session: SessionDep, user: CurrentUser):
    """Create or update a consumer's permissions on this engine."""
    access = consumers.grant(
        session, tenant_id=user.tenant_id, engine_id=engine_id, consumer_id=consumer_id, flags=body.model_dump()
    )
    return presenters.access_permission(access)


@router.delete("/{engine_id}/access/{consumer_id}", response_model=schemas_manage.AccessRevokeResponse, responses=responses(404))
def revoke_access(engine_id: uuid.UUID, consumer_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Remove all of the consumer's access to this engine (404 when it has none)."""
    consumers.revoke(session, tenant_id=user.tenant_id, engine_id=engine_id, consumer_id=consumer_id)
    return schemas_manage.AccessRevokeResponse(message="Access revoked")


@router.get("/{engine_id}/jobs", response_model=schemas_manage.JobListResponse, responses=responses(404))
def list_jobs(
    engine_id: uuid.UUID,
    session: SessionDep,
    user: CurrentUser,
    status: Annotated[JobStatusName | None, Query(description="Only jobs in this state")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
):
    """The engine's jobs, newest first, with the number matching the filter (consumer and test-key jobs)."""
    page = job_queries.list_for_engine(session, tenant_id=user.tenant_id, engine_id=engine_id, status=status, limit=limit, offset=offset)
    return schemas_manage.JobListResponse(
        jobs=[presenters.job_list_item(j) for j in page.jobs], total=page.total, limit=limit, offset=offset
    )


@router.get("/{engine_id}/jobs/recent", response_model=list[schemas_manage.RecentJobItem], responses=responses(404))
def recent_jobs(engine_id: uuid.UUID, session: SessionDep, user: CurrentUser, limit: Annotated[int, Query(ge=1, le=100)] = 20):
    """The engine's latest jobs, most recent first."""
    return [presenters.recent_job(j) for j in job_queries.recent_for_engine(session, tenant_id=user.tenant_id, engine_id=engine_id, limit=limit)]
