"""Bodies of the engine version endpoints: upload, detail, schemas, activation, deletion."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from shared.api.schemas.tests_releases import VersionTestsSummary


class NamedRangeInfo(BaseModel):
    name: str
    sheet: str
    ref: str
    kind: str = Field(description="'output' where the range holds formulas, 'input' otherwise")
    rows: int
    cols: int
    is_date: bool = False


class EngineVersionSummary(BaseModel):
    id: uuid.UUID
    version: str
    filename: str
    is_active: bool
    created_at: datetime


class FidelitySummary(BaseModel):
    """How the version's formula cells, recalculated, compare with the values Excel saved."""

    engine: str | None
    cells_compared: int
    cells_matching: int
    match_rate: float | None
    mismatches_total: int
    unsupported_functions: list[str]
    engines: dict[str, Any] = Field(description="One summary line per engine checked")


class DocumentStorageStatus(BaseModel):
    """The copy of the version's workbook in the tenant's document library (SharePoint)."""

    status: str = Field(description="'pending', 'stored', 'failed' or 'not_configured'")
    web_url: str | None = Field(default=None, description="Where the copy opens in SharePoint, once stored")
    path: str | None = Field(default=None, description="Its path in the configured drive")
    error: str | None = Field(default=None, description="Why the copy failed")
    stored_at: datetime | None = None


class VersionCost(BaseModel):
    """What a job on this version costs, measured in the fence when the version was checked."""

    engine: str | None = Field(default=None, description="The engine the cost was measured with")
    calc_ms_p50: float = Field(description="Median time of one calculation on the uploaded values, ms")
    calc_ms_p95: float = Field(description="95th percentile of those times, ms")
    peak_memory_mb: float = Field(description="Peak memory of the process that read and calculated it, MB")
    runs: int = Field(description="How many calculations were timed")
    load_ms: float | None = Field(default=None, description="For an engine that builds its model on first use (formulas): "
                                  "how long that took, ms, paid once per worker, not per job")
    lane: str | None = Field(default=None, description="'standard', or 'slow' for versions whose jobs cost more than "
                             "the slow-lane threshold: they are calculated by workers of their own")


class EngineVersionDetail(EngineVersionSummary):
    file_size: int
    calc_engine: str = Field(description="The engine that calculates this version: 'ironcalc' or 'formulas'")
    calc_engine_pinned: bool = Field(description="True when an administrator chose the engine; false when the upload check did")
    fidelity: FidelitySummary | None = Field(description="The fidelity check made at upload")
    named_ranges: list[NamedRangeInfo]
    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    document_storage: DocumentStorageStatus | None = Field(
        default=None, description="The copy in the tenant's document library, made in the background; null for older versions"
    )
    cost: VersionCost | None = Field(default=None, description="What a job costs; null for versions checked before costs were measured")
    tests: VersionTestsSummary | None = Field(
        default=None, description="The version's latest run of the engine's test cases; null when none has run (engine detail only)"
    )
    updated_at: datetime


class EngineVersionCreateResponse(EngineVersionDetail):
    test_api_key: str = Field(description="Key for /jobs/test/... on this version; shown only once")
    warnings: list[str] = Field(default_factory=list, description="Where recalculated cells differ from Excel's saved values")
    suggested_input_schema: dict[str, Any] | None = Field(
        default=None,
        description="A Draft 7 input schema suggested from the workbook (as GET .../suggested-schema gives it: types "
        "from values and number formats, Excel's data validation, array shapes, every input required); nothing is "
        "saved. Null when no suggestion could be made; the upload succeeds either way",
    )
    suggested_output_schema: dict[str, Any] | None = Field(
        default=None, description="A Draft 7 output schema suggested from the workbook; null when none could be made"
    )
    message: str = "Version uploaded. The test API key is shown only once: store it now."


# What a saved schema may hold, said once for both fields (shared/services/schema_safety.py).
SCHEMA_RULES = (
    "JSON Schema Draft 7, or null to remove. `$ref` may point only inside the schema ('#', "
    "'#/definitions/...'): remote (http:, https:) and file: references are refused (422) and "
    "nothing is ever fetched or read. `pattern`, `patternProperties` and `format: regex` are "
    "evaluated in linear time by RE2: patterns it cannot compile (backreferences, lookaround) are "
    "refused. NaN, infinities, lone surrogates, NUL characters and nesting over 64 levels are refused."
)


class EngineVersionUpdate(BaseModel):
    input_schema: dict[str, Any] | None = Field(default=None, description=SCHEMA_RULES)
    output_schema: dict[str, Any] | None = Field(default=None, description=SCHEMA_RULES)
    calc_engine: str | None = Field(default=None, description="Pin the calculation engine ('ironcalc' or 'formulas')")


class EngineVersionUpdateResponse(EngineVersionDetail):
    warnings: list[str]


class EngineVersionActivateResponse(BaseModel):
    id: uuid.UUID
    engine_id: uuid.UUID
    version: str
    is_active: bool
    message: str


class EngineVersionDeleteResponse(BaseModel):
    id: uuid.UUID
    version: str
    message: str
