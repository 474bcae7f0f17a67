"""The schemas suggested for a version from its workbook (shared/calc/schema_suggestion.py)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from shared.adapters.storage import get_store
from shared.calc import sandbox
from shared.config import get_settings
from shared.errors import ServiceUnavailable
from shared.services import versions

NOT_SUGGESTED = "No schema could be suggested for this workbook within the time and memory allowed"


def for_version(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID) -> dict[str, Any]:
    """``{"input_schema", "output_schema"}`` suggested from the version's stored workbook; nothing is saved."""
    version = versions.get(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version_id)
    # openpyxl reads the tenant's workbook in the fenced child, never in the API process.
    suggested = sandbox.suggest_schemas(get_store().get(version.workbook_key), version.named_ranges,
                                        sandbox.Fence.from_settings(get_settings()))
    if suggested is None:
        raise ServiceUnavailable(NOT_SUGGESTED)
    return suggested
