"""Untrusted workbooks read in a child process, with a deadline and an address-space limit.

An upload is checked by the package guard's directory step in the caller (cheap and bounded:
most bad files end there, without a child); then a child process streams the guard's content
checks and, only if they pass, lets IronCalc load, check and serialize the workbook
(`prepare_upload`). A workbook that makes IronCalc segfault or abort, that takes longer than the
deadline or that needs more memory than the limit costs the child, never the API process: the
caller gets WorkbookRefused (400) and the detail goes to the log.

Latency and CPU: starting Python and importing the engines takes over a second, so each process
starts one *zygote* on first use: a clean, single-threaded Python with everything imported and
warmed, which forks a child for each upload (a fork costs milliseconds, and the API process,
with its threads, is never forked). The upload waits only for its own child's work.
(multiprocessing's forkserver does the same, but re-imports the caller's ``__main__`` in every
child: the Lambda bootstrap, pytest, the dev command.)

The child speaks JSON plus raw bytes, never pickle: a child that IronCalc's parsing had
corrupted cannot make the parent run anything.

Which readers are fenced: the upload and a pinned engine's first model (this module) and the
`formulas` engine's fidelity check (shared/calc/fidelity/fence.py). Workers load only versions
whose IronCalc model was already loaded, calculated and serialized in such a child at upload.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

from shared.calc.xlsx import guard
from shared.errors import ServiceUnavailable, WorkbookError, WorkbookRefused

log = logging.getLogger(__name__)

CRASHED = (
    "The workbook could not be read: the reader failed on it. "
    "Check that it opens in Excel, save it again and upload that"
)
_PASSED_BACK = {"WorkbookError": WorkbookError, "WorkbookRefused": WorkbookRefused}
_PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
_lock = threading.Lock()
_zygote_process: "_Zygote | None" = None
_slots: tuple[int, threading.BoundedSemaphore] | None = None
_QUEUE_WAIT_S = 60.0


@dataclass(frozen=True)
class Fence:
    """The child's deadline (wall clock, seconds), address-space ceiling (MB), and how many
    children one process runs at once: the ``upload_parse_*`` settings."""

    timeout_s: float
    memory_mb: int
    concurrency: int

    @classmethod
    def from_settings(cls, settings: Any) -> "Fence":
        return cls(settings.upload_parse_timeout_seconds, settings.upload_parse_memory_mb,
                   settings.upload_parse_concurrency)


@dataclass
class PreparedUpload:
    """What the upload keeps of a workbook read in the child."""

    engine: str
    report: dict[str, Any]
    warnings: list[str]
    named_ranges: list[dict[str, Any]]
    prepared: bytes  # the engine's serialized model
    child_peak_rss_mb: float = 0.0
    # Input/output schemas suggested from the workbook (shared/calc/schema_suggestion.py), or
    # None when the suggestion failed or ran out of its time: never a reason to refuse the upload.
    suggested_schemas: dict[str, Any] | None = None
    # What a job costs (``measure_cost``): judged against the tenant's limits by the upload.
    cost: dict[str, Any] | None = None


def prepare_upload(data: bytes, limits: guard.Limits, fence: Fence) -> PreparedUpload:
    """Guard an upload, then load and check it with IronCalc in a child process.

    Raises WorkbookError (422) for a file that is not a readable .xlsx, WorkbookRefused (400)
    for one over a limit, with macros, or that the reader crashed on or could not finish.
    """
    guard.check_directory(data, limits)
    from shared.config import get_settings

    args = {"limits": asdict(limits), "suggest_within_s": fence.timeout_s / 4, "max_calc_ms": get_settings().version_max_calc_ms}
    header, prepared = run("prepare", data, args, fence=fence)
    return PreparedUpload(prepared=prepared, **header)


def measure_cost(workbook: Any, max_calc_ms: float, runs: int = 5) -> dict[str, Any]:
    """What a job on ``workbook`` costs: the time of a calculation on its uploaded values, run
    up to ``runs`` times (fewer when one run is over ``max_calc_ms``, or the runs together pass
    twice that), as p50 and p95 in ms, and this process's peak memory in MB. An engine that builds
    its model on the first calculation (formulas) pays that first, timed apart as ``load_ms``: a
    fenced child pays it once per version, not per job."""
    import resource

    load_ms = 0.0
    if workbook.engine_name != "ironcalc":
        began = time.perf_counter()
        workbook.calculate({})
        load_ms = (time.perf_counter() - began) * 1000
    samples: list[float] = []
    spent = 0.0
    while len(samples) < runs:
        began = time.perf_counter()
        workbook.calculate({})
        took = (time.perf_counter() - began) * 1000
        samples.append(took)
        spent += took
        if took > max_calc_ms or spent > 2 * max_calc_ms:
            break
    ordered = sorted(samples)
    return {
        "engine": workbook.engine_name,
        "calc_ms_p50": round(ordered[len(ordered) // 2], 3),
        "calc_ms_p95": round(ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)], 3),
        "peak_memory_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "runs": len(samples),
        "load_ms": round(load_ms, 3),
    }


def prepare_engine_model(data: bytes, engine: str, fence: Fence) -> tuple[bytes, dict[str, Any]]:
    """An accepted workbook's serialized model for another engine, built, calculated and
    measured in a child too: the model and its cost (``measure_cost``)."""
    from shared.config import get_settings  # the child has no SHEETCALC_ environment

    settings = get_settings()
    header, prepared = run("serialize", data, {"engine": engine, "data_table_limit": settings.upload_max_data_table_substitutions,
                                               "max_calc_ms": settings.version_max_calc_ms}, fence=fence)
    return prepared, header["cost"]


def suggest_schemas(data: bytes, named_ranges: list[dict[str, Any]], fence: Fence) -> dict[str, Any] | None:
    """The schemas suggested from a stored workbook (openpyxl reads it in a child too); None when
    no suggestion could be made within the fence."""
    try:
        header, _ = run("suggest", data, {"named_ranges": named_ranges, "within_s": fence.timeout_s * 0.8}, fence=fence)
    except (WorkbookRefused, WorkbookError):
        return None
    return header.get("suggested")


def workbook_diff(old: bytes, new: bytes, *, cap: int, fence: Fence) -> dict[str, Any]:
    """The cells two stored workbooks differ in (shared/calc/workbook_diff.py), read in a child
    within the fence; stops short of the deadline and then says so (``complete`` false)."""
    header, _ = run("diff", old + new, {"split": len(old), "cap": cap, "within_s": fence.timeout_s * 0.8}, fence=fence)
    return header["diff"]


# --- The parent side ----------------------------------------------------------------------------


class _Zygote:
    """A clean Python process with everything imported that forks one child per request.

    Each request gets a socket pair: one end is handed to the zygote over its control socket
    (SCM_RIGHTS), the child forked for it answers its pid, reads the request, works, answers
    and exits. The zygote is single-threaded, so forking it is safe, and the API process is
    never forked.
    """

    def __init__(self) -> None:
        env = child_environment()
        self.control, theirs = socket.socketpair()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "shared.calc.sandbox", str(theirs.fileno())], pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL, env=env,
        )
        theirs.close()
        self.lock = threading.Lock()

    def alive(self) -> bool:
        return self.process.poll() is None

    def connect(self) -> socket.socket:
        """A socket to a newly forked child."""
        ours, theirs = socket.socketpair()
        try:
            with self.lock:
                socket.send_fds(self.control, [b"r"], [theirs.fileno()])
        finally:
            theirs.close()
        return ours


def child_environment() -> dict[str, str]:
    """The environment of a process that reads or calculates a tenant's workbook: no credentials
    (the service's secrets, database and AWS keys stay out), one thread per numeric library, and
    the project importable."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("SHEETCALC_", "AWS_")) and name != "DATABASE_URL"}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TQDM_DISABLE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [_PROJECT_ROOT, os.environ.get("PYTHONPATH")])))
    return env


def _zygote() -> _Zygote:
    global _zygote_process
    with _lock:
        if _zygote_process is None or not _zygote_process.alive():
            _zygote_process = _Zygote()
        return _zygote_process


def warm_up() -> None:
    """Start the zygote now rather than at the first upload."""
    _zygote()


def run(task: str, data: bytes, args: dict[str, Any], *, fence: Fence) -> tuple[dict[str, Any], bytes]:
    """Run a task of this module's child on ``data``: its JSON header and bytes, or its error.

    The child is killed at the deadline; a child that dies (a signal, an abort in native code,
    the memory limit) or answers nonsense gives WorkbookRefused.
    """
    started = time.perf_counter()
    with _readers(fence.concurrency):
        return _run(task, data, args, fence, started)


@contextlib.contextmanager
def _readers(concurrency: int) -> Iterator[None]:
    """At most `concurrency` children at once in this process, so that a burst of uploads cannot
    hold many memory ceilings at the same time; a caller waits up to a minute for its turn, then
    gets 503 (on AWS each API instance serves one request at a time, so none waits there)."""
    global _slots
    with _lock:
        if _slots is None or _slots[0] != concurrency:
            _slots = (concurrency, threading.BoundedSemaphore(concurrency))
        slots = _slots[1]
    if not slots.acquire(timeout=_QUEUE_WAIT_S):
        raise ServiceUnavailable("Too many workbooks are being read right now; try the upload again shortly")
    try:
        yield
    finally:
        slots.release()


def _run(task: str, data: bytes, args: dict[str, Any], fence: Fence, started: float) -> tuple[dict[str, Any], bytes]:
    try:
        conn = _zygote().connect()
    except OSError:  # the zygote died since: once more with a new one
        conn = _zygote().connect()
    with conn:
        return _read(conn, task, data, args, fence, started)


def _read(
    conn: socket.socket, task: str, data: bytes, args: dict[str, Any], fence: Fence, started: float
) -> tuple[dict[str, Any], bytes]:
    deadline = time.monotonic() + fence.timeout_s
    request = json.dumps({"task": task, "args": args, "memory_mb": fence.memory_mb}).encode() + b"\n" + data
    received = bytearray()
    try:
        conn.settimeout(fence.timeout_s)
        conn.sendall(request)
        conn.shutdown(socket.SHUT_WR)
        while True:
            conn.settimeout(max(deadline - time.monotonic(), 0.001))
            chunk = conn.recv(1 << 20)
            if not chunk:
                break
            received += chunk
    except TimeoutError:
        pid = bytes(received).partition(b"\n")[0]
        if pid.isdigit():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        log.warning("workbook reader killed at its %.1f s deadline", fence.timeout_s)
        raise WorkbookRefused(
            f"The workbook could not be read within {fence.timeout_s:g} s; make it smaller or simpler"
        ) from None
    except (BrokenPipeError, ConnectionResetError):
        pass  # died before reading everything: no answer below
    _pid, _, out = bytes(received).partition(b"\n")
    line, _, payload = out.partition(b"\n")
    try:
        answer = json.loads(line)
        outcome = answer["outcome"]
    except (ValueError, KeyError, TypeError):
        log.warning("workbook reader died without answering after %.2f s", time.perf_counter() - started)
        raise WorkbookRefused(CRASHED) from None
    log.info("workbook %s by a child in %.3f s (%.3f s of work; child peak %.0f MB)",
             "read" if outcome == "ok" else "refused", time.perf_counter() - started,
             answer.get("seconds", 0), answer.get("peak_rss_mb", 0))
    if outcome == "ok":
        return answer["value"], payload
    if outcome == "memory":
        raise WorkbookRefused(
            f"The workbook could not be read within the {fence.memory_mb:,} MB memory limit; make it smaller"
        )
    raise _PASSED_BACK.get(answer.get("kind"), WorkbookRefused)(str(answer.get("message") or CRASHED)[:1000])


# --- The child side -----------------------------------------------------------------------------


class _OutOfTime(BaseException):
    """A suggestion's time is up: a BaseException, so that no library's ``except Exception``
    on the way takes it for one of its own errors and carries on."""


def _suggest(data: bytes, named_ranges: list[dict[str, Any]], within_s: float) -> dict[str, Any] | None:
    """The suggested schemas, read with openpyxl here, after the guard passed and inside the
    child's memory ceiling; given up (None) after ``within_s`` seconds so that the upload's own
    deadline is never spent on it, and None on any failure."""
    from shared.calc.schema_suggestion import suggest_schemas

    expired = finished = False

    def out_of_time(_signum: int, _frame: Any) -> None:
        nonlocal expired
        expired = True
        if not finished:  # once the suggestion is back, the flag says it all
            raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, out_of_time)
    signal.setitimer(signal.ITIMER_REAL, max(within_s, 0.001))
    try:
        suggested = suggest_schemas(data, named_ranges)
        finished = True
        # The alarm may have gone off where its exception could not pass (a destructor, a
        # callback): a suggestion finished after its time is given up all the same.
        return None if expired else suggested
    except _OutOfTime:
        log.warning("no schema suggested for an upload: out of time")
        return None
    except Exception as exc:  # noqa: BLE001 - a suggestion is a help, never a reason to refuse
        log.warning("no schema suggested for an upload: %s", type(exc).__name__)
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _prepare(data: bytes, limits: dict[str, Any], suggest_within_s: float = 5.0,
             max_calc_ms: float = 10_000) -> tuple[dict[str, Any], bytes]:
    from shared.calc.base import DEFAULT_ENGINE
    from shared.calc.corrections import data_tables
    from shared.calc.fidelity.choice import choose_engine

    guard.check_contents(data, guard.Limits(**limits))
    # IronCalc is checked now (a second or two); slower engines by a worker, after the answer.
    with data_tables.substitution_limit(limits.get("max_data_table_substitutions")):
        choice = choose_engine(data, engines=(DEFAULT_ENGINE,))
    workbook = choice.workbook
    header = {
        "cost": measure_cost(workbook, max_calc_ms),
        "engine": choice.engine,
        "report": choice.report,
        "warnings": list(choice.warnings),
        "named_ranges": [r.to_dict() for r in workbook.named_ranges()],
    }
    prepared = workbook.serialize()
    header["suggested_schemas"] = _suggest(data, header["named_ranges"], suggest_within_s)
    return header, prepared


