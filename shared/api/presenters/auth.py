"""Management sessions as the API shows them."""

from __future__ import annotations

from shared.api.schemas.auth import LoginResponse
from shared.api.schemas.common import MessageResponse
from shared.services.auth import IssuedSession


def login(issued: IssuedSession, *, expires_in: int) -> LoginResponse:
    return LoginResponse(
        access_token=issued.token, expires_at=issued.expires_at, expires_in=expires_in,
        must_change_password=issued.user.must_change_password,
    )


def logged_out() -> MessageResponse:
    return MessageResponse(message="Logged out")


def password_changed() -> MessageResponse:
    return MessageResponse(message="Password changed. Please log in again.")
