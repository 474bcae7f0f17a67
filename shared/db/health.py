"""Whether the database answers, known without queueing behind requests (GET /health).

Under a burst every request thread and pooled connection can be busy for seconds, and so can the
event loop. The probe has a thread and a connection of its own and runs ``SELECT 1`` at most once
a second, only while /health is being asked; /health answers from the latest result while it is
fresh, and waits (up to its deadline) only for the first probe or when the latest is too old.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from shared.db.session import probe_engine

log = logging.getLogger(__name__)

REFRESH_SECONDS = 1.0

_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="db-probe")
_lock = threading.Lock()
_in_flight: Future | None = None
# (when the latest finished probe started, on the monotonic clock; whether the database answered)
_latest: tuple[float, bool] | None = None


def _select_one() -> bool:
    global _latest
    started = time.monotonic()
    try:
        with probe_engine().connect() as connection:
            connection.execute(text("SELECT 1"))
        answered = True
    except SQLAlchemyError:
        log.warning("database probe failed", exc_info=True)
        answered = False
    with _lock:
        _latest = (started, answered)
    return answered


def _start_probe() -> Future:
    global _in_flight
    with _lock:
        if _in_flight is None or _in_flight.done():
            _in_flight = _executor.submit(_select_one)
        return _in_flight


async def database_answers(*, timeout_seconds: float) -> bool:
    """Whether the database answered a probe started less than ``timeout_seconds`` ago."""
    latest = _latest
    now = time.monotonic()
    if latest is None or now - latest[0] >= REFRESH_SECONDS:
        probe = _start_probe()
        if latest is None or now - latest[0] >= timeout_seconds:
            try:
                return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(probe)), timeout_seconds)
            except TimeoutError:
                return False
    return latest[1]


def forget() -> None:
    """Drop the latest result (tests that change the database the service points at)."""
    global _latest
    with _lock:
        _latest = None
