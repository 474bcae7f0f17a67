"""The tables. Every tenant-owned row carries ``tenant_id``; ids are UUIDs.

Jobs keep copies of the names they report (engine name and slug, version string, consumer
name) and hold no foreign keys to engines or versions, so job history outlives them.
"""

from __future__ import annotations

import enum
import uuid
from datetime import date, datetime
from typing import Any

from sqlalchemy import false as sa_false
from sqlalchemy import JSON, BigInteger, Boolean, Date, ForeignKey, Index, Integer, PrimaryKeyConstraint, String, Text, UniqueConstraint, Uuid
from sqlalchemy import text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from shared.db.types import StrEnumText, UTCDateTime, utcnow


class Base(DeclarativeBase):
    """Declarative base of every model."""

    type_annotation_map = {datetime: UTCDateTime, dict[str, Any]: JSON, list[Any]: JSON}


class JobStatus(enum.StrEnum):
    """The four states of a job; each compares equal to, and serialises as, its string value."""

    PENDING = "pending"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"


# A job that has not finished, as SQL: the predicate of the partial index ix_jobs_tenant_unfinished,
# written the same way by the queries that should use it.
UNFINISHED_JOBS_SQL = "status IN ('pending', 'processing')"
# A job being processed, as SQL: the predicate of the partial index ix_jobs_tenant_processing
# (the per-tenant cap at claim time counts these; the dev stack's start looks up their claimants).
PROCESSING_JOBS_SQL = "status = 'processing'"


