"""Login throttling: wrong passwords counted per account and per client address.

After ``login_max_failures`` failed logins for one e-mail address (or
``login_max_failures_per_address`` from one client address), each less than
``login_lockout_seconds`` after the one before, every login for it is refused with 429 until
``login_lockout_seconds`` after the latest failure, even with the right password. A refused
attempt is not counted (it checks no password). A successful login clears its account's count,
but not its address's: one valid account must not reset the guesses made at others.

Unknown e-mail addresses count like known ones, so a 429 reveals nothing about accounts.
Counters live in the database (``throttle_counters``): every API process and Lambda shares them.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session

from shared.config import get_settings
from shared.db.types import utcnow
from shared.errors import TooManyRequests
from shared.repositories import throttles as repo
from shared.security import digest

TOO_MANY_FAILURES = "Too many failed login attempts. Try again in {seconds} seconds."


def _keys(email: str, address: str | None) -> list[tuple[str, int]]:
    """The counters a login attempt touches, each with its limit (0 = not counted)."""
    settings = get_settings()
    keys = [(_account_key(email), settings.login_max_failures)]
    if address:
        keys.append((f"login-address:{digest(address)}", settings.login_max_failures_per_address))
    return [(key, limit) for key, limit in keys if limit > 0]


def _account_key(email: str) -> str:
    return f"login-account:{digest(email.strip().lower())}"


def check(session: Session, *, email: str, address: str | None) -> None:
    """Refuse the attempt (429) while its account or its address is locked out."""
    now = utcnow()
    for key, limit in _keys(email, address):
        counted = repo.current(session, key=key, now=now)
        if counted is not None and counted.count >= limit:
            seconds = counted.seconds_left(now)
            raise TooManyRequests(TOO_MANY_FAILURES.format(seconds=seconds), retry_after=seconds)


def failed(session: Session, *, email: str, address: str | None) -> None:
    """Count a failed login against its account and its address."""
    now = utcnow()
    until = now + timedelta(seconds=get_settings().login_lockout_seconds)
    repo.remove_expired(session, now=now)
    for key, _limit in _keys(email, address):
        repo.add(session, key=key, now=now, started_at=now, expires_at=until, extend=True)


def succeeded(session: Session, *, email: str) -> None:
    """Clear the account's failures after a successful login."""
    repo.remove(session, key=_account_key(email))
