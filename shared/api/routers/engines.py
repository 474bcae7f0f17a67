"""Engines, their versions, who may call them and the jobs they ran (management)."""

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Body, File, Form, Query, Request, Response, UploadFile
from pydantic import AfterValidator

from shared.api import limits
from shared.api.deps import CurrentTenant, CurrentUser, SessionDep
from shared.api.errors import responses
from shared.api.presenters import engine_contract as present_contract
from shared.api.presenters import engines as present
from shared.api.presenters import jobs as present_jobs
from shared.api.schemas.access import AccessListItem, AccessPermissionResponse, AccessRevokeResponse, GrantAccessRequest
from shared.api.schemas.common import refuse_nul
from shared.api.schemas.engines import EngineCreate, EngineDeleteResponse, EngineDetail, EngineListItem, EngineUpdate
from shared.api.schemas.jobs import JobListResponse, JobStatusName, RecentJobItem
from shared.api.schemas.tests_releases import ActivateRequest, ActivationRefusedResponse
from shared.api.schemas.versions import (
    EngineVersionActivateResponse,
    EngineVersionCreateResponse,
    EngineVersionDeleteResponse,
    EngineVersionUpdate,
    EngineVersionUpdateResponse,
)
from shared.config import get_settings
from shared.errors import PayloadTooLarge
from shared.services import consumers, engine_contract, engines, job_queries, releases, versions

router = APIRouter(prefix="/engines", tags=["engines"])

# The largest OFFSET a database takes (a signed 64-bit integer): beyond it 422, not a database error.
MAX_OFFSET = 2**63 - 1


@router.get("", response_model=list[EngineListItem])
def list_engines(session: SessionDep, user: CurrentUser):
    """The tenant's engines with their active versions."""
    return [present.engine_list_item(v) for v in engines.list_views(session, tenant_id=user.tenant_id)]


@router.post("", status_code=201, response_model=EngineListItem, responses=responses(409))
def create_engine(body: EngineCreate, session: SessionDep, user: CurrentUser):
    """Create an engine; the slug is generated from the name when omitted."""
    view = engines.create(session, tenant_id=user.tenant_id, name=body.name, slug=body.slug, description=body.description)
    return present.engine_list_item(view)


@router.get("/{engine_id}", response_model=EngineDetail, responses=responses(404))
def get_engine(engine_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """An engine with all its versions and consumers."""
    return present.engine_detail(engines.get_view(session, tenant_id=user.tenant_id, engine_id=engine_id))


@router.get("/{engine_id}/openapi", response_model=dict[str, Any], responses=responses(400, 404))
def engine_openapi(engine_id: uuid.UUID, request: Request, response: Response, session: SessionDep, user: CurrentUser):
    """The engine's OpenAPI 3.1 contract, as its consumers get it from `GET /jobs/openapi/{tenant_slug}/{engine_slug}`
    (execute, poll and download with the active version's schemas), for an administrator: no API key needed.
    400 `Engine has no active version` before one is activated."""
    contract, tenant_slug = engine_contract.for_administrator(session, tenant_id=user.tenant_id, engine_id=engine_id)
    response.headers["Content-Disposition"] = f'attachment; filename="{contract.engine.slug}.openapi.json"'
    return present_contract.document(contract, base_url=str(request.base_url).rstrip("/"), tenant_slug=tenant_slug)


@router.patch("/{engine_id}", response_model=EngineDetail, responses=responses(404, 409))
def update_engine(engine_id: uuid.UUID, body: EngineUpdate, session: SessionDep, user: CurrentUser):
    """Change the engine's name, slug, description or IP whitelist; fields left out are kept.

    Each whitelist entry is an IPv4/IPv6 address or CIDR range (422 otherwise); while the whitelist
    is enabled, consumer calls from other addresses get 403 before their key is checked.
    """
    # Only the fields sent: a field left out is kept, a field sent as null is cleared.
    view = engines.update(session, tenant_id=user.tenant_id, engine_id=engine_id, **body.model_dump(include=body.model_fields_set))
    return present.engine_detail(view)


@router.delete("/{engine_id}", response_model=EngineDeleteResponse, responses=responses(404))
def delete_engine(engine_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Delete the engine with its versions, access records and stored workbooks; its job history is kept."""
    return present.engine_deleted(engines.delete(session, tenant_id=user.tenant_id, engine_id=engine_id))


def _read_limited(upload: UploadFile) -> bytes:
    limit = get_settings().max_upload_bytes
    data = upload.file.read(limit + 1)
    if len(data) > limit:
        raise PayloadTooLarge(f"The workbook is larger than the {limit // (1024 * 1024)} MB limit")
    return data


@router.post(
    "/{engine_id}/versions", status_code=201, response_model=EngineVersionCreateResponse,
    responses=responses(400, 404, 409, 413, 422, 503),
)
@limits.takes_upload
def upload_version(
    engine_id: uuid.UUID,
    session: SessionDep,
    tenant: CurrentTenant,
    version: Annotated[str, Form(min_length=1, max_length=100), AfterValidator(refuse_nul)],
    file: Annotated[UploadFile, File(description="The .xlsx workbook")],
):
    """Upload a workbook as a new version: named ranges are detected and a test key is returned once.

    A file that is not a readable .xlsx is 422. A workbook over the service's limits (parts,
    inflated size, compression ratio, sheets, defined names, cells; formulas longer than 8,192
    characters or nested more than 64 levels), a macro-enabled one, or one the reader fails on
    or cannot finish in time and memory is 400, and the message says which. 503 when too many
    uploads are being read at once: try again shortly.
    """
    uploaded = versions.upload(
        session, tenant=tenant, engine_id=engine_id, version=version, filename=file.filename, data=_read_limited(file)
    )
    return present.version_created(uploaded)


@router.patch(
    "/{engine_id}/versions/{version_id}", response_model=EngineVersionUpdateResponse,
    responses=responses(404, 422),
)
def update_version(engine_id: uuid.UUID, version_id: uuid.UUID, body: EngineVersionUpdate, session: SessionDep, user: CurrentUser):
    """Set the input and/or output schema; warnings name mismatches with the workbook's named ranges.

    A schema's `$ref` may point only inside it (remote and file references are refused with 422:
    nothing is fetched or read), and its patterns must compile with RE2 (linear-time matching: no
    backreferences or lookaround).
    """
    checked = versions.update_schemas(
        session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id, **body.model_dump(include=body.model_fields_set)
    )
    return present.version_updated(checked)


@router.delete(
    "/{engine_id}/versions/{version_id}", response_model=EngineVersionDeleteResponse, responses=responses(404, 409)
)
def delete_version(engine_id: uuid.UUID, version_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Delete a version that is not active (409 for the active one) and its stored workbook; its jobs are kept."""
    return present.version_deleted(versions.delete(session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id))


