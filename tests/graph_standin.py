"""A local stand-in for the Microsoft identity platform and Microsoft Graph, over real HTTPS.

Microsoft Graph cannot run here, so this is the one fake the suite keeps (STYLE.md). It speaks
the wire protocol msal and the Graph adapter use, no more:

- ``GET /{tenant}/v2.0/.well-known/openid-configuration``: OIDC discovery (msal fetches it
  before anything else; an unknown directory gets AAD's 400 ``invalid_tenant``);
- ``POST /{tenant}/oauth2/v2.0/token``: the client-credentials grant, answering AAD's error JSON
  for an unknown client (400 ``unauthorized_client``) or a wrong secret (401 ``invalid_client``);
- ``GET /v1.0/sites?search=*`` (paged through ``@odata.nextLink``), ``GET /v1.0/sites/{id}``,
  ``GET /v1.0/sites/{id}/drives`` and ``GET /v1.0/drives/{id}``, each checking the bearer token
  it issued to that directory;
- ``PUT /v1.0/drives/{id}/root:/{path}:/content`` (simple upload, refused above 4 MB) and
  ``POST /v1.0/drives/{id}/root:/{path}:/createUploadSession``, whose pre-authenticated
  ``uploadUrl`` takes ``PUT`` fragments with ``Content-Range`` (multiples of 320 KiB but the
  last, in order, and no bearer token). The bytes received are kept in ``files``.

msal only accepts an ``https`` authority, so the server uses TLS with a throwaway self-signed
certificate; a test trusts it through ``SSL_CERT_FILE`` (httpx) and ``REQUESTS_CA_BUNDLE``
(requests, which msal uses).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import json
import re
import secrets
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.envtools import settings_env


@dataclass
class Directory:
    """One Azure AD tenant: an app registration and the SharePoint sites the app can see."""

    client_id: str
    client_secret: str
    sites: list[dict] = field(default_factory=list)
    drives: dict[str, list[dict]] = field(default_factory=dict)


@dataclass
class UploadSession:
    directory: str
    drive_id: str
    path: str
    conflict_behavior: str
    received: bytearray = field(default_factory=bytearray)


@dataclass
class Seen:
    method: str
    path: str
    headers: dict
    body: str


def _self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "graph-standin")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "standin.pem", directory / "standin.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


class GraphStandin:
    """The server and what it knows: directories, issued tokens, the requests it saw."""

    def __init__(self, workdir: Path, *, page_size: int = 2):
        self.directories: dict[str, Directory] = {}
        self.tokens: dict[str, tuple[str, float]] = {}  # access token -> (directory, expiry)
        self.seen: list[Seen] = []
        self.page_size = page_size
        # When set, every Graph call answers this (status, JSON body) instead.
        self.graph_failure: tuple[int, dict] | None = None
        # (drive id, path) -> the bytes uploaded there; upload session id -> its state.
        self.files: dict[tuple[str, str], bytes] = {}
        self.sessions: dict[str, UploadSession] = {}
        self.cert_path, key_path = _self_signed(workdir)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_path, key_path)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def authority_host(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def graph_base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}/v1.0"

    def start(self) -> "GraphStandin":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add_directory(self, tenant_id: str, **kw) -> Directory:
        self.directories[tenant_id] = directory = Directory(**kw)
        return directory

    def paths(self, method: str | None = None) -> list[str]:
        return [s.path for s in self.seen if method is None or s.method == method]

    def uploads(self) -> list[Seen]:
        """The requests that carried file content (simple uploads and upload-session fragments)."""
        return [s for s in self.seen if s.method == "PUT"]


def _aad_error(status: int, error: str, code: int, text: str) -> tuple[int, dict]:
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    trace = "00000000-0000-0000-0000-000000000000"
    return status, {
        "error": error,
        "error_description": f"AADSTS{code}: {text} Trace ID: {trace} Correlation ID: {trace} Timestamp: {now}",
        "error_codes": [code], "timestamp": now, "trace_id": trace, "correlation_id": trace,
        "error_uri": f"https://login.microsoftonline.com/error?code={code}",
    }


def _graph_error(status: int, code: str, message: str) -> tuple[int, dict]:
    return status, {"error": {"code": code, "message": message, "innerError": {"request-id": secrets.token_hex(8)}}}


SIMPLE_UPLOAD_MAX = 4 * 1024 * 1024
FRAGMENT_MULTIPLE = 320 * 1024
FRAGMENT_MAX = 60 * 1024 * 1024
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+)$")


def _item(standin: GraphStandin, drive: dict, path: str, size: int, item_id: str) -> dict:
    name = path.rsplit("/", 1)[-1]
    return {
        "id": item_id, "name": name, "size": size,
        "webUrl": f"{drive['webUrl']}/{quote(path)}",
        "file": {"mimeType": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
        "parentReference": {"driveId": drive["id"], "path": f"/drives/{drive['id']}/root:/{path.rsplit('/', 1)[0]}"},
    }


def _handler(standin: GraphStandin):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _answer(self, status: int, body: dict) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _record(self, body: str = "") -> None:
            standin.seen.append(Seen(self.command, self.path, dict(self.headers), body))

        def do_GET(self):  # noqa: N802
            self._record()
            url = urlsplit(self.path)
            parts = [unquote(p) for p in url.path.strip("/").split("/")]
            if len(parts) == 4 and parts[1:] == ["v2.0", ".well-known", "openid-configuration"]:
                return self._answer(*self._openid_configuration(parts[0]))
            if parts[0] == "v1.0":
                return self._answer(*self._graph(parts[1:], parse_qs(url.query)))
            return self._answer(404, {"error": "not_found"})

        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            self._record(body)
            url = urlsplit(self.path)
            parts = url.path.strip("/").split("/")
            if len(parts) == 4 and parts[1:] == ["oauth2", "v2.0", "token"]:
                form = {k: v[0] for k, v in parse_qs(body).items()}
                return self._answer(*self._token(parts[0], form))
            if parts[0] == "v1.0":
                return self._answer(*self._authorized(lambda directory: self._create_session(directory, url.path, body)))
            return self._answer(404, {"error": "not_found"})

        def do_PUT(self):  # noqa: N802
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._record(f"<{len(data)} bytes>")
            url = urlsplit(self.path)
            if url.path.startswith("/v1.0/"):
                return self._answer(*self._authorized(lambda directory: self._simple_upload(directory, url, data)))
            if url.path.startswith("/upload/"):
                return self._answer(*self._fragment(url.path.removeprefix("/upload/"), data))
            return self._answer(404, {"error": "not_found"})

        # --- uploads ---------------------------------------------------------------------------

        def _authorized(self, answer) -> tuple[int, dict]:
            auth = self.headers.get("Authorization", "")
            issued = standin.tokens.get(auth.removeprefix("Bearer ")) if auth.startswith("Bearer ") else None
            if issued is None or issued[1] < time.time():
                return _graph_error(401, "InvalidAuthenticationToken", "Access token validation failure. Invalid audience.")
            if standin.graph_failure is not None:
                return standin.graph_failure
            return answer(issued[0])

        def _drive_item(self, directory: str, raw_path: str, action: str) -> tuple[dict, str] | tuple[int, dict]:
            # /v1.0/drives/{drive-id}/root:/{escaped/segments}:/{action}
            match = re.fullmatch(r"/v1\.0/drives/([^/]+)/root:/(.+):/" + action, raw_path)
            if match is None:
                return _graph_error(400, "invalidRequest", "Invalid request")
            drive_id = unquote(match.group(1))
            segments = [unquote(seg) for seg in match.group(2).split("/")]
            if any(not seg or seg in (".", "..") or any(c in seg for c in '"*:<>?/\\|') for seg in segments):
                return _graph_error(400, "invalidRequest", "The provided name contains invalid characters.")
            drives = {d["id"]: d for ds in standin.directories[directory].drives.values() for d in ds}
            if drive_id not in drives:
                return _graph_error(404, "itemNotFound", "The resource could not be found.")
            return drives[drive_id], "/".join(segments)

        def _simple_upload(self, directory: str, url, data: bytes) -> tuple[int, dict]:
            found = self._drive_item(directory, url.path, "content")
            if isinstance(found[0], int):
                return found
            drive, path = found
            if len(data) > SIMPLE_UPLOAD_MAX:
                return _graph_error(413, "requestTooLarge", "Maximum request length exceeded.")
            behavior = parse_qs(url.query).get("@microsoft.graph.conflictBehavior", ["replace"])[0]
            return self._store(drive, path, bytes(data), behavior)

        def _create_session(self, directory: str, raw_path: str, body: str) -> tuple[int, dict]:
            found = self._drive_item(directory, raw_path, "createUploadSession")
            if isinstance(found[0], int):
                return found
            drive, path = found
            item = (json.loads(body or "{}") or {}).get("item") or {}
            session_id = secrets.token_urlsafe(16)
            standin.sessions[session_id] = UploadSession(
                directory, drive["id"], path, item.get("@microsoft.graph.conflictBehavior", "fail"),
            )
            expires = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)).isoformat()
            return 200, {
                "uploadUrl": f"https://127.0.0.1:{standin.port}/upload/{session_id}",
                "expirationDateTime": expires, "nextExpectedRanges": ["0-"],
            }

        def _fragment(self, session_id: str, data: bytes) -> tuple[int, dict]:
            session = standin.sessions.get(session_id)
            if session is None:
                return _graph_error(404, "itemNotFound", "The upload session was not found.")
            if "Authorization" in self.headers:  # the upload URL is pre-authenticated
                return _graph_error(401, "unauthenticated", "Bearer tokens are not accepted on the upload URL.")
            match = _CONTENT_RANGE.match(self.headers.get("Content-Range", ""))
            if match is None:
                return _graph_error(400, "invalidRequest", "A valid Content-Range header is required.")
            start, end, total = (int(g) for g in match.groups())
            last = end + 1 == total
            if (start != len(session.received) or end - start + 1 != len(data) or end >= total
                    or len(data) > FRAGMENT_MAX or (not last and len(data) % FRAGMENT_MULTIPLE)):
                return _graph_error(416, "invalidRange", "The uploaded fragment does not fit the expected range.")
            session.received.extend(data)
            if not last:
                return 202, {"expirationDateTime": None, "nextExpectedRanges": [f"{len(session.received)}-"]}
            del standin.sessions[session_id]
            drives = {d["id"]: d for ds in standin.directories[session.directory].drives.values() for d in ds}
            return self._store(drives[session.drive_id], session.path, bytes(session.received), session.conflict_behavior)

        def _store(self, drive: dict, path: str, data: bytes, behavior: str) -> tuple[int, dict]:
            key = (drive["id"], path)
            exists = key in standin.files
            if exists and behavior == "fail":
                return _graph_error(409, "nameAlreadyExists", "The specified item name already exists.")
            standin.files[key] = data
            return (200 if exists else 201), _item(standin, drive, path, len(data), f"item-{abs(hash(key)):x}")

        def _openid_configuration(self, tenant: str) -> tuple[int, dict]:
            if tenant not in standin.directories:
                return _aad_error(400, "invalid_tenant", 90002, f"Tenant '{tenant}' not found.")
            base = f"{standin.authority_host}/{tenant}"
            return 200, {
                "token_endpoint": f"{base}/oauth2/v2.0/token",
                "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
                "issuer": f"{base}/v2.0",
                "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt", "client_secret_basic"],
                "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
                "jwks_uri": f"{base}/discovery/v2.0/keys",
            }

        def _token(self, tenant: str, form: dict) -> tuple[int, dict]:
            directory = standin.directories.get(tenant)
            if directory is None:
                return _aad_error(400, "invalid_tenant", 90002, f"Tenant '{tenant}' not found.")
            if form.get("grant_type") != "client_credentials":
                return _aad_error(400, "unsupported_grant_type", 70003, "The app requested an unsupported grant type.")
            if form.get("client_id") != directory.client_id:
                return _aad_error(
                    400, "unauthorized_client", 700016,
                    f"Application with identifier '{form.get('client_id')}' was not found in the directory.",
                )
            if form.get("client_secret") != directory.client_secret:
                return _aad_error(
                    401, "invalid_client", 7000215,
                    "Invalid client secret provided. Ensure the secret being sent in the request is the client "
                    f"secret value, not the client secret ID, for a secret added to app '{directory.client_id}'.",
                )
            # The Graph resource's ".default" scope: the origin of the Graph base URL.
            if form.get("scope") != f"https://127.0.0.1:{standin.port}/.default":
                return _aad_error(400, "invalid_scope", 1002012, f"The provided value for scope {form.get('scope')} is not valid.")
            token = secrets.token_urlsafe(32)
            standin.tokens[token] = (tenant, time.time() + 3599)
            return 200, {"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": token}

        def _graph(self, parts: list[str], query: dict) -> tuple[int, dict]:
            return self._authorized(lambda tenant: self._read(standin.directories[tenant], parts, query))

        def _read(self, directory, parts: list[str], query: dict) -> tuple[int, dict]:
            if parts == ["sites"] and query.get("search") == ["*"]:
                start = int(query.get("$skiptoken", ["0"])[0])
                page = directory.sites[start:start + standin.page_size]
                body = {"@odata.context": f"{standin.graph_base_url}/$metadata#sites", "value": page}
                if start + standin.page_size < len(directory.sites):
                    body["@odata.nextLink"] = f"{standin.graph_base_url}/sites?search=*&$skiptoken={start + standin.page_size}"
                return 200, body
            sites = {s["id"]: s for s in directory.sites}
            if len(parts) == 2 and parts[0] == "sites":
                return (200, sites[parts[1]]) if parts[1] in sites else _graph_error(404, "itemNotFound", "Requested site could not be found")
            if len(parts) == 3 and parts[0] == "sites" and parts[2] == "drives":
                if parts[1] not in sites:
                    return _graph_error(404, "itemNotFound", "Requested site could not be found")
                return 200, {"@odata.context": f"{standin.graph_base_url}/$metadata#drives", "value": directory.drives.get(parts[1], [])}
            if len(parts) == 2 and parts[0] == "drives":
                drives = {d["id"]: d for ds in directory.drives.values() for d in ds}
                return (200, drives[parts[1]]) if parts[1] in drives else _graph_error(404, "itemNotFound", "The resource could not be found.")
            return _graph_error(400, "invalidRequest", "Invalid request")

    return Handler


@contextlib.contextmanager
def pointed_at(standin: "GraphStandin"):
    """The service pointed at ``standin`` (and trusting its certificate) inside the block."""
    standin.graph_failure = None
    try:
        with settings_env(
            SHEETCALC_GRAPH_AUTHORITY_HOST=standin.authority_host,
            SHEETCALC_GRAPH_BASE_URL=standin.graph_base_url,
            SSL_CERT_FILE=str(standin.cert_path),  # httpx
            REQUESTS_CA_BUNDLE=str(standin.cert_path),  # requests, under msal
        ):
            yield standin
    finally:
        standin.graph_failure = None
