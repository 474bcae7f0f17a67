"""The tenant's users as the management API shows them; temporary passwords only when just made."""

from __future__ import annotations

from shared.api.schemas.users import UserCreateResponse, UserItem, UserListResponse, UserUpdateResponse
from shared.db.models import User
from shared.services.users import UserWithPassword


def user_item(user: User) -> UserItem:
    return UserItem.model_validate(user, from_attributes=True)


def user_list(users: list[User]) -> UserListResponse:
    items = [user_item(u) for u in users]
    return UserListResponse(users=items, total=len(items))


def user_created(created: UserWithPassword) -> UserCreateResponse:
    return UserCreateResponse(user=user_item(created.user), temporary_password=created.temporary_password)


def user_updated(updated: UserWithPassword) -> UserUpdateResponse:
    message = (
        "Password reset. The temporary password is shown only once; the user's session has ended."
        if updated.temporary_password else "User updated."
    )
    return UserUpdateResponse(user=user_item(updated.user), temporary_password=updated.temporary_password, message=message)
