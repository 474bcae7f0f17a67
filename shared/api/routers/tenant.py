"""The caller's tenant: settings and its document storage (Microsoft Graph)."""

from fastapi import APIRouter, Path

from shared.api.deps import CurrentUser, SessionDep
from shared.api.errors import responses
from shared.api.presenters import tenant as present
from shared.api.schemas.common import ErrorResponse
from shared.api.schemas.tenant import (
    StorageConnectionTestResponse,
    StorageDriveInfo,
    StorageSiteInfo,
    TenantSettingsResponse,
    TenantSettingsUpdate,
)
from shared.services import tenant_settings

router = APIRouter(prefix="/tenant", tags=["tenant"])

_GRAPH_FAILED = {502: {"model": ErrorResponse, "description": "Microsoft Graph or the identity platform failed or refused the credentials"}}


@router.get("/settings", response_model=TenantSettingsResponse)
def get_tenant_settings(session: SessionDep, user: CurrentUser):
    """The tenant's name and storage settings; client_secret is masked."""
    return present.settings(tenant_settings.get(session, tenant_id=user.tenant_id))


@router.put("/settings", response_model=TenantSettingsResponse, responses=responses(422))
def put_tenant_settings(body: TenantSettingsUpdate, session: SessionDep, user: CurrentUser):
    """Change the name and storage settings; credentials are stored encrypted, the mask keeps the secret."""
    # Only the fields sent: a field left out is kept, a field sent as null or "" is cleared.
    changes = body.model_dump(include=body.model_fields_set)
    return present.settings(tenant_settings.update(session, tenant_id=user.tenant_id, changes=changes))


@router.post("/test-storage-connection", response_model=StorageConnectionTestResponse)
def test_storage_connection(session: SessionDep, user: CurrentUser):
    """Try the saved credentials against Microsoft Graph (and the chosen drive or site); the outcome, always 200."""
    return present.connection_test(tenant_settings.test_connection(session, tenant_id=user.tenant_id))


@router.post("/storage/discover-sites", response_model=list[StorageSiteInfo], responses={**responses(400), **_GRAPH_FAILED})
def discover_sites(session: SessionDep, user: CurrentUser):
    """The SharePoint sites the saved app registration can see; needs saved credentials (400 otherwise)."""
    return [present.site(site) for site in tenant_settings.discover_sites(session, tenant_id=user.tenant_id)]


@router.post(
    "/storage/discover-drives/{site_id}", response_model=list[StorageDriveInfo],
    responses={**responses(400, 404), **_GRAPH_FAILED},
)
def discover_drives(session: SessionDep, user: CurrentUser, site_id: str = Path(min_length=1, max_length=1024)):
    """The document libraries of one site (a site id from discover-sites); needs saved credentials."""
    return [present.drive(drive) for drive in tenant_settings.discover_drives(session, tenant_id=user.tenant_id, site_id=site_id)]
