"""Every calculation runs inside its budget: a job past its wall time, CPU time or memory fails
with a message naming the limit, its child is gone, and the jobs after it are calculated by a
fresh child."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from shared.calc import fenced, get_engine
from tests.calc.budget_workbooks import heavy_when_switched_on

CREATED = "2026-11-27T10:00:00"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def heavy_model():
    data = heavy_when_switched_on()
    blob = get_engine("ironcalc").load_xlsx(data).serialize()
    return fenced.Model(f"{uuid.uuid4()}:ironcalc", "ironcalc", lambda: ("serialized", blob))


# The wall-time budget of the test that runs past it: a quick job, and the load of the model by
# the fresh child after the kill (a budget of its own, as long), are done well within it on a
# loaded machine; the much heavier job (160 million multiplications: over a minute here, many
# times the budget on a fast machine) is not.
WALL_BUDGET_S = 5


@pytest.fixture(scope="module")
def much_heavier_model():
    blob = get_engine("ironcalc").load_xlsx(heavy_when_switched_on(formulas=8_000)).serialize()
    return fenced.Model(f"{uuid.uuid4()}:ironcalc", "ironcalc", lambda: ("serialized", blob))


@pytest.fixture()
def calculator():
    calc = fenced.Calculator(size=1, cache_size=4)
    yield calc
    calc.close()


def job(switch: int) -> fenced.JobSpec:
    return fenced.JobSpec(inputs={"switch": switch}, outputs=None, date_inputs=[], job_id=str(uuid.uuid4()), created_at=CREATED)


def test_a_quick_job_is_calculated_in_the_child(calculator, heavy_model):
    # GIVEN a generous budget WHEN a one-cell job runs
    [result] = calculator.calculate(heavy_model, [job(0)], fenced.Budget(wall_s=120, cpu_s=120, memory_mb=1024))
    # THEN its outputs are the workbook's: the sum of 1..2000
    assert result.outcome == "ok"
    assert result.outputs == {"total": 2000 * 2001 / 2}


def test_a_job_past_its_wall_time_fails_naming_the_limit_and_the_rest_of_its_batch_goes_on(calculator, much_heavier_model):
    # GIVEN a batch: a heavy job (a minute of work and more) between two quick ones, a time budget
    budget = fenced.Budget(wall_s=WALL_BUDGET_S, cpu_s=600, memory_mb=1024)
    calculator.calculate(much_heavier_model, [job(0)], fenced.Budget(wall_s=120, cpu_s=120, memory_mb=1024))  # loaded
    started = time.monotonic()
    results = calculator.calculate(much_heavier_model, [job(0), job(1), job(0)], budget)
    # THEN the heavy job is stopped at its budget with a message that names it
    assert [r.outcome for r in results] == ["ok", "budget", "ok"]
    assert results[1].limit == "time"
    assert results[1].message == f"The calculation took longer than its {WALL_BUDGET_S} s time budget and was stopped"
    # AND the caller was free long before the heavy job could have finished (its child was
    # killed; the last job waited for a new child to start, which has an allowance of its own)
    assert time.monotonic() - started < 60
    assert results[2].outputs["total"] == 8000 * 8001 / 2


def test_a_job_past_its_cpu_time_is_ended_by_the_kernel_even_inside_native_code(calculator, heavy_model):
    # GIVEN a 1 s CPU budget and all the time in the world
    budget = fenced.Budget(wall_s=600, cpu_s=1, memory_mb=1024)
    # WHEN the heavy job runs (far more than a second of CPU, inside IronCalc's Rust code)
    results = calculator.calculate(heavy_model, [job(1), job(0)], budget)
    # THEN the kernel's SIGXCPU ended it, and the next job was calculated by a fresh child
    assert results[0].outcome == "budget" and results[0].limit == "cpu"
    assert results[0].message == "The calculation used more than its 1 s CPU-time budget and was stopped"
    assert results[1].outcome == "ok"


def test_a_model_past_its_memory_budget_fails_naming_the_limit(calculator):
    # GIVEN a workbook of 150,000 formula cells and a 400 MB memory budget (the child itself,
    # Python and the engine, needs about 130 MB of address space)
    from tests.calc.budget_workbooks import heavy_when_switched_on as build

    data = build(rows=150_000, formulas=10)
    model = fenced.Model(f"{uuid.uuid4()}:formulas", "formulas", lambda: ("xlsx", data))
    [result] = calculator.calculate(model, [job(0)], fenced.Budget(wall_s=600, cpu_s=600, memory_mb=400))
    # THEN the formulas engine ran out of its address space: the memory budget is named
    assert result.outcome == "budget" and result.limit == "memory", result
    assert result.message == "The calculation needed more than its 400 MB memory budget and was stopped"


OUT_OF_ADDRESS_SPACE_IMPORT = """
import resource
from shared.calc.fenced import out_of_memory
size = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + (8 << 20), size + (8 << 20)))
try:
    import numpy
except BaseException as exc:
    print(type(exc).__name__, out_of_memory(exc))
else:
    print("imported")
"""


def test_a_library_that_cannot_be_mapped_under_the_memory_limit_is_the_memory_budget():
    # GIVEN a process whose address space ends 8 MB past what it already maps
    # WHEN it imports numpy's extensions, as the formulas engine does on its first calculation
    result = subprocess.run([sys.executable, "-c", OUT_OF_ADDRESS_SPACE_IMPORT], capture_output=True, text=True, check=True, cwd=ROOT)
    # THEN Python reports an ImportError, and the child's rule reads it as the address space
    # running out (the memory budget), not as a workbook that cannot be loaded
    assert result.stdout.split() == ["ImportError", "True"], result.stdout + result.stderr


@pytest.mark.parametrize("exc, expected", [
    (MemoryError(), True),
    (ImportError("libopenblas.so: failed to map segment from shared object"), True),
    (OSError(12, "Cannot allocate memory"), True),
    (ImportError("No module named 'scipy'"), False),
    (ValueError("not a workbook"), False),
])
def test_what_counts_as_running_out_of_memory(exc, expected):
    assert fenced.out_of_memory(exc) is expected


def test_an_error_raised_while_handling_a_memory_error_is_running_out_of_memory():
    try:
        try:
            raise MemoryError
        except MemoryError as inner:
            raise RuntimeError("model could not be loaded") from inner
    except RuntimeError as exc:
        assert fenced.out_of_memory(exc)


def test_the_child_has_no_secrets(monkeypatch, calculator, heavy_model):
    # GIVEN the parent holds the service's secrets in its environment
    monkeypatch.setenv("SHEETCALC_JWT_SECRET", "parent-only")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "parent-only")
    calculator.calculate(heavy_model, [job(0)], fenced.Budget(wall_s=120, cpu_s=120, memory_mb=1024))
    # THEN its calculation child was started without any of them
    [child] = calculator._idle
    environ = open(f"/proc/{child.process.pid}/environ", "rb").read().split(b"\0")
    assert not [v for v in environ if v.startswith((b"SHEETCALC_", b"AWS_", b"DATABASE_URL"))]
