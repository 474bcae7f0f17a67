"""Connections the database dropped: the engine does not ping before each unit of work (a round
trip each, shared/db/session.py), so the first unit of work on a dropped connection fails, and
SQLAlchemy then replaces every pooled connection older than that failure: one failure, not one
per pooled connection, and the next unit of work succeeds."""

from __future__ import annotations

import os

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError

from shared.db.session import get_engine, new_session, session_scope

ON_POSTGRES = bool(os.environ.get("SHEETCALC_TEST_DATABASE_URL"))  # as tests/conftest.py chooses


@pytest.mark.own_transactions
@pytest.mark.skipif(not ON_POSTGRES, reason="PostgreSQL: run with SHEETCALC_TEST_DATABASE_URL")
def test_after_the_database_dropped_the_pools_connections_one_unit_of_work_fails_and_the_next_succeed():
    # GIVEN three connections in the pool (and only those: what earlier tests left is closed, or
    # the pool would hand out an older, live one first), each of which the server then terminates
    get_engine().dispose()
    sessions = [new_session() for _ in range(3)]
    pids = [session.execute(text("SELECT pg_backend_pid()")).scalar() for session in sessions]
    for session in sessions:
        session.commit()
        session.close()
    admin = create_engine(os.environ["SHEETCALC_TEST_DATABASE_URL"], isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            for pid in pids:
                assert connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar()
    finally:
        admin.dispose()
    # WHEN five units of work run one after another
    outcomes = []
    for i in range(5):
        try:
            with session_scope() as session:
                outcomes.append(session.execute(text("SELECT CAST(:i AS INTEGER)"), {"i": i}).scalar())
        except DBAPIError:
            outcomes.append("failed")
    # THEN only the first failed (the pool was renewed after it) and the others were answered
    assert outcomes == ["failed", 1, 2, 3, 4]
