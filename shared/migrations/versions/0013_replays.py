"""replays: shadow replays of a version (recorded production jobs calculated again on a
candidate version and compared); they make no job rows

Revision ID: 0013
Revises: 0012
"""
from alembic import op
import sqlalchemy as sa

from shared.db.types import UTCDateTime

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "replays",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("tenant_id", sa.Uuid(), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False),
        sa.Column("engine_id", sa.Uuid(), sa.ForeignKey("engines.id", ondelete="CASCADE"), nullable=False),
        sa.Column("version_id", sa.Uuid(), sa.ForeignKey("engine_versions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("baseline_version_id", sa.Uuid(), nullable=False),
        sa.Column("baseline_version", sa.String(100), nullable=False),
        sa.Column("requested", sa.Integer(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("processed", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("tolerance", sa.JSON(), nullable=True),
        sa.Column("job_ids", sa.JSON(), nullable=False),
        sa.Column("state", sa.JSON(), nullable=True),
        sa.Column("report", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("claimed_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("completed_at", UTCDateTime(), nullable=True),
    )
    op.create_index("ix_replays_engine_id", "replays", ["engine_id"])
    op.create_index("ix_replays_version_created", "replays", ["tenant_id", "version_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_replays_version_created", table_name="replays")
    op.drop_index("ix_replays_engine_id", table_name="replays")
    op.drop_table("replays")
