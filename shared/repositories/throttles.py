"""Throttle counters (``shared.db.models.ThrottleCounter``): one upsert per counted event.

A counter counts until it expires; the next event after that starts it again from 1. Each
count is a single ``INSERT ... ON CONFLICT DO UPDATE ... RETURNING`` on SQLite and PostgreSQL,
so concurrent requests in any number of processes each get a distinct count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Table, case, delete, literal, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from shared.db.models import ThrottleCounter
from shared.db.types import UTCDateTime

COUNTERS: Table = ThrottleCounter.__table__


@dataclass(frozen=True)
class Count:
    """A counter after an event: how many so far, and until when they count."""

    count: int
    expires_at: datetime

    def seconds_left(self, now: datetime) -> int:
        """Whole seconds (at least 1) until the counter expires."""
        return max(1, math.ceil((self.expires_at - now).total_seconds()))


def add(
    session: Session, *, key: str, now: datetime, started_at: datetime, expires_at: datetime, extend: bool, amount: int = 1,
) -> Count:
    """Count ``amount`` events (one by default) under ``key``; a counter expired at ``now``
    restarts at ``amount`` with the given window.

    ``extend`` moves a running counter's expiry to ``expires_at`` (a lockout that lasts from the
    latest failure); otherwise a running counter keeps its own (a fixed window).
    """
    insert = sqlite.insert if session.get_bind().dialect.name == "sqlite" else postgresql.insert
    statement = insert(COUNTERS).values(key=key, count=amount, window_started_at=started_at, expires_at=expires_at)
    new = statement.excluded
    expired = COUNTERS.c.expires_at <= literal(now, UTCDateTime())
    statement = statement.on_conflict_do_update(
        index_elements=[COUNTERS.c.key],
        set_={
            "count": case((expired, amount), else_=COUNTERS.c.count + amount),
            "window_started_at": case((expired, new.window_started_at), else_=COUNTERS.c.window_started_at),
            "expires_at": new.expires_at if extend else case((expired, new.expires_at), else_=COUNTERS.c.expires_at),
        },
    ).returning(COUNTERS.c.count, COUNTERS.c.expires_at)
    row = session.execute(statement).one()
    return Count(count=row.count, expires_at=row.expires_at)


def current(session: Session, *, key: str, now: datetime) -> Count | None:
    """The counter under ``key`` unless it has expired at ``now``."""
    row = session.execute(
        select(COUNTERS.c.count, COUNTERS.c.expires_at).where(COUNTERS.c.key == key, COUNTERS.c.expires_at > now)
    ).one_or_none()
    return None if row is None else Count(count=row.count, expires_at=row.expires_at)


def remove(session: Session, *, key: str) -> None:
    """Forget the counter under ``key``."""
    session.execute(delete(COUNTERS).where(COUNTERS.c.key == key))


def remove_expired(session: Session, *, now: datetime, batch: int = 100) -> None:
    """Forget up to ``batch`` counters expired at ``now`` (keys of unknown e-mails and addresses
    would pile up otherwise). On PostgreSQL rows another transaction holds are skipped, so
    concurrent callers never wait for, or deadlock on, each other's deletions."""
    expired = (
        select(COUNTERS.c.key).where(COUNTERS.c.expires_at <= now).order_by(COUNTERS.c.key).limit(batch)
        .with_for_update(skip_locked=True)
    )
    session.execute(delete(COUNTERS).where(COUNTERS.c.key.in_(expired.scalar_subquery())))
