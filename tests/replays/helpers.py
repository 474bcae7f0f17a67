"""Crafted versions of the loan workbook for diffs and replays, uploaded through the service."""

from __future__ import annotations

import io
import uuid

import openpyxl
from openpyxl.workbook.defined_name import DefinedName

from shared.db.session import session_scope
from shared.repositories import tenants as tenant_repo
from shared.services import versions


def edited(loan_xlsx: bytes, edit) -> bytes:
    """The loan workbook with ``edit(workbook)`` applied, saved by openpyxl."""
    book = openpyxl.load_workbook(io.BytesIO(loan_xlsx))
    edit(book)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def rename(book, old: str, new: str, ref: str | None = None) -> None:
    """Move or rename a workbook-level name."""
    target = book.defined_names[old]
    del book.defined_names[old]
    book.defined_names[new] = DefinedName(new, attr_text=ref or target.attr_text)


def upload(deployed, data: bytes, version: str) -> str:
    """``data`` uploaded as a new (inactive) version of the deployed engine; its id."""
    tenant_id = uuid.UUID(deployed.admin.tenant_id)
    with session_scope() as session:
        tenant = tenant_repo.get_tenant(session, tenant_id=tenant_id)
        uploaded = versions.upload(session, tenant=tenant, engine_id=uuid.UUID(deployed.engine_id), version=version,
                                   filename=f"loan-{version}.xlsx", data=data)
        return str(uploaded.version.id)