def _uuid() -> uuid.UUID:
    return uuid.uuid4()


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=_uuid)
    slug: Mapped[str] = mapped_column(String(100), unique=True)
    name: Mapped[str] = mapped_column(String(255))
    # Document-storage settings; secrets inside are encrypted (shared.security.crypto).
    storage_settings: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class User(Base):
    __tablename__ = "users"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=_uuid)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    must_change_password: Mapped[bool] = mapped_column(Boolean, default=True)
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    session_token_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    last_login_at: Mapped[datetime | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Engine(Base):
    __tablename__ = "engines"
    __table_args__ = (UniqueConstraint("tenant_id", "slug", name="uq_engines_tenant_slug"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=_uuid)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    slug: Mapped[str] = mapped_column(String(100))
    description: Mapped[str | None] = mapped_column(Text, nullable=True)
    # The single active version lives here, so "at most one active" holds by construction.
    active_version_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    ip_whitelist_enabled: Mapped[bool] = mapped_column(Boolean, default=False)
    ip_whitelist: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class EngineVersion(Base):
    __tablename__ = "engine_versions"
    __table_args__ = (UniqueConstraint("engine_id", "version", name="uq_engine_versions_engine_version"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=_uuid)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    engine_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("engines.id", ondelete="CASCADE"), index=True)
    version: Mapped[str] = mapped_column(String(100))
    filename: Mapped[str] = mapped_column(String(255))
    file_size: Mapped[int] = mapped_column(Integer)
    workbook_key: Mapped[str] = mapped_column(String(512))
    prepared_key: Mapped[str | None] = mapped_column(String(512), nullable=True)
    calc_engine: Mapped[str] = mapped_column(String(32), default="ironcalc")
    # True when an administrator chose calc_engine; False when the fidelity check at upload did.
    calc_engine_pinned: Mapped[bool] = mapped_column(Boolean, default=False, server_default=sa_false())
    # The fidelity check run at upload (summary per engine, capped list of mismatches).
    fidelity_report: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    named_ranges: Mapped[list[Any]] = mapped_column(JSON)
    input_schema: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    output_schema: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # The copy of the workbook in the tenant's document library (status, web_url, path, error,
    # stored_at), made by a worker after the upload; null for versions uploaded before copies.
    document_storage: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # SHA-256 (hex) of the uploaded workbook's bytes; null for versions uploaded before it was kept (0007).
    content_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # What a job on it costs, measured in the fence when it was checked (upload, pinned engine):
    # engine, calc_ms_p50, calc_ms_p95, peak_memory_mb, runs (shared/services/version_costs.py); null
    # for versions checked before costs were measured (0011).
    cost: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # Which queue and workers its jobs take: "standard", or "slow" when a job costs more than the
    # slow-lane threshold (decided with the cost, shared/services/version_costs.py).
    lane: Mapped[str] = mapped_column(String(16), default="standard", server_default="standard")
    test_key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Consumer(Base):
    __tablename__ = "consumers"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=_uuid)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    api_key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    api_key_hint: Mapped[str] = mapped_column(String(140))
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    is_archived: Mapped[bool] = mapped_column(Boolean, default=False)
    last_used_at: Mapped[datetime | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class EngineAccess(Base):
    __tablename__ = "engine_access"
    __table_args__ = (UniqueConstraint("engine_id", "consumer_id", name="uq_engine_access_engine_consumer"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=_uuid)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    engine_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("engines.id", ondelete="CASCADE"), index=True)
    consumer_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("consumers.id", ondelete="CASCADE"), index=True)
    can_execute: Mapped[bool] = mapped_column(Boolean, default=False)
    can_view_jobs: Mapped[bool] = mapped_column(Boolean, default=False)
    can_download: Mapped[bool] = mapped_column(Boolean, default=False)
    can_view_about: Mapped[bool] = mapped_column(Boolean, default=False)
    granted_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        # On PostgreSQL these also carry what usage statistics aggregate (index-only scans; 0003).
        Index(
            "ix_jobs_tenant_created", "tenant_id", "created_at",
            postgresql_include=["engine_id", "consumer_id", "status", "execution_time_ms", "is_test"],
        ),
        Index(
            "ix_jobs_engine_created", "engine_id", "created_at",
            postgresql_include=["tenant_id", "consumer_id", "version_id", "status", "execution_time_ms", "is_test"],
        ),
        Index(
            "ix_jobs_consumer_created", "consumer_id", "created_at",
            postgresql_include=["tenant_id", "engine_id", "status", "execution_time_ms", "is_test"],
        ),
        # The tenant's unfinished jobs, counted by the per-tenant quota at execute (0006).
        Index(
            "ix_jobs_tenant_unfinished", "tenant_id",
            postgresql_where=text(UNFINISHED_JOBS_SQL), sqlite_where=text(UNFINISHED_JOBS_SQL),
        ),
        # A tenant's jobs processing and since when, counted by the per-tenant cap at claim time (0010).
        Index(
            "ix_jobs_tenant_processing", "tenant_id", "started_at",
            postgresql_where=text(PROCESSING_JOBS_SQL), sqlite_where=text(PROCESSING_JOBS_SQL),
        ),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=_uuid)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    engine_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    engine_name: Mapped[str] = mapped_column(String(255))
    engine_slug: Mapped[str] = mapped_column(String(100))
    version_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    version: Mapped[str] = mapped_column(String(100))
    # Exactly one of these says who created the job: a consumer, or a version's test key.
    consumer_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    consumer_name: Mapped[str | None] = mapped_column(String(255), nullable=True)
    is_test: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[JobStatus] = mapped_column(StrEnumText(JobStatus, 16), default=JobStatus.PENDING)
    inputs: Mapped[dict[str, Any]] = mapped_column(JSON)
    outputs: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error_message: Mapped[str | None] = mapped_column(Text, nullable=True)
    execution_time_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    result_key: Mapped[str | None] = mapped_column(String(512), nullable=True)
    webhook_url: Mapped[str | None] = mapped_column(Text, nullable=True)
    webhook_sent_at: Mapped[datetime | None] = mapped_column(nullable=True)
    webhook_response_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(nullable=True)
    completed_at: Mapped[datetime | None] = mapped_column(nullable=True)
    # Who holds the claim while the job is processing (shared.claimants: host, PID namespace, boot,
    # pid and the process's start), so a restarted dev stack hands back at once the claims of its
    # dead processes (0010). Written by each claim; meaningful only while processing.
    claimant: Mapped[str | None] = mapped_column(String(255), nullable=True)
    # What the job was calculated from, for reproducible runs (0007): the version's content hash
    # (recorded at execute; null when the version predates it) and the engine that calculated it.
    version_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    calc_engine: Mapped[str | None] = mapped_column(String(32), nullable=True)
    # A job made by a batch (shared.services.batches): the batch and the input set's index in it.
    batch_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    batch_index: Mapped[int | None] = mapped_column(Integer, nullable=True)


