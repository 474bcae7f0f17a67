"""GET /health: its own probe of the database, never the request threads or their connections."""

from __future__ import annotations

import pytest

from shared.config import reset_settings
from shared.db import health as db_health


@pytest.fixture()
def fresh_probe():
    db_health.forget()
    yield
    db_health.forget()


def test_health_reports_a_database_that_does_not_answer_as_503(client, monkeypatch, fresh_probe):
    # GIVEN the service pointed at a database nobody listens for
    monkeypatch.setenv("DATABASE_URL", "postgresql+pg8000://postgres@127.0.0.1:1/nothing")
    reset_settings()
    try:
        # WHEN /health is asked THEN it says the database is unavailable
        r = client.get("/health")
        assert (r.status_code, r.json()) == (503, {"detail": "Database unavailable"})
    finally:
        monkeypatch.undo()
        reset_settings()
        db_health.forget()
    # AND once the database answers again, so does /health
    assert client.get("/health").json() == {"status": "ok", "version": "0.1.0"}

