"""engine_versions.cost and .lane: what a job on the version costs, measured when it was checked,
and the lane (queue and workers) its jobs take

Revision ID: 0011
Revises: 0010
"""
from alembic import op
import sqlalchemy as sa

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("engine_versions", sa.Column("cost", sa.JSON(), nullable=True))
    op.add_column("engine_versions", sa.Column("lane", sa.String(16), nullable=False, server_default="standard"))


def downgrade() -> None:
    with op.batch_alter_table("engine_versions") as batch:
        batch.drop_column("lane")
        batch.drop_column("cost")
