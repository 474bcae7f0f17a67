"""API Lambda: API Gateway (HTTP API) events into the FastAPI app, built on the first event."""

from __future__ import annotations

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


@instrument
def handler(event: dict, context) -> dict:
    """The app's answer to one API Gateway event."""
    return _mangum()(event, context)
