"""Bodies of the tenant endpoints: settings, the storage connection test, storage discovery."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from shared.api.schemas.common import RequestModel

_MASK_NOTE = (
    'Masked on read: "********" when a secret is stored, null when none is. Sending the mask back '
    "(or leaving the field out) keeps the stored secret; null or \"\" removes it."
)


class TenantSettingsResponse(BaseModel):
    """The tenant and its document storage: a Microsoft Graph app registration and the chosen site and drive."""

    id: uuid.UUID = Field(description="The sheetcalc tenant's id")
    slug: str
    name: str
    client_id: str | None = Field(description="Application (client) ID of the Azure AD app registration")
    client_secret: str | None = Field(description=_MASK_NOTE)
    tenant_id: str | None = Field(description="Directory (tenant) ID or domain of the app registration in Azure AD")
    site_id: str | None = Field(description="The chosen SharePoint site (an id from discover-sites)")
    site_name: str | None
    drive_id: str | None = Field(description="The chosen document library (an id from discover-drives)")
    drive_name: str | None
    storage_configured: bool = Field(description="client_id, client_secret and tenant_id are all stored")
    updated_at: datetime


class TenantSettingsUpdate(RequestModel):
    """Fields left out keep their value; for the storage fields, null or "" clears one. Read-only
    fields of TenantSettingsResponse sent back are ignored, so a GET body can be edited and PUT."""

    model_config = ConfigDict(
        json_schema_extra={"example": {
            "name": "Acme Insurance", "client_id": "11111111-2222-3333-4444-555555555555",
            "client_secret": "the secret value", "tenant_id": "contoso.onmicrosoft.com",
        }},
    )

    name: str | None = Field(default=None, min_length=1, max_length=255, description="The tenant's display name; cannot be cleared")
    client_id: str | None = Field(default=None, max_length=255)
    client_secret: str | None = Field(default=None, max_length=1024, description=_MASK_NOTE)
    tenant_id: str | None = Field(default=None, max_length=253, description="Directory (tenant) ID (GUID) or domain")
    site_id: str | None = Field(default=None, max_length=1024)
    site_name: str | None = Field(default=None, max_length=255)
    drive_id: str | None = Field(default=None, max_length=1024)
    drive_name: str | None = Field(default=None, max_length=255)


class StorageConnectionTestResponse(BaseModel):
    """The outcome of trying the saved credentials; always HTTP 200."""

    success: bool
    message: str = Field(description="One line for the administrator")
    error: str | None = Field(description="Why it failed (never a secret or upstream detail); null on success")


class StorageSiteInfo(BaseModel):
    id: str = Field(description="Graph site id, e.g. 'contoso.sharepoint.com,<guid>,<guid>'")
    name: str | None
    display_name: str | None
    web_url: str | None


class StorageDriveInfo(BaseModel):
    id: str = Field(description="Graph drive id")
    name: str | None
    drive_type: str | None = Field(description="'documentLibrary' for SharePoint document libraries")
    web_url: str | None
