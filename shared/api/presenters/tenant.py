"""The tenant's settings and its document storage as the management API shows them."""

from __future__ import annotations

from shared.adapters.graph import Drive, Site
from shared.api.schemas.tenant import StorageConnectionTestResponse, StorageDriveInfo, StorageSiteInfo, TenantSettingsResponse
from shared.services.tenant_settings import ConnectionResult, TenantSettings


def settings(settings: TenantSettings) -> TenantSettingsResponse:
    tenant = settings.tenant
    return TenantSettingsResponse(
        id=tenant.id, slug=tenant.slug, name=tenant.name,
        client_id=settings.client_id, client_secret=settings.client_secret, tenant_id=settings.tenant_id,
        site_id=settings.site_id, site_name=settings.site_name, drive_id=settings.drive_id, drive_name=settings.drive_name,
        storage_configured=settings.storage_configured, updated_at=tenant.updated_at,
    )


def connection_test(result: ConnectionResult) -> StorageConnectionTestResponse:
    return StorageConnectionTestResponse(success=result.success, message=result.message, error=result.error)


def site(site: Site) -> StorageSiteInfo:
    return StorageSiteInfo(**vars(site))


def drive(drive: Drive) -> StorageDriveInfo:
    return StorageDriveInfo(**vars(drive))
