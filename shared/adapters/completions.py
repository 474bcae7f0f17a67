"""Job completions across processes: a finisher announces job ids, every API process hears them.

The backend follows the database (configuration, never a second code path):

- **PostgreSQL**: ``NOTIFY sheetcalc_jobs, '<job id>'`` (``pg_notify``), sent in the finishing
  transaction itself (``notify_in``: PostgreSQL delivers it at the commit) or committed right after
  it (``announce``). Each listening process keeps ONE dedicated pg8000 connection, made with the
  pool's own connect arguments but outside the pool, that ``LISTEN``\\s; a thread selects on its
  socket and reads what arrived. Works across machines (Lambda: the worker Lambda notifies, the
  API Lambda listens).
- **SQLite** (one machine, dev): unix datagram sockets in ``<data dir>/run/notify/``. Each
  listening process binds one; an announcement is one datagram (a line a job; several when the
  states carried need more room) to every socket there. A socket file nobody holds any more (its
  process died) refuses the datagram and is removed.

An announcement may carry, with a job's id, what its finish wrote that the job's status answer
shows (its *state*: an ASCII JSON text ``shared.services.job_waits`` writes and reads; a line or
a payload ``<job id> <state>``), so a waiter answers without reading the job again. A state
longer than ``MAX_STATE_BYTES`` (PostgreSQL's payloads end below 8,000 bytes) or not ASCII is left
out: its waiters read the job, as they do for an announcement without one.

A listener hands each id, and its state or None, to ``on_job``; after its PostgreSQL connection
was lost and made again it calls ``on_gap`` (announcements may have been missed meanwhile).
``Hub`` turns ids into wake-ups of asyncio waiters in this process (``loop.call_soon_threadsafe``),
each holding the state its announcement carried. Nothing here reads jobs.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import secrets
import select
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from sqlalchemy import Connection, text

from shared.config import get_settings
from shared.db.session import dbapi_connect_args, get_engine

log = logging.getLogger(__name__)

CHANNEL = "sheetcalc_jobs"
APPLICATION_NAME = "sheetcalc-completions"
# How long the PostgreSQL listener sleeps between checks that its connection is alive (one
# ``SELECT 1``; nothing about jobs is polled).
KEEPALIVE_SECONDS = 60.0
# A finisher waits at most this long for room in one listener's datagram queue.
SEND_TIMEOUT_SECONDS = 1.0
_MAX_RECONNECT_SECONDS = 30.0
_UNIX_PATH_MAX = 100  # sun_path holds 108 bytes on Linux, 104 on macOS

# A finished job's state longer than this is not carried (PostgreSQL: a NOTIFY payload is < 8,000 bytes).
MAX_STATE_BYTES = 4000
# A datagram holds at most this much (a listener reads up to 64 KiB at once); more goes in several.
_MAX_DATAGRAM_BYTES = 60_000

OnJob = Callable[[str, "str | None"], None]
OnGap = Callable[[], None]


def _uses_postgres() -> bool:
    return not get_settings().effective_database_url.startswith("sqlite")


def notify_dir() -> Path:
    """Where the dev (SQLite) backend's listening sockets live."""
    return get_settings().data_dir / "run" / "notify"


States = Mapping[str, str]


def _carried(state: str | None) -> bool:
    # ASCII only (JSON escapes the rest): pg8000 reads a NOTIFY payload as ASCII, and one that is
    # not would fail its listener's connection.
    return state is not None and len(state) <= MAX_STATE_BYTES and state.isascii()


def payloads(job_ids: Iterable[str], states: States | None = None) -> list[str]:
    """What is announced for each job: its id, and its state when it has one that can be carried."""
    return [f"{job_id} {states[job_id]}" if states and _carried(states.get(job_id)) else job_id for job_id in job_ids]


def parse(payload: str) -> tuple[str, str | None]:
    """The job id and the state (None when the announcement carries none) of one payload."""
    job_id, _, state = payload.partition(" ")
    return job_id, state or None


