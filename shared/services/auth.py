"""Management sessions: login, one live session per user, password changes, logout."""

from __future__ import annotations

import functools
import hmac
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from shared.db.models import User
from shared.db.types import utcnow
from shared.errors import Forbidden, Invalid, Unauthorized
from shared.repositories import tenants as repo
from shared.services import login_throttle
from shared.security import create_session_token, decode_session_token, digest, hash_password, verify_password

INVALID_LOGIN = "Invalid email or password"
PASSWORD_CHANGE_REQUIRED = "Password change required"


@functools.cache
def _unknown_user_hash() -> str:
    return hash_password("no user has this password")


def _is_current(user: User, token: str) -> bool:
    return user.session_token_hash is not None and hmac.compare_digest(user.session_token_hash, digest(token))


@dataclass
class IssuedSession:
    token: str
    expires_at: datetime
    user: User


def login(session: Session, *, email: str, password: str, address: str | None = None) -> IssuedSession:
    """Check credentials (unless the account or address is locked out), replace the user's previous session."""
    login_throttle.check(session, email=email, address=address)
    user = repo.get_user_by_email(session, email=email)
    # An unknown e-mail costs the same scrypt as a known one, so timing does not reveal accounts.
    stored = user.password_hash if user is not None else _unknown_user_hash()
    if not verify_password(password, stored) or user is None or not user.is_active:
        login_throttle.failed(session, email=email, address=address)
        session.commit()  # the failure counts, although the request fails
        raise Unauthorized(INVALID_LOGIN)
    login_throttle.succeeded(session, email=email)
    token, expires_at = create_session_token(user.id, user.tenant_id)
    user.session_token_hash = digest(token)
    user.last_login_at = utcnow()
    session.flush()
    return IssuedSession(token=token, expires_at=expires_at, user=user)


def authenticate(session: Session, *, token: str | None, allow_password_change: bool = False) -> User:
    """The user behind a live session token; Unauthorized or Forbidden otherwise."""
    if not token:
        raise Unauthorized("Not authenticated")
    user = repo.get_user(session, user_id=decode_session_token(token))
    # A deactivated user's live token stops working at once; so does a superseded one.
    if user is None or not user.is_active or not _is_current(user, token):
        raise Unauthorized("Invalid or expired token")
    if user.must_change_password and not allow_password_change:
        raise Forbidden(PASSWORD_CHANGE_REQUIRED)
    return user


def change_password(session: Session, *, user: User, current_password: str, new_password: str) -> None:
    """Replace the caller's password and end their session."""
    if not verify_password(current_password, user.password_hash):
        raise Invalid("Current password is incorrect")
    if len(new_password) < 8:
        raise Invalid("New password must be at least 8 characters")
    if current_password == new_password:
        raise Invalid("New password must differ from the current password")
    user.password_hash = hash_password(new_password)
    user.must_change_password = False
    user.session_token_hash = None
    session.flush()


def logout(session: Session, *, token: str | None, invalidate_session: bool) -> None:
    """End the session behind ``token`` when asked; a dead or missing token is not an error."""
    if not token or not invalidate_session:
        return
    try:
        user = repo.get_user(session, user_id=decode_session_token(token))
    except Unauthorized:
        return
    if user is not None and _is_current(user, token):
        user.session_token_hash = None
        session.flush()
