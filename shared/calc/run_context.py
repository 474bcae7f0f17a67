"""A calculation's clock and dice: what NOW, TODAY, RAND and RANDBETWEEN answer during one job.

A job is reproducible when every volatile function answers from the job itself: NOW and TODAY
from the job's creation time (UTC wall-clock time, as a timezone-free serial: the service has
no user time zone), RAND and RANDBETWEEN from a pseudo-random stream seeded by the job id and
the cell (sheet, row, column, nth call in the cell), so a cell draws the same number however
many times it is evaluated. Outside a run context (the fidelity check, schema suggestions) the
functions answer as Excel does: the current time and fresh random numbers.

Excel semantics (support.microsoft.com, NOW / TODAY / RAND / RANDBETWEEN functions):
TODAY is the date's serial number (an integer), NOW the serial with the time as its fraction,
both in the workbook's date system; RAND is uniform in [0, 1); RANDBETWEEN(bottom, top) is an
integer in [bottom, top], bottom rounded up and top rounded down to integers, #NUM! when no
integer lies between them.
"""

from __future__ import annotations

import contextvars
import hashlib
import math
import random
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

from shared.calc.scoped import holding
from shared.calc.values import datetime_to_serial

_DAYS_1900_TO_1904 = 1462  # serial of a date in the 1904 system = 1900 serial - 1462


@dataclass
class RunContext:
    """The frozen clock and the seed of one calculation."""

    created_at: datetime  # naive UTC, as the jobs table stores it
    seed: str
    _draws: dict[tuple, int] = field(default_factory=dict, repr=False)

    @classmethod
    def for_job(cls, *, job_id: uuid.UUID, created_at: datetime) -> "RunContext":
        """The context every calculation of this job uses, the first and every re-run."""
        if created_at.tzinfo is not None:
            created_at = created_at.astimezone(timezone.utc).replace(tzinfo=None)
        return cls(created_at=created_at, seed=str(job_id))

    @classmethod
    def fresh(cls) -> "RunContext":
        """A calculation outside any job: the current time, a new seed (Excel's behaviour), still
        one value per cell for the whole calculation."""
        return cls(created_at=datetime.now(timezone.utc).replace(tzinfo=None), seed=str(uuid.uuid4()))

    def now_serial(self, date1904: bool = False) -> float:
        """NOW(): the creation time as a serial, the time of day as its fraction."""
        return float(datetime_to_serial(self.created_at)) - (_DAYS_1900_TO_1904 if date1904 else 0)

    def today_serial(self, date1904: bool = False) -> int:
        """TODAY(): the creation date's serial, an integer."""
        return math.floor(self.now_serial(date1904))

    def random(self, cell: tuple) -> float:
        """RAND() for the next call in `cell` (any hashable key naming the calling cell)."""
        nth = self._draws.get(cell, 0)
        self._draws[cell] = nth + 1
        digest = hashlib.sha256(f"{self.seed}|{cell!r}|{nth}".encode()).digest()
        return random.Random(digest).random()

    def restart_cell(self, cell: tuple) -> None:
        """A cell evaluated again draws its numbers again from the first."""
        self._draws.pop(cell, None)


_current: contextvars.ContextVar[RunContext | None] = contextvars.ContextVar("sheetcalc_run", default=None)


def running(context: RunContext | None):
    """Calculations inside the block answer NOW/TODAY/RAND/RANDBETWEEN from `context`."""
    return holding(_current, context)


def current_or_fresh() -> RunContext:
    """The calculation's context, or a fresh one for a calculation outside any job."""
    return current() or RunContext.fresh()


def current() -> RunContext | None:
    """The context of the calculation in progress, if any."""
    return _current.get()


def now_serial(date1904: bool = False) -> float:
    """NOW() for the calculation in progress: frozen in a run context, the clock otherwise."""
    context = current()
    if context is None:
        return float(datetime_to_serial(datetime.now(timezone.utc).replace(tzinfo=None))) - (
            _DAYS_1900_TO_1904 if date1904 else 0
        )
    return context.now_serial(date1904)


def today_serial(date1904: bool = False) -> int:
    """TODAY() for the calculation in progress."""
    return math.floor(now_serial(date1904))


def restart_cell(cell: tuple) -> None:
    """A cell evaluated again in the calculation in progress (a later round of the correction
    layer) draws its numbers again from the first; outside a run context, nothing to restart."""
    context = current()
    if context is not None:
        context.restart_cell(cell)


def rand(cell: tuple) -> float:
    """RAND() for the calculation in progress: seeded in a run context, fresh otherwise."""
    context = current()
    return random.random() if context is None else context.random(cell)


def randbetween(bottom: float, top: float, cell: tuple) -> int | None:
    """RANDBETWEEN(bottom, top), or None where Excel answers #NUM! (no integer between them)."""
    low, high = math.ceil(bottom), math.floor(top)
    if low > high:
        return None
    return low + min(int(rand(cell) * (high - low + 1)), high - low)
