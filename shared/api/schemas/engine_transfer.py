"""Bodies of the engine export and import endpoints."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, Field

from shared.api.schemas.engines import EngineListItem


class ImportedVersion(BaseModel):
    id: uuid.UUID
    version: str
    calc_engine: str
    calc_engine_pinned: bool
    is_active: bool
    test_api_key: str = Field(description="The version's new test key, shown only this once")
    warnings: list[str]


class EngineImportResponse(BaseModel):
    engine: EngineListItem
    versions: list[ImportedVersion]
    changes: list[str] = Field(description="What the import changed or left out, one sentence each")
    test_cases_imported: int | None = Field(description="null when the archive holds no test cases")