def announce(job_ids: Iterable[str], states: States | None = None) -> None:
    """Tell every listening process that these jobs have finished (after their commit), with the
    state of those in ``states``."""
    ids = [str(job_id) for job_id in job_ids]
    if not ids:
        return
    if _uses_postgres():
        notify(ids, states)
    else:
        send_datagrams(notify_dir(), ids, states)


# One notification per job (a listener hands on each payload as one job), all in one statement.
_NOTIFY = text("SELECT count(pg_notify(:channel, payload)) FROM unnest(CAST(:payloads AS TEXT[])) AS payload")


def notify(job_ids: list[str], states: States | None = None) -> None:
    """PostgreSQL: NOTIFY each job on the channel, committed at once (a connection of the pool)."""
    with get_engine().begin() as connection:
        notify_in(connection, job_ids, states)


def notify_in(connection: Connection, job_ids: list[str], states: States | None = None) -> bool:
    """PostgreSQL: NOTIFY each job on the channel within ``connection``'s transaction, so they are
    delivered when it commits and never if it rolls back (one statement); False, doing nothing, on
    another database (the dev backend sends its datagrams after the commit instead)."""
    if connection.dialect.name != "postgresql":
        return False
    if job_ids:
        connection.execute(_NOTIFY, {"channel": CHANNEL, "payloads": payloads(job_ids, states)})
    return True


def new_listener() -> PgListener | SocketListener:
    """The listener the configuration calls for."""
    return PgListener() if _uses_postgres() else SocketListener(notify_dir())


# --- the dev backend: unix datagram sockets -----------------------------------------------------


class _Directory:
    """Addresses of sockets in a directory; through /proc/self/fd when the path is too long."""

    def __init__(self, path: Path):
        self.path = path
        self._fd = os.open(path, os.O_RDONLY) if len(str(path)) + 40 > _UNIX_PATH_MAX else None

    def address(self, name: str) -> str:
        return f"/proc/self/fd/{self._fd}/{name}" if self._fd is not None else str(self.path / name)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)


def _datagrams(lines: list[str]) -> list[bytes]:
    """The lines in as few datagrams as hold them (one a line), each at most ``_MAX_DATAGRAM_BYTES``."""
    datagrams, current, size = [], [], 0
    for line in (line.encode() for line in lines):
        if current and size + 1 + len(line) > _MAX_DATAGRAM_BYTES:
            datagrams.append(b"\n".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
    if current:
        datagrams.append(b"\n".join(current))
    return datagrams


def send_datagrams(directory: Path, job_ids: list[str], states: States | None = None) -> None:
    """Dev: the jobs (a line each) to every socket in ``directory``, in one datagram unless their
    states need more; stale sockets are removed."""
    datagrams = _datagrams(payloads(job_ids, states))
    try:
        names = [name for name in os.listdir(directory) if name.endswith(".sock")]
    except FileNotFoundError:
        return  # nobody has listened yet
    where = _Directory(directory)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
            sender.settimeout(SEND_TIMEOUT_SECONDS)
            for name in names:
                try:
                    for datagram in datagrams:
                        sender.sendto(datagram, where.address(name))
                except (ConnectionRefusedError, FileNotFoundError):
                    _remove(directory / name, stale=True)
                except OSError:
                    # A full queue (a stopped process) or anything else: that process's waiters
                    # fall back to their deadline; the job itself is done.
                    log.warning("completion not delivered to %s", name, exc_info=True)
    finally:
        where.close()


def _remove(path: Path, *, stale: bool = False) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        return
    if stale:
        log.info("removed the completion socket of a process that is gone: %s", path.name)


class _Thread:
    """A listener's thread and the pipe that stops it (select wakes on either)."""

    def __init__(self, name: str):
        self._name = name
        self._stop_r, self._stop_w = os.pipe()
        self.stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, target: Callable[[], None]) -> None:
        self._thread = threading.Thread(target=target, name=self._name, daemon=True)
        self._thread.start()

    def wait_readable(self, sock, timeout: float | None) -> bool:
        """True when ``sock`` has something to read; False at the timeout or when stopping."""
        readable, _, _ = select.select([sock, self._stop_r], [], [], timeout)
        return sock in readable and not self.stopping.is_set()

    def stop(self) -> None:
        if self.stopping.is_set():
            return
        self.stopping.set()
        os.write(self._stop_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=10)
        os.close(self._stop_r)
        os.close(self._stop_w)


