"""Who holds a job's claim: a process, named so that another process can tell whether it still runs.

A claimant is ``host|pidns|boot|pid|start``: the host name, the process's PID namespace, the
kernel's boot id, its pid and its start time (clock ticks after boot, from ``/proc``). The place
(host, PID namespace, boot) says where the pid means something; the start time tells a pid
reused by a later process from the one that claimed. Each claim records it (``jobs.claimant``),
so a dev stack started again after a ``kill -9`` hands back at once the claims of its dead
processes (``shared.services.sweeper.release_dead_claims``) instead of waiting out their lease.

``gone`` is conservative: only a claimant of this very place (same host, PID namespace and boot)
whose pid no longer runs, runs as a zombie, or now belongs to a process started at another time
is gone. Claims made elsewhere (another machine, container or boot; a Lambda sandbox) are never
judged here: their lease brings them back. Where ``/proc`` cannot be read (not Linux), the start
time is unknown and only a pid that does not exist at all counts as gone.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

# The column's width (String(255)): a long host name is cut, consistently on both sides.
_HOST_CHARS = 120
_SEPARATOR = "|"


@dataclass(frozen=True)
class Claimant:
    """A claimant's parts; ``place`` is where its pid can be looked up."""

    host: str
    pidns: str
    boot: str
    pid: int
    start: str

    @property
    def place(self) -> str:
        return _SEPARATOR.join((self.host, self.pidns, self.boot))

    def __str__(self) -> str:
        return _SEPARATOR.join((self.place, str(self.pid), self.start))


def _read(path: str) -> str:
    try:
        with open(path) as file:
            return file.read().strip()
    except OSError:
        return ""


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return ""


def _stat(pid: int) -> tuple[str, str] | None:
    """(state, start time in clock ticks after boot) of ``pid`` from ``/proc``; None when unreadable."""
    raw = _read(f"/proc/{pid}/stat")
    if not raw:
        return None
    # "pid (comm) state ppid ... starttime ...": comm may hold spaces and parentheses.
    fields = raw.rpartition(")")[2].split()
    if len(fields) < 20:
        return None
    return fields[0], fields[19]


def _host() -> str:
    return socket.gethostname().replace(_SEPARATOR, "_")[:_HOST_CHARS]


_current: tuple[int, str] | None = None


def here() -> str:
    """This process's place: its host, PID namespace and boot."""
    return _SEPARATOR.join((_host(), _pid_namespace(), _read("/proc/sys/kernel/random/boot_id")))


def current() -> str:
    """This process as a claimant (worked out once per process; a forked child works out its own)."""
    global _current
    pid = os.getpid()
    if _current is None or _current[0] != pid:
        stat = _stat(pid)
        _current = (pid, f"{here()}{_SEPARATOR}{pid}{_SEPARATOR}{stat[1] if stat else ''}")
    return _current[1]


def parse(value: str | None) -> Claimant | None:
    """A recorded claimant's parts; None when it is not one."""
    parts = (value or "").split(_SEPARATOR)
    if len(parts) != 5 or not parts[3].isdigit():
        return None
    host, pidns, boot, pid, start = parts
    return Claimant(host, pidns, boot, int(pid), start)


def gone(value: str | None, *, place: str | None = None) -> bool:
    """Whether the claimant ``value`` is a process of this place (``place``: ``here()``) that no
    longer runs. False when in doubt: a claimant from elsewhere, one that cannot be read, or a
    process that may still be the one that claimed."""
    claimant = parse(value)
    if claimant is None or claimant.place != (place if place is not None else here()):
        return False
    if not claimant.pidns or not claimant.boot:
        return _no_such_pid(claimant.pid)  # /proc unreadable where it was claimed: the pid alone
    stat = _stat(claimant.pid)
    if stat is None:
        return _no_such_pid(claimant.pid)
    state, start = stat
    return state in ("Z", "X") or (bool(claimant.start) and start != claimant.start)


def _no_such_pid(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists (another user's) or cannot be asked: not ours to judge
    return False
