"""The tenant's users (management)."""

import uuid

from fastapi import APIRouter, Depends, Response

from shared.api.deps import CurrentUser, SessionDep, _current_user
from shared.api.errors import responses
from shared.api.schemas_users import (
    UserCreate,
    UserCreateResponse,
    UserItem,
    UserListResponse,
    UserUpdate,
    UserUpdateResponse,
)
from shared.services import users

router = APIRouter(prefix="/users", tags=["users"], dependencies=[Depends(_current_user)], responses=responses(401, 403))


@router.get("", response_model=UserListResponse)
def list_users(session: SessionDep, user: CurrentUser):
    """All users of the caller's tenant."""
    items = [UserItem.model_validate(u, from_attributes=True) for u in users.list_for_tenant(session, tenant_id=user.tenant_id)]
    return UserListResponse(users=items, total=len(items))


@router.post("", status_code=201, response_model=UserCreateResponse, responses=responses(409, 422))
def create_user(body: UserCreate, session: SessionDep, user: CurrentUser):
    """Create a user; the temporary password is returned only this once."""
    created = users.create(session, tenant_id=user.tenant_id, email=body.email)
    return UserCreateResponse(user=UserItem.model_validate(created.user, from_attributes=True), temporary_password=created.temporary_password)


@router.patch("/{user_id}", response_model=UserUpdateResponse, responses=responses(404, 409, 422))
def update_user(user_id: uuid.UUID, body: UserUpdate, session: SessionDep, user: CurrentUser):
    """Change another user's e-mail or active status, or reset their password; 403 on your own account."""
    updated = users.update(
        session, tenant_id=user.tenant_id, actor_id=user.id, user_id=user_id,
        email=body.email, is_active=body.is_active, reset_password=body.reset_password,
    )
    message = (
        "Password reset. The temporary password is shown only once; the user's session has ended."
        if updated.temporary_password else "User updated."
    )
    return UserUpdateResponse(
        user=UserItem.model_validate(updated.user, from_attributes=True),
        temporary_password=updated.temporary_password, message=message,
    )


@router.delete("/{user_id}", status_code=204, response_class=Response, responses=responses(404))
def delete_user(user_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Delete another user permanently; 403 on your own account."""
    users.delete(session, tenant_id=user.tenant_id, actor_id=user.id, user_id=user_id)
    return Response(status_code=204)
