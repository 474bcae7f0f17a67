"""The tenant's webhook signing secret as the management API shows it."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class WebhookSigningSecretResponse(BaseModel):
    secret: str | None = Field(
        description="The secret that signs the tenant's webhooks: shown by the first read and by a rotation, null afterwards "
        "(rotate to see a new one)"
    )
    created_at: datetime = Field(description="When the tenant's first secret was made")
    rotated_at: datetime | None = Field(description="When the secret was last rotated")
    previous_expires_at: datetime | None = Field(
        description="Until when the replaced secret also signs (a second v1= in Sheetcalc-Signature); null when it no longer does"
    )
