"""Bodies of the engine endpoints: create, list, detail, settings, deletion."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, Field, field_validator, model_validator

from shared.api.schemas.access import ConsumerAccessSummary
from shared.api.schemas.versions import EngineVersionDetail, EngineVersionSummary
from shared.errors import Invalid
from shared.services import ip_policy

from shared.api.schemas.common import RequestModel


class EngineCreate(RequestModel):
    name: str = Field(min_length=1, max_length=255)
    slug: str | None = Field(default=None, min_length=1, max_length=100, pattern=r"^[a-z0-9-]+$")
    description: str | None = None


class EngineUpdate(RequestModel):
    """Fields left out keep their value. Changing ``slug`` changes the consumer URLs of the engine;
    enabling the whitelist while it is empty refuses every consumer call."""

    name: str | None = Field(default=None, min_length=1, max_length=255)
    slug: str | None = Field(default=None, min_length=1, max_length=100, pattern=r"^[a-z0-9-]+$")
    description: str | None = Field(default=None, description="null removes the description")
    ip_whitelist_enabled: bool | None = Field(
        default=None, description="When true, consumer calls from addresses not in ip_whitelist get 403"
    )
    ip_whitelist: list[str] | None = Field(
        default=None, max_length=500,
        description="IPv4/IPv6 addresses or CIDR ranges (e.g. 203.0.113.7, 10.0.0.0/8, 2001:db8::/32); "
        "stored in canonical form, duplicates dropped; null empties the list",
        examples=[["203.0.113.7", "10.0.0.0/8", "2001:db8::/32"]],
    )

    @model_validator(mode="after")
    def _no_null_for_required_fields(self) -> "EngineUpdate":
        for name in ("name", "slug", "ip_whitelist_enabled"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be null")
        return self

    @field_validator("ip_whitelist")
    @classmethod
    def _addresses_or_ranges(cls, entries: list[str] | None) -> list[str] | None:
        if entries is None:
            return None
        canonical: list[str] = []
        for entry in entries:
            try:
                value = ip_policy.normalise_entry(entry)
            except Invalid as exc:
                raise ValueError(exc.message) from None
            if value not in canonical:
                canonical.append(value)
        return canonical


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


class EngineDeleteResponse(BaseModel):
    message: str
