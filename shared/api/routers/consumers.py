"""API consumers (management)."""

import uuid
from typing import Annotated

from fastapi import APIRouter, Query

from shared.api.deps import CurrentTenant, CurrentUser, SessionDep
from shared.api.errors import responses
from shared.api.presenters import consumers as present
from shared.api.presenters.engines import consumer_engine_access
from shared.api.schemas.access import ConsumerEngineAccessItem
from shared.api.schemas.consumers import (
    ConsumerCreate,
    ConsumerCreateResponse,
    ConsumerDeleteResponse,
    ConsumerListItem,
    ConsumerUpdate,
    ConsumerUpdateResponse,
)
from shared.services import consumers

router = APIRouter(prefix="/consumers", tags=["consumers"])


@router.get("", response_model=list[ConsumerListItem])
def list_consumers(
    session: SessionDep,
    user: CurrentUser,
    include_inactive: Annotated[bool, Query(description="Also list deactivated consumers (archived ones never appear)")] = False,
):
    """The tenant's active consumers, by name, with masked API keys."""
    listed = consumers.list_for_tenant(session, tenant_id=user.tenant_id, include_inactive=include_inactive)
    return [present.consumer_list_item(c) for c in listed]


@router.post("", status_code=201, response_model=ConsumerCreateResponse)
def create_consumer(body: ConsumerCreate, session: SessionDep, tenant: CurrentTenant):
    """Create a consumer; its API key is returned only this once."""
    return present.consumer_created(consumers.create(session, tenant=tenant, name=body.name))


@router.patch("/{consumer_id}", response_model=ConsumerUpdateResponse, responses=responses(404))
def update_consumer(consumer_id: uuid.UUID, body: ConsumerUpdate, session: SessionDep, user: CurrentUser):
    """Activate or deactivate a consumer: a deactivated consumer's key answers 401 at once."""
    consumer = consumers.update(session, tenant_id=user.tenant_id, consumer_id=consumer_id, is_active=body.is_active)
    return present.consumer_updated(consumer)


@router.delete("/{consumer_id}", response_model=ConsumerDeleteResponse, responses=responses(404))
def delete_consumer(consumer_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Archive and deactivate a consumer: its key answers 401 at once, its jobs and statistics are kept."""
    return present.consumer_deleted(consumers.archive(session, tenant_id=user.tenant_id, consumer_id=consumer_id))


@router.get("/{consumer_id}/access", response_model=list[ConsumerEngineAccessItem], responses=responses(404))
def list_consumer_access(consumer_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """The engines this consumer has access to, with its permissions and each engine's active version."""
    rows = consumers.list_consumer_access(session, tenant_id=user.tenant_id, consumer_id=consumer_id)
    return [consumer_engine_access(access, engine, active) for access, engine, active in rows]
