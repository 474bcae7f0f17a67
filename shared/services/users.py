"""A tenant's users: list, create, change, delete. Nobody changes or deletes their own account.

Every tenant user administers the tenant (the spec defines no roles). E-mail addresses are
unique across the service. Deactivating a user or resetting their password ends their session.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from shared.db.models import User
from shared.errors import Conflict, Forbidden, NotFound
from shared.repositories import tenants as repo
from shared.security import hash_password, new_temporary_password
from shared.services.tenants import normalise_email

USER_NOT_FOUND = "User not found"
EMAIL_TAKEN = "A user with this email already exists"


@dataclass
class UserWithPassword:
    """A user and, when one was just generated, the temporary password (shown once)."""

    user: User
    temporary_password: str | None


def list_for_tenant(session: Session, *, tenant_id: uuid.UUID) -> list[User]:
    """All users of the tenant, oldest first."""
    return repo.list_users(session, tenant_id=tenant_id)


def _flush_unique_email(session: Session) -> None:
    # The pre-check answers the usual case; the unique index settles a race between two requests.
    try:
        session.flush()
    except IntegrityError as exc:
        raise Conflict(EMAIL_TAKEN) from exc


def create(session: Session, *, tenant_id: uuid.UUID, email: str) -> UserWithPassword:
    """Create a user with a temporary password they must change at first login."""
    email = normalise_email(email)
    if repo.get_user_by_email(session, email=email):
        raise Conflict(EMAIL_TAKEN)
    password = new_temporary_password()
    user = User(tenant_id=tenant_id, email=email, password_hash=hash_password(password), must_change_password=True)
    session.add(user)
    _flush_unique_email(session)
    return UserWithPassword(user=user, temporary_password=password)


def _other_user(session: Session, *, tenant_id: uuid.UUID, actor_id: uuid.UUID, user_id: uuid.UUID, verb: str) -> User:
    if user_id == actor_id:
        raise Forbidden(f"You cannot {verb} your own account")
    user = repo.get_tenant_user(session, tenant_id=tenant_id, user_id=user_id)
    if user is None:
        raise NotFound(USER_NOT_FOUND)
    return user


def update(
    session: Session, *, tenant_id: uuid.UUID, actor_id: uuid.UUID, user_id: uuid.UUID,
    email: str | None = None, is_active: bool | None = None, reset_password: bool = False,
) -> UserWithPassword:
    """Change another user's e-mail or active status, or reset their password (ending their session)."""
    user = _other_user(session, tenant_id=tenant_id, actor_id=actor_id, user_id=user_id, verb="modify")
    if email is not None:
        email = normalise_email(email)
        holder = repo.get_user_by_email(session, email=email)
        if holder is not None and holder.id != user.id:
            raise Conflict(EMAIL_TAKEN)
        user.email = email
    if is_active is not None:
        user.is_active = is_active
        if not is_active:
            user.session_token_hash = None
    password = None
    if reset_password:
        password = new_temporary_password()
        user.password_hash = hash_password(password)
        user.must_change_password = True
        user.session_token_hash = None
    _flush_unique_email(session)
    return UserWithPassword(user=user, temporary_password=password)


def delete(session: Session, *, tenant_id: uuid.UUID, actor_id: uuid.UUID, user_id: uuid.UUID) -> None:
    """Remove another user of the tenant permanently."""
    user = _other_user(session, tenant_id=tenant_id, actor_id=actor_id, user_id=user_id, verb="delete")
    session.delete(user)
    session.flush()
