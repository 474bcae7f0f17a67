"""What a version costs, and what follows from it: refused when over the limits, or calculated
on the slow lane.

A version's cost is measured in the fence whenever it is checked (the upload, a pinned engine,
a switch of engine after the background check): a job on its uploaded values, timed a few times
(p50 and p95), and the peak memory of the child that read and calculated it
(``shared.calc.sandbox.measure_cost``). Judged here against the settings' limits, at upload,
at a pin and again at activation (the limits may have changed since).
"""

from __future__ import annotations

from typing import Any

from shared.errors import WorkbookRefused

STANDARD_LANE, SLOW_LANE = "standard", "slow"


def judge(cost: dict[str, Any] | None, settings: Any) -> None:
    """WorkbookRefused (400), saying why, when a version's measured cost is over the limits."""
    if not cost:
        return
    p95 = float(cost.get("calc_ms_p95") or 0)
    if p95 > settings.version_max_calc_ms:
        raise WorkbookRefused(
            f"A job on this workbook takes about {_ms(p95)} to calculate with {cost.get('engine', 'its engine')}, "
            f"over the limit of {_ms(settings.version_max_calc_ms)} per job (SHEETCALC_VERSION_MAX_CALC_MS); "
            "make it smaller or simpler"
        )
    load = float(cost.get("load_ms") or 0)
    if load > settings.job_max_seconds * 1000:
        raise WorkbookRefused(
            f"Building this workbook's model with {cost.get('engine', 'its engine')} takes about {_ms(load)}, "
            f"longer than a job may take ({_ms(settings.job_max_seconds * 1000)}, SHEETCALC_JOB_MAX_SECONDS); "
            "make it smaller or simpler"
        )
    memory = float(cost.get("peak_memory_mb") or 0)
    if memory > settings.version_max_memory_mb:
        raise WorkbookRefused(
            f"Calculating this workbook needs about {memory:,.0f} MB of memory with {cost.get('engine', 'its engine')}, "
            f"over the limit of {settings.version_max_memory_mb:,} MB (SHEETCALC_VERSION_MAX_MEMORY_MB); "
            "make it smaller or simpler"
        )


def lane(cost: dict[str, Any] | None, engine: str, settings: Any) -> str:
    """Which lane a version's jobs take: the slow one when a job costs more than
    ``version_slow_lane_ms`` at p95, or when its cost was never measured on its engine."""
    if not cost or cost.get("engine") != engine:
        return SLOW_LANE if engine != "ironcalc" else STANDARD_LANE
    return SLOW_LANE if float(cost.get("calc_ms_p95") or 0) > settings.version_slow_lane_ms else STANDARD_LANE


def _ms(value: float) -> str:
    return f"{value / 1000:,.1f} s" if value >= 1000 else f"{value:,.0f} ms"
