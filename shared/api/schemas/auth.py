"""Bodies of the management session endpoints: login, change password."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from shared.api.schemas.common import RequestModel


class LoginRequest(RequestModel):
    email: str = Field(min_length=1, max_length=320)
    password: str = Field(min_length=1, max_length=1024)


class LoginResponse(BaseModel):
    access_token: str
    token_type: str = "bearer"
    expires_at: datetime
    expires_in: int = Field(description="Seconds until the token expires")
    must_change_password: bool


class ChangePasswordRequest(RequestModel):
    current_password: str = Field(min_length=1, max_length=1024)
    new_password: str = Field(min_length=8, max_length=1024)
