"""A throwaway PostgreSQL server for scripts/test.sh when none answers.

  pgserver.py answers ADMIN_URL     exit 0 if something accepts connections at the URL's host:port
  pgserver.py bindir                print the directory of this machine's initdb and pg_ctl
  pgserver.py start DIR             initdb a cluster under DIR (an empty directory), start it on a
                                    free port of 127.0.0.1 with trust authentication, print its
                                    admin URL (postgresql://postgres@127.0.0.1:PORT/postgres)
  pgserver.py stop DIR              stop that server and delete DIR
  pgserver.py url ADMIN_URL NAME    the tests' URL of database NAME on the admin URL's server
                                    (postgresql+pg8000://...)

The binaries are the machine's: Debian's /usr/lib/postgresql/<version>/bin (the newest), else
initdb on PATH. PostgreSQL refuses to run as root, so as root the cluster belongs to the user
``postgres`` (Debian's package makes it), or ``nobody``, and runs as that user. The server is
for tests only: no fsync, trust authentication, reachable from this machine alone.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import urllib.parse
from pathlib import Path

START_TIMEOUT_S = 120  # initdb and start on a loaded machine; only a broken install reaches it


def answers(admin_url: str) -> bool:
    url = urllib.parse.urlparse(admin_url)
    try:
        with socket.create_connection((url.hostname or "127.0.0.1", url.port or 5432), timeout=5):
            return True
    except OSError:
        return False


def bindir() -> Path | None:
    def version(path: str) -> tuple:
        number = Path(path).parts[-3]  # /usr/lib/postgresql/<version>/bin/initdb
        return tuple(int(p) for p in number.split(".") if p.isdigit())

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=version)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _owner() -> str | None:
    """The user the server runs as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    sys.exit("pgserver.py: running as root and there is neither a 'postgres' nor a 'nobody' user to run PostgreSQL as")


def _run(owner: str | None, argv: list[str], log: Path) -> None:
    if owner:
        argv = ["runuser", "-u", owner, "--", *argv]
    with open(log, "ab") as out:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                              timeout=START_TIMEOUT_S, cwd="/", check=False)
    if done.returncode != 0:
        sys.exit(f"pgserver.py: {' '.join(argv)} failed (exit {done.returncode}):\n{log.read_text(errors='replace')}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(directory: Path) -> str:
    binaries = bindir()
    if binaries is None:
        sys.exit("pgserver.py: no PostgreSQL binaries (initdb, pg_ctl) on this machine: install Debian's "
                 "'postgresql' package, or start a server and point SHEETCALC_PG_ADMIN at it")
    owner = _owner()
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    if owner:
        entry = pwd.getpwnam(owner)
        os.chown(directory, entry.pw_uid, entry.pw_gid)
    # setup.log: initdb's and pg_ctl's output, ours; server.log: the server's, written as its owner
    data, log, port = directory / "data", directory / "setup.log", _free_port()
    _run(owner, [str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                 "--locale=C.UTF-8", "--no-sync"], log)
    options = (f"-c listen_addresses=127.0.0.1 -p {port} -k {directory} -c max_connections=200 "
               "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
    _run(owner, [str(binaries / "pg_ctl"), "start", "-w", "-t", str(START_TIMEOUT_S), "-D", str(data),
                 "-l", str(directory / "server.log"), "-o", options], log)
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


def stop(directory: Path) -> None:
    binaries, data = bindir(), directory / "data"
    if binaries and (data / "postmaster.pid").exists():
        argv = [str(binaries / "pg_ctl"), "stop", "-w", "-t", "60", "-m", "fast", "-D", str(data)]
        owner = _owner()
        subprocess.run(["runuser", "-u", owner, "--", *argv] if owner else argv,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/", check=False)
    shutil.rmtree(directory, ignore_errors=True)


def tests_url(admin_url: str, name: str) -> str:
    url = urllib.parse.urlparse(admin_url)
    return urllib.parse.urlunparse(url._replace(scheme="postgresql+pg8000", path="/" + name))


def main(argv: list[str]) -> int:
    match argv:
        case ["answers", admin_url]:
            return 0 if answers(admin_url) else 1
        case ["bindir"]:
            found = bindir()
            if found is None:
                return 1
            print(found)
        case ["start", directory]:
            print(start(Path(directory)))
        case ["stop", directory]:
            stop(Path(directory))
        case ["url", admin_url, name]:
            print(tests_url(admin_url, name))
        case _:
            sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
