"""The tenant's users (management)."""

import uuid

from fastapi import APIRouter, Response

from shared.api.deps import CurrentUser, SessionDep
from shared.api.errors import responses
from shared.api.presenters import users as present
from shared.api.schemas.users import UserCreate, UserCreateResponse, UserListResponse, UserUpdate, UserUpdateResponse
from shared.services import users

router = APIRouter(prefix="/users", tags=["users"])


@router.get("", response_model=UserListResponse)
def list_users(session: SessionDep, user: CurrentUser):
    """All users of the caller's tenant."""
    return present.user_list(users.list_for_tenant(session, tenant_id=user.tenant_id))


@router.post("", status_code=201, response_model=UserCreateResponse, responses=responses(409, 422))
def create_user(body: UserCreate, session: SessionDep, user: CurrentUser):
    """Create a user; the temporary password is returned only this once."""
    return present.user_created(users.create(session, tenant_id=user.tenant_id, email=body.email))


@router.patch("/{user_id}", response_model=UserUpdateResponse, responses=responses(404, 409, 422))
def update_user(user_id: uuid.UUID, body: UserUpdate, session: SessionDep, user: CurrentUser):
    """Change another user's e-mail or active status, or reset their password; 403 on your own account."""
    updated = users.update(
        session, tenant_id=user.tenant_id, actor_id=user.id, user_id=user_id,
        email=body.email, is_active=body.is_active, reset_password=body.reset_password,
    )
    return present.user_updated(updated)


@router.delete("/{user_id}", status_code=204, response_class=Response, responses=responses(404))
def delete_user(user_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Delete another user permanently; 403 on your own account."""
    users.delete(session, tenant_id=user.tenant_id, actor_id=user.id, user_id=user_id)
    return Response(status_code=204)
