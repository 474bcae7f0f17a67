"""The schemas suggested for a version from its workbook (shared/calc/schema_suggestion.py)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from shared.adapters.storage import get_store
from shared.calc.schema_suggestion import suggest_schemas
from shared.services import versions


def for_version(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID) -> dict[str, Any]:
    """``{"input_schema", "output_schema"}`` suggested from the version's stored workbook; nothing is saved."""
    version = versions.get(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version_id)
    return suggest_schemas(get_store().get(version.workbook_key), version.named_ranges)
