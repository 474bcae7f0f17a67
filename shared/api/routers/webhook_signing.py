"""The caller's tenant's webhook signing secret: read it once, rotate it."""

from fastapi import APIRouter

from shared.api.deps import CurrentUser, SessionDep
from shared.api.presenters import webhook_signing as present
from shared.api.schemas.webhook_signing import WebhookSigningSecretResponse
from shared.services import webhook_signing

router = APIRouter(prefix="/tenant/webhook-signing-secret", tags=["tenant"])


@router.get("", response_model=WebhookSigningSecretResponse)
def read_secret(session: SessionDep, user: CurrentUser):
    """The secret that signs the tenant's webhooks (`Sheetcalc-Signature`), made if there is none yet.

    Shown once: the first read answers it, later reads answer `secret` null. Rotate to see a new one."""
    return present.secret(webhook_signing.read(session, tenant_id=user.tenant_id))


@router.post("/rotate", response_model=WebhookSigningSecretResponse)
def rotate_secret(session: SessionDep, user: CurrentUser):
    """Replace the secret; the answer shows the new one. For 24 hours the replaced secret signs too (two `v1=`)."""
    return present.secret(webhook_signing.rotate(session, tenant_id=user.tenant_id))
