"""Microsoft Graph, for a tenant's document storage: SharePoint sites, their drives, and files
uploaded into a drive.

A token comes from the Microsoft identity platform through msal's client-credentials flow; Graph
is then called over HTTPS with httpx. Vendor failures become the project's errors with messages
safe to show (never the secret, never the upstream text); the detail goes to the log.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

import httpx
import msal

from shared.config import get_settings
from shared.errors import BadGateway, Invalid, NotFound

log = logging.getLogger(__name__)

TIMEOUT_SECONDS = 10.0
MAX_PAGES = 20
# Graph's simple upload takes files up to 4 MB; larger ones go through an upload session, in
# fragments that must be multiples of 320 KiB (and under 60 MiB).
SIMPLE_UPLOAD_MAX_BYTES = 4 * 1024 * 1024
UPLOAD_FRAGMENT_BYTES = 10 * 320 * 1024
CONFLICT_BEHAVIOR = "@microsoft.graph.conflictBehavior"
READ_PERMISSION = "Sites.Read.All"
WRITE_PERMISSION = "Sites.ReadWrite.All"


class GraphAuthenticationFailed(BadGateway):
    """The identity platform refused the stored credentials."""


class GraphUnavailable(BadGateway):
    """Graph or the identity platform failed, could not be reached or refused the request."""


@dataclass(frozen=True)
class GraphCredentials:
    """An app registration in an Azure AD (Microsoft Entra) directory."""

    tenant_id: str
    client_id: str
    client_secret: str = field(repr=False)


@dataclass(frozen=True)
class Site:
    id: str
    name: str | None
    display_name: str | None
    web_url: str | None


@dataclass(frozen=True)
class Drive:
    id: str
    name: str | None
    drive_type: str | None
    web_url: str | None


# What the identity platform's error codes mean to the person who typed the credentials.
_AUTH_ERRORS = {
    "invalid_tenant": "the directory (tenant_id) was not found",
    "unauthorized_client": "the application (client_id) was not found in the directory",
    "invalid_client": "the client secret was rejected",
}


def _auth_failed(reason: str) -> GraphAuthenticationFailed:
    return GraphAuthenticationFailed(f"Authentication with Microsoft failed: {reason}")


class GraphClient:
    """Graph calls made as one app registration."""

    def __init__(self, credentials: GraphCredentials, *, authority_host: str, base_url: str):
        self._credentials = credentials
        self._authority = f"{authority_host.rstrip('/')}/{quote(credentials.tenant_id, safe='')}"
        self._base_url = base_url.rstrip("/")
        origin = urlsplit(self._base_url)
        # The Graph resource's ".default" scope: every application permission granted to the app.
        self._scope = f"{origin.scheme}://{origin.netloc}/.default"

    @classmethod
    def from_settings(cls, credentials: GraphCredentials) -> "GraphClient":
        """A client for the configured identity platform and Graph endpoints."""
        settings = get_settings()
        return cls(credentials, authority_host=settings.graph_authority_host, base_url=settings.graph_base_url)

    def acquire_token(self) -> str:
        """An app-only access token for Graph; GraphAuthenticationFailed or GraphUnavailable otherwise."""
        try:
            # instance_discovery=False: the authority host is configuration we trust (the public
            # cloud, a national cloud, or a test stand-in); msal still runs OIDC discovery on it.
            app = msal.ConfidentialClientApplication(
                self._credentials.client_id,
                client_credential=self._credentials.client_secret,
                authority=self._authority,
                instance_discovery=False,
                timeout=TIMEOUT_SECONDS,
            )
            result = app.acquire_token_for_client(scopes=[self._scope])
        except OSError as exc:  # requests' errors are OSErrors: unreachable, TLS, 5xx on discovery
            log.warning("identity platform unreachable: %s", type(exc).__name__)
            raise GraphUnavailable("The Microsoft identity platform could not be reached") from exc
        except ValueError as exc:  # msal: OIDC discovery answered 4xx (unknown directory) or garbage
            log.warning("identity platform refused the authority %s", self._authority)
            raise _auth_failed(_AUTH_ERRORS["invalid_tenant"]) from exc
        if "access_token" in result:
            return result["access_token"]
        error = str(result.get("error") or "unknown_error")
        log.warning("identity platform refused the credentials: %s %s", error, result.get("error_codes"))
        safe_code = re.sub(r"[^a-z_]", "", error.lower())[:64]
        raise _auth_failed(_AUTH_ERRORS.get(error, f"the identity platform answered '{safe_code}'"))

    def list_sites(self) -> list[Site]:
        """Every SharePoint site the app can see (``GET /sites?search=*``, all pages)."""
        return [_site(item) for item in self._get_all("/sites", params={"search": "*"})]

    def get_site(self, site_id: str) -> Site:
        """One site; NotFound when Graph does not know it."""
        return _site(self._get(f"/sites/{_segment(site_id, 'Site')}", not_found="Site not found"))

    def list_drives(self, site_id: str) -> list[Drive]:
        """The document libraries of a site; NotFound when Graph does not know the site."""
        path = f"/sites/{_segment(site_id, 'Site')}/drives"
        return [_drive(item) for item in self._get_all(path, not_found="Site not found")]

    def get_drive(self, drive_id: str) -> Drive:
        """One drive; NotFound when Graph does not know it."""
        return _drive(self._get(f"/drives/{_segment(drive_id, 'Drive')}", not_found="Drive not found"))

    def upload_file(self, drive_id: str, path: str, data: bytes) -> dict:
        """Put ``data`` at ``path`` (folders separated by "/") in a drive, replacing any file there.

        Returns the item's ``id``, ``name`` and ``web_url``. Up to 4 MB in one PUT; above that
        through an upload session. NotFound when Graph does not know the drive.
        """
        item = f"{self._base_url}/drives/{_segment(drive_id, 'Drive')}/root:/{_item_path(path)}:"
        with self._http() as http:
            if len(data) <= SIMPLE_UPLOAD_MAX_BYTES:
                _, body = self._call(
                    http, "PUT", f"{item}/content?{CONFLICT_BEHAVIOR}=replace", not_found="Drive not found",
                    permission=WRITE_PERMISSION, content=data, headers={"Content-Type": "application/octet-stream"},
                )
            else:
                _, session = self._call(
                    http, "POST", f"{item}/createUploadSession", not_found="Drive not found",
                    permission=WRITE_PERMISSION, json={"item": {CONFLICT_BEHAVIOR: "replace"}},
                )
                body = self._upload_fragments(session, data)
        return {"id": str(body.get("id", "")), "name": body.get("name"), "web_url": body.get("webUrl")}

    def _upload_fragments(self, session: dict, data: bytes) -> dict:
        upload_url = session.get("uploadUrl")
        if not isinstance(upload_url, str) or not upload_url.startswith("https://"):
            log.warning("Graph answered an upload session without an https uploadUrl")
            raise GraphUnavailable("Microsoft Graph request failed")
        total, start = len(data), 0
        # The upload URL is pre-authenticated: the bearer token is not sent there (Graph may answer
        # 401 if it is, and the URL may be on another host).
        with httpx.Client(timeout=TIMEOUT_SECONDS, follow_redirects=False) as http:
            for _ in range(total // UPLOAD_FRAGMENT_BYTES + 10):
                fragment = data[start:start + UPLOAD_FRAGMENT_BYTES]
                status, body = self._call(
                    http, "PUT", upload_url, not_found="The upload session expired", permission=WRITE_PERMISSION,
                    content=fragment, headers={"Content-Range": f"bytes {start}-{start + len(fragment) - 1}/{total}"},
                )
                if status in (200, 201):
                    return body
                start = _next_expected(body, start + len(fragment))
                if not 0 <= start < total:
                    break
        log.warning("Graph's upload session did not complete (next expected byte %s of %s)", start, total)
        raise GraphUnavailable("Microsoft Graph request failed")

    def _get(self, path: str, *, not_found: str) -> dict:
        with self._http() as http:
            return self._json(http, f"{self._base_url}{path}", None, not_found)

    def _get_all(self, path: str, *, params: dict | None = None, not_found: str = "Not found") -> list[dict]:
        items: list[dict] = []
        url: str | None = f"{self._base_url}{path}"
        with self._http() as http:
            for _ in range(MAX_PAGES):
                page = self._json(http, url, params, not_found)
                items.extend(v for v in page.get("value", []) if isinstance(v, dict))
                url, params = page.get("@odata.nextLink"), None
                # The bearer token goes to Graph only, never to wherever a next link points.
                if not url or not url.startswith(self._base_url + "/"):
                    break
        return items

    def _http(self) -> httpx.Client:
        token = self.acquire_token()
        return httpx.Client(
            timeout=TIMEOUT_SECONDS, follow_redirects=False,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
        )

    def _json(self, http: httpx.Client, url: str, params: dict | None, not_found: str) -> dict:
        return self._call(http, "GET", url, not_found=not_found, params=params)[1]

    def _call(
        self, http: httpx.Client, method: str, url: str, *, not_found: str, permission: str = READ_PERMISSION, **kwargs
    ) -> tuple[int, dict]:
        """One request; its status and JSON object body, or the project's error for a failure."""
        try:
            response = http.request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            log.warning("Graph unreachable: %s", type(exc).__name__)
            raise GraphUnavailable("Microsoft Graph could not be reached") from exc
        if response.status_code == 404:
            raise NotFound(not_found)
        if response.status_code in (401, 403):
            log.warning("Graph refused access (%s): %s", response.status_code, response.text[:500])
            raise GraphUnavailable(
                f"Microsoft Graph refused access: the application needs the {permission} application "
                "permission, with admin consent"
            )
        try:
            response.raise_for_status()
            body = response.json()
        except (httpx.HTTPStatusError, ValueError) as exc:
            log.warning("Graph request failed (%s %s): %s", method, response.status_code, response.text[:500])
            raise GraphUnavailable("Microsoft Graph request failed") from exc
        if not isinstance(body, dict):
            raise GraphUnavailable("Microsoft Graph request failed")
        return response.status_code, body


