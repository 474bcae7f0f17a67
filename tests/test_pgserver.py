"""scripts/pgserver.py: the throwaway PostgreSQL server scripts/test.sh starts when none answers."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
from pathlib import Path

import pg8000.native
import pytest

REPO = Path(__file__).resolve().parents[1]
HANG_SECONDS = 300
_spec = importlib.util.spec_from_file_location("pgserver", REPO / "scripts" / "pgserver.py")
pgserver = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pgserver)


def script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "pgserver.py"), *args], cwd=REPO,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=HANG_SECONDS, check=False)


def a_port_nobody_listens_on() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_tests_url_is_the_admin_urls_server_with_the_driver_and_the_database():
    assert pgserver.tests_url("postgresql://postgres:pw@db.example:6543/test", "run_1") == \
        "postgresql+pg8000://postgres:pw@db.example:6543/run_1"


def test_a_port_where_nothing_listens_does_not_answer():
    assert script("answers", f"postgresql://postgres@127.0.0.1:{a_port_nobody_listens_on()}/test").returncode == 1


@pytest.mark.skipif(pgserver.bindir() is None, reason="no PostgreSQL binaries here (scripts/test.sh installs Debian's when it needs them)")
def test_a_throwaway_server_starts_answers_and_is_gone_once_stopped():
    # GIVEN an empty directory (under /tmp: as root, the server's own user must reach it)
    directory = Path(subprocess.check_output(["mktemp", "-d", "/tmp/sheetcalc-pg-test.XXXXXX"], text=True).strip())
    try:
        # WHEN a throwaway server is started there
        started = script("start", str(directory))
        assert started.returncode == 0, started.stderr
        admin_url = started.stdout.strip()
        # THEN it answers at the URL it prints, with trust authentication, and databases can be made
        assert admin_url.startswith("postgresql://postgres@127.0.0.1:") and admin_url.endswith("/postgres")
        assert script("answers", admin_url).returncode == 0
        port = int(admin_url.rsplit(":", 1)[1].split("/")[0])
        con = pg8000.native.Connection(user="postgres", host="127.0.0.1", port=port, database="postgres", timeout=60)
        try:
            assert con.run("SELECT 1") == [[1]]
        finally:
            con.close()
    finally:
        # AND once stopped it no longer answers and its directory is gone
        stopped = script("stop", str(directory))
    assert stopped.returncode == 0, stopped.stderr
    assert not directory.exists()
    assert script("answers", admin_url).returncode == 1
