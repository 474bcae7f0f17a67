"""batches (jobs.batch_id, jobs.batch_index) and idempotency keys of execute

Revision ID: 0009
Revises: 0008
"""
from alembic import op
import sqlalchemy as sa

from shared.db.types import UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("batch_id", sa.Uuid(), nullable=True))
    op.add_column("jobs", sa.Column("batch_index", sa.Integer(), nullable=True))
    op.create_index("ix_jobs_batch_index", "jobs", ["batch_id", "batch_index"])
    op.create_table(
        "idempotency_keys",
        sa.Column("tenant_id", sa.Uuid(), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False),
        sa.Column("caller", sa.String(60), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "caller", "key"),
    )
    op.create_table(
        "batches",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("tenant_id", sa.Uuid(), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False),
        sa.Column("engine_id", sa.Uuid(), nullable=False),
        sa.Column("engine_slug", sa.String(100), nullable=False),
        sa.Column("version_id", sa.Uuid(), nullable=False),
        sa.Column("consumer_id", sa.Uuid(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("chunk_size", sa.Integer(), nullable=False),
        sa.Column("invalid", sa.JSON(), nullable=False),
        sa.Column("input_names", sa.JSON(), nullable=False),
        sa.Column("output_names", sa.JSON(), nullable=False),
        sa.Column("webhook_url", sa.Text(), nullable=True),
        sa.Column("webhook_sent_at", UTCDateTime(), nullable=True),
        sa.Column("webhook_response_status", sa.Integer(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("completed_at", UTCDateTime(), nullable=True),
    )
    op.create_index("ix_batches_tenant_id", "batches", ["tenant_id"])


def downgrade() -> None:
    op.drop_index("ix_batches_tenant_id", table_name="batches")
    op.drop_table("batches")
    op.drop_table("idempotency_keys")
    op.drop_index("ix_jobs_batch_index", table_name="jobs")
    op.drop_column("jobs", "batch_index")
    op.drop_column("jobs", "batch_id")
