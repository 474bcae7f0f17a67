"""test cases per engine, test runs per version, and the release history of each engine

Revision ID: 0012
Revises: 0011
"""
from alembic import op
import sqlalchemy as sa

from shared.db.types import UTCDateTime

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def _owned() -> list[sa.Column]:
    return [
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("tenant_id", sa.Uuid(), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "test_cases",
        *_owned(),
        sa.Column("engine_id", sa.Uuid(), sa.ForeignKey("engines.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("inputs", sa.JSON(), nullable=False),
        sa.Column("expected", sa.JSON(), nullable=False),
        sa.Column("tolerances", sa.JSON(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("source_job_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_test_cases_tenant_id", "test_cases", ["tenant_id"])
    op.create_index("ix_test_cases_engine_id", "test_cases", ["engine_id"])
    op.create_table(
        "test_runs",
        *_owned(),
        sa.Column("engine_id", sa.Uuid(), sa.ForeignKey("engines.id", ondelete="CASCADE"), nullable=False),
        sa.Column("version_id", sa.Uuid(), sa.ForeignKey("engine_versions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("passed", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("results", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
    )
    op.create_index("ix_test_runs_tenant_id", "test_runs", ["tenant_id"])
    op.create_index("ix_test_runs_engine_id", "test_runs", ["engine_id"])
    op.create_index("ix_test_runs_version_created", "test_runs", ["version_id", "created_at"])
    op.create_table(
        "releases",
        *_owned(),
        sa.Column("engine_id", sa.Uuid(), sa.ForeignKey("engines.id", ondelete="CASCADE"), nullable=False),
        sa.Column("version_id", sa.Uuid(), nullable=False),
        sa.Column("version", sa.String(100), nullable=False),
        sa.Column("previous_version_id", sa.Uuid(), nullable=True),
        sa.Column("previous_version", sa.String(100), nullable=True),
        sa.Column("activated_by", sa.Uuid(), nullable=True),
        sa.Column("activated_by_email", sa.String(320), nullable=True),
        sa.Column("activated_at", UTCDateTime(), nullable=False),
        sa.Column("test_run_summary", sa.JSON(), nullable=True),
        sa.Column("replay_summary", sa.JSON(), nullable=True),
        sa.Column("gate_reasons", sa.JSON(), nullable=True),
        sa.Column("override_reason", sa.Text(), nullable=True),
    )
    op.create_index("ix_releases_tenant_id", "releases", ["tenant_id"])
    op.create_index("ix_releases_engine_activated", "releases", ["engine_id", "activated_at"])


def downgrade() -> None:
    op.drop_index("ix_releases_engine_activated", table_name="releases")
    op.drop_index("ix_releases_tenant_id", table_name="releases")
    op.drop_table("releases")
    op.drop_index("ix_test_runs_version_created", table_name="test_runs")
    op.drop_index("ix_test_runs_engine_id", table_name="test_runs")
    op.drop_index("ix_test_runs_tenant_id", table_name="test_runs")
    op.drop_table("test_runs")
    op.drop_index("ix_test_cases_engine_id", table_name="test_cases")
    op.drop_index("ix_test_cases_tenant_id", table_name="test_cases")
    op.drop_table("test_cases")
