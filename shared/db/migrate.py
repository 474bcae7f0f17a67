"""Alembic migrations, run programmatically (``sheetcalc migrate``, the dev command, tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from shared.db.session import get_engine

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def _config(connection) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


def upgrade(url: str | None = None, revision: str = "head") -> None:
    """Bring the database at ``url`` (default: configured) up to ``revision``."""
    with get_engine(url).begin() as connection:
        command.upgrade(_config(connection), revision)


def autogenerate(message: str, url: str | None = None) -> None:
    """Write a new migration from the models' difference to the database (developers only)."""
    with get_engine(url).begin() as connection:
        command.revision(_config(connection), message=message, autogenerate=True)
