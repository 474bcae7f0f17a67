"""daily rollups of jobs for usage statistics, backfilled from the existing jobs

Five tables add up the jobs created on each UTC day: by engine and version (test-key jobs
apart), by consumer, by consumer and engine, and two histograms of execution times (tenant-wide
and per engine) for exact percentiles. From here on shared.repositories.rollups keeps them in the
transaction of every job change; this migration fills them from the jobs already there, with the
same rules (names are those of the latest job of each row).

Revision ID: 0004
Revises: 0003
"""
from alembic import op
import sqlalchemy as sa
import shared.db.types

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

COUNTS = ["total_calls", "completed_calls", "failed_calls", "timed_calls", "time_sum_ms", "last_created_at"]
# table: (key columns after tenant_id and day, name columns, only jobs of a consumer)
ROLLUPS = {
    "job_stats_daily": (["engine_id", "version_id", "is_test"], ["engine_name", "engine_slug", "version"], False),
    "job_consumer_stats_daily": (["consumer_id"], ["consumer_name"], True),
    "job_consumer_engine_stats_daily": (["consumer_id", "engine_id"], ["consumer_name", "engine_name", "engine_slug"], True),
}
HISTOGRAMS = {"job_time_histogram_daily": [], "job_engine_time_histogram_daily": ["engine_id"]}


def _count_columns() -> list[sa.Column]:
    return [
        sa.Column("total_calls", sa.Integer(), nullable=False),
        sa.Column("completed_calls", sa.Integer(), nullable=False),
        sa.Column("failed_calls", sa.Integer(), nullable=False),
        sa.Column("timed_calls", sa.Integer(), nullable=False),
        sa.Column("time_sum_ms", sa.BigInteger(), nullable=False),
        sa.Column("last_created_at", shared.db.types.UTCDateTime(), nullable=False),
    ]


def _tenant() -> list:
    return [sa.Column("tenant_id", sa.Uuid(), nullable=False), sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE")]


def _create_tables() -> None:
    op.create_table(
        "job_stats_daily", *_tenant(),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("engine_id", sa.Uuid(), nullable=False),
        sa.Column("version_id", sa.Uuid(), nullable=False),
        sa.Column("is_test", sa.Boolean(), nullable=False),
        sa.Column("engine_name", sa.String(length=255), nullable=False),
        sa.Column("engine_slug", sa.String(length=100), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        *_count_columns(),
        sa.PrimaryKeyConstraint("tenant_id", "day", "engine_id", "version_id", "is_test"),
    )
    op.create_table(
        "job_consumer_stats_daily", *_tenant(),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("consumer_id", sa.Uuid(), nullable=False),
        sa.Column("consumer_name", sa.String(length=255), nullable=True),
        *_count_columns(),
        sa.PrimaryKeyConstraint("tenant_id", "day", "consumer_id"),
    )
    op.create_index("ix_job_consumer_stats_daily_consumer", "job_consumer_stats_daily", ["tenant_id", "consumer_id", "day"])
    op.create_table(
        "job_consumer_engine_stats_daily", *_tenant(),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("consumer_id", sa.Uuid(), nullable=False),
        sa.Column("engine_id", sa.Uuid(), nullable=False),
        sa.Column("consumer_name", sa.String(length=255), nullable=True),
        sa.Column("engine_name", sa.String(length=255), nullable=False),
        sa.Column("engine_slug", sa.String(length=100), nullable=False),
        *_count_columns(),
        sa.PrimaryKeyConstraint("tenant_id", "consumer_id", "engine_id", "day"),
    )
    op.create_index("ix_job_consumer_engine_stats_daily_engine", "job_consumer_engine_stats_daily", ["tenant_id", "engine_id", "day"])
    op.create_table(
        "job_time_histogram_daily", *_tenant(),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("execution_time_ms", sa.Integer(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "day", "execution_time_ms"),
    )
    op.create_table(
        "job_engine_time_histogram_daily", *_tenant(),
        sa.Column("engine_id", sa.Uuid(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("execution_time_ms", sa.Integer(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "engine_id", "day", "execution_time_ms"),
    )


def backfill_statements(dialect: str) -> list[str]:
    """INSERT ... SELECT ... GROUP BY over the jobs, one per table (the benchmark's loader runs these too)."""
    # created_at is naive UTC, so its date part is the UTC day (as shared.repositories.stats reads it).
    day = "date(created_at)" if dialect == "sqlite" else "CAST(created_at AS date)"
    statements = []
    for table, (keys, names, consumers_only) in ROLLUPS.items():
        group = ["tenant_id", "day", *keys]
        # The names of each group's latest job: FIRST_VALUE over the group, newest first.
        window = f"PARTITION BY tenant_id, {day}, {', '.join(keys)} ORDER BY created_at DESC"
        latest = ", ".join(f"FIRST_VALUE({n}) OVER ({window}) AS latest_{n}" for n in names)
        statements.append(
            f"INSERT INTO {table} ({', '.join(group)}, {', '.join(names)}, {', '.join(COUNTS)}) "
            f"SELECT {', '.join(group)}, {', '.join(f'MAX(latest_{n})' for n in names)}, COUNT(*), "
            "SUM(CASE WHEN status = 'completed' THEN 1 ELSE 0 END), SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END), "
            "COUNT(execution_time_ms), COALESCE(SUM(execution_time_ms), 0), MAX(created_at) "
            f"FROM (SELECT tenant_id, {', '.join(keys)}, status, execution_time_ms, created_at, {day} AS day, {latest} "
            f"FROM jobs{' WHERE consumer_id IS NOT NULL' if consumers_only else ''}) AS job_days "
            f"GROUP BY {', '.join(group)}"
        )
    for table, keys in HISTOGRAMS.items():
        group = ", ".join(["tenant_id", *keys, "day", "execution_time_ms"])
        statements.append(
            f"INSERT INTO {table} ({group}, count) SELECT {group}, COUNT(*) "
            f"FROM (SELECT tenant_id, {''.join(k + ', ' for k in keys)}{day} AS day, execution_time_ms FROM jobs "
            "WHERE execution_time_ms IS NOT NULL) AS job_days "
            f"GROUP BY {group}"
        )
    return statements


def upgrade() -> None:
    _create_tables()
    for statement in backfill_statements(op.get_bind().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for table in ["job_engine_time_histogram_daily", "job_time_histogram_daily", *reversed(ROLLUPS)]:
        op.drop_table(table)
