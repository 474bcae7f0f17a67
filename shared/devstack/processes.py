"""The dev stack's child processes, seen from the process that starts them (``sheetcalc dev``).

``spawn(role)`` runs ``python -m shared.devstack.children <role>`` as a fresh process (not a
fork: the parent's threads and open connections stay behind). The child imports the same
``shared`` package as the parent and what its role needs, while the parent gets on with its own
start (so the imports of every child overlap the local AWS's start and the migrations); then
``Child.configure`` sends it its configuration and the environment to add (the settings and
secrets ``run_dev`` set) on its stdin. It reports once on a pipe that it is ready (with what the
parent needs to know, such as the local AWS's addresses); ``Child.wait_ready`` reads that.

A child dies with its parent: it asks Linux for SIGKILL when the parent goes
(``PR_SET_PDEATHSIG``, see ``children.py``), so a SIGKILL of ``sheetcalc dev`` leaves nothing
serving. A clean stop is ``terminate()`` (SIGTERM) and ``wait_stopped``; SIGINT is the parent's
alone (a terminal's Ctrl-C reaches every process of the group; the children ignore it and are
stopped by the parent in order).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import shared

# Where ``shared`` (and ``functions`` beside it) were imported from: the children import the same.
_SOURCE_ROOT = str(Path(shared.__file__).resolve().parents[1])
# While waiting for a child to be ready, how often a stop request is looked at.
_CANCEL_CHECK_SECONDS = 0.2


class ChildFailed(RuntimeError):
    """A child ended (or hung) before it was ready."""


class StopRequest:
    """A stop asked for by a signal handler: ``set`` takes no lock, ``wait`` sleeps in short steps.

    A ``threading.Event`` will not do: its ``wait`` holds the event's lock for a few bytecodes
    around each timed wait, a signal handler runs on the main thread between bytecodes, and an
    ``Event.set`` there waits for that lock forever (CI saw a dev child ignore SIGTERM until it was
    killed). Same ``set``/``is_set``/``wait`` as an Event, for the one thread that waits.
    """

    _STEP_SECONDS = 0.05

    def __init__(self) -> None:
        self._requested = False

    def set(self) -> None:
        self._requested = True

    def is_set(self) -> bool:
        return self._requested

    def wait(self, timeout: float) -> bool:
        """True once set, False when ``timeout`` seconds passed first."""
        end = time.monotonic() + timeout
        while not self._requested:
            left = end - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, self._STEP_SECONDS))
        return True


@dataclass
class Child:
    """One running child process and the read end of its readiness pipe."""

    role: str
    process: subprocess.Popen
    _ready_fd: int = field(repr=False)
    _buffer: bytes = field(default=b"", repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_ready(self, deadline: float, cancel: StopRequest | None = None) -> dict:
        """The child's readiness report; ChildFailed if it ends first or ``deadline`` (monotonic)
        passes. ``cancel`` set: returns {} at once (the caller is stopping anyway)."""
        try:
            while b"\n" not in self._buffer:
                if cancel is not None and cancel.is_set():
                    return {}
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ChildFailed(f"the {self.role} process was not ready in time")
                if not select.select([self._ready_fd], [], [], min(left, _CANCEL_CHECK_SECONDS))[0]:
                    continue
                chunk = os.read(self._ready_fd, 65536)
                if not chunk:
                    raise ChildFailed(f"the {self.role} process ended before it was ready "
                                      f"(exit status {self.process.wait()})")
                self._buffer += chunk
            return json.loads(self._buffer.split(b"\n", 1)[0])
        finally:
            self.close_pipe()

    def configure(self, config: dict, env: dict[str, str] | None = None) -> None:
        """Tell the child what to run with: ``config`` and the variables to add to its
        environment (settings, secrets: on its private stdin pipe, never on its command line)."""
        try:
            self.process.stdin.write(json.dumps({"config": config, "env": env or {}}).encode() + b"\n")
            self.process.stdin.close()
        except BrokenPipeError:
            pass  # it has ended already; wait_ready says so

    def close_pipe(self) -> None:
        if self._ready_fd >= 0:
            os.close(self._ready_fd)
            self._ready_fd = -1

    def running(self) -> bool:
        return self.process.poll() is None

    def terminate(self) -> None:
        """Ask the child to stop (SIGTERM): it finishes what it is doing and exits."""
        if self.running():
            self.process.send_signal(signal.SIGTERM)

    def wait_stopped(self, deadline: float) -> bool:
        """Wait until the child has exited or ``deadline`` (monotonic); kill it then. True: it exited."""
        try:
            self.process.wait(max(0.0, deadline - time.monotonic()))
            return True
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return False
        finally:
            self.close_pipe()


def spawn(role: str, config: dict | None = None, *, pass_fds: tuple[int, ...] = ()) -> Child:
    """Start the ``role`` child (``children.ROLES``). It imports what its role needs, then waits
    for ``Child.configure``; with ``config``, that is done at once (environment unchanged)."""
    read_fd, write_fd = os.pipe()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_SOURCE_ROOT, env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "shared.devstack.children", role, "--parent-pid", str(os.getpid()),
               "--ready-fd", str(write_fd)]
    try:
        process = subprocess.Popen(command, env=env, pass_fds=(write_fd, *pass_fds), stdin=subprocess.PIPE)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    child = Child(role, process, read_fd)
    if config is not None:
        child.configure(config)
    return child


def stop_all(children: list[Child], timeout: float) -> list[Child]:
    """SIGTERM every child, wait up to ``timeout`` s for all; kill and return those still running."""
    for child in children:
        child.terminate()
    deadline = time.monotonic() + timeout
    return [child for child in children if not child.wait_stopped(deadline)]
