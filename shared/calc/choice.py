"""The per-workbook engine choice made at upload, and the report stored with the version.

Every engine is checked against Excel's cached values; the one matching the most cells wins,
the faster one (earlier in ENGINE_PREFERENCE) on a tie. IronCalc runs in this process (a
20,000-formula check takes a second or two); `formulas` runs in a child process with a
deadline and a memory limit, and a workbook it cannot finish in time is not offered it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from shared.calc.base import ENGINE_PREFERENCE, Workbook, get_engine
from shared.calc.fidelity import FidelityReport, check, check_isolated
from shared.errors import WorkbookError

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MEMORY_MB = 4096
REPORT_MISMATCH_LIMIT = 50
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

    @property
    def summary(self) -> dict[str, Any]:
        return report_summary(self.report)

    def chosen_report(self) -> FidelityReport:
        """The full check of the chosen engine (uncapped mismatches)."""
        return self.reports[self.engine]


def check_engine(
    data: bytes, engine: str, *, timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_mb: int = DEFAULT_MEMORY_MB,
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
    memory_mb: int = DEFAULT_MEMORY_MB,
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
        raise WorkbookError("The file is not a readable .xlsx workbook")
    workbook = get_engine(chosen).load_xlsx(data)
    report = build_report(chosen, reports)
    return EngineChoice(chosen, workbook, reports, report, upload_warnings(report))


def build_report(chosen: str, reports: dict[str, FidelityReport]) -> dict[str, Any]:
    """The JSON kept in EngineVersion.fidelity_report: the chosen engine's check in full
    (mismatches capped) and a summary line per engine."""
    main = reports[chosen]
    return {
        "engine": chosen,
        "cells_compared": main.cells_compared,
        "cells_matching": main.cells_matching,
        "match_rate": main.match_rate,
        "mismatches": main.mismatches[:REPORT_MISMATCH_LIMIT],
        "mismatches_total": main.mismatches_total,
        "unsupported_functions": main.unsupported_functions,
        "skipped": main.skipped,
        "engines": {name: _engine_line(r) for name, r in reports.items()},
    }


def _engine_line(report: FidelityReport) -> dict[str, Any]:
    return {
        "status": report.status,
        "cells_compared": report.cells_compared,
        "cells_matching": report.cells_matching,
        "match_rate": report.match_rate,
        "unsupported_functions": report.unsupported_functions,
        "seconds": round(report.seconds, 3),
        "error": report.error,
    }


def report_summary(report: dict[str, Any] | None) -> dict[str, Any] | None:
    """The version detail's view of a stored report: no cell list, one line per engine."""
    if not report:
        return None
    return {
        "engine": report.get("engine"),
        "cells_compared": report.get("cells_compared", 0),
        "cells_matching": report.get("cells_matching", 0),
        "match_rate": report.get("match_rate"),
        "mismatches_total": report.get("mismatches_total", 0),
        "unsupported_functions": report.get("unsupported_functions", []),
        "engines": report.get("engines", {}),
    }


def report_for_engine(report: dict[str, Any], engine: str) -> dict[str, Any]:
    """A stored report re-centred on an engine an administrator pinned: the summary fields
    follow that engine (its cell list was not kept, so mismatches stay those of the check's
    choice only when the engine is the same)."""
    line = (report.get("engines") or {}).get(engine)
    if report.get("engine") == engine or line is None:
        return {**report, "engine": engine}
    return {
        **report,
        "engine": engine,
        "cells_compared": line["cells_compared"],
        "cells_matching": line["cells_matching"],
        "match_rate": line["match_rate"],
        "mismatches": [],
        "mismatches_total": line["cells_compared"] - line["cells_matching"],
        "unsupported_functions": line["unsupported_functions"],
    }


def upload_warnings(report: dict[str, Any]) -> list[str]:
    """Sentences for the upload answer when the chosen engine does not match Excel exactly."""
    warnings = []
    compared, matching = report["cells_compared"], report["cells_matching"]
    if compared > matching:
        warnings.append(
            f"{compared - matching} of {compared} formula cells differ from the values Excel "
            f"saved in the file (engine {report['engine']}); see the version's fidelity report"
        )
        for miss in report["mismatches"][:5]:
            warnings.append(
                f"{miss['sheet']}!{miss['cell']} {miss['formula']}: Excel {miss['expected']!r}, "
                f"{report['engine']} {miss['actual']!r}"
            )
    if report["unsupported_functions"]:
        warnings.append(
            f"Functions {report['engine']} does not support: "
            + ", ".join(report["unsupported_functions"])
        )
    skipped = report.get("skipped") or {}
    if skipped.get("no_cached_value") and not compared:
        warnings.append(
            "The file carries no values computed by Excel, so it could not be checked"
        )
    return warnings


PENDING = "pending"


def defer_slower_engines(report: dict[str, Any], engines: tuple[str, ...] = ENGINE_PREFERENCE[1:]) -> list[str]:
    """Mark the engines still to be checked in the background; returns them (none when the
    report's engine already matches every compared cell)."""
    if report["cells_compared"] == report["cells_matching"] and report["engines"][report["engine"]]["status"] == "ok":
        return []
    for name in engines:
        report["engines"][name] = {
            "status": PENDING, "cells_compared": 0, "cells_matching": 0, "match_rate": None,
            "unsupported_functions": [], "seconds": 0.0, "error": None,
        }
    return list(engines)


def merge_background_check(report: dict[str, Any], result: FidelityReport) -> dict[str, Any]:
    """The stored report with a background check's result added; re-centred on that engine
    when it matches more cells than the current choice (which then keeps only its summary line)."""
    current = report["engines"].get(report["engine"], {})
    engines = {**report["engines"], result.engine: _engine_line(result)}
    if result.ok and result.cells_matching > (current.get("cells_matching") or 0):
        merged = build_report(result.engine, {result.engine: result})
        merged["engines"] = engines
        return merged
    return {**report, "engines": engines}
