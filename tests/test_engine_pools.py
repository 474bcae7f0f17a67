"""A busy process keeps its database connections: as many are pooled as it runs requests at
once (SHEETCALC_DATABASE_POOL_SIZE), so a second burst reuses the first burst's connections
instead of opening (and, on SQLite, running the pragmas on) new ones."""

from __future__ import annotations

import threading

from sqlalchemy import event, text

from shared.db.session import get_engine

AT_ONCE = 12  # more than SQLAlchemy's default of five kept, fewer than the configured 16


def _burst(engine) -> None:
    """AT_ONCE threads each holding a connection at the same moment, then handing it back."""
    everyone_connected = threading.Barrier(AT_ONCE, timeout=60)

    def one():
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
            everyone_connected.wait()

    threads = [threading.Thread(target=one) for _ in range(AT_ONCE)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)


def test_a_second_burst_of_requests_opens_no_new_sqlite_connection(tmp_path):
    engine = get_engine(f"sqlite:///{tmp_path / 'pool.db'}")
    opened = []
    event.listen(engine, "connect", lambda *_: opened.append(1))
    try:
        _burst(engine)
        assert len(opened) == AT_ONCE
        _burst(engine)
        assert len(opened) == AT_ONCE
    finally:
        engine.dispose()
