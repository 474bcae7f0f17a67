"""`sheetcalc create-tenant` finds the database the way `sheetcalc dev` does: `--data-dir`, else
`SHEETCALC_DATA_DIR`, else `.sheetcalc` in the current folder (or `DATABASE_URL` when set)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def cli(tmp_path):
    """Run ``sheetcalc`` in an empty folder, with none of the test run's database settings."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHEETCALC_") and k != "DATABASE_URL"}
    base["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), base.get("PYTHONPATH")) if p)

    def run(*args: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "shared.cli", *args], cwd=cwd, env={**base, **env},
                              capture_output=True, text=True, timeout=300)

    run.cwd = cwd
    return run


def _slugs(data_dir: Path) -> list[str]:
    with sqlite3.connect(data_dir / "sheetcalc.db") as db:
        return [row[0] for row in db.execute("select slug from tenants order by slug")]


def _create(cli, slug: str, *args: str, **env: str) -> dict:
    made = cli("create-tenant", "--slug", slug, "--name", slug, "--admin-email", f"admin@{slug}.example", *args, **env)
    assert made.returncode == 0, made.stderr
    return json.loads(made.stdout) | {"stderr": made.stderr}


def test_create_tenant_uses_the_data_dir_given(cli, tmp_path):
    made = _create(cli, "flag", "--data-dir", str(tmp_path / "sc"))

    assert _slugs(tmp_path / "sc") == ["flag"]
    assert made["temporary_password"]
    # it says where the tenant went, and left nothing in the current folder
    assert f"tenant flag created in sqlite:///{(tmp_path / 'sc' / 'sheetcalc.db').resolve()}" in made["stderr"]
    assert list(cli.cwd.iterdir()) == []


def test_create_tenant_uses_sheetcalc_data_dir_like_dev(cli, tmp_path):
    _create(cli, "env", SHEETCALC_DATA_DIR=str(tmp_path / "from-env"))

    assert _slugs(tmp_path / "from-env") == ["env"]
    assert list(cli.cwd.iterdir()) == []


def test_the_data_dir_given_wins_over_the_environment(cli, tmp_path):
    _create(cli, "both", "--data-dir", str(tmp_path / "flag"), SHEETCALC_DATA_DIR=str(tmp_path / "from-env"))

    assert _slugs(tmp_path / "flag") == ["both"]
    assert not (tmp_path / "from-env").exists()


def test_without_either_it_uses_sheetcalc_in_the_current_folder(cli):
    _create(cli, "default")

    assert _slugs(cli.cwd / ".sheetcalc") == ["default"]


def test_a_database_password_is_not_printed(cli, tmp_path):
    from shared.cli import _database_shown
    from tests.envtools import settings_env

    with settings_env(DATABASE_URL="postgresql+pg8000://sheetcalc:s3cret@db.example:5432/sheetcalc"):
        shown = _database_shown()
    assert "s3cret" not in shown and shown.startswith("postgresql+pg8000://sheetcalc:***@db.example")
