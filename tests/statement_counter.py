"""Counting what a piece of code asks of the database: SQL statements, and on PostgreSQL the
round trips pg8000 makes for them (each wait for the server's answer).

``counting()`` counts in every thread (the API's requests run in a thread pool) except the
completion listener's own connection, which is counted apart (``listener_round_trips``):

    with counting() as seen:
        run_jobs(ids)
    seen.statements  # SQL statements the driver ran (an executemany of n rows counts n: pg8000 runs each;
                     # a multi-row INSERT counts one)
    seen.round_trips  # PostgreSQL only: requests that waited for the server (BEGIN and COMMIT included)
    seen.prepares  # of those, statements prepared on a connection for the first time

A measuring tool for tests and ``bench/round_trips.py``; the product never imports it.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from sqlalchemy import Engine, event
from sqlalchemy.engine.interfaces import ExecuteStyle


@dataclass
class Seen:
    statements: int = 0
    round_trips: int = 0
    listener_round_trips: int = 0
    prepares: int = 0  # of the round trips: statements prepared (once per connection and text, shared/db/pg8000_prepared.py)
    commits: int = 0
    sql: list[str] = field(default_factory=list)
    waits: list[str] = field(default_factory=list)  # what each round trip was for (its statement)

    def by_kind(self) -> Counter:
        """Statements by their first words (``UPDATE jobs``, ``INSERT INTO job_stats_daily``, ``SELECT``)."""
        kinds: Counter = Counter()
        for text in self.sql:
            words = text.split()
            head = words[:3] if words[:2] == ["INSERT", "INTO"] else words[:2] if words[:1] in (["UPDATE"], ["DELETE"]) else words[:1]
            kinds[" ".join(head)] += 1
        return kinds


@contextlib.contextmanager
def counting(exclude_threads: tuple[str, ...] = ()) -> Iterator[Seen]:
    """Count statements (every engine) and pg8000 round trips while the block runs, in every
    thread but those named in ``exclude_threads``."""
    seen = Seen()
    lock = threading.Lock()

    def on_execute(conn, cursor, statement, parameters, context, executemany):
        if threading.current_thread().name in exclude_threads:
            return
        # pg8000 runs an executemany row by row; SQLAlchemy's multi-row INSERTs ("insertmanyvalues")
        # are one statement each, whatever their parameters
        one_by_one = executemany and getattr(context, "execute_style", None) is ExecuteStyle.EXECUTEMANY
        runs = len(parameters) if one_by_one and conn.dialect.name == "postgresql" else 1
        with lock:
            seen.statements += runs
            seen.sql.extend([statement.strip()] * runs)

    def on_commit(conn):
        if threading.current_thread().name in exclude_threads:
            return
        with lock:
            seen.commits += 1

    event.listen(Engine, "before_cursor_execute", on_execute)
    event.listen(Engine, "commit", on_commit)
    restore = _count_round_trips(seen, lock, exclude_threads)
    try:
        yield seen
    finally:
        restore()
        event.remove(Engine, "before_cursor_execute", on_execute)
        event.remove(Engine, "commit", on_commit)


def _count_round_trips(seen: Seen, lock: threading.Lock, exclude_threads: tuple[str, ...]):
    try:
        from pg8000 import core
    except ImportError:
        return lambda: None
    original = core.CoreConnection.handle_messages
    original_prepare = core.CoreConnection.prepare_statement

    def handle_messages(self, context):
        # Every wait for the server's messages ends one round trip (pg8000 flushes, then reads),
        # except the answer to a BEGIN sent in one write with the statement after it
        # (shared/db/pg8000_prepared.py): both are read after one wait.
        name = threading.current_thread().name
        if getattr(context, "pipelined", False):
            return original(self, context)
        with lock:
            if name == "completions-pg":
                seen.listener_round_trips += 1
            elif name not in exclude_threads:
                seen.round_trips += 1
                seen.waits.append(" ".join(str(getattr(context, "statement", None) or "?").split())[:60])
        return original(self, context)

    def prepare_statement(self, statement, oids=None):
        if threading.current_thread().name not in exclude_threads:
            with lock:
                seen.prepares += 1
        return original_prepare(self, statement, oids)

    core.CoreConnection.handle_messages = handle_messages
    core.CoreConnection.prepare_statement = prepare_statement

    def restore():
        core.CoreConnection.handle_messages = original
        core.CoreConnection.prepare_statement = original_prepare

    return restore
