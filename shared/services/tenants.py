"""Creating tenants and their first administrator."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy.orm import Session

from shared.db.models import Tenant, User
from shared.errors import Conflict, Invalid
from shared.repositories import tenants as repo
from shared.security import hash_password, new_temporary_password

SLUG_RE = re.compile(r"^[a-z0-9-]{1,100}$")
EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


@dataclass
class CreatedTenant:
    tenant: Tenant
    admin: User
    temporary_password: str


def normalise_email(email: str) -> str:
    """E-mail addresses are compared case-insensitively; store them lower-case."""
    email = email.strip().lower()
    if not EMAIL_RE.match(email) or len(email) > 320:
        raise Invalid("Invalid email address")
    return email


def create_tenant(session: Session, *, slug: str, name: str, admin_email: str) -> CreatedTenant:
    """Create a tenant and its first administrator, who must change the temporary password."""
    # Keys look like "{tenant_slug}_{uuid}", so a slug may not contain "_" (the pattern excludes it).
    if not SLUG_RE.match(slug):
        raise Invalid("Tenant slug must be 1 to 100 characters of a-z, 0-9 and '-'")
    if not name.strip() or len(name) > 255:
        raise Invalid("Tenant name must be 1 to 255 characters")
    email = normalise_email(admin_email)
    if repo.get_tenant_by_slug(session, slug=slug):
        raise Conflict(f"Tenant '{slug}' already exists")
    if repo.get_user_by_email(session, email=email):
        raise Conflict("A user with this email already exists")
    tenant = Tenant(slug=slug, name=name.strip())
    session.add(tenant)
    session.flush()
    password = new_temporary_password()
    admin = User(tenant_id=tenant.id, email=email, password_hash=hash_password(password), must_change_password=True)
    session.add(admin)
    session.flush()
    return CreatedTenant(tenant=tenant, admin=admin, temporary_password=password)
