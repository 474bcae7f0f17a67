"""FidelityReport: one engine's check of one workbook, as the check, the fence and the stored
version report pass it around."""

from __future__ import annotations

from dataclasses import dataclass, field

MISMATCH_LIMIT = 1000  # per report; the counts stay exact


@dataclass
class FidelityReport:
    """One engine's check of one workbook."""

    engine: str
    cells_compared: int = 0
    cells_matching: int = 0
    mismatches: list[dict] = field(default_factory=list)
    mismatches_total: int = 0
    unsupported_functions: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    functions: dict[str, int] = field(default_factory=dict)  # mismatching cells per function
    status: str = "ok"  # ok | timeout | failed | not_run
    error: str | None = None
    seconds: float = 0.0
    application: str | None = None
    # cells known to be wrong in this engine that the correction layer cannot fix
    flagged: list[dict] = field(default_factory=list)
    flagged_total: int = 0
    # the named outputs calculated from a flagged cell or from one the engine's check named as
    # not calculated as Excel would ({output, cell, reason})
    flagged_outputs: list[dict] = field(default_factory=list)
    # Excel what-if data tables, kept as Excel's saved values (shared.calc.xlsx.data_tables)
    data_tables: list[dict] = field(default_factory=list)
    # cells calling a function the engine does not implement, their dependants and the named
    # outputs depending on them (shared.calc.fidelity.unimplemented)
    unimplemented: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def match_rate(self) -> float | None:
        if not self.ok or not self.cells_compared:
            return None
        return self.cells_matching / self.cells_compared

    def to_dict(self, mismatch_limit: int | None = None) -> dict:
        mismatches = self.mismatches if mismatch_limit is None else self.mismatches[:mismatch_limit]
        return {
            "engine": self.engine,
            "status": self.status,
            "error": self.error,
            "cells_compared": self.cells_compared,
            "cells_matching": self.cells_matching,
            "match_rate": self.match_rate,
            "mismatches": mismatches,
            "mismatches_total": self.mismatches_total,
            "unsupported_functions": self.unsupported_functions,
            "skipped": self.skipped,
            "functions": self.functions,
            "seconds": round(self.seconds, 3),
            "application": self.application,
            "flagged": self.flagged,
            "flagged_total": self.flagged_total,
            "flagged_outputs": self.flagged_outputs,
            "data_tables": self.data_tables,
            "unimplemented": self.unimplemented,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "FidelityReport":
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**fields)
