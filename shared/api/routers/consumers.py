"""API consumers (management)."""

from fastapi import APIRouter, Depends

from shared.api import schemas
from shared.api.deps import CurrentTenant, SessionDep, _current_user
from shared.api.errors import responses
from shared.services import consumers

router = APIRouter(prefix="/consumers", tags=["consumers"], dependencies=[Depends(_current_user)], responses=responses(401, 403))


@router.post("", status_code=201, response_model=schemas.ConsumerCreateResponse)
def create_consumer(body: schemas.ConsumerCreate, session: SessionDep, tenant: CurrentTenant):
    """Create a consumer; its API key is returned only this once."""
    created = consumers.create(session, tenant=tenant, name=body.name)
    return schemas.ConsumerCreateResponse(
        id=created.consumer.id, name=created.consumer.name, api_key=created.api_key, created_at=created.consumer.created_at
    )