def _item_path(path: str) -> str:
    # Each folder or file name is one escaped segment: never empty, "." or ".." (which would
    # climb out of the drive's root), and a ":" cannot end the root:/path: syntax early.
    segments = path.split("/")
    if any(not s.strip(".") or len(s) > 400 for s in segments):
        raise Invalid("Invalid path for the document library")
    return "/".join(quote(s, safe="") for s in segments)


def _next_expected(body: dict, default: int) -> int:
    # nextExpectedRanges: ["12345-"] or ["12345-67890", ...]; the first range's start.
    ranges = body.get("nextExpectedRanges")
    if isinstance(ranges, list) and ranges and isinstance(ranges[0], str):
        head = ranges[0].split("-", 1)[0]
        if head.isdigit():
            return int(head)
    return default


def _segment(value: str, what: str) -> str:
    # Graph ids are opaque ("contoso.sharepoint.com,<guid>,<guid>", "b!..."): exactly one path
    # segment, and never "." or ".." (which would climb to another Graph resource).
    if not value.strip(".") or len(value) > 1024:
        raise NotFound(f"{what} not found")
    return quote(value, safe=",!")


def _site(item: dict) -> Site:
    return Site(id=str(item.get("id", "")), name=item.get("name"), display_name=item.get("displayName"), web_url=item.get("webUrl"))


def _drive(item: dict) -> Drive:
    return Drive(id=str(item.get("id", "")), name=item.get("name"), drive_type=item.get("driveType"), web_url=item.get("webUrl"))
