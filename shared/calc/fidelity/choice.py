"""The per-workbook engine choice made at upload.

Every engine is checked against Excel's cached values; the one matching the most cells wins,
the faster one (earlier in ENGINE_PREFERENCE) on a tie. IronCalc runs in this process (a
20,000-formula check takes a second or two); `formulas` runs behind the subprocess fence with a
deadline and a memory limit, and a workbook it cannot finish in time is not offered it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shared.calc.base import ENGINE_PREFERENCE, Workbook, get_engine
from shared.calc.fidelity.check import check
from shared.calc.fidelity.fence import check_isolated
from shared.calc.fidelity.report import FidelityReport
from shared.calc.fidelity.stored_report import build_report, upload_warnings
from shared.calc.xlsx.external_links import external_link_warnings
from shared.calc.xlsx.package import UNREADABLE
from shared.errors import WorkbookError

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MEMORY_MB: int | None = None  # the fidelity_memory_mb setting (shared/calc/fidelity/fence.py)
# Engines checked in this process; every other one is fenced off in a child process.
IN_PROCESS_ENGINES = frozenset({"ironcalc"})


@dataclass
class EngineChoice:
    """The chosen engine, the workbook loaded with it, and what the checks found."""

    engine: str
    workbook: Workbook
    reports: dict[str, FidelityReport]
    report: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    def chosen_report(self) -> FidelityReport:
        """The full check of the chosen engine (uncapped mismatches)."""
        return self.reports[self.engine]

    @property
    def timed_out(self) -> list[str]:
        """Engines whose check ran past its deadline: the choice was made without them, so a
        caller must say so (or check again) rather than present it as final."""
        return [name for name, report in self.reports.items() if report.status == "timeout"]


def check_engine(
    data: bytes, engine: str, *, timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_mb: int | None = DEFAULT_MEMORY_MB,
) -> FidelityReport:
    """One engine's fidelity report; WorkbookError when the file is not a readable xlsx."""
    if engine in IN_PROCESS_ENGINES:
        return check(data, engine)
    return check_isolated(data, engine, timeout_s=timeout_s, memory_mb=memory_mb)


def pick(reports: dict[str, FidelityReport]) -> str | None:
    """The engine that matched the most cells; the earliest preferred one on a tie."""
    usable = [name for name in ENGINE_PREFERENCE if name in reports and reports[name].ok]
    usable += sorted(n for n, r in reports.items() if r.ok and n not in usable)
    if not usable:
        return None
    return max(usable, key=lambda name: (reports[name].cells_matching, -usable.index(name)))


def choose_engine(
    data: bytes,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_mb: int | None = DEFAULT_MEMORY_MB,
    engines: tuple[str, ...] = ENGINE_PREFERENCE,
    check_all: bool = False,
) -> EngineChoice:
    """Check the workbook with each engine and keep the one that matches Excel best.

    The later engines are skipped when the first matches every compared cell (they could only
    tie), unless `check_all`. Raises WorkbookError when no engine can read the file.
    """
    reports: dict[str, FidelityReport] = {}
    for name in engines:
        first = reports.get(engines[0])
        if (
            not check_all and first is not None and first.ok
            and first.cells_matching == first.cells_compared
        ):
            reports[name] = FidelityReport(
                engine=name, status="not_run",
                error=f"not needed: {engines[0]} matched every compared cell",
            )
            continue
        try:
            reports[name] = check_engine(data, name, timeout_s=timeout_s, memory_mb=memory_mb)
        except WorkbookError as exc:
            reports[name] = FidelityReport(engine=name, status="failed", error=exc.message)
    chosen = pick(reports)
    if chosen is None:
        raise WorkbookError(UNREADABLE)
    workbook = get_engine(chosen).load_xlsx(data)
    report = build_report(chosen, reports)
    return EngineChoice(chosen, workbook, reports, report, upload_warnings(report) + _link_warnings(data))


def _link_warnings(data: bytes) -> list[str]:
    """The cells reading other workbooks (calculated from the values saved in the file)."""
    try:
        return external_link_warnings(data)
    except WorkbookError:  # read by an engine, but not by the detector: nothing to name
        return []

