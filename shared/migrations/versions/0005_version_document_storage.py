"""engine version: the copy of its workbook in the tenant's document library

Revision ID: 0005
Revises: 0004
"""
from alembic import op
import sqlalchemy as sa

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("engine_versions") as batch:
        batch.add_column(sa.Column("document_storage", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("engine_versions") as batch:
        batch.drop_column("document_storage")
