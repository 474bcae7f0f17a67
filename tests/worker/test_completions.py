"""Completions wake waiters across processes: PostgreSQL LISTEN/NOTIFY, or unix datagram sockets
under <data dir>/run/notify/ in dev (shared/adapters/completions.py).

The announcing side here is another process, as the worker is in production and in the
multi-process dev stack. Deadlines are ones only a lost announcement reaches.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from shared.adapters import completions
from shared.config import get_settings

REPO = Path(__file__).resolve().parents[2]
HANG_SECONDS = 60.0
ON_POSTGRES = bool(os.environ.get("SHEETCALC_TEST_DATABASE_URL"))  # as tests/conftest.py chooses


def announce_from_another_process(*job_ids: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from shared.services.job_waits import announce; announce(sys.argv[1:])", *job_ids],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=HANG_SECONDS,
    )
    assert done.returncode == 0, done.stderr


def test_the_backend_follows_the_database():
    listener = completions.hub().listener
    assert isinstance(listener, completions.PgListener if ON_POSTGRES else completions.SocketListener)


def test_an_announcement_from_another_process_wakes_the_waiters_of_that_job_only():
    finished, other = str(uuid.uuid4()), str(uuid.uuid4())

    async def scenario() -> tuple[bool, bool]:
        hub = completions.hub()
        await asyncio.to_thread(hub.ensure_listening)
        woken, not_ours = hub.register(finished), hub.register(other)
        try:
            await asyncio.to_thread(announce_from_another_process, finished)
            await asyncio.wait_for(woken.wait(), HANG_SECONDS)
            return woken.is_set(), not_ours.is_set()
        finally:
            hub.unregister(finished, woken)
            hub.unregister(other, not_ours)

    assert asyncio.run(scenario()) == (True, False)
    assert completions.hub().waiting() == {}


# --- the dev backend: unix datagram sockets --------------------------------------------------------


class Heard:
    """What a listener handed on, with an event per arrival."""

    def __init__(self):
        self.ids: list[str] = []
        self.states: dict[str, str | None] = {}
        self.gaps = 0
        self.arrived = threading.Condition()

    def on_job(self, job_id: str, state: str | None) -> None:
        with self.arrived:
            self.ids.append(job_id)
            self.states[job_id] = state
            self.arrived.notify_all()

    def on_gap(self) -> None:
        with self.arrived:
            self.gaps += 1
            self.arrived.notify_all()

    def until(self, done) -> None:
        with self.arrived:
            assert self.arrived.wait_for(lambda: done(self), HANG_SECONDS), (self.ids, self.gaps)


def socket_of_a_killed_process(directory: Path) -> str:
    """The file name of a socket whose process was killed (SIGKILL: nothing cleaned up)."""
    code = (
        "import sys, time; from pathlib import Path; from shared.adapters.completions import SocketListener; "
        "l = SocketListener(Path(sys.argv[1])); l.start(print, print); print(l.name, flush=True); time.sleep(600)"
    )
    process = subprocess.Popen([sys.executable, "-c", code, str(directory)], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                               stdout=subprocess.PIPE, text=True)
    try:
        name = process.stdout.readline().strip()
    finally:
        process.kill()
        process.wait()
    return name


@pytest.mark.parametrize("depth", [1, 12], ids=["short path", "path longer than a socket address"])
def test_every_listening_socket_hears_an_announcement_and_a_dead_ones_file_is_removed(tmp_path, depth):
    directory = tmp_path.joinpath(*["a-long-directory-name"] * depth) / "run" / "notify"
    # GIVEN two listening processes' sockets, and the file of a socket whose process died
    heard = [Heard(), Heard()]
    listeners = [completions.SocketListener(directory) for _ in heard]
    for listener, h in zip(listeners, heard):
        listener.start(h.on_job, h.on_gap)
    dead = directory / socket_of_a_killed_process(directory)
    assert dead.exists()
    try:
        # WHEN two jobs are announced
        job_ids = [str(uuid.uuid4()), str(uuid.uuid4())]
        completions.send_datagrams(directory, job_ids)
        # THEN both listeners hear both, and the dead socket's file is gone
        for h in heard:
            h.until(lambda h: h.ids == job_ids)
        assert not dead.exists()
    finally:
        for listener in listeners:
            listener.stop()
    # AND a stopped listener leaves no file behind
    assert list(directory.iterdir()) == []


def test_an_announcement_carries_each_jobs_state_in_as_many_datagrams_as_it_takes_but_not_a_state_too_long(tmp_path):
    directory = tmp_path / "run" / "notify"
    heard = Heard()
    listener = completions.SocketListener(directory)
    listener.start(heard.on_job, heard.on_gap)
    try:
        # GIVEN 40 finished jobs whose states fill more than one datagram (2.4 KB each: non-ASCII
        # text JSON-escaped), one whose state is too long, and one whose state is not ASCII
        states = {str(uuid.uuid4()): json.dumps({"outputs": {"text": f"{i}-" + "é" * 400}}) for i in range(40)}
        too_long = str(uuid.uuid4())
        states[too_long] = json.dumps({"outputs": {"text": "x" * completions.MAX_STATE_BYTES}})
        not_ascii = str(uuid.uuid4())
        states[not_ascii] = json.dumps({"outputs": {"text": "é"}}, ensure_ascii=False)
        without = str(uuid.uuid4())
        # WHEN they are announced at once, with one job that has no state
        completions.send_datagrams(directory, [*states, without], states)
        # THEN every job is heard, in order, each with its state; the one too long, the one not
        # ASCII and the one without, with none (their waiters read the job)
        heard.until(lambda h: len(h.ids) == len(states) + 1)
        assert heard.ids == [*states, without]
        uncarried = (too_long, not_ascii)
        assert {job_id: heard.states[job_id] for job_id in states if job_id not in uncarried} == {
            job_id: state for job_id, state in states.items() if job_id not in uncarried
        }
        assert [heard.states[job_id] for job_id in (*uncarried, without)] == [None, None, None]
    finally:
        listener.stop()


def test_announcing_before_anyone_listened_is_harmless(tmp_path):
    completions.send_datagrams(tmp_path / "run" / "notify", [str(uuid.uuid4())])


# --- PostgreSQL: LISTEN on a dedicated connection --------------------------------------------------


@pytest.mark.skipif(not ON_POSTGRES, reason="PostgreSQL backend: run with SHEETCALC_TEST_DATABASE_URL")
def test_a_listener_whose_connection_is_cut_connects_again_and_tells_its_waiters_to_look():
    # GIVEN a listening connection
    heard = Heard()
    listener = completions.PgListener()
    listener.start(heard.on_job, heard.on_gap)
    admin = create_engine(get_settings().effective_database_url.replace("postgresql://", "postgresql+pg8000://", 1))
    try:
        before = str(uuid.uuid4())
        completions.notify([before])
        heard.until(lambda h: before in h.ids)
        # WHEN the server ends it (a restart, a failover, an idle timeout)
        with admin.begin() as c:
            cut = c.execute(text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = :name AND datname = current_database() AND pid <> pg_backend_pid()"
            ), {"name": completions.APPLICATION_NAME}).all()
        assert cut
        # THEN it connects again and reports the gap (waiters re-read), and hears what follows
        heard.until(lambda h: h.gaps >= 1)
        after = str(uuid.uuid4())
        completions.notify([after])
        heard.until(lambda h: after in h.ids)
    finally:
        listener.stop()
        admin.dispose()


@pytest.mark.skipif(not ON_POSTGRES, reason="PostgreSQL backend: run with SHEETCALC_TEST_DATABASE_URL")
def test_a_notification_carries_the_jobs_state_unless_it_is_too_long():
    heard = Heard()
    listener = completions.PgListener()
    listener.start(heard.on_job, heard.on_gap)
    try:
        carried, too_long, not_ascii, without = (str(uuid.uuid4()) for _ in range(4))
        states = {carried: json.dumps({"outputs": {"text": "é" * 600, "quote": "'\"{}"}}),
                  too_long: json.dumps({"outputs": {"text": "x" * completions.MAX_STATE_BYTES}}),
                  not_ascii: json.dumps({"outputs": {"text": "é"}}, ensure_ascii=False)}
        completions.notify([carried, too_long, not_ascii, without], states)
        heard.until(lambda h: without in h.ids)
        # pg8000 reads a payload as ASCII: one that is not would cost the listener its connection
        assert heard.gaps == 0
        assert heard.states == {carried: states[carried], too_long: None, not_ascii: None, without: None}
    finally:
        listener.stop()
