"""job claimants (who holds a processing job's claim) and the index of jobs processing per tenant

Revision ID: 0010
Revises: 0009
"""
from alembic import op
import sqlalchemy as sa

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

PROCESSING = sa.text("status = 'processing'")


def upgrade() -> None:
    # Nullable, no backfill: a claim made before this release names nobody, and its lease brings it back.
    op.add_column("jobs", sa.Column("claimant", sa.String(255), nullable=True))
    op.create_index(
        "ix_jobs_tenant_processing", "jobs", ["tenant_id", "started_at"], postgresql_where=PROCESSING, sqlite_where=PROCESSING
    )


def downgrade() -> None:
    op.drop_index("ix_jobs_tenant_processing", table_name="jobs")
    op.drop_column("jobs", "claimant")