# The jobs of a batch in input order: a chunk's claim, the batch's counts and its results (0009).
Index("ix_jobs_batch_index", Job.batch_id, Job.batch_index)


class IdempotencyKey(Base):
    """An ``Idempotency-Key`` a caller sent with execute, bound to the job it created (24 hours).

    ``caller`` is who sent it (``Caller.rate_key``: a consumer, or a version's test key), so two
    consumers' keys never meet; ``request_hash`` fingerprints the request the key was first sent with.
    """

    __tablename__ = "idempotency_keys"
    __table_args__ = (PrimaryKeyConstraint("tenant_id", "caller", "key"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    caller: Mapped[str] = mapped_column(String(60))
    key: Mapped[str] = mapped_column(String(255))
    request_hash: Mapped[str] = mapped_column(String(64))
    job_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Batch(Base):
    """Many input sets sent at once: one job per valid set (``Job.batch_id``), calculated in chunks."""

    __tablename__ = "batches"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=_uuid)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    engine_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    engine_slug: Mapped[str] = mapped_column(String(100))
    version_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    consumer_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    total: Mapped[int] = mapped_column(Integer)
    chunk_size: Mapped[int] = mapped_column(Integer)
    # The refused input sets: [{"index": i, "error": "..."}], in index order.
    invalid: Mapped[list[Any]] = mapped_column(JSON)
    input_names: Mapped[list[Any]] = mapped_column(JSON)
    output_names: Mapped[list[Any]] = mapped_column(JSON)
    webhook_url: Mapped[str | None] = mapped_column(Text, nullable=True)
    webhook_sent_at: Mapped[datetime | None] = mapped_column(nullable=True)
    webhook_response_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(nullable=True)


# --- Daily rollups of jobs, for usage statistics (shared.repositories.rollups keeps them) ------
# Each row adds up the jobs created on one UTC day (``day``) that share its key. Every job counts
# in total_calls; completed and failed ones in their columns; timed_calls and time_sum_ms cover
# the jobs that recorded an execution time. Names are those of the latest job of the row
# (``last_created_at``), so a deleted engine or version keeps its last recorded name.


class _DailyCounts:
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    day: Mapped[date] = mapped_column(Date)
    total_calls: Mapped[int] = mapped_column(Integer)
    completed_calls: Mapped[int] = mapped_column(Integer)
    failed_calls: Mapped[int] = mapped_column(Integer)
    timed_calls: Mapped[int] = mapped_column(Integer)
    time_sum_ms: Mapped[int] = mapped_column(BigInteger)
    last_created_at: Mapped[datetime]


class JobStatsDaily(_DailyCounts, Base):
    """Jobs by day, engine and version, test-key jobs apart: tenant and engine figures."""

    __tablename__ = "job_stats_daily"
    __table_args__ = (PrimaryKeyConstraint("tenant_id", "day", "engine_id", "version_id", "is_test"),)

    engine_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    version_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    is_test: Mapped[bool] = mapped_column(Boolean)
    engine_name: Mapped[str] = mapped_column(String(255))
    engine_slug: Mapped[str] = mapped_column(String(100))
    version: Mapped[str] = mapped_column(String(100))


class JobConsumerStatsDaily(_DailyCounts, Base):
    """Consumers' jobs (no test-key jobs) by day and consumer: the tenant's and a consumer's figures."""

    __tablename__ = "job_consumer_stats_daily"
    __table_args__ = (
        PrimaryKeyConstraint("tenant_id", "day", "consumer_id"),
        Index("ix_job_consumer_stats_daily_consumer", "tenant_id", "consumer_id", "day"),
    )

    consumer_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    consumer_name: Mapped[str | None] = mapped_column(String(255), nullable=True)


class JobConsumerEngineStatsDaily(_DailyCounts, Base):
    """Consumers' jobs by day, consumer and engine: an engine's consumers, a consumer's engines."""

    __tablename__ = "job_consumer_engine_stats_daily"
    __table_args__ = (
        PrimaryKeyConstraint("tenant_id", "consumer_id", "engine_id", "day"),
        Index("ix_job_consumer_engine_stats_daily_engine", "tenant_id", "engine_id", "day"),
    )

    consumer_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    engine_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    consumer_name: Mapped[str | None] = mapped_column(String(255), nullable=True)
    engine_name: Mapped[str] = mapped_column(String(255))
    engine_slug: Mapped[str] = mapped_column(String(100))


class JobTimeHistogramDaily(Base):
    """How many of a tenant's jobs created on a day recorded each execution time: exact percentiles."""

    __tablename__ = "job_time_histogram_daily"
    __table_args__ = (PrimaryKeyConstraint("tenant_id", "day", "execution_time_ms"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    day: Mapped[date] = mapped_column(Date)
    execution_time_ms: Mapped[int] = mapped_column(Integer)
    count: Mapped[int] = mapped_column(Integer)


class JobEngineTimeHistogramDaily(Base):
    """The same histogram per engine."""

    __tablename__ = "job_engine_time_histogram_daily"
    __table_args__ = (PrimaryKeyConstraint("tenant_id", "engine_id", "day", "execution_time_ms"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    engine_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    day: Mapped[date] = mapped_column(Date)
    execution_time_ms: Mapped[int] = mapped_column(Integer)
    count: Mapped[int] = mapped_column(Integer)


class ThrottleCounter(Base):
    """Events counted under one key (a login account or address, an API key) until ``expires_at``.

    Kept by ``shared.repositories.throttles`` for the login throttle and the consumer rate limit,
    in the database so every API process and Lambda sees the same counts.
    """

    __tablename__ = "throttle_counters"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    count: Mapped[int] = mapped_column(Integer)
    window_started_at: Mapped[datetime]
    expires_at: Mapped[datetime] = mapped_column(index=True)


# --- Signed webhooks and their delivery log (shared.services.webhook_signing, webhooks) --------


class WebhookSigningSecret(Base):
    """A tenant's webhook signing secret, encrypted (shared.security.encrypt), and the one it
    replaced, which keeps signing until 24 hours after ``rotated_at``."""

    __tablename__ = "webhook_signing_secrets"

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    secret_encrypted: Mapped[str] = mapped_column(Text)
    previous_secret_encrypted: Mapped[str | None] = mapped_column(Text, nullable=True)
    rotated_at: Mapped[datetime | None] = mapped_column(nullable=True)
    # When an administrator was shown the current secret (read once; a rotation shows the new one).
    revealed_at: Mapped[datetime | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class WebhookAttempt(Base):
    """One webhook POST of a job: the first attempt, or a redelivery an administrator asked for.

    A redelivery is requested (``attempted_at`` null) by the API and claimed by the webhook
    function before its POST, so each request posts at most once."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (Index("ix_webhook_attempts_job", "job_id", "requested_at"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=_uuid)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    redelivery: Mapped[bool] = mapped_column(Boolean, default=False)
    requested_at: Mapped[datetime] = mapped_column(default=utcnow)
    attempted_at: Mapped[datetime | None] = mapped_column(nullable=True)
    target_url: Mapped[str] = mapped_column(Text)
    # Null until the attempt ends; 0 when no HTTP answer came (error_class says why).
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    duration_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    response_excerpt: Mapped[str | None] = mapped_column(Text, nullable=True)
    error_class: Mapped[str | None] = mapped_column(String(40), nullable=True)


class TestCase(Base):
    """An engine's test case: inputs and the outputs they must give, within a tolerance per output
    ({"absolute": x, "relative": y}; text, booleans and errors compare exactly). It belongs to the
    engine, so every version is held to it (0012)."""

    __tablename__ = "test_cases"
    __test__ = False  # not a pytest class

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=_uuid)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    engine_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("engines.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    inputs: Mapped[dict[str, Any]] = mapped_column(JSON)
    expected: Mapped[dict[str, Any]] = mapped_column(JSON)
    tolerances: Mapped[dict[str, Any]] = mapped_column(JSON)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # The completed job it was made from, if any (a copy: the job may be gone).
    source_job_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class TestRun(Base):
    """One run of an engine's enabled test cases on a version: at its upload or when asked (0012).

    ``status``: pending (queued for the checks function), passed, failed (a case's output changed
    or a case could not be calculated). ``results``: per case, per output expected/got/difference."""

    __tablename__ = "test_runs"
    __test__ = False
    __table_args__ = (Index("ix_test_runs_version_created", "version_id", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=_uuid)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    engine_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("engines.id", ondelete="CASCADE"), index=True)
    version_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("engine_versions.id", ondelete="CASCADE"))
    trigger: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))
    passed: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    results: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(nullable=True)


class Release(Base):
    """One activation of a version: who, when, the version it replaced, the evidence it was made on
    (the test run's summary; a shadow replay's, when one was made) and the reason given to override
    a refusal (0012). Version strings are copied: the history outlives deleted versions."""

    __tablename__ = "releases"
    __table_args__ = (Index("ix_releases_engine_activated", "engine_id", "activated_at"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=_uuid)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    engine_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("engines.id", ondelete="CASCADE"))
    version_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    version: Mapped[str] = mapped_column(String(100))
    previous_version_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    previous_version: Mapped[str | None] = mapped_column(String(100), nullable=True)
    activated_by: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    activated_by_email: Mapped[str | None] = mapped_column(String(320), nullable=True)
    activated_at: Mapped[datetime] = mapped_column(default=utcnow)
    test_run_summary: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    replay_summary: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # The gate's reasons the activation went ahead despite, and why (null when nothing was overridden).
    gate_reasons: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    override_reason: Mapped[str | None] = mapped_column(Text, nullable=True)


class ReplayStatus(enum.StrEnum):
    """A shadow replay's states: queued, running (a worker holds it), then completed or failed."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class Replay(Base):
    """A shadow replay: the inputs of recorded production jobs of the active (baseline) version
    calculated again on a candidate version and compared (shared/services/replays.py). It makes
    no job rows: nothing of it is seen by consumers or counted in statistics (0013)."""

    __tablename__ = "replays"
    __table_args__ = (Index("ix_replays_version_created", "tenant_id", "version_id", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=_uuid)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    engine_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("engines.id", ondelete="CASCADE"), index=True)
    version_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("engine_versions.id", ondelete="CASCADE"))
    # The version whose jobs are replayed (active when the replay was asked for); a copy of its label.
    baseline_version_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    baseline_version: Mapped[str] = mapped_column(String(100))
    requested: Mapped[int] = mapped_column(Integer)
    total: Mapped[int] = mapped_column(Integer)
    processed: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[ReplayStatus] = mapped_column(StrEnumText(ReplayStatus, 16), default=ReplayStatus.QUEUED)
    tolerance: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # The replayed jobs' ids, newest first, chosen once when the replay was asked for.
    job_ids: Mapped[list[Any]] = mapped_column(JSON)
    # What a worker had compared when it handed the replay on (a long replay, a tenant at its cap).
    state: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    claimed_at: Mapped[datetime | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(nullable=True)
