"""Tenants and their users."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from shared.db.models import Tenant, User


def get_tenant(session: Session, *, tenant_id: uuid.UUID) -> Tenant | None:
    """The tenant with this id."""
    return session.get(Tenant, tenant_id)


def get_tenant_by_slug(session: Session, *, slug: str) -> Tenant | None:
    """The tenant with this slug."""
    return session.scalar(select(Tenant).where(Tenant.slug == slug))


def get_user(session: Session, *, user_id: uuid.UUID) -> User | None:
    """The user with this id, whatever the tenant (for session checks)."""
    return session.get(User, user_id)


def get_user_by_email(session: Session, *, email: str) -> User | None:
    """The user with this e-mail address (unique across the service, case-insensitive)."""
    return session.scalar(select(User).where(User.email == email.strip().lower()))


def get_tenant_user(session: Session, *, tenant_id: uuid.UUID, user_id: uuid.UUID) -> User | None:
    """A user of this tenant."""
    return session.scalar(select(User).where(User.tenant_id == tenant_id, User.id == user_id))


def list_users(session: Session, *, tenant_id: uuid.UUID) -> list[User]:
    """The tenant's users, oldest first."""
    return list(session.scalars(select(User).where(User.tenant_id == tenant_id).order_by(User.created_at, User.email)))
