"""API Lambda: API Gateway (HTTP API) events into the FastAPI app, built on the first event."""

from __future__ import annotations

import asyncio
import threading

from mangum import Mangum

from shared.api.app import create_app
from shared.observability import instrument

_lock = threading.Lock()
_app: Mangum | None = None


def _mangum() -> Mangum:
    global _app
    with _lock:
        if _app is None:
            _app = Mangum(create_app(), lifespan="off")
        return _app


def _event_loop() -> None:
    # Mangum runs each event on asyncio.get_event_loop(). Once anything in the process has run
    # asyncio.run() (it leaves the thread without a current loop), that raises: give the thread one.
    try:
        asyncio.get_event_loop()
    except RuntimeError:
        asyncio.set_event_loop(asyncio.new_event_loop())


@instrument
def handler(event: dict, context) -> dict:
    """The app's answer to one API Gateway event."""
    _event_loop()
    return _mangum()(event, context)
