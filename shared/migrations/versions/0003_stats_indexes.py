"""covering indexes on jobs for usage statistics

The three (key, created_at) indexes on jobs also carry, on PostgreSQL, the columns the
statistics aggregate, so a stats query is an index-only scan of a narrow index instead of a
scan of the wide job rows (inputs, outputs). Other databases get the plain key indexes, as before.

On PostgreSQL, statistics on the UTC day of created_at let the planner see that grouping by day
makes a few hundred groups (a parallel hash aggregate), not one per job (a sort of every row).

Revision ID: 0003
Revises: 0002
"""
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

STATS_COLUMNS = ["status", "execution_time_ms", "is_test"]
INDEXES = {
    "ix_jobs_tenant_created": (["tenant_id", "created_at"], ["engine_id", "consumer_id", *STATS_COLUMNS]),
    "ix_jobs_engine_created": (["engine_id", "created_at"], ["tenant_id", "consumer_id", "version_id", *STATS_COLUMNS]),
    "ix_jobs_consumer_created": (["consumer_id", "created_at"], ["tenant_id", "engine_id", *STATS_COLUMNS]),
}


def upgrade() -> None:
    for name, (columns, include) in INDEXES.items():
        with op.batch_alter_table("jobs") as batch:
            batch.drop_index(name)
            batch.create_index(name, columns, unique=False, postgresql_include=include)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE STATISTICS IF NOT EXISTS st_jobs_created_day ON (CAST(created_at AS date)) FROM jobs")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP STATISTICS IF EXISTS st_jobs_created_day")
    for name, (columns, _) in INDEXES.items():
        with op.batch_alter_table("jobs") as batch:
            batch.drop_index(name)
            batch.create_index(name, columns, unique=False)
