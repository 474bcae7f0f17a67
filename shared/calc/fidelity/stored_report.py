"""The fidelity report stored with a version (EngineVersion.fidelity_report): built from the
checks, summarised for the version detail, re-centred on a pinned engine, turned into upload
warnings, and merged with the slower engines' background checks."""

from __future__ import annotations

from typing import Any

from shared.calc.base import ENGINE_PREFERENCE
from shared.calc.fidelity import unimplemented
from shared.calc.fidelity.report import FidelityReport

REPORT_MISMATCH_LIMIT = 50
PENDING = "pending"


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
        "flagged": main.flagged[:REPORT_MISMATCH_LIMIT],
        "flagged_total": main.flagged_total,
        "flagged_outputs": main.flagged_outputs[:REPORT_MISMATCH_LIMIT],
        "data_tables": main.data_tables[:REPORT_MISMATCH_LIMIT],
        unimplemented.REPORT_KEY: main.unimplemented,
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
        unimplemented.REPORT_KEY: _compact(report.unimplemented),
    }


def _compact(section: dict[str, Any]) -> dict[str, Any]:
    """An engine line's view of its unimplemented section: no cell lists."""
    if not section:
        return {}
    return {**section, "cells": [], "dependants": []}


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
        "flagged_outputs": [],
        unimplemented.REPORT_KEY: line.get(unimplemented.REPORT_KEY, {}),
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
    warnings += unimplemented.warnings(report.get(unimplemented.REPORT_KEY))
    flagged = report.get("flagged") or []
    if flagged:
        warnings.append(
            f"{report.get('flagged_total', len(flagged))} formula cells use a construct "
            f"{report['engine']} is known to get wrong that the service cannot correct; see the "
            "version's fidelity report (flagged)"
        )
        for flag in flagged[:5]:
            warnings.append(f"{flag['sheet']}!{flag['cell']} {flag['formula']}: {flag['reason']}")
    for output in (report.get("flagged_outputs") or [])[:10]:
        warnings.append(
            f"Output '{output['output']}' is calculated from {output['cell']}, which the service cannot "
            f"calculate as Excel would ({output['reason']}): jobs answer it with the engine's value"
        )
    for table in report.get("data_tables") or []:
        warnings.append(data_table_warning(table))
    skipped = report.get("skipped") or {}
    if skipped.get("no_cached_value") and not compared:
        warnings.append(
            "The file carries no values computed by Excel, so it could not be checked"
        )
    return warnings


def data_table_warning(table: dict[str, Any]) -> str:
    """The upload warning for one data table: calculated, or kept as Excel's saved values."""
    if table.get("calculated"):
        return table["note"] + " (IronCalc only: with the formulas engine it keeps Excel's saved values)"
    text = table["note"] + " (a filled workbook holds them as fixed values)"
    outputs = table.get("outputs") or []
    if outputs:
        text += (
            f"; named ranges {', '.join(outputs)} are in it or calculated from it, so they keep "
            "Excel's saved values and do not follow a job's inputs"
        )
    return text


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
