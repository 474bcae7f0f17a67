"""Bodies of the user endpoints (tenant users who administer the tenant)."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, Field

from shared.api.schemas.common import RequestModel


class UserItem(BaseModel):
    id: uuid.UUID
    email: str
    is_active: bool
    must_change_password: bool = Field(description="True until the user replaces a temporary password")
    last_login_at: datetime | None
    created_at: datetime


class UserListResponse(BaseModel):
    users: list[UserItem] = Field(description="Every user of the caller's tenant, oldest first")
    total: int


class UserCreate(RequestModel):
    email: str = Field(min_length=3, max_length=320, description="Unique across the service; stored lower-case")


class UserCreateResponse(BaseModel):
    user: UserItem
    temporary_password: str = Field(description="Shown only this once; the user must change it at first login")
    message: str = "User created. The temporary password is shown only once; it must be changed at first login."


class UserUpdate(RequestModel):
    """Fields left out (or null) are unchanged."""

    email: str | None = Field(default=None, min_length=3, max_length=320)
    is_active: bool | None = Field(default=None, description="false ends the user's session and blocks login")
    reset_password: bool = Field(default=False, description="Generate a new temporary password and end the user's session")


class UserUpdateResponse(BaseModel):
    user: UserItem
    temporary_password: str | None = Field(description="The new temporary password when reset_password was true (shown once); null otherwise")
    message: str
