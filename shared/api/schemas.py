"""Request and response bodies, named as in the interface specification."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class ErrorResponse(BaseModel):
    detail: str


class MessageResponse(BaseModel):
    message: str


class HealthResponse(BaseModel):
    status: str
    version: str


# --- auth -------------------------------------------------------------------------------------


class LoginRequest(BaseModel):
    email: str = Field(min_length=1, max_length=320)
    password: str = Field(min_length=1, max_length=1024)


class LoginResponse(BaseModel):
    access_token: str
    token_type: str = "bearer"
    expires_at: datetime
    expires_in: int = Field(description="Seconds until the token expires")
    must_change_password: bool


class ChangePasswordRequest(BaseModel):
    current_password: str = Field(min_length=1, max_length=1024)
    new_password: str = Field(min_length=8, max_length=1024)


# --- engines and versions ---------------------------------------------------------------------


class EngineCreate(BaseModel):
    name: str = Field(min_length=1, max_length=255)
    slug: str | None = Field(default=None, min_length=1, max_length=100, pattern=r"^[a-z0-9-]+$")
    description: str | None = None


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
    updated_at: datetime


class EngineVersionCreateResponse(EngineVersionDetail):
    test_api_key: str = Field(description="Key for /jobs/test/... on this version; shown only once")
    warnings: list[str] = Field(default_factory=list, description="Where recalculated cells differ from Excel's saved values")
    message: str = "Version uploaded. The test API key is shown only once: store it now."


class EngineVersionUpdate(BaseModel):
    input_schema: dict[str, Any] | None = Field(default=None, description="JSON Schema Draft 7, or null to remove")
    output_schema: dict[str, Any] | None = Field(default=None, description="JSON Schema Draft 7, or null to remove")
    calc_engine: str | None = Field(default=None, description="Pin the calculation engine ('ironcalc' or 'formulas')")


class EngineVersionUpdateResponse(EngineVersionDetail):
    warnings: list[str]


class EngineVersionActivateResponse(BaseModel):
    id: uuid.UUID
    engine_id: uuid.UUID
    version: str
    is_active: bool
    message: str


class ConsumerAccessSummary(BaseModel):
    consumer_id: uuid.UUID
    consumer_name: str
    last_used_at: datetime | None
    can_execute: bool
    can_view_jobs: bool
    can_download: bool
    can_view_about: bool


class EngineListItem(BaseModel):
    id: uuid.UUID
    name: str
    slug: str
    description: str | None
    ip_whitelist_enabled: bool
    active_version: EngineVersionSummary | None
    created_at: datetime


class EngineDetail(BaseModel):
    id: uuid.UUID
    name: str
    slug: str
    description: str | None
    active_version_id: uuid.UUID | None
    ip_whitelist_enabled: bool
    ip_whitelist: list[str] | None
    versions: list[EngineVersionDetail]
    consumers: list[ConsumerAccessSummary]
    created_at: datetime


# --- consumers and access ---------------------------------------------------------------------


class ConsumerCreate(BaseModel):
    name: str = Field(min_length=1, max_length=255)


class ConsumerCreateResponse(BaseModel):
    id: uuid.UUID
    name: str
    api_key: str
    created_at: datetime
    message: str = "Store this API key now: it is shown only once."


class GrantAccessRequest(BaseModel):
    """Flags left out keep their current value (false for a new grant)."""

    can_execute: bool | None = None
    can_view_jobs: bool | None = None
    can_download: bool | None = None
    can_view_about: bool | None = None


class AccessPermissionResponse(BaseModel):
    consumer_id: uuid.UUID
    engine_id: uuid.UUID
    can_execute: bool
    can_view_jobs: bool
    can_download: bool
    can_view_about: bool


# --- consumer API -----------------------------------------------------------------------------


class ExecuteRequest(BaseModel):
    model_config = ConfigDict(json_schema_extra={"example": {"inputs": {"principal": 250000, "annual_rate": 0.045, "years": 30}}})

    inputs: dict[str, Any] = Field(description="Values keyed by input name (named range)")
    webhook_url: str | None = Field(default=None, max_length=2048, description="http:// or https:// address to POST the result to")

    @field_validator("webhook_url")
    @classmethod
    def _http_only(cls, value: str | None) -> str | None:
        if value is not None and not value.lower().startswith(("http://", "https://")):
            raise ValueError("webhook_url must begin with http:// or https://")
        return value


class ExecuteResponse(BaseModel):
    job_id: uuid.UUID
    status: str
    message: str
    created_at: datetime


class JobResponse(BaseModel):
    """Fields by status: see the interface specification, Consumer: jobs, rule 3."""

    job_id: uuid.UUID
    status: str
    inputs: dict[str, Any] | None = None
    outputs: dict[str, Any] | None = None
    error_message: str | None = None
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None = None
    execution_time_ms: int | None = None
    webhook_url: str | None = None
    webhook_sent_at: datetime | None = None
    webhook_response_status: int | None = None


class AboutResponse(BaseModel):
    name: str
    slug: str
    description: str | None
    version: str
    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    updated_at: datetime


class DownloadResponse(BaseModel):
    download_url: str
    filename: str
    expires_at: datetime