@router.post(
    "/{engine_id}/versions/{version_id}/activate", response_model=EngineVersionActivateResponse,
    responses={**responses(404, 422), 409: {"model": ActivationRefusedResponse, "description": "Refused by the release gate"}},
)
def activate_version(
    engine_id: uuid.UUID, version_id: uuid.UUID, session: SessionDep, user: CurrentUser,
    body: Annotated[ActivateRequest | None, Body()] = None,
):
    """Make this version the engine's active one; the previously active version is deactivated.

    No body is needed. When the engine has enabled test cases, the version's latest test run must
    have passed (and cover the cases as they are now), and no output may depend on a function no
    engine implements; otherwise 409 with `detail` and `reasons`. A body `{"override_reason": "..."}`
    activates it anyway. Every activation is recorded in `GET /engines/{engine_id}/releases`."""
    activation = releases.activate(
        session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id, user=user,
        override_reason=body.override_reason if body else None,
    )
    return present.version_activated(activation.version)


@router.get("/{engine_id}/access", response_model=list[AccessListItem], responses=responses(404))
def list_access(engine_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """The consumers that have access to this engine, with their permissions."""
    rows = consumers.list_engine_access(session, tenant_id=user.tenant_id, engine_id=engine_id)
    return [present.access_list_item(access, consumer) for access, consumer in rows]


@router.put("/{engine_id}/access/{consumer_id}", response_model=AccessPermissionResponse, responses=responses(404))
def grant_access(engine_id: uuid.UUID, consumer_id: uuid.UUID, body: GrantAccessRequest, session: SessionDep, user: CurrentUser):
    """Create or update a consumer's permissions on this engine."""
    access = consumers.grant(session, tenant_id=user.tenant_id, engine_id=engine_id, consumer_id=consumer_id, **body.model_dump())
    return present.access_permission(access)


@router.delete("/{engine_id}/access/{consumer_id}", response_model=AccessRevokeResponse, responses=responses(404))
def revoke_access(engine_id: uuid.UUID, consumer_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Remove all of the consumer's access to this engine (404 when it has none)."""
    consumers.revoke(session, tenant_id=user.tenant_id, engine_id=engine_id, consumer_id=consumer_id)
    return present.access_revoked()


@router.get("/{engine_id}/jobs", response_model=JobListResponse, responses=responses(404))
def list_jobs(
    engine_id: uuid.UUID,
    session: SessionDep,
    user: CurrentUser,
    status: Annotated[JobStatusName | None, Query(description="Only jobs in this state")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
):
    """The engine's jobs, newest first, with the number matching the filter (consumer and test-key jobs)."""
    page = job_queries.list_for_engine(session, tenant_id=user.tenant_id, engine_id=engine_id, status=status, limit=limit, offset=offset)
    return present_jobs.job_page(page, limit=limit, offset=offset)


@router.get("/{engine_id}/jobs/recent", response_model=list[RecentJobItem], responses=responses(404))
def recent_jobs(engine_id: uuid.UUID, session: SessionDep, user: CurrentUser, limit: Annotated[int, Query(ge=1, le=100)] = 20):
    """The engine's latest jobs, most recent first."""
    return [present_jobs.recent_job(j) for j in job_queries.recent_for_engine(session, tenant_id=user.tenant_id, engine_id=engine_id, limit=limit)]
