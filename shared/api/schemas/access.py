"""Bodies of the access endpoints: which consumer may do what with which engine."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, Field

from shared.api.schemas.common import RequestModel


class GrantAccessRequest(RequestModel):
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


class ConsumerAccessSummary(BaseModel):
    consumer_id: uuid.UUID
    consumer_name: str
    last_used_at: datetime | None
    can_execute: bool
    can_view_jobs: bool
    can_download: bool
    can_view_about: bool


class AccessListItem(BaseModel):
    consumer_id: uuid.UUID
    consumer_name: str
    is_active: bool = Field(description="Whether the consumer's key currently works")
    can_execute: bool
    can_view_jobs: bool
    can_download: bool
    can_view_about: bool
    granted_at: datetime


class AccessRevokeResponse(BaseModel):
    message: str


class ConsumerEngineAccessItem(BaseModel):
    engine_id: uuid.UUID
    engine_name: str
    active_version_slug: str | None = Field(
        description="The version string of the engine's active version; null while the engine has none"
    )
    can_execute: bool
    can_view_jobs: bool
    can_download: bool
    can_view_about: bool
