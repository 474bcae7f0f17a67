"""Bodies of a version's reports: the fidelity check in full (the version detail has its summary)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class FidelityMismatch(BaseModel):
    sheet: str
    cell: str
    formula: str
    expected: Any = Field(description="The value Excel saved in the file")
    actual: Any = Field(description="The value the engine calculated")


class FidelityReportResponse(BaseModel):
    """How the version's formula cells, recalculated, compare with the values Excel saved."""

    calc_engine: str = Field(description="The engine that calculates this version")
    calc_engine_pinned: bool = Field(description="True when an administrator chose the engine")
    checked: bool = Field(description="False for a version without a stored check; the figures are then 0")
    engine: str | None = Field(description="The engine the check's figures and cell list are for")
    cells_compared: int
    cells_matching: int
    match_rate: float | None
    mismatches_total: int
    mismatches: list[FidelityMismatch] = Field(description="The first differing cells (at most 50)")
    unsupported_functions: list[str]
    engines: dict[str, Any] = Field(description="One summary line per engine checked")
    skipped: dict[str, int] = Field(
        default_factory=dict,
        description="Formula cells left out of the comparison, by reason: no_cached_value (the file carries no value "
        "Excel computed for them), volatile (NOW, RAND...), external (another workbook), array_area, data_table",
    )
    flagged_total: int = Field(default=0, description="Formula cells not compared because the engine is known to get their construct wrong")
    flagged_outputs: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Named outputs calculated from a cell the service cannot calculate as Excel would (output, cell, "
        "reason): jobs answer them with the engine's value, and fail where a job's inputs raise a new such cell",
    )
    unimplemented: dict[str, Any] = Field(
        default_factory=dict,
        description="Formula cells calling a function the engine does not implement (cells, cells_total), the cells "
        "calculated from them (dependants, dependants_total), the functions, and the named outputs depending on them "
        "(outputs: output, cell, function), whose jobs fail rather than return a value; empty when there are none",
    )


class SuggestedSchemasResponse(BaseModel):
    """Draft 7 schemas derived from the workbook: types from values and number formats, Excel's
    data validation (list → enum, bounds → minimum/maximum, dates → format: date), array shapes for
    row, column and block ranges, every input required. A suggestion: nothing is saved."""

    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
