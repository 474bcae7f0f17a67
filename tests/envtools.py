"""Running a block of test code with some environment variables set, and the settings re-read."""

from __future__ import annotations

import contextlib
import os


@contextlib.contextmanager
def settings_env(**env: str):
    """Run the block with these variables set and the settings re-read, then restore both."""
    from shared.config import reset_settings

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    reset_settings()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        reset_settings()


class Clock:
    """A module's idea of now (its ``utcnow``), moved by the test instead of waiting."""

    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now

    def advance(self, seconds: float) -> None:
        from datetime import timedelta

        self.now += timedelta(seconds=seconds)
