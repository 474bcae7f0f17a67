"""Calculations inside a budget: each job is calculated in a fenced child process.

A worker (or an API process making a filled workbook) never calculates an uploaded workbook in
its own process. It hands jobs to a long-lived child (``python -m shared.calc.fenced``) that keeps
the loaded models of the versions it served, and waits for each job's answer no longer than the
job's wall-time budget. The child runs with an address-space ceiling (the memory budget) and,
for each job, a CPU-time soft limit (the CPU budget), which the kernel enforces even inside
native code: past it the child gets SIGXCPU and dies. A job past its budget therefore fails with
a message naming the limit, its child is killed or dies, the caller is free at once, and the
jobs after it in the batch go to a fresh child: nothing else is lost.

The child gets no secrets: its environment has no ``SHEETCALC_`` or ``AWS_`` variable and no
database URL, and it never touches storage; the parent fetches a model's bytes and sends them
when the child asks for a version it has not loaded. Frames are JSON plus raw bytes, never
pickle, so a child whose parsing was corrupted cannot make the parent run anything.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

_LENGTH = struct.Struct(">II")  # JSON header length, blob length


@dataclass(frozen=True)
class Budget:
    """What one calculation may spend: wall time and CPU time (seconds) and memory (MB of
    address space for the child that calculates it)."""

    wall_s: float
    cpu_s: float
    memory_mb: int

    @classmethod
    def for_jobs(cls, settings: Any) -> "Budget":
        return cls(settings.job_max_seconds, settings.job_max_cpu_seconds, settings.job_max_memory_mb)

    def describe(self) -> str:
        return f"{self.wall_s:g} s of time, {self.cpu_s:g} s of CPU and {self.memory_mb:,} MB of memory"


# What a job over its budget is told (consumer-visible: names the limit, nothing internal).
OVER_TIME = "The calculation took longer than its {limit:g} s time budget and was stopped"
OVER_CPU = "The calculation used more than its {limit:g} s CPU-time budget and was stopped"
OVER_MEMORY = "The calculation needed more than its {limit:,} MB memory budget and was stopped"
CRASHED = "The workbook could not be calculated: the calculation engine failed on it"


@dataclass
class JobSpec:
    """One calculation: the inputs, which outputs, which inputs are dates, the run context
    (job id and creation time: NOW/TODAY and RAND), and whether the filled workbook is wanted."""

    inputs: dict[str, Any]
    outputs: list[str] | None
    date_inputs: list[str]
    job_id: str
    created_at: str  # ISO, naive UTC
    want_xlsx: bool = False


@dataclass
class Result:
    """A job's answer. ``outcome``: "ok" (``outputs``, ``xlsx`` if asked), "invalid" (an input
    the plan refused: ``message`` is the reason given to the consumer), "failed" (the workbook could not be
    calculated), "budget" (over a limit: ``message`` names it), "crashed"."""

    outcome: str
    outputs: dict[str, Any] | None = None
    xlsx: bytes | None = None
    message: str | None = None
    calc_ms: float = 0.0
    limit: str | None = None  # "time", "cpu" or "memory" when the outcome is "budget"
    # outputs calculated from a cell the correction layer could not compute as Excel would for
    # this job's inputs (IronCalcWorkbook.flagged_outputs): never returned as Excel's answer
    flagged: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Model:
    """Which model to calculate on: a cache key (version and engine), the engine's name, and how
    to get its bytes when the child has not loaded it: ``load()`` answers (kind, bytes), kind
    "serialized" (the engine's own blob) or "xlsx" (the uploaded workbook, parsed in the child)."""

    key: str
    engine: str
    load: Callable[[], tuple[str, bytes]] = field(compare=False)


class ChildDied(Exception):
    """The child ended without answering (its exit status tells why)."""


# --- The parent side ----------------------------------------------------------------------------


def _frame(header: dict[str, Any], blob: bytes = b"") -> bytes:
    meta = json.dumps(header, separators=(",", ":"), default=str).encode()
    return _LENGTH.pack(len(meta), len(blob)) + meta + blob


class _Child:
    """One child process and our end of its socket."""

    def __init__(self, memory_mb: int, cache_size: int) -> None:
        from shared.calc.sandbox import child_environment

        self.sock, theirs = socket.socketpair()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "shared.calc.fenced", str(theirs.fileno()), str(memory_mb), str(cache_size)],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=child_environment(),
        )
        theirs.close()
        self.memory_mb = memory_mb
        self.dead = False
        self.loaded: set[str] = set()
        self._buffer = bytearray()

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, header: dict[str, Any], blob: bytes = b"") -> None:
        try:
            self.sock.sendall(_frame(header, blob))
        except OSError as exc:
            raise ChildDied from exc

    def receive(self, deadline: float) -> tuple[dict[str, Any], bytes]:
        """The next frame, or TimeoutError at ``deadline`` (monotonic), or ChildDied."""
        while True:
            if len(self._buffer) >= _LENGTH.size:
                meta_len, blob_len = _LENGTH.unpack_from(self._buffer)
                end = _LENGTH.size + meta_len + blob_len
                if len(self._buffer) >= end:
                    meta = bytes(self._buffer[_LENGTH.size:_LENGTH.size + meta_len])
                    blob = bytes(self._buffer[_LENGTH.size + meta_len:end])
                    del self._buffer[:end]
                    try:
                        return json.loads(meta), blob
                    except ValueError as exc:
                        raise ChildDied from exc
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(1 << 20)
            except TimeoutError:
                raise
            except OSError as exc:
                raise ChildDied from exc
            if not chunk:
                raise ChildDied
            self._buffer += chunk

    def kill(self) -> int | None:
        """Kill the child (if it still runs) and reap it; its exit status."""
        self.dead = True
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.sock.close()
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return None

    def exit_status(self) -> int | None:
        """The status of a child that ended by itself (waited for a little while)."""
        try:
            status = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return self.kill()
        self.dead = True
        self.sock.close()
        return status


