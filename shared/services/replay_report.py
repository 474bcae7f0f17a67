"""A shadow replay's report: each recorded job's outputs against the candidate's, in bulk.

Every case (a recorded job) is compared output by output with ``shared.services.output_compare``
under that output's tolerance; its verdict is the worst of its outputs', or *failed* when the
candidate could not calculate it. The report holds the counts, per output the counts and the
distribution of the differences (count, min, max, median; a difference is candidate − recorded
for a number, the largest cell difference for a range, none for text or a changed shape), the
most changed cases (changed before within tolerance, then most outputs moved, then the largest
difference) with their inputs and both outputs, and a sample of the failures.

``Accumulator`` is what a worker keeps between chunks; ``state()``/``from_state`` carry it over
when the replay is handed on to another message.
"""

from __future__ import annotations

import heapq
import statistics
from dataclasses import dataclass, field
from typing import Any

from shared.services.output_compare import Tolerance, compare_outputs

MOST_CHANGED = 20
FAILURES_SHOWN = 20
_VERDICTS = ("identical", "within", "changed")


def tolerance_dict(tolerance: Tolerance) -> dict[str, float | None]:
    return {"absolute": tolerance.absolute, "relative": tolerance.relative}


@dataclass
class Accumulator:
    """The counts, differences and most changed cases of the cases compared so far."""

    tolerances: dict[str, Tolerance] = field(default_factory=dict)
    default: Tolerance = field(default_factory=Tolerance)
    counts: dict[str, int] = field(default_factory=lambda: {"identical": 0, "within": 0, "changed": 0, "failed": 0})
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    top: list[list] = field(default_factory=list)  # a heap of [rank..., sequence, case]
    failures: list[dict[str, Any]] = field(default_factory=list)
    seen: int = 0

    def tolerance(self, name: str) -> Tolerance:
        return self.tolerances.get(name, self.default)

    def _output(self, name: str) -> dict[str, Any]:
        entry = self.outputs.get(name)
        if entry is None:
            entry = self.outputs[name] = {"identical": 0, "within": 0, "changed": 0, "differences": [], "not_numeric": 0}
        return entry

    def add(self, *, job_id: str, inputs: dict, recorded: dict, got: dict | None, error: str | None = None) -> None:
        """One case: the recorded job's outputs against the candidate's (None and ``error`` when
        the candidate failed on it)."""
        self.seen += 1
        if got is None:
            self.counts["failed"] += 1
            if len(self.failures) < FAILURES_SHOWN:
                self.failures.append({"job_id": job_id, "inputs": inputs, "error": error})
            return
        names = list(recorded)
        comparisons = compare_outputs(recorded, got, {n: self.tolerance(n) for n in names})
        worst, moved, largest = "identical", [], 0.0
        for name, result in comparisons.items():
            entry = self._output(name)
            entry[result.verdict] += 1
            if result.verdict != "identical":
                moved.append(name)
                if result.difference is None:
                    entry["not_numeric"] += 1
                else:
                    entry["differences"].append(result.difference)
                    largest = max(largest, abs(result.difference))
            if _VERDICTS.index(result.verdict) > _VERDICTS.index(worst):
                worst = result.verdict
        self.counts[worst] += 1
        if worst == "identical":
            return
        # A change that is not a number (text, an error, a shape) ranks above any numeric one.
        size = float("inf") if any(comparisons[n].difference is None for n in moved) else largest
        rank = [_VERDICTS.index(worst), len(moved), size if size != float("inf") else 1e308, -self.seen]
        case = {"job_id": job_id, "verdict": worst, "outputs_moved": moved, "largest_difference": None if size == float("inf") else size,
                "inputs": inputs, "recorded": recorded, "candidate": got}
        entry = [*rank, case]
        if len(self.top) < MOST_CHANGED:
            heapq.heappush(self.top, entry)
        elif entry[:4] > self.top[0][:4]:
            heapq.heapreplace(self.top, entry)

    def state(self) -> dict[str, Any]:
        """What a later message needs to go on (JSON)."""
        return {"counts": self.counts, "outputs": self.outputs, "top": self.top, "failures": self.failures, "seen": self.seen}

    @classmethod
    def from_state(cls, state: dict[str, Any] | None, *, tolerances: dict[str, Tolerance], default: Tolerance) -> "Accumulator":
        acc = cls(tolerances=tolerances, default=default)
        if state:
            acc.counts, acc.outputs, acc.failures, acc.seen = state["counts"], state["outputs"], state["failures"], state["seen"]
            acc.top = [list(entry) for entry in state["top"]]
            heapq.heapify(acc.top)
        return acc

    def report(self) -> dict[str, Any]:
        """The report, once every case was compared."""
        outputs = {}
        for name, entry in sorted(self.outputs.items()):
            diffs = entry["differences"]
            outputs[name] = {
                "identical": entry["identical"], "within": entry["within"], "changed": entry["changed"],
                "tolerance": {**tolerance_dict(self.tolerance(name)), "source": "test_cases" if name in self.tolerances else "request"},
                "differences": {
                    "count": entry["within"] + entry["changed"], "numeric": len(diffs), "not_numeric": entry["not_numeric"],
                    "min": min(diffs) if diffs else None, "max": max(diffs) if diffs else None,
                    "median": statistics.median(diffs) if diffs else None,
                },
            }
        most = [entry[-1] for entry in sorted(self.top, key=lambda e: e[:4], reverse=True)]
        return {"total": self.seen, **self.counts, "outputs": outputs, "most_changed": most, "failures": self.failures}


def summary(report: dict[str, Any] | None) -> dict[str, Any] | None:
    """The counts of a report (what a release records)."""
    if report is None:
        return None
    return {k: report.get(k, 0) for k in ("total", "identical", "within", "changed", "failed")}
