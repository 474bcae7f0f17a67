"""Management sessions: login, logout, change password (public: login is how a session starts)."""

from fastapi import APIRouter, Response

from shared.api.deps import ClientAddress, SessionDep, SessionToken, UserChangingPassword
from shared.api.errors import responses
from shared.api.presenters import auth as present
from shared.api.schemas.auth import ChangePasswordRequest, LoginRequest, LoginResponse
from shared.api.schemas.common import MessageResponse
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


@router.post("/login", response_model=LoginResponse, responses=responses(401, 429))
def login(body: LoginRequest, session: SessionDep, response: Response, address: ClientAddress):
    """Start a session; any earlier session of the user ends. The token is also set as a cookie.

    Too many failed logins for an account or from an address (SHEETCALC_LOGIN_MAX_FAILURES,
    SHEETCALC_LOGIN_MAX_FAILURES_PER_ADDRESS, each failure within SHEETCALC_LOGIN_LOCKOUT_SECONDS
    of the one before) lock it out: 429 with Retry-After, even for the right password, until
    that long after the latest failure.
    """
    issued = auth.login(session, email=body.email, password=body.password, address=address)
    ttl = get_settings().jwt_ttl_seconds
    _set_cookie(response, issued.token, ttl)
    return present.login(issued, expires_in=ttl)


@router.post("/logout", response_model=MessageResponse)
def logout(session: SessionDep, token: SessionToken, response: Response, invalidate_session: bool = True):
    """End the session (unless invalidate_session=false) and always clear the auth_token cookie."""
    auth.logout(session, token=token, invalidate_session=invalidate_session)
    _clear_cookie(response)
    return present.logged_out()


@router.post("/change-password", response_model=MessageResponse, responses=responses(401, 422))
def change_password(body: ChangePasswordRequest, session: SessionDep, user: UserChangingPassword, response: Response):
    """Change your own password; the session ends and you log in again with the new password."""
    auth.change_password(session, user=user, current_password=body.current_password, new_password=body.new_password)
    _clear_cookie(response)
    return present.password_changed()
