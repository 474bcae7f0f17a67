"""The tenant's webhook signing secret as the management API shows it."""

from __future__ import annotations

from shared.api.schemas.webhook_signing import WebhookSigningSecretResponse
from shared.services.webhook_signing import SecretView


def secret(view: SecretView) -> WebhookSigningSecretResponse:
    return WebhookSigningSecretResponse(
        secret=view.secret, created_at=view.created_at, rotated_at=view.rotated_at, previous_expires_at=view.previous_expires_at,
    )
