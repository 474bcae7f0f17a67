"""What changed between two versions of an engine: named ranges, schemas, formulas and constants.

Named ranges and schemas come from the versions' rows; formulas and constants from the two stored
workbooks, compared in a fenced child (``shared.calc.sandbox.workbook_diff``: read-only streaming,
at most ``CELLS_SHOWN`` cells listed per sheet and kind, the counts in full, ``complete`` false
when the fence's time ran out). The diff reads from ``against`` (default: the active version) to
``version``: "added" is in ``version`` and not in ``against``.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from shared.adapters.storage import get_store
from shared.calc import sandbox
from shared.config import get_settings
from shared.db.models import EngineVersion
from shared.errors import Invalid
from shared.services import engines as engine_service
from shared.services import versions

CELLS_SHOWN = 200
NO_ACTIVE = "The engine has no active version to compare with; choose one with ?against="
RANGE_FIELDS = ("sheet", "ref", "rows", "cols", "role", "is_date")


def _props(schema: dict | None) -> dict[str, Any]:
    props = (schema or {}).get("properties")
    return props if isinstance(props, dict) else {}


def _role(version: EngineVersion, name: str, kind: str | None) -> str:
    """Input or output as the version's schemas say (its named range's kind when neither does)."""
    if name in _props(version.input_schema):
        return "input"
    if name in _props(version.output_schema):
        return "output"
    return kind or "unused"


def _ranges(version: EngineVersion) -> dict[str, dict[str, Any]]:
    ranges = {}
    for r in version.named_ranges or []:
        ranges[r["name"].lower()] = {
            "name": r["name"], "sheet": r.get("sheet"), "ref": r.get("ref"), "rows": r.get("rows"), "cols": r.get("cols"),
            "role": _role(version, r["name"], r.get("kind")), "is_date": bool(r.get("is_date", False)),
        }
    return ranges


def named_range_changes(before: EngineVersion, after: EngineVersion) -> dict[str, list]:
    """Named ranges added, removed, and changed (address, shape, role), by name (Excel's names
    ignore case)."""
    old, new = _ranges(before), _ranges(after)
    changed = []
    for key in new.keys() & old.keys():
        fields = [f for f in RANGE_FIELDS if old[key][f] != new[key][f]]
        if fields:
            changed.append({"name": new[key]["name"], "fields": fields, "from": old[key], "to": new[key]})
    return {
        "added": sorted((new[k] for k in new.keys() - old.keys()), key=lambda r: r["name"].lower()),
        "removed": sorted((old[k] for k in old.keys() - new.keys()), key=lambda r: r["name"].lower()),
        "changed": sorted(changed, key=lambda r: r["name"].lower()),
    }


def schema_changes(before: dict | None, after: dict | None) -> dict[str, Any]:
    """Properties added, removed, and changed (the keywords whose values differ: type, minimum,
    enum...), and the required names added or removed."""
    old, new = _props(before), _props(after)
    changed = []
    for name in sorted(new.keys() & old.keys()):
        a, b = old[name] if isinstance(old[name], dict) else {}, new[name] if isinstance(new[name], dict) else {}
        keywords = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        if keywords:
            changed.append({"name": name, "keywords": keywords, "from": a, "to": b})
    req_old, req_new = set((before or {}).get("required") or []), set((after or {}).get("required") or [])
    return {
        "added": sorted(new.keys() - old.keys()), "removed": sorted(old.keys() - new.keys()), "changed": changed,
        "required_added": sorted(req_new - req_old), "required_removed": sorted(req_old - req_new),
    }


def _brief(version: EngineVersion) -> dict[str, Any]:
    return {"id": str(version.id), "version": version.version, "filename": version.filename}


def diff(
    session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, version_id: uuid.UUID, against_id: uuid.UUID | None = None,
) -> dict[str, Any]:
    """The changes from ``against_id`` (default: the engine's active version) to ``version_id``."""
    after = versions.get(session, tenant_id=tenant_id, engine_id=engine_id, version_id=version_id)
    if against_id is None:
        against_id = engine_service.get(session, tenant_id=tenant_id, engine_id=engine_id).active_version_id
        if against_id is None:
            raise Invalid(NO_ACTIVE)
    before = versions.get(session, tenant_id=tenant_id, engine_id=engine_id, version_id=against_id)
    store = get_store()
    if before.id == after.id:
        cells = {"complete": True, "formulas_changed": 0, "constants_changed": 0, "sheets_added": [], "sheets_removed": [], "sheets": []}
    else:
        settings = get_settings()
        cells = sandbox.workbook_diff(store.get(before.workbook_key), store.get(after.workbook_key), cap=CELLS_SHOWN,
                                      fence=sandbox.Fence.from_settings(settings))
    return {
        "version": _brief(after), "against": _brief(before),
        "same_workbook": bool(before.content_sha256) and before.content_sha256 == after.content_sha256,
        "named_ranges": named_range_changes(before, after),
        "input_schema": schema_changes(before.input_schema, after.input_schema),
        "output_schema": schema_changes(before.output_schema, after.output_schema),
        "cells": {**cells, "cells_shown_per_sheet": CELLS_SHOWN},
    }
