"""PostgreSQL through pg8000 (shared/db/pg8000_prepared.py): a transaction's BEGIN travels in one
write with its first prepared statement, and is still a transaction; what is written is sent at
once (no Nagle delay).

Run on PostgreSQL only (SHEETCALC_TEST_DATABASE_URL), on one connection of the product's engine.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from shared.db.session import get_engine
from tests.statement_counter import counting

pytestmark = pytest.mark.skipif(
    not os.environ.get("SHEETCALC_TEST_DATABASE_URL"), reason="PostgreSQL backend: run with SHEETCALC_TEST_DATABASE_URL"
)

INSERT = text("INSERT INTO pipelined_probe (x) VALUES (:x)")
COUNT = text("SELECT count(*) FROM pipelined_probe WHERE x > :above")


@pytest.fixture
def connection():
    with get_engine().connect() as connection:
        connection.exec_driver_sql("CREATE TEMPORARY TABLE pipelined_probe (x integer)")
        connection.commit()
        # each statement text once, so the ones below find it prepared (the pipelined path)
        connection.execute(INSERT, {"x": 0})
        connection.execute(COUNT, {"above": 0})
        connection.rollback()
        yield connection
        connection.rollback()
        connection.exec_driver_sql("DROP TABLE pipelined_probe")
        connection.commit()


def test_a_write_that_opens_a_transaction_is_undone_by_its_rollback(connection):
    # GIVEN a transaction whose first statement carried its BEGIN
    connection.execute(INSERT, {"x": 1})
    # WHEN it rolls back THEN the write is gone: it was inside the transaction, not autocommitted
    connection.rollback()
    assert connection.execute(COUNT, {"above": 0}).scalar() == 0
    connection.rollback()
    # AND committed, the same write stays
    connection.execute(INSERT, {"x": 2})
    connection.commit()
    assert connection.execute(COUNT, {"above": 0}).scalar() == 1


def test_the_begin_and_the_first_statement_cost_one_round_trip(connection):
    with counting() as seen:
        connection.execute(INSERT, {"x": 3})
        connection.execute(INSERT, {"x": 4})
        connection.commit()
    # THEN two statements and a commit: three waits for the server, none for the BEGIN
    assert seen.round_trips == 3, seen.waits
    assert connection.execute(COUNT, {"above": 2}).scalar() == 2


def test_a_first_statement_that_fails_leaves_the_connection_usable(connection):
    # GIVEN a statement that fails as the first of its transaction
    failing = text("SELECT 1 / :zero")
    connection.execute(failing, {"zero": 1})  # prepared (and a transaction opened) on the way
    connection.rollback()
    with pytest.raises(DBAPIError, match="division by zero"):
        connection.execute(failing, {"zero": 0})
    # WHEN the transaction is rolled back THEN the connection answers the next statements in step
    connection.rollback()
    connection.execute(INSERT, {"x": 5})
    connection.commit()
    assert connection.execute(COUNT, {"above": 4}).scalar() == 1


def test_a_connection_sends_what_is_written_at_once(connection):
    # pg8000 leaves Nagle's algorithm on: a message over its 8 KB buffer had its tail held back
    # until the server's delayed ACK (40 ms). The product's connections turn it off, as libpq does.
    sock = connection.connection.dbapi_connection._usock
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        pytest.skip("a unix socket: no Nagle's algorithm")
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


@pytest.mark.parametrize(("literal", "expected"), [
    ("timestamp '2026-11-27 13:12:00.123456'", datetime(2026, 11, 27, 13, 12, 0, 123456)),
    ("timestamp '2026-11-27 13:12:00.1'", datetime(2026, 11, 27, 13, 12, 0, 100000)),
    ("timestamp '1999-01-08 04:05:06'", datetime(1999, 1, 8, 4, 5, 6)),
    ("timestamp '0099-12-31 23:59:59.999999'", datetime(99, 12, 31, 23, 59, 59, 999999)),
    ("timestamptz '2026-11-27 13:12:00.5+00'", datetime(2026, 11, 27, 18, 42, 0, 500000, tzinfo=timezone(timedelta(hours=5, minutes=30)))),
    ("timestamptz '2026-11-27 13:12:00+00'", datetime(2026, 11, 27, 18, 42, tzinfo=timezone(timedelta(hours=5, minutes=30)))),
])
def test_timestamps_are_read_as_the_datetimes_postgresql_sent(connection, literal, expected):
    # GIVEN a session whose time zone is not UTC (timestamptz values come with +05:30)
    connection.exec_driver_sql("SET TIME ZONE 'Asia/Kolkata'")
    # WHEN a value is read THEN it is that moment, with the offset PostgreSQL sent
    value = connection.execute(text(f"SELECT {literal} AS v WHERE :on"), {"on": True}).scalar()
    assert value == expected and value.utcoffset() == expected.utcoffset()
    connection.rollback()


@pytest.mark.parametrize("literal", [
    "timestamp 'infinity'", "timestamp '-infinity'", "timestamptz 'infinity'", "timestamp '12000-01-01 00:00:00'",
])
def test_timestamps_python_cannot_hold_are_read_as_pg8000_reads_them(connection, literal):
    from pg8000 import converters

    # GIVEN a value datetime.fromisoformat does not take
    raw = connection.execute(text(f"SELECT ({literal})::text AS v WHERE :on"), {"on": True}).scalar()
    reader = converters.PG_TYPES[converters.TIMESTAMPTZ if literal.startswith("timestamptz") else converters.TIMESTAMP]
    # WHEN it is read THEN it is what pg8000's own reader makes of it
    assert connection.execute(text(f"SELECT {literal} AS v WHERE :on"), {"on": True}).scalar() == reader(raw)
    connection.rollback()


def test_a_connection_reads_timestamps_without_pg8000_s_strptime(connection):
    from pg8000 import converters

    # pg8000's readers parse with strptime (12 µs a value); the connection's own are the fast ones
    pg_types = connection.connection.dbapi_connection.pg_types
    assert pg_types[converters.TIMESTAMP] is not converters.timestamp_in
    assert pg_types[converters.TIMESTAMPTZ] is not converters.timestamptz_in
