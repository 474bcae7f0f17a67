"""The caller's tenant: settings and its document storage (Microsoft Graph)."""

from fastapi import APIRouter, Depends, Path

from shared.api.deps import CurrentUser, SessionDep, _current_user
from shared.api.errors import responses
from shared.api.schemas import ErrorResponse
from shared.api.schemas_tenant import (
    StorageConnectionTestResponse,
    StorageDriveInfo,
    StorageSiteInfo,
    TenantSettingsResponse,
    TenantSettingsUpdate,
)
from shared.services import tenant_settings
from shared.services.tenant_settings import TenantSettings

router = APIRouter(prefix="/tenant", tags=["tenant"], dependencies=[Depends(_current_user)], responses=responses(401, 403))

_GRAPH_FAILED = {502: {"model": ErrorResponse, "description": "Microsoft Graph or the identity platform failed or refused the credentials"}}


def _present(settings: TenantSettings) -> TenantSettingsResponse:
    tenant = settings.tenant
    return TenantSettingsResponse(
        id=tenant.id, slug=tenant.slug, name=tenant.name,
        client_id=settings.client_id, client_secret=settings.client_secret, tenant_id=settings.tenant_id,
        site_id=settings.site_id, site_name=settings.site_name, drive_id=settings.drive_id, drive_name=settings.drive_name,
        storage_configured=settings.storage_configured, updated_at=tenant.updated_at,
    )


@router.get("/settings", response_model=TenantSettingsResponse)
def get_tenant_settings(session: SessionDep, user: CurrentUser):
    """The tenant's name and storage settings; client_secret is masked."""
    return _present(tenant_settings.get(session, tenant_id=user.tenant_id))


@router.put("/settings", response_model=TenantSettingsResponse, responses=responses(422))
def put_tenant_settings(body: TenantSettingsUpdate, session: SessionDep, user: CurrentUser):
    """Change the name and storage settings; credentials are stored encrypted, the mask keeps the secret."""
    changes = body.model_dump(include=body.model_fields_set)
    return _present(tenant_settings.update(session, tenant_id=user.tenant_id, changes=changes))


@router.post("/test-storage-connection", response_model=StorageConnectionTestResponse)
def test_storage_connection(session: SessionDep, user: CurrentUser):
    """Try the saved credentials against Microsoft Graph (and the chosen drive or site); the outcome, always 200."""
    result = tenant_settings.test_connection(session, tenant_id=user.tenant_id)
    return StorageConnectionTestResponse(success=result.success, message=result.message, error=result.error)


@router.post("/storage/discover-sites", response_model=list[StorageSiteInfo], responses={**responses(400), **_GRAPH_FAILED})
def discover_sites(session: SessionDep, user: CurrentUser):
    """The SharePoint sites the saved app registration can see; needs saved credentials (400 otherwise)."""
    return [StorageSiteInfo(**vars(site)) for site in tenant_settings.discover_sites(session, tenant_id=user.tenant_id)]


@router.post(
    "/storage/discover-drives/{site_id}", response_model=list[StorageDriveInfo],
    responses={**responses(400, 404), **_GRAPH_FAILED},
)
def discover_drives(session: SessionDep, user: CurrentUser, site_id: str = Path(min_length=1, max_length=1024)):
    """The document libraries of one site (a site id from discover-sites); needs saved credentials."""
    drives = tenant_settings.discover_drives(session, tenant_id=user.tenant_id, site_id=site_id)
    return [StorageDriveInfo(**vars(drive)) for drive in drives]
