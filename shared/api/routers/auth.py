"""Management sessions: login, logout, change password."""

from fastapi import APIRouter, Response

from shared.api.deps import SessionDep, SessionToken, UserChangingPassword
from shared.api.errors import responses
from shared.api.schemas import ChangePasswordRequest, LoginRequest, LoginResponse, MessageResponse
from shared.config import get_settings
from shared.services import auth

router = APIRouter(prefix="/auth", tags=["auth"])


def _cookie_flags() -> dict:
    return dict(path="/", httponly=True, samesite="lax", secure=get_settings().env != "dev")


def _set_cookie(response: Response, token: str, max_age: int) -> None:
    response.set_cookie("auth_token", token, max_age=max_age, **_cookie_flags())


def _clear_cookie(response: Response) -> None:
    # The same attributes as when it was set, so browsers replace (and so drop) that very cookie.
    response.delete_cookie("auth_token", **_cookie_flags())


@router.post("/login", response_model=LoginResponse, responses=responses(401))
def login(body: LoginRequest, session: SessionDep, response: Response):
    """Start a session; any earlier session of the user ends. The token is also set as a cookie."""
    issued = auth.login(session, email=body.email, password=body.password)
    ttl = get_settings().jwt_ttl_seconds
    _set_cookie(response, issued.token, ttl)
    return LoginResponse(
        access_token=issued.token, expires_at=issued.expires_at, expires_in=ttl,
        must_change_password=issued.user.must_change_password,
    )


@router.post("/logout", response_model=MessageResponse)
def logout(session: SessionDep, token: SessionToken, response: Response, invalidate_session: bool = True):
    """End the session (unless invalidate_session=false) and always clear the auth_token cookie."""
    auth.logout(session, token=token, invalidate_session=invalidate_session)
    _clear_cookie(response)
    return MessageResponse(message="Logged out")


@router.post("/change-password", response_model=MessageResponse, responses=responses(401, 422))
def change_password(body: ChangePasswordRequest, session: SessionDep, user: UserChangingPassword, response: Response):
    """Change your own password; the session ends and you log in again with the new password."""
    auth.change_password(session, user=user, current_password=body.current_password, new_password=body.new_password)
    _clear_cookie(response)
    return MessageResponse(message="Password changed. Please log in again.")