class Calculator:
    """This process's fenced children: at most ``size`` at once, each keeping its own models."""

    def __init__(self, size: int = 1, cache_size: int = 16, startup_s: float = 60.0) -> None:
        self.size = max(1, size)
        self.cache_size = cache_size
        self.startup_s = startup_s
        self._idle: list[_Child] = []
        self._count = 0
        self._cond = threading.Condition()

    def calculate(self, model: Model, jobs: list[JobSpec], budget: Budget) -> list[Result]:
        """Each job's result, in order; a job over its budget costs its child, never the others."""
        results: list[Result] = []
        while len(results) < len(jobs):
            child = self._checkout(model.key, budget.memory_mb)
            try:
                results += self._run(child, model, jobs[len(results):], budget)
            finally:
                self._checkin(child)
        return results

    def close(self) -> None:
        with self._cond:
            idle, self._idle = self._idle, []
            self._count -= len(idle)
        for child in idle:
            child.kill()

    # -- the pool

    def _checkout(self, key: str, memory_mb: int) -> _Child:
        with self._cond:
            while True:
                usable = [c for c in self._idle if c.alive() and c.memory_mb == memory_mb]
                for child in [c for c in self._idle if c not in usable]:
                    self._idle.remove(child)
                    self._count -= 1
                    child.kill()
                if usable:
                    child = next((c for c in usable if key in c.loaded), usable[-1])
                    self._idle.remove(child)
                    return child
                if self._count < self.size:
                    self._count += 1
                    break
                self._cond.wait()
        try:
            return _Child(memory_mb, self.cache_size)
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def _checkin(self, child: _Child) -> None:
        with self._cond:
            if child.alive() and not child.dead:
                self._idle.append(child)
            else:
                self._count -= 1
            self._cond.notify()

    # -- one child's run

    def _run(self, child: _Child, model: Model, jobs: list[JobSpec], budget: Budget) -> list[Result]:
        """Results for a prefix of ``jobs`` (at least one): stops after a job that cost the child."""
        results: list[Result] = []
        try:
            child.send({"op": "calc", "key": model.key, "engine": model.engine, "cpu_s": budget.cpu_s,
                        "jobs": [vars(job) for job in jobs]})
            started = time.monotonic()
            # The child's start (imports) is not the job's: it gets its own allowance.
            deadline = started + budget.wall_s + (self.startup_s if not child.loaded else 0)
            while len(results) < len(jobs):
                header, blob = child.receive(deadline)
                if header.get("need") == "model":
                    try:
                        kind, data = model.load()
                    except BaseException:
                        child.kill()  # it waits for a model that will not come: no use to anyone
                        raise
                    child.send({"kind": kind}, data)
                    # The load (once per version and child, not per job) has an allowance of its
                    # own: twice a job's, as its measured time was judged against one job's.
                    deadline = time.monotonic() + 2 * budget.wall_s
                    continue
                if header.get("loaded"):
                    child.loaded.add(model.key)
                    deadline = time.monotonic() + budget.wall_s
                    continue
                results.append(_result(header, blob))
                deadline = time.monotonic() + budget.wall_s
        except TimeoutError:
            child.kill()
            log.warning("calculation stopped at its %g s time budget (model %s)", budget.wall_s, model.key)
            results.append(Result("budget", message=OVER_TIME.format(limit=budget.wall_s), limit="time"))
        except ChildDied:
            results.append(self._death(child, model, budget))
        return results

    @staticmethod
    def _death(child: _Child, model: Model, budget: Budget) -> Result:
        status = child.exit_status()
        log.warning("calculation child for model %s ended with status %s", model.key, status)
        if status == -signal.SIGXCPU:
            return Result("budget", message=OVER_CPU.format(limit=budget.cpu_s), limit="cpu")
        if status in (-signal.SIGABRT, -signal.SIGSEGV, -signal.SIGBUS, 3):  # 3: our MemoryError exit
            return Result("budget", message=OVER_MEMORY.format(limit=budget.memory_mb), limit="memory")
        return Result("crashed", message=CRASHED)