class SocketListener:
    """Binds ``<dir>/<pid>-<random>.sock`` and hands every id it receives to ``on_job``."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.name = f"{os.getpid()}-{secrets.token_hex(4)}.sock"
        self._sock: socket.socket | None = None
        self._where: _Directory | None = None
        self._thread = _Thread("completions-socket")

    def start(self, on_job: OnJob, on_gap: OnGap) -> None:
        """Bind the socket (announcements from now on arrive) and start reading in a thread."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._where = _Directory(self.directory)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self._sock.bind(self._where.address(self.name))
        atexit.register(_remove, self.directory / self.name)  # a normal exit leaves no file
        self._thread.start(lambda: self._run(on_job))

    def _run(self, on_job: OnJob) -> None:
        while not self._thread.stopping.is_set():
            try:
                if not self._thread.wait_readable(self._sock, None):
                    continue
                payload = self._sock.recv(65536)
            except OSError:
                if not self._thread.stopping.is_set():
                    log.exception("completion socket failed; waiters fall back to their deadline")
                return
            for line in payload.decode(errors="replace").split("\n"):
                if line:
                    on_job(*parse(line))

    def stop(self) -> None:
        self._thread.stop()
        if self._sock is not None:
            self._sock.close()
        _remove(self.directory / self.name)
        if self._where is not None:
            self._where.close()


# --- PostgreSQL: LISTEN on a dedicated connection ------------------------------------------------


class PgListener:
    """One connection, outside the pool, that LISTENs; a thread reads its notifications."""

    def __init__(self):
        engine = get_engine()
        self._dialect = engine.dialect
        self._connect_args = dbapi_connect_args(engine)  # TLS as the pool's connections
        self._conn = None
        self._ready = threading.Event()
        self._thread = _Thread("completions-pg")

    def start(self, on_job: OnJob, on_gap: OnGap) -> None:
        """Connect and LISTEN (announcements from now on arrive), then read in a thread."""
        self._conn = self._listen()
        self._thread.start(lambda: self._run(on_job, on_gap))

    def _listen(self):
        cargs, cparams = self._connect_args
        # Named, so an operator sees it in pg_stat_activity for what it is.
        conn = self._dialect.connect(*cargs, **{**cparams, "application_name": APPLICATION_NAME})
        conn.autocommit = True
        conn.cursor().execute(f"LISTEN {CHANNEL}")
        return conn

    def _run(self, on_job: OnJob, on_gap: OnGap) -> None:
        delay = 1.0
        while not self._thread.stopping.is_set():
            try:
                if self._conn is None:
                    self._conn = self._listen()
                    delay = 1.0
                    on_gap()  # announcements made while we were away are lost: let waiters look
                self._read(on_job)
            except Exception:
                if self._thread.stopping.is_set():
                    return
                log.warning("completion listener lost its connection; connecting again in %.0f s", delay, exc_info=True)
                self._close()
                self._thread.stopping.wait(delay)
                delay = min(delay * 2, _MAX_RECONNECT_SECONDS)

    def _read(self, on_job: OnJob) -> None:
        conn = self._conn
        # pg8000 reads the socket through a buffer: what is already buffered is read first.
        if not _buffered(conn) and not self._thread.wait_readable(conn._usock, KEEPALIVE_SECONDS):
            if self._thread.stopping.is_set():
                return
        # A trivial query makes pg8000 read every message waiting, notifications included
        # (and proves the connection alive at each keepalive).
        conn.cursor().execute("SELECT 1")
        while conn.notifications:
            _pid, _channel, payload = conn.notifications.popleft()
            on_job(*parse(payload))

    def _close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                pass
            self._conn = None

    def stop(self) -> None:
        self._thread.stop()
        self._close()


