"""FastAPI dependencies: the database session, the caller's identity and address.

A dependency that does no blocking I/O is ``async def``: FastAPI runs a plain ``def`` one in a
worker thread, a hop (and a wait for a free thread) per dependency per request. The ones that
use the database stay plain functions.

Management routers are included with ``Authenticated`` (``shared.api.app``), so no management
route can forget it; consumer routes take ``CurrentConsumer``, which the services check.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Annotated

from fastapi import Cookie, Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from shared.api import rate_headers
from shared.api.schemas.common import NUL_REFUSED
from shared.config import get_settings
from shared.db.models import Tenant, User
from shared.db.session import session_scope
from shared.repositories import tenants as tenant_repo
from shared.services import auth
from shared.services.callers import ConsumerRequest


def _session() -> Iterator[Session]:
    with session_scope() as session:
        yield session


# scope="function": commit before the response is sent, so a 2xx means the change is stored.
SessionDep = Annotated[Session, Depends(_session, scope="function")]

_bearer = HTTPBearer(auto_error=False, description="Management: the JWT from /auth/login. Consumer API: the API key.")
_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="A consumer API key or a version's test key")


async def _token(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    auth_token: Annotated[str | None, Cookie(include_in_schema=False)] = None,
) -> str | None:
    return credentials.credentials if credentials else auth_token


SessionToken = Annotated[str | None, Depends(_token)]


def _current_user(session: SessionDep, token: SessionToken) -> User:
    return auth.authenticate(session, token=token)


def _current_user_changing_password(session: SessionDep, token: SessionToken) -> User:
    return auth.authenticate(session, token=token, allow_password_change=True)


CurrentUser = Annotated[User, Depends(_current_user)]
# The router-level guard of every management route (the same cached dependency as CurrentUser).
Authenticated = Depends(_current_user)
UserChangingPassword = Annotated[User, Depends(_current_user_changing_password)]


def _current_tenant(session: SessionDep, user: CurrentUser) -> Tenant:
    return tenant_repo.get_tenant(session, tenant_id=user.tenant_id)


CurrentTenant = Annotated[Tenant, Depends(_current_tenant)]


def _trusted(address: str, proxies: list[str]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
        return any(ip in ipaddress.ip_network(p, strict=False) for p in proxies)
    except ValueError:
        return False


def client_ip(request: Request) -> str | None:
    """The caller's address: the direct peer, or the first untrusted X-Forwarded-For hop behind trusted proxies."""
    # Mangum reports API Gateway's sourceIp as the client. X-Forwarded-For is believed only when
    # the direct peer is a configured proxy, and then only up to the first untrusted hop.
    peer = request.client.host if request.client else None
    proxies = get_settings().trusted_proxies
    if not peer or not proxies or not _trusted(peer, proxies):
        return peer
    hops = [h.strip() for h in request.headers.get("x-forwarded-for", "").split(",") if h.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, proxies):
            return hop
    return hops[0] if hops else peer


async def _client_ip(request: Request) -> str | None:
    return client_ip(request)


# The caller's address under the service's own rule (login throttling, IP whitelists).
ClientAddress = Annotated[str | None, Depends(_client_ip)]


async def read_consumer_request(request: Request) -> ConsumerRequest:
    """The call's key and address, read without dependencies of their own (no dependency step)."""
    # Resolved by the services, not here: the engine's whitelist is checked before the key. The
    # key's rate-limit allowance, once counted, goes on the response (shared/api/rate_headers.py).
    # The key and the address are read here, by the security schemes' own readers called
    # directly, rather than by dependencies of their own: every consumer request solves this,
    # and each dependency costs FastAPI about as much as the read. The schemes are documented
    # by ``CONSUMER_SECURITY`` on the routes that call this (``shared.api.routers.jobs``) and by
    # ``CurrentConsumer``'s declared dependencies on the others.
    return consumer_request(request, x_api_key=await _api_key_header(request), credentials=await _bearer(request))


def consumer_request(
    request: Request, *, x_api_key: str | None, credentials: HTTPAuthorizationCredentials | None,
) -> ConsumerRequest:
    def report(allowance) -> None:
        rate_headers.remember(request, allowance)

    api_key = x_api_key or (credentials.credentials if credentials else None)
    return ConsumerRequest(api_key=api_key, client_ip=client_ip(request), report_allowance=report)


async def _documented_consumer_request(
    request: Request,
    x_api_key: Annotated[str | None, Depends(_api_key_header)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> ConsumerRequest:
    return consumer_request(request, x_api_key=x_api_key, credentials=credentials)


# The routes off the hot path (about, the engine's document, download, batches) keep the schemes
# as declared dependencies; the hot ones (execute, test-execute, job status) read everything in
# one dependency step (``shared.api.routers.jobs``), documented through ``openapi_extra``.
CurrentConsumer = Annotated[ConsumerRequest, Depends(_documented_consumer_request)]


# The security requirements FastAPI documents for a route taking ``CurrentConsumer`` (in its order).
CONSUMER_SECURITY = [{"APIKeyHeader": []}, {"HTTPBearer": []}]


async def url_without_nul(request: Request) -> None:
    """Refuse (422) a path or query value holding a NUL character, before any lookup sees it:
    PostgreSQL cannot compare or store one. Attached to every route in ``shared.api.app``; async
    (it does no I/O) so that it never waits for a worker thread: /health must not queue behind a
    burst of requests holding every thread."""
    for where, values in (("path", request.path_params.items()), ("query", request.query_params.multi_items())):
        for name, value in values:
            if isinstance(value, str) and "\x00" in value:
                raise RequestValidationError([{"type": "value_error", "loc": (where, name), "msg": NUL_REFUSED, "input": value}])
