"""reproducible runs: the workbook's content hash on versions, and what each job was calculated from

Revision ID: 0007
Revises: 0006
"""
from alembic import op
import sqlalchemy as sa

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable, no backfill: versions uploaded before have no hash (reading every stored workbook
    # in a migration would hold the deploy); their jobs record null.
    op.add_column("engine_versions", sa.Column("content_sha256", sa.String(64), nullable=True))
    op.add_column("jobs", sa.Column("version_sha256", sa.String(64), nullable=True))
    op.add_column("jobs", sa.Column("calc_engine", sa.String(32), nullable=True))


def downgrade() -> None:
    op.drop_column("jobs", "calc_engine")
    op.drop_column("jobs", "version_sha256")
    op.drop_column("engine_versions", "content_sha256")
