"""Bodies of the consumer endpoints (management): create, list, activate, delete."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, Field

from shared.api.schemas.common import RequestModel


class ConsumerCreate(RequestModel):
    name: str = Field(min_length=1, max_length=255)


class ConsumerCreateResponse(BaseModel):
    id: uuid.UUID
    name: str
    api_key: str
    created_at: datetime
    message: str = "Store this API key now: it is shown only once."


class ConsumerListItem(BaseModel):
    id: uuid.UUID
    name: str
    api_key: str = Field(description="Masked: the tenant prefix and the last four characters")
    created_at: datetime
    last_used_at: datetime | None = None
    is_active: bool


class ConsumerUpdate(RequestModel):
    is_active: bool | None = Field(default=None, description="false stops the key working at once; true restores it")


class ConsumerUpdateResponse(BaseModel):
    id: uuid.UUID
    name: str
    is_active: bool


class ConsumerDeleteResponse(BaseModel):
    message: str
