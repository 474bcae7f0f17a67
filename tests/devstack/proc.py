"""Processes as Linux's /proc shows them, for the tests of the dev stack's processes."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to reap it is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def still_running(pids: Iterable[int], timeout: float) -> list[int]:
    """Wait up to ``timeout`` s for every pid to end; returns those still running then."""
    pids = list(pids)
    deadline = time.monotonic() + timeout
    while (left := [pid for pid in pids if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left
