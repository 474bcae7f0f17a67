"""A tenant's settings: its name and its document storage (a Microsoft Graph app registration
and the chosen SharePoint site and drive).

The three credentials (client_id, client_secret, tenant_id) are stored encrypted in
``Tenant.storage_settings``; the client secret never leaves the service, only its mask.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass
from typing import Any, TypedDict

from cryptography.exceptions import InvalidTag
from sqlalchemy.orm import Session

from shared.adapters.graph import Drive, GraphClient, GraphCredentials, Site
from shared.db.models import Tenant
from shared.errors import BadGateway, BadRequest, Invalid, NotFound
from shared.repositories import tenants as repo
from shared.security import decrypt, encrypt

log = logging.getLogger(__name__)

SECRET_MASK = "********"
CREDENTIALS = ("client_id", "client_secret", "tenant_id")
LOCATION = ("site_id", "site_name", "drive_id", "drive_name")
NOT_CONFIGURED = "Storage credentials are not configured: save client_id, client_secret and tenant_id first"
# A directory (tenant) id is a GUID or a domain name; it becomes part of the authority URL.
_DIRECTORY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$")


@dataclass
class TenantSettings:
    """What GET /tenant/settings shows: credentials decrypted, except the secret, which is masked."""

    tenant: Tenant
    client_id: str | None
    client_secret: str | None
    tenant_id: str | None
    site_id: str | None
    site_name: str | None
    drive_id: str | None
    drive_name: str | None

    @property
    def storage_configured(self) -> bool:
        return bool(self.client_id and self.client_secret and self.tenant_id)


@dataclass(frozen=True)
class DocumentLibrary:
    """Where new versions are copied: a Graph client for the saved app registration and the chosen drive."""

    client: GraphClient
    drive_id: str


@dataclass
class ConnectionResult:
    success: bool
    message: str
    error: str | None = None


def _tenant(session: Session, tenant_id: uuid.UUID) -> Tenant:
    tenant = repo.get_tenant(session, tenant_id=tenant_id)
    if tenant is None:
        raise NotFound("Tenant not found")
    return tenant


def _decrypted(stored: dict[str, Any], name: str) -> str | None:
    sealed = stored.get("encrypted", {}).get(name)
    if not sealed:
        return None
    try:
        return decrypt(sealed)
    except (InvalidTag, ValueError):
        # Encrypted under another key (the key was rotated): unreadable, so shown as not set.
        log.error("stored storage credential %s cannot be decrypted", name)
        return None


def get(session: Session, *, tenant_id: uuid.UUID) -> TenantSettings:
    """The tenant's settings as an administrator may see them."""
    tenant = _tenant(session, tenant_id)
    stored = tenant.storage_settings or {}
    secret = _decrypted(stored, "client_secret")
    return TenantSettings(
        tenant=tenant,
        client_id=_decrypted(stored, "client_id"),
        client_secret=SECRET_MASK if secret else None,
        tenant_id=_decrypted(stored, "tenant_id"),
        **{name: stored.get(name) for name in LOCATION},
    )


def _clean(name: str, value: str | None) -> str | None:
    value = value.strip() if isinstance(value, str) else value
    if not value:
        return None
    if name == "tenant_id" and not _DIRECTORY_RE.match(value):
        raise Invalid("tenant_id must be a directory (tenant) ID or a domain such as contoso.onmicrosoft.com")
    return value


class SettingsChanges(TypedDict, total=False):
    """The fields an update sets; a key left out is kept. ``tenant_id`` here is the Azure AD
    directory of the app registration (hence a dict, not keywords, beside the sheetcalc tenant's id)."""

    name: str | None
    client_id: str | None
    client_secret: str | None
    tenant_id: str | None
    site_id: str | None
    site_name: str | None
    drive_id: str | None
    drive_name: str | None