_calculators: dict[str, Calculator] = {}
_calculator_lock = threading.Lock()


def calculator(lane: str = "standard") -> Calculator:
    """The process's Calculator for a lane (children started on first use): each lane's
    children are its own, so a slow version's jobs never hold the children of quick ones."""
    with _calculator_lock:
        calc = _calculators.get(lane)
        if calc is None:
            from shared.config import get_settings

            settings = get_settings()
            calc = _calculators[lane] = Calculator(settings.calc_children_per_process, settings.model_cache_size)
        return calc


def reset() -> None:
    """Stop this process's children (tests; a settings change)."""
    with _calculator_lock:
        calcs = list(_calculators.values())
        _calculators.clear()
    for calc in calcs:
        calc.close()


# --- The child side -----------------------------------------------------------------------------


class _Channel:
    def __init__(self, sock: socket.socket) -> None:
        self.stream = sock.makefile("rb")
        self.sock = sock

    def read(self) -> tuple[dict[str, Any], bytes] | None:
        prefix = self.stream.read(_LENGTH.size)
        if len(prefix) < _LENGTH.size:
            return None
        meta_len, blob_len = _LENGTH.unpack(prefix)
        meta = self.stream.read(meta_len)
        blob = self.stream.read(blob_len) if blob_len else b""
        return json.loads(meta), blob

    def write(self, header: dict[str, Any], blob: bytes = b"") -> None:
        self.sock.sendall(_frame(header, blob))


def _cpu_used() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _cpu_budget(cpu_s: float) -> None:
    """From now on, ``cpu_s`` more seconds of CPU, then SIGXCPU (which ends this process)."""
    import resource

    soft = math.ceil(_cpu_used() + cpu_s)
    _hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    resource.setrlimit(resource.RLIMIT_CPU, (soft, _hard))


def load_model(kind: str, data: bytes, engine: str):
    """A model as a child loads it (kind "serialized" or "xlsx"), its first calculation paid
    when the engine builds its model then (formulas); also the library's in-process model
    (``sheetcalc.Engine``)."""
    from shared.calc.base import get_engine

    workbook = get_engine(engine).load_serialized(data) if kind == "serialized" else get_engine(engine).load_xlsx(data)
    if engine != "ironcalc":  # formulas builds its model on the first calculation: paid here
        workbook.calculate({})
    return workbook


def calculate_here(workbook, job: JobSpec) -> Result:
    """One job calculated in this process on a loaded model, exactly as a child calculates it
    (no budget: the library's in-process mode, where the caller's process is the fence)."""
    header, blob = _one(workbook, vars(job))
    return _result(header, blob)