def _buffered(conn) -> bool:
    # Whether pg8000's reader holds unread bytes (select cannot see those): peek without blocking.
    sock = conn._usock
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        return bool(conn._sock.peek(1))
    except (BlockingIOError, InterruptedError):
        return False
    finally:
        sock.settimeout(timeout)


# --- waking this process's waiters ---------------------------------------------------------------


class Woken(asyncio.Event):
    """A waiter's event: set when its job is announced; ``state`` is what the announcement carried
    (None when it carried none: then the job is to be read)."""

    state: str | None = None


class Hub:
    """This process's waiters by job id, woken by a listener's thread."""

    def __init__(self, listener: PgListener | SocketListener):
        self.listener = listener
        self._waiters: dict[str, set[tuple[asyncio.AbstractEventLoop, Woken]]] = {}
        self._lock = threading.Lock()
        self._started = False
        self._start_lock = threading.Lock()

    @property
    def listening(self) -> bool:
        """Whether the listener was started (then ``ensure_listening`` has nothing to do)."""
        return self._started

    def ensure_listening(self) -> None:
        """Start the listener once (blocking: it may connect to the database)."""
        with self._start_lock:
            if not self._started:
                self.listener.start(self._wake, self._wake_all)
                self._started = True

    def register(self, job_id: str) -> Woken:
        """An event set when ``job_id`` is announced; call from the event loop that will wait."""
        entry = (asyncio.get_running_loop(), Woken())
        with self._lock:
            self._waiters.setdefault(job_id, set()).add(entry)
        return entry[1]

    def unregister(self, job_id: str, event: asyncio.Event) -> None:
        with self._lock:
            entries = self._waiters.get(job_id, set())
            entries -= {entry for entry in entries if entry[1] is event}
            if not entries:
                self._waiters.pop(job_id, None)

    def waiting(self) -> dict[str, int]:
        """How many waiters each job has now."""
        with self._lock:
            return {job_id: len(entries) for job_id, entries in self._waiters.items()}

    def _wake(self, job_id: str, state: str | None = None) -> None:
        with self._lock:
            entries = list(self._waiters.get(job_id, ()))
        for loop, event in entries:
            if state is not None:
                event.state = state  # before the wake-up, which the waiter reads it after
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:
                pass  # that waiter's loop has closed: nobody is waiting there any more

    def _wake_all(self) -> None:
        with self._lock:
            job_ids = list(self._waiters)
        for job_id in job_ids:
            self._wake(job_id)

    def stop(self) -> None:
        with self._start_lock:
            if self._started:
                self.listener.stop()
                self._started = False


_hub: Hub | None = None
_hub_key: tuple | None = None
_hub_settings: object | None = None  # the settings object _hub_key was computed from
_hub_lock = threading.Lock()


def hub() -> Hub:
    """The process's hub for the configured backend (a new one when the configuration changed)."""
    global _hub, _hub_key, _hub_settings
    settings = get_settings()
    current = _hub
    if current is not None and _hub_settings is settings:  # every wait asks: no URL resolved again
        return current
    key = (settings.effective_database_url, str(settings.data_dir))
    with _hub_lock:
        if _hub is None or _hub_key != key:
            if _hub is not None:
                _hub.stop()
            _hub, _hub_key = Hub(new_listener()), key
        _hub_settings = settings
        return _hub


def stop_hub() -> None:
    """Stop listening (tests, and a process shutting down)."""
    global _hub, _hub_key, _hub_settings
    with _hub_lock:
        if _hub is not None:
            _hub.stop()
        _hub, _hub_key, _hub_settings = None, None, None
