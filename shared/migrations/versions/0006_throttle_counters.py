"""throttle counters (login throttle, consumer rate limit) and the index of unfinished jobs

Revision ID: 0006
Revises: 0005
"""
from alembic import op
import sqlalchemy as sa

from shared.db.types import UTCDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

UNFINISHED = sa.text("status IN ('pending', 'processing')")


def upgrade() -> None:
    op.create_table(
        "throttle_counters",
        sa.Column("key", sa.String(100), primary_key=True),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("window_started_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_throttle_counters_expires_at", "throttle_counters", ["expires_at"])
    op.create_index("ix_jobs_tenant_unfinished", "jobs", ["tenant_id"], postgresql_where=UNFINISHED, sqlite_where=UNFINISHED)


def downgrade() -> None:
    op.drop_index("ix_jobs_tenant_unfinished", table_name="jobs")
    op.drop_index("ix_throttle_counters_expires_at", table_name="throttle_counters")
    op.drop_table("throttle_counters")
