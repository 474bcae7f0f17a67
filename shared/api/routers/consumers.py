"""API consumers (management)."""

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Query

from shared.api import presenters, schemas, schemas_manage
from shared.api.deps import CurrentTenant, CurrentUser, SessionDep, _current_user
from shared.api.errors import responses
from shared.services import consumers

router = APIRouter(prefix="/consumers", tags=["consumers"], dependencies=[Depends(_current_user)], responses=responses(401, 403))


@router.get("", response_model=list[schemas_manage.ConsumerListItem])
def list_consumers(
    session: SessionDep,
    user: CurrentUser,
    include_inactive: Annotated[bool, Query(description="Also list deactivated consumers (archived ones never appear)")] = False,
):
    """The tenant's active consumers, by name, with masked API keys."""
    listed = consumers.list_for_tenant(session, tenant_id=user.tenant_id, include_inactive=include_inactive)
    return [presenters.consumer_list_item(c) for c in listed]


@router.post("", status_code=201, response_model=schemas.ConsumerCreateResponse)
def create_consumer(body: schemas.ConsumerCreate, session: SessionDep, tenant: CurrentTenant):
    """Create a consumer; its API key is returned only this once."""
    created = consumers.create(session, tenant=tenant, name=body.name)
    return schemas.ConsumerCreateResponse(
        id=created.consumer.id, name=created.consumer.name, api_key=created.api_key, created_at=created.consumer.created_at
    )


@router.patch("/{consumer_id}", response_model=schemas_manage.ConsumerUpdateResponse, responses=responses(404))
def update_consumer(consumer_id: uuid.UUID, body: schemas_manage.ConsumerUpdate, session: SessionDep, user: CurrentUser):
    """Activate or deactivate a consumer: a deactivated consumer's key answers 401 at once."""
    consumer = consumers.update(session, tenant_id=user.tenant_id, consumer_id=consumer_id, is_active=body.is_active)
    return presenters.consumer_update(consumer)


@router.delete("/{consumer_id}", response_model=schemas_manage.ConsumerDeleteResponse, responses=responses(404))
def delete_consumer(consumer_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Archive and deactivate a consumer: its key answers 401 at once, its jobs and statistics are kept."""
    consumer = consumers.archive(session, tenant_id=user.tenant_id, consumer_id=consumer_id)
    return schemas_manage.ConsumerDeleteResponse(message=f"Consumer '{consumer.name}' deleted")


@router.get("/{consumer_id}/access", response_model=list[schemas_manage.ConsumerEngineAccessItem], responses=responses(404))
def list_consumer_access(consumer_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """The engines this consumer has access to, with its permissions and each engine's active version."""
    rows = consumers.list_consumer_access(session, tenant_id=user.tenant_id, consumer_id=consumer_id)
    return [presenters.consumer_engine_access(access, engine, active) for access, engine, active in rows]