def _serialize(data: bytes, engine: str, data_table_limit: int | None = None,
               max_calc_ms: float = 10_000) -> tuple[dict[str, Any], bytes]:
    from shared.calc.base import get_engine
    from shared.calc.corrections import data_tables

    with data_tables.substitution_limit(data_table_limit):
        workbook = get_engine(engine).load_xlsx(data)
        # The model built and calculated here, in the fence: what a worker would otherwise pay
        # for the first time in its own process, measured as the upload's is.
        return {"cost": measure_cost(workbook, max_calc_ms)}, workbook.serialize()


def _suggest_task(data: bytes, named_ranges: list[dict[str, Any]], within_s: float) -> tuple[dict[str, Any], bytes]:
    return {"suggested": _suggest(data, named_ranges, within_s)}, b""


def _diff_task(data: bytes, split: int, cap: int, within_s: float) -> tuple[dict[str, Any], bytes]:
    from shared.calc.workbook_diff import cell_changes

    return {"diff": cell_changes(data[:split], data[split:], cap=cap, within_s=within_s)}, b""


_TASKS = {"prepare": _prepare, "serialize": _serialize, "suggest": _suggest_task, "diff": _diff_task}


def _warm_up_child() -> None:
    """Imports, compiled patterns and IronCalc's first-use set-up, paid before a request comes:
    a formula workbook made by IronCalc itself goes through the whole task once."""
    import ironcalc

    try:
        model = ironcalc.create("warm-up", "en", "UTC")
        model.set_user_input(0, 1, 1, "2")
        model.set_user_input(0, 1, 2, '=IF(SUM(A1,3)>1,"yes","no")')
        model.evaluate()
        no_limits = {name: 10**9 for name in guard.Limits.__dataclass_fields__}
        _prepare(bytes(model.to_xlsx()), no_limits)
    except Exception as exc:  # noqa: BLE001 - a warm-up never stops the child from serving
        log.warning("workbook reader warm-up failed: %r", exc)


