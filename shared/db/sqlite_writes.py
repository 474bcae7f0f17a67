"""SQLite writers queue for the write lock instead of sleeping on it.

SQLite lets one transaction at a time write. A writer that finds the lock taken runs SQLite's busy
handler, which sleeps and retries (1, 2, 5, 10, 15, 20, 25 ... 100 ms between tries) until the
``busy_timeout``: it does not learn when the lock is released. In ``sheetcalc dev`` four processes
write at once (two API processes inserting jobs, two pollers claiming and finishing them); at 16
clients the worker's claim waited 7.6 ms on average and 80-105 ms at the 99th percentile behind
the API's inserts, and the API's insert 3 ms on average and 60 ms at the 99th, while the machine
had CPU to spare (issue 15).

So each writer first takes this lock, one per database file for every process: a thread lock
within the process, then an exclusive ``flock`` on ``<database>-writer.lock`` between processes.
Both wake a waiter as soon as the holder lets go. The lock is taken at a connection's first
writing statement (INSERT, UPDATE, DELETE, REPLACE; as pysqlite opens the transaction there,
reads before it wait for nothing) and let go when that transaction ends (the dialect's commit or
rollback, which the pool also runs on a connection handed back). SQLite's own lock and busy
timeout still stand behind it for any writer that does not go through here (a migration run by
another tool, the ``sqlite3`` shell).

A writing statement that does not start with one of those words (``WITH ... UPDATE ...``: the
worker's finish) is a write too, and here it also opens the transaction (``BEGIN``): pysqlite
would not, and would run it in autocommit, committed at once apart from the statements after it
in the same unit of work (the finish's rollups), beyond the reach of a rollback.

A thread that already holds the lock through one connection and writes through another goes
straight to SQLite (it would wait for itself here). A thread that cannot get the process's lock
within ``busy_timeout`` goes on to SQLite too, whose busy timeout then answers as before; so do
other processes' writers where the lock file cannot be made or locked (a read-only directory, a
filesystem without ``flock``: said once in the log). A forked child starts with the lock free.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import threading
import weakref

from sqlalchemy import Engine, event

log = logging.getLogger(__name__)

# The statements pysqlite opens a transaction for (by their first word, in its legacy mode).
DML = ("INSERT", "UPDATE", "DELETE", "REPLACE")
_DML_WORD = re.compile(r"\b(?:INSERT|UPDATE|DELETE|REPLACE)\b")


def _writes(statement: str) -> tuple[bool, bool]:
    """(whether ``statement`` writes, whether pysqlite opens a transaction for it by itself)."""
    head = statement.lstrip()[:7].upper()
    if head.startswith(DML):
        return True, True
    if head.startswith("WITH") and _DML_WORD.search(statement.upper()):
        return True, False
    return False, False


def _raw(connection):
    """The sqlite3 connection itself, given it or the pool's proxy of it (what the dialect gets)."""
    return getattr(connection, "dbapi_connection", None) or connection


class WriterLock:
    """The write lock of one database file, for the threads of this process and other processes."""

    def __init__(self, path: str, timeout: float):
        self.path = path
        self.timeout = timeout
        self._reset()
        self._unlockable = False  # the file cannot be locked (a filesystem without flock)
        ref = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: (lock := ref()) is not None and lock._reset())

    def _reset(self) -> None:
        """A new process starts with the lock free (a forked child holds no one's lock)."""
        self._threads = threading.Lock()
        self._fd: int | None = None
        self._holder: int | None = None  # id() of the DBAPI connection holding it
        self._holder_thread: int | None = None

    def _flock(self, operation: int) -> None:
        if self._unlockable:
            return
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self._fd, operation)
        except OSError as exc:
            self._unlockable = True
            log.warning("cannot lock %s (%s): writers in other processes wait in SQLite's busy handler", self.path, exc)

    def before_write(self, dbapi_connection) -> None:
        """Take the lock for ``dbapi_connection`` unless it holds it already."""
        if self._holder == id(dbapi_connection):
            return
        if self._holder_thread == threading.get_ident():
            return  # this thread holds it through another connection: SQLite decides
        if not self._threads.acquire(timeout=self.timeout):
            log.warning("waited %.0f s for the SQLite write lock of this process; writing without it", self.timeout)
            return
        try:
            self._flock(fcntl.LOCK_EX)
        except BaseException:
            self._threads.release()
            raise
        self._holder, self._holder_thread = id(dbapi_connection), threading.get_ident()

    def after_transaction(self, dbapi_connection) -> None:
        """Let the lock go if ``dbapi_connection`` holds it (its transaction has just ended)."""
        if self._holder != id(dbapi_connection):
            return
        self._holder = self._holder_thread = None
        try:
            self._flock(fcntl.LOCK_UN)
        finally:
            self._threads.release()


def install(engine: Engine, database_path: str, *, timeout: float) -> WriterLock:
    """Make ``engine``'s writers (a SQLite file database's) queue on one lock per file and process."""
    lock = WriterLock(f"{database_path}-writer.lock", timeout)

    @event.listens_for(engine, "before_cursor_execute")
    def _before(connection, _cursor, statement, _parameters, _context, _executemany):
        writes, begins_by_itself = _writes(statement)
        if not writes:
            return
        dbapi_connection = _raw(connection.connection)
        lock.before_write(dbapi_connection)
        if not begins_by_itself and not dbapi_connection.in_transaction:
            # pysqlite would run it on its own and commit it at once, outside the transaction the
            # caller is in (the worker's finish, WITH ... UPDATE, apart from its rollups)
            dbapi_connection.execute("BEGIN")

    def releasing(end):
        """The dialect's commit or rollback, then the lock let go if that connection held it."""
        def wrapped(dbapi_connection) -> None:
            try:
                end(dbapi_connection)
            finally:
                lock.after_transaction(_raw(dbapi_connection))
        return wrapped

    engine.dialect.do_commit = releasing(engine.dialect.do_commit)
    engine.dialect.do_rollback = releasing(engine.dialect.do_rollback)

    @event.listens_for(engine, "close")
    def _closed(dbapi_connection, _record):
        lock.after_transaction(_raw(dbapi_connection))

    @event.listens_for(engine, "invalidate")
    def _invalidated(dbapi_connection, _record, _exception):
        lock.after_transaction(_raw(dbapi_connection))

    return lock
