"""SQLite writers queue on one lock per database file (shared.db.sqlite_writes) rather than on
SQLite's busy handler. The engines here have no busy timeout at all: a write that reached SQLite
while another transaction held its lock would fail at once with "database is locked", so every
write below that succeeds after waiting shows the queue, not SQLite, made it wait."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from shared.db import sqlite_writes

TIMEOUT = 60  # how long a test waits for a step before it fails (never reached when it works)


def _engine(path: Path):
    """An engine on ``path`` whose connections never wait in SQLite (busy timeout 0), queued by the lock."""
    engine = create_engine(f"sqlite:///{path}", connect_args={"check_same_thread": False, "timeout": 0})
    sqlite_writes.install(engine, str(path), timeout=TIMEOUT)
    return engine


@pytest.fixture
def database(tmp_path):
    path = tmp_path / "writes.db"
    engine = _engine(path)
    with engine.begin() as connection:
        connection.execute(text("PRAGMA journal_mode=WAL"))
        connection.execute(text("CREATE TABLE marks (who TEXT)"))
    yield path, engine
    engine.dispose()


def _marks(engine) -> list[str]:
    with engine.connect() as connection:
        return [row[0] for row in connection.execute(text("SELECT who FROM marks ORDER BY rowid"))]


def _write_in_thread(engine, who: str, done: threading.Event, errors: list) -> threading.Thread:
    def run():
        try:
            with engine.begin() as connection:
                connection.execute(text("INSERT INTO marks VALUES (:who)"), {"who": who})
        except Exception as exc:  # recorded for the test to show
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _a_writer_waits_until(engine, who: str, let_go, what: str) -> None:
    """A writer in another thread starts and waits (it has not written 0.3 s later); once
    ``let_go()`` ends ``what`` it waits for, it writes, without error."""
    done, errors = threading.Event(), []
    thread = _write_in_thread(engine, who, done, errors)
    assert not done.wait(0.3), f"the writer did not wait for {what}"
    let_go()
    assert done.wait(TIMEOUT)
    thread.join(TIMEOUT)
    assert errors == []


def _second_writer_waits_for(engine, finish_first) -> list[str]:
    """A first transaction writes and holds; a second writer starts; ``finish_first(connection)``
    ends the first. Returns the marks, and checks the second waited and then wrote without error."""
    connection = engine.connect()
    transaction = connection.begin()
    connection.execute(text("INSERT INTO marks VALUES ('first')"))
    _a_writer_waits_until(engine, "second", lambda: finish_first(connection, transaction), "the first transaction")
    return _marks(engine)


def test_a_second_writer_waits_for_the_first_to_commit_and_then_writes(database):
    _, engine = database

    def commit(connection, transaction):
        transaction.commit()
        connection.close()

    assert _second_writer_waits_for(engine, commit) == ["first", "second"]


def test_a_rollback_lets_the_next_writer_in(database):
    _, engine = database

    def roll_back(connection, transaction):
        transaction.rollback()
        connection.close()

    assert _second_writer_waits_for(engine, roll_back) == ["second"]


def test_a_connection_handed_back_without_commit_lets_the_next_writer_in(database):
    _, engine = database

    def hand_back(connection, _transaction):
        connection.close()  # the pool rolls back what was left open

    assert _second_writer_waits_for(engine, hand_back) == ["second"]


def test_reads_do_not_wait_for_a_writer(database):
    _, engine = database
    with engine.connect() as writer:
        writer.execute(text("INSERT INTO marks VALUES ('pending')"))
        # the open write transaction holds the lock; a read on another connection goes straight on
        assert _marks(engine) == []
        writer.commit()
    assert _marks(engine) == ["pending"]


def test_a_thread_writing_through_two_connections_does_not_wait_for_itself(database):
    _, engine = database
    with engine.connect() as first, engine.connect() as second:
        first.execute(text("INSERT INTO marks VALUES ('first')"))
        # the second connection's write goes to SQLite, which refuses it (busy timeout 0): an
        # error at once rather than a thread waiting for a lock it holds itself
        with pytest.raises(OperationalError, match="database is locked"):
            second.execute(text("INSERT INTO marks VALUES ('second')"))
        second.rollback()
        first.commit()
    assert _marks(engine) == ["first"]


def _hold_in_another_process(path: str, wrote, release) -> None:
    engine = _engine(Path(path))
    with engine.connect() as connection:
        connection.execute(text("INSERT INTO marks VALUES ('other process')"))
        wrote.set()
        release.wait(TIMEOUT)
        connection.commit()
    engine.dispose()


def test_a_writer_in_another_process_is_waited_for(database):
    path, engine = database
    context = multiprocessing.get_context("spawn")
    wrote, release = context.Event(), context.Event()
    other = context.Process(target=_hold_in_another_process, args=(str(path), wrote, release))
    other.start()
    try:
        assert wrote.wait(TIMEOUT)
        _a_writer_waits_until(engine, "this process", release.set, "the other process's transaction")
    finally:
        release.set()
        other.join(TIMEOUT)
    assert other.exitcode == 0
    assert _marks(engine) == ["other process", "this process"]


FINISH_LIKE = "WITH outcome AS (SELECT :who AS who) UPDATE marks SET who = (SELECT who FROM outcome)"


def test_a_with_update_is_a_write_in_the_callers_transaction(database):
    _, engine = database
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO marks VALUES ('before')"))

    # GIVEN a unit of work whose first write is a WITH ... UPDATE (as the worker's finish is)
    with engine.connect() as connection:
        connection.execute(text(FINISH_LIKE), {"who": "updated"})
        # THEN it holds the write lock like any write: a second writer waits until it ends
        # AND it is part of the transaction: rolled back with it, not committed on its own
        _a_writer_waits_until(engine, "second", connection.rollback, "the WITH ... UPDATE")
    assert _marks(engine) == ["before", "second"]


def test_a_with_select_is_a_read(database):
    _, engine = database
    with engine.connect() as reader:
        rows = reader.execute(text("WITH o AS (SELECT 'x' AS who) SELECT who FROM o")).all()
        assert rows == [("x",)]
        # it took no lock: a writer in another thread goes straight on while the reader is open
        done, errors = threading.Event(), []
        thread = _write_in_thread(engine, "writer", done, errors)
        assert done.wait(TIMEOUT), "the writer waited for a read"
        thread.join(TIMEOUT)
    assert errors == []
    assert _marks(engine) == ["writer"]


def test_where_the_file_cannot_be_locked_writes_still_go_through_and_threads_still_queue(database, monkeypatch, caplog):
    # GIVEN a filesystem without flock
    import errno
    import fcntl

    def no_flock(_fd, _operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    _, engine = database

    # WHEN two threads write, THEN the second still waits for the first and both write
    assert _second_writer_waits_for(engine, lambda connection, transaction: (transaction.commit(), connection.close())) == [
        "first", "second",
    ]
    # AND the log says other processes' writers are not queued
    assert "cannot lock" in caplog.text