def _zygote_main(control_fd: int) -> int:
    """Import and warm everything, then fork one child per request until the parent goes."""
    _warm_up_child()
    control = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the children
    while True:
        try:
            message, fds, _flags, _address = socket.recv_fds(control, 1, 1)
        except OSError:
            return 0
        if not message or not fds:  # the parent went away
            return 0
        if os.fork() == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _serve(socket.socket(fileno=fds[0]))  # never returns
        for fd in fds:
            os.close(fd)


def _serve(conn: socket.socket) -> None:
    """One forked child: its pid, then limits, the request, one answer, and exit."""
    import resource

    status = 0
    try:
        conn.sendall(f"{os.getpid()}\n".encode())
        stream = conn.makefile("rb")
        request = json.loads(stream.readline())
        limit = int(request["memory_mb"]) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        began = time.perf_counter()
        payload = b""
        try:
            data = stream.read()
            value, payload = _TASKS[request["task"]](data, **request["args"])
            answer: dict[str, Any] = {"outcome": "ok", "value": value}
        except (WorkbookError, WorkbookRefused) as exc:
            answer = {"outcome": "refused", "kind": type(exc).__name__, "message": exc.message}
        except MemoryError:
            payload, answer = b"", {"outcome": "memory"}
        except Exception as exc:  # noqa: BLE001 - untrusted input: any failure is the file's
            sys.stderr.write(f"sheetcalc workbook reader failed: {type(exc).__name__}: {str(exc)[:300]}\n")
            answer = {"outcome": "refused", "kind": "WorkbookRefused", "message": CRASHED}
        answer["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        answer["seconds"] = round(time.perf_counter() - began, 4)
        if request["task"] == "prepare" and answer["outcome"] == "ok":
            answer["value"]["child_peak_rss_mb"] = answer["peak_rss_mb"]
        conn.sendall(json.dumps(answer, default=str).encode() + b"\n" + payload)
    except BaseException:  # noqa: BLE001 - nothing may escape a forked child
        status = 1
    finally:
        os._exit(status)  # no interpreter teardown in a forked child


if __name__ == "__main__":
    sys.exit(_zygote_main(int(sys.argv[1])))
