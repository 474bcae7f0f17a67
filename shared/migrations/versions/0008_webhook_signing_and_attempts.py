"""webhook signing secrets (per tenant, encrypted) and the webhook delivery log

Revision ID: 0008
Revises: 0007
"""
from alembic import op
import sqlalchemy as sa

from shared.db.types import UTCDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook_signing_secrets",
        sa.Column("tenant_id", sa.Uuid(), sa.ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("secret_encrypted", sa.Text(), nullable=False),
        sa.Column("previous_secret_encrypted", sa.Text(), nullable=True),
        sa.Column("rotated_at", UTCDateTime(), nullable=True),
        sa.Column("revealed_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "webhook_attempts",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("tenant_id", sa.Uuid(), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False),
        sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("redelivery", sa.Boolean(), nullable=False),
        sa.Column("requested_at", UTCDateTime(), nullable=False),
        sa.Column("attempted_at", UTCDateTime(), nullable=True),
        sa.Column("target_url", sa.Text(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("response_excerpt", sa.Text(), nullable=True),
        sa.Column("error_class", sa.String(40), nullable=True),
    )
    op.create_index("ix_webhook_attempts_tenant_id", "webhook_attempts", ["tenant_id"])
    op.create_index("ix_webhook_attempts_job", "webhook_attempts", ["job_id", "requested_at"])


def downgrade() -> None:
    op.drop_index("ix_webhook_attempts_job", table_name="webhook_attempts")
    op.drop_index("ix_webhook_attempts_tenant_id", table_name="webhook_attempts")
    op.drop_table("webhook_attempts")
    op.drop_table("webhook_signing_secrets")