def _result(header: dict[str, Any], blob: bytes) -> Result:
    return Result(
        outcome=header["outcome"], outputs=header.get("outputs"), message=header.get("message"),
        xlsx=blob if header.get("xlsx") else None, calc_ms=float(header.get("ms", 0.0)),
        limit=header.get("limit"), flagged=list(header.get("flagged") or ()),
    )


def _one(workbook, job: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    import uuid
    from datetime import datetime

    from shared.calc import run_context
    from shared.errors import InputValidationError, WorkbookError

    began = time.perf_counter()
    context = run_context.RunContext.for_job(job_id=uuid.UUID(job["job_id"]), created_at=datetime.fromisoformat(job["created_at"]))
    blob = b""
    try:
        with run_context.running(context):
            outputs = workbook.calculate(job["inputs"], outputs=job["outputs"], date_inputs=frozenset(job["date_inputs"]))
            if job.get("want_xlsx"):
                blob = workbook.to_xlsx()
        header: dict[str, Any] = {"outcome": "ok", "outputs": outputs, "xlsx": bool(job.get("want_xlsx"))}
        header["flagged"] = workbook.flagged_outputs(list(outputs))
    except InputValidationError as exc:
        header = {"outcome": "invalid", "message": exc.reason}
    except (WorkbookError, ArithmeticError, LookupError, ValueError, TypeError) as exc:
        sys.stderr.write(f"sheetcalc calculation failed: {type(exc).__name__}: {str(exc)[:300]}\n")
        header = {"outcome": "failed"}
    header["ms"] = (time.perf_counter() - began) * 1000
    return header, blob


def _child_main(fd: int, memory_mb: int, cache_size: int) -> int:
    import resource
    from collections import OrderedDict

    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    channel = _Channel(socket.socket(fileno=fd))
    models: OrderedDict[str, Any] = OrderedDict()
    try:
        import shared.calc.ironcalc.engine  # noqa: F401 - imported before the first job's clock starts
    except ImportError:
        pass
    while True:
        request = channel.read()
        if request is None:
            return 0
        header, _ = request
        key, engine = header["key"], header["engine"]
        _cpu_budget(header["cpu_s"])
        workbook = models.get(key)
        if workbook is None:
            channel.write({"need": "model"})
            answer = channel.read()
            if answer is None:
                return 0
            (load, data) = answer
            try:
                workbook = load_model(load["kind"], data, engine)
            except MemoryError:
                raise
            except Exception as exc:  # noqa: BLE001 - an unloadable model fails its jobs, not the child
                if out_of_memory(exc):
                    raise MemoryError(str(exc)) from exc
                sys.stderr.write(f"sheetcalc model could not be loaded: {type(exc).__name__}: {str(exc)[:300]}\n")
                for _job in header["jobs"]:
                    channel.write({"outcome": "failed", "ms": 0.0})
                continue
            models[key] = workbook
            while len(models) > cache_size:
                models.popitem(last=False)
            channel.write({"loaded": True})
        models.move_to_end(key)
        for job in header["jobs"]:
            _cpu_budget(header["cpu_s"])
            answer_header, blob = _one(workbook, job)
            channel.write(answer_header, blob)


_NO_ADDRESS_SPACE = ("failed to map segment", "cannot allocate memory")


def out_of_memory(exc: BaseException | None) -> bool:
    """Whether an exception, or one it was raised from, is the address space running out: a
    MemoryError, or a library's module (numpy, scipy) that could not be mapped under the memory
    limit, which Python reports as an ImportError or OSError."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, MemoryError):
            return True
        if isinstance(exc, (ImportError, OSError)) and any(s in str(exc).lower() for s in _NO_ADDRESS_SPACE):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _main(argv: list[str]) -> int:
    fd, memory_mb, cache_size = int(argv[0]), int(argv[1]), int(argv[2])
    try:
        return _child_main(fd, memory_mb, cache_size)
    except BrokenPipeError:
        return 0
    except BaseException as exc:
        if not out_of_memory(exc):
            raise
        # Straight out, heap and all: unwinding a model that filled the address space can take
        # longer than the parent waits for a dying child, and it would then be called a crash.
        os._exit(3)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
