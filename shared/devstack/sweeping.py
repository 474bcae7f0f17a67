"""The sweeper on the dev stack's clock: once at start, then every ``sweeper_interval_seconds``.

The dev stack's queues begin empty at each start (moto keeps them in memory), so the first sweep
queues again everything due before the start, whatever its age: jobs pending, webhooks never
attempted, version checks never run (and jobs processing past their lease, as every sweep does).
On AWS a schedule runs the same ``shared.services.sweeper.sweep`` (``functions.sweeper.app``).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime

from shared.services import sweeper

log = logging.getLogger(__name__)


class SweeperTimer(threading.Thread):
    """Runs ``sweeper.sweep`` until ``stop()``: the first time with ``queues_empty_since``."""

    def __init__(self, *, queues_empty_since: datetime, interval_seconds: float):
        super().__init__(name="sweeper", daemon=True)
        self.queues_empty_since = queues_empty_since
        self.interval_seconds = interval_seconds
        self._stopping = threading.Event()

    def run(self) -> None:
        started = False
        while not self._stopping.is_set():
            try:
                sweeper.sweep(queues_empty_since=None if started else self.queues_empty_since)
                started = True  # until the start-up sweep succeeds, each try is one
            except Exception:
                log.exception("sweep failed; trying again in %s s", self.interval_seconds)
            self._stopping.wait(self.interval_seconds)

    def stop(self, timeout: float | None = 5.0) -> None:
        self._stopping.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout)
