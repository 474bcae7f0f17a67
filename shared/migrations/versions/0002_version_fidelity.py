"""engine version fidelity report and pinned engine

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("engine_versions") as batch:
        batch.add_column(sa.Column("calc_engine_pinned", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("fidelity_report", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("engine_versions") as batch:
        batch.drop_column("fidelity_report")
        batch.drop_column("calc_engine_pinned")
