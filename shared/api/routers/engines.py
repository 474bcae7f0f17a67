"""Engines, their versions and who may call them (management)."""

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, UploadFile

from shared.api import presenters, schemas
from shared.api.deps import CurrentTenant, CurrentUser, SessionDep, _current_user
from shared.api.errors import responses
from shared.config import get_settings
from shared.errors import PayloadTooLarge
from shared.services import consumers, engines, versions

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
    return schemas.EngineVersionCreateResponse(**detail, test_api_key=uploaded.test_api_key)


@router.patch(
    "/{engine_id}/versions/{version_id}", response_model=schemas.EngineVersionUpdateResponse, responses=responses(404, 422)
)
def update_version(engine_id: uuid.UUID, version_id: uuid.UUID, body: schemas.EngineVersionUpdate, session: SessionDep, user: CurrentUser):
    """Set the input and/or output schema; warnings name mismatches with the workbook's named ranges."""
    changes = body.model_dump(include=body.model_fields_set)
    version, warnings = versions.update_schemas(
        session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id, changes=changes
    )
    engine = engines.get(session, tenant_id=user.tenant_id, engine_id=engine_id)
    return schemas.EngineVersionUpdateResponse(**presenters.version_detail(version, engine.active_version_id), warnings=warnings)


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


@router.put("/{engine_id}/access/{consumer_id}", response_model=schemas.AccessPermissionResponse, responses=responses(404))
def grant_access(engine_id: uuid.UUID, consumer_id: uuid.UUID, body: schemas.GrantAccessRequest, session: SessionDep, user: CurrentUser):
    """Create or update a consumer's permissions on this engine."""
    access = consumers.grant(
        session, tenant_id=user.tenant_id, engine_id=engine_id, consumer_id=consumer_id, flags=body.model_dump()
    )
    return schemas.AccessPermissionResponse(
        consumer_id=consumer_id, engine_id=engine_id, can_execute=access.can_execute,
        can_view_jobs=access.can_view_jobs, can_download=access.can_download, can_view_about=access.can_view_about,
    )