def update(session: Session, *, tenant_id: uuid.UUID, changes: SettingsChanges) -> TenantSettings:
    """Apply the fields the caller sent: a value sets, null or "" clears, a field left out is kept.

    ``client_secret`` sent back as the mask (only asterisks) keeps the stored secret.
    """
    tenant = _tenant(session, tenant_id)
    if "name" in changes:
        name = (changes["name"] or "").strip()
        if not name or len(name) > 255:
            raise Invalid("Tenant name must be 1 to 255 characters")
        tenant.name = name
    stored = dict(tenant.storage_settings or {})
    encrypted = dict(stored.get("encrypted", {}))
    for field in CREDENTIALS:
        if field not in changes:
            continue
        if field == "client_secret":
            raw = changes[field]
            if raw and set(raw) == {"*"}:
                continue  # the mask sent back: keep the stored secret
            value = raw if raw and raw.strip() else None  # a secret is kept exactly as typed
        else:
            value = _clean(field, changes[field])
        if value is None:
            encrypted.pop(field, None)
        else:
            encrypted[field] = encrypt(value)
    for field in LOCATION:
        if field in changes:
            stored[field] = _clean(field, changes[field])
    stored["encrypted"] = encrypted
    # A new dict, so the JSON column sees the change.
    tenant.storage_settings = stored
    session.flush()
    return get(session, tenant_id=tenant_id)


def _client(session: Session, tenant_id: uuid.UUID) -> GraphClient | None:
    stored = _tenant(session, tenant_id).storage_settings or {}
    values = {name: _decrypted(stored, name) for name in CREDENTIALS}
    if not all(values.values()):
        return None
    return GraphClient.from_settings(GraphCredentials(**values))


def document_library_configured(tenant: Tenant) -> bool:
    """Whether new versions are copied to a document library: all three credentials saved and a drive chosen."""
    stored = tenant.storage_settings or {}
    encrypted = stored.get("encrypted", {})
    return bool(stored.get("drive_id")) and all(encrypted.get(name) for name in CREDENTIALS)


def document_library(session: Session, *, tenant_id: uuid.UUID) -> DocumentLibrary | None:
    """The client (credentials decrypted) and drive new versions go to; None when not configured."""
    client = _client(session, tenant_id)
    drive_id = (_tenant(session, tenant_id).storage_settings or {}).get("drive_id")
    if client is None or not drive_id:
        return None
    return DocumentLibrary(client, drive_id)


def test_connection(session: Session, *, tenant_id: uuid.UUID) -> ConnectionResult:
    """Try the saved credentials (and the chosen drive or site); the outcome, never an exception."""
    client = _client(session, tenant_id)
    if client is None:
        return ConnectionResult(False, "Storage connection failed", NOT_CONFIGURED)
    settings = get(session, tenant_id=tenant_id)
    try:
        if settings.drive_id:
            drive = client.get_drive(settings.drive_id)
            reached = f"drive '{drive.name or drive.id}' is reachable"
        elif settings.site_id:
            site = client.get_site(settings.site_id)
            reached = f"site '{site.display_name or site.name or site.id}' is reachable"
        else:
            reached = f"{len(client.list_sites())} site(s) visible"
    except NotFound:
        what = "drive" if settings.drive_id else "site"
        return ConnectionResult(False, "Storage connection failed", f"The configured {what} was not found")
    except BadGateway as exc:
        return ConnectionResult(False, "Storage connection failed", exc.message)
    return ConnectionResult(True, f"Connected to Microsoft Graph: {reached}")


def discover_sites(session: Session, *, tenant_id: uuid.UUID) -> list[Site]:
    """The SharePoint sites the saved app registration can see."""
    client = _client(session, tenant_id)
    if client is None:
        raise BadRequest(NOT_CONFIGURED)
    return client.list_sites()


def discover_drives(session: Session, *, tenant_id: uuid.UUID, site_id: str) -> list[Drive]:
    """The document libraries of one site."""
    client = _client(session, tenant_id)
    if client is None:
        raise BadRequest(NOT_CONFIGURED)
    return client.list_drives(site_id)
