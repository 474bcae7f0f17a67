"""Settings, validated once and read through ``get_settings()`` (never at import time).

Values come from, in order of precedence: the environment (``SHEETCALC_<NAME>``), then the
Secrets Manager secrets ``SHEETCALC_SECRET_ARN`` names (``shared.secrets``), then the defaults.
"""

from __future__ import annotations

import functools
import uuid
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, NonNegativeInt, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from shared.secrets import SecretsManagerSource

PLACEHOLDER_SECRET = "dev-only-insecure-secret-change-me"


class Settings(BaseSettings):
    """Every knob of the service; environment variables are ``SHEETCALC_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="SHEETCALC_", extra="ignore")

    env: Literal["dev", "prod"] = "dev"
    data_dir: Path = Path(".sheetcalc")
    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("DATABASE_URL", "SHEETCALC_DATABASE_URL")
    )
    # Connections each process keeps open to PostgreSQL, and how many more it may open at a peak
    # (closed again when returned). Keep pool size >= the requests a process runs at once.
    database_pool_size: int = Field(default=16, ge=1, le=200)
    database_max_overflow: int = Field(default=16, ge=0, le=200)
    # The consumer job calls (execute, test-execute, job status) one API process runs at once,
    # each in a thread with a connection; more wait their turn holding neither
    # (shared.services.job_waits). More only add contention for the process's one CPU.
    api_job_threads: int = Field(default=4, ge=1, le=200)
    jwt_secret: str = PLACEHOLDER_SECRET
    encryption_key: str = PLACEHOLDER_SECRET
    jwt_ttl_seconds: int = 8 * 3600

    aws_region: str = "us-east-1"
    aws_endpoint_url: str | None = None
    bucket: str = "sheetcalc-workbooks"
    jobs_queue_url: str | None = None
    # The slow lane's queue (versions whose jobs cost more than version_slow_lane_ms); unset, their
    # jobs go to jobs_queue_url like every other.
    slow_jobs_queue_url: str | None = None
    # Version checks (the slower engines' fidelity checks, the document-library copy) have a
    # queue and a function of their own, so that a job never waits behind a check of minutes.
    checks_queue_url: str | None = None
    webhooks_queue_url: str | None = None
    download_url_ttl_seconds: int = 3600

    max_upload_bytes: int = 25 * 1024 * 1024
    # One job's inputs: their size as compact UTF-8 JSON (413 above it) and their keys, nested
    # objects included (400 above it). Each job stores its inputs, and returns them.
    max_input_bytes: int = 256 * 1024
    max_input_keys: int = 1000
    # What one job returns (shared/services/output_limits.py). Cells over every named range a job
    # returns, checked at upload and when an output schema is saved (the refusal names the range):
    # a pricing engine's whole output is rarely beyond a few thousand cells (a 30-year monthly
    # schedule of 10 columns is 3,600), while each cell is stored, polled and posted per job.
    max_output_cells: int = Field(default=10_000, ge=1)
    # One job's outputs as compact UTF-8 JSON (a cell may hold 32,767 characters); a job over it
    # fails with a message naming the limit. 10,000 cells of numbers are about 200 KB.
    max_output_bytes: int = Field(default=1024 * 1024, ge=1)
    # A job's webhook body over this goes without "outputs" (then "inputs"), saying so and where to
    # poll them: above the largest inputs (max_input_bytes) with room, below the 1 MB that common
    # receivers' proxies accept by default (nginx's client_max_body_size).
    max_webhook_payload_bytes: int = Field(default=512 * 1024, ge=1024)
    # The upload guard (shared/calc/xlsx/guard.py), checked before any engine reads a file. The
    # zip limits come from its directory alone: real workbooks inflate 5 to 30 times (deflate
    # reaches 1,000), so 100 times is refused as a bomb (Apache POI's ZipSecureFile default too).
    # The formula limits are Excel's own ("Excel specifications and limits": 8,192 characters,
    # 64 nesting levels). IronCalc reads 2,000 defined names in about 2 s and 1,000,000 cells
    # in about 13 s (its name lookup is quadratic: 5,000 names took 24 s).
    upload_max_parts: int = 10_000
    upload_max_uncompressed_bytes: int = 256 * 1024 * 1024
    upload_max_part_bytes: int = 128 * 1024 * 1024
    upload_max_compression_ratio: float = 100.0
    upload_max_sheets: int = 1_000
    upload_max_defined_names: int = 2_000
    upload_max_cells: int = 1_000_000
    upload_max_formula_length: int = 8_192
    upload_max_formula_depth: int = 64
    # An accepted upload is parsed and checked in a child process (shared/calc/sandbox.py) with
    # this deadline (inside API Gateway's 29 s) and address-space ceiling: a crash, a runaway
    # parse or an exhausted memory answers 400 and the API process carries on.
    upload_parse_timeout_seconds: float = 25.0
    # At or below the memory of each function that reads uploads (the API's 1024 MB; template.yaml
    # sets it per function): the child's limit, not the function's, is what a huge workbook meets.
    upload_parse_memory_mb: int = 768
    # Children reading uploads at once in one process (more uploads wait, up to a minute, then 503).
    upload_parse_concurrency: int = 2
    model_cache_size: int = 32
    # The budget of one calculation (shared/calc/fenced.py): every job is calculated in a fenced
    # child process; past its wall time the child is killed, past its CPU time the kernel ends it
    # (SIGXCPU), past its address space it fails; the job fails with a message naming the limit
    # and the rest of its batch goes on in a fresh child. The memory budget stays below the
    # worker function's memory (template.yaml) so the limit, not the function, is what stops it.
    job_max_seconds: float = Field(default=30.0, gt=0)
    job_max_cpu_seconds: float = Field(default=30.0, gt=0)
    job_max_memory_mb: int = Field(default=1024, ge=256)
    # Fenced calculation children per process (each keeps up to model_cache_size models).
    calc_children_per_process: int = Field(default=1, ge=1, le=16)
    # A version's cost is measured when it is checked (the upload, a pinned engine): the time of a
    # job on its uploaded values (p50 and p95 of a few runs) and the child's peak memory. A version
    # over these limits is refused at upload, at a pin and at activation, with the reason; a version
    # whose p95 is over version_slow_lane_ms is calculated on the slow lane (its own queue and
    # worker function with reserved concurrency on AWS), so its jobs never wait in front of quick ones.
    version_max_calc_ms: int = Field(default=10_000, ge=1)
    version_max_memory_mb: int = Field(default=768, ge=64)
    version_slow_lane_ms: int = Field(default=250, ge=0)
    # Batches (shared.services.batches): the jobs of one queue message, calculated on one loaded model.
    # Excel what-if data tables: one recalculation per substituted value per job; a workbook
    # whose tables need more keeps Excel's saved values in them (and its upload says so).
    upload_max_data_table_substitutions: int = Field(default=10_000, ge=0)
    batch_chunk_size: int = Field(default=500, ge=1, le=10_000)
    # The filled workbook of a completed job is produced when it is first downloaded (and then
    # stored); true stores it as each job completes instead (it then outlives the job's version).
    keep_filled_workbooks: bool = False
    # The fidelity check of the slower `formulas` engine, run by the checks function after upload:
    # its deadline (inside that function's 900 s timeout, Lambda's longest) and its memory ceiling.
    # formulas takes 110 s (idle) to 330 s (busy) on a 13,000-formula workbook on a 2-core
    # machine: a shorter deadline leaves large workbooks on IronCalc where formulas would match
    # Excel better.
    fidelity_timeout_seconds: float = 840.0
    # Below the checks function's 2048 MB (template.yaml sets it), leaving the function its own room.
    fidelity_memory_mb: int = 1536
    # A job still "processing" this long after it was claimed is taken to be abandoned
    # (its worker died) and may be claimed again by a redelivered message. Longer than any worker
    # may hold a claim (template.yaml sets it from the worker function's timeout and a margin).
    processing_lease_seconds: int = 900
    # The sweeper (shared.services.sweeper) queues again what a lost message asked for: jobs
    # pending, and webhooks and version checks not attempted, this long after they were due
    # (a job processing past its lease too), at most sweeper_batch_size of each per sweep. It
    # runs on a schedule on AWS (template.yaml) and every sweeper_interval_seconds in dev.
    sweeper_requeue_after_seconds: int = Field(default=600, ge=1)
    sweeper_checks_after_seconds: int = Field(default=3600, ge=1)
    sweeper_batch_size: int = Field(default=1000, ge=1)
    sweeper_interval_seconds: float = Field(default=60.0, gt=0)
    # sheetcalc dev: the level of the service's own log lines on stderr (as LOG_LEVEL sets it for
    # the Lambda functions); unset, only warnings and errors are shown.
    log_level: str | None = Field(default=None, validation_alias=AliasChoices("LOG_LEVEL", "SHEETCALC_LOG_LEVEL"))
    # sheetcalc dev: how many API processes (uvicorn, sharing one listening socket) and how many
    # worker processes (each polling the jobs queue; the first also runs the other queues' pollers
    # and the sweeper) it starts beside the local AWS's process.
    dev_api_workers: int = Field(default=2, ge=1, le=64)
    dev_worker_processes: int = Field(default=2, ge=1, le=64)
    webhook_timeout_seconds: float = 10.0
    # Every request body but a workbook upload, counted while it streams in (shared/api/limits.py);
    # room for the largest inputs object execute accepts, with its webhook_url and JSON around it.
    max_json_body_bytes: int = 2 * 1024 * 1024
    # Loopback and private webhook targets are refused in prod (SSRF); dev allows them.
    allow_private_webhooks: bool | None = None
    # Proxies whose X-Forwarded-For is believed (addresses or CIDR ranges).
    trusted_proxies: list[str] = []
    # Microsoft identity platform and Graph, for tenants' document storage (tests point them at a stand-in).
    graph_authority_host: str = "https://login.microsoftonline.com"
    graph_base_url: str = "https://graph.microsoft.com/v1.0"
    # Brakes on abuse (0 turns one off). Logins: after login_max_failures wrong passwords for one
    # account, or login_max_failures_per_address from one address, each within
    # login_lockout_seconds of the one before, logins are refused (429) until that long after the
    # last. Consumers: consumer_rate_limit requests per key in each consumer_rate_window_seconds.
    # Tenants: at most tenant_max_unfinished_jobs jobs of execute and test-execute pending or
    # processing at once, and tenant_max_unfinished_batch_jobs jobs of batches (room for one batch
    # of the largest size, 10,000). On by default with values a pricing team's traffic fits in
    # (README, Security, "Brakes"); tests and benches that drive one key hard raise them explicitly.
    login_max_failures: int = Field(default=10, ge=0)
    login_max_failures_per_address: int = Field(default=100, ge=0)
    login_lockout_seconds: int = Field(default=900, ge=1)
    consumer_rate_limit: int = Field(default=600, ge=0)
    consumer_rate_window_seconds: int = Field(default=60, ge=1)
    # Requests of a key's window one API process reserves in one counter write (at most a
    # twentieth of the limit). 1, the default, counts every request in the database and is exact
    # across any number of processes. More costs one write per that many requests, but a key
    # spread over several processes may then be refused early by what another process reserved
    # and did not use (never allowed more than its limit): for a deployment with few API processes.
    consumer_rate_lease: int = Field(default=1, ge=1)
    tenant_max_unfinished_jobs: int = Field(default=1000, ge=0)
    tenant_max_unfinished_batch_jobs: int = Field(default=10_000, ge=0)
    # Requests waiting at once (wait=N) in one API process per API key, and per tenant; a request
    # beyond either answers at once as without wait (shared/services/job_waits.py). 0: no bound.
    consumer_max_waiters: int = Field(default=8, ge=0)
    tenant_max_waiters: int = Field(default=32, ge=0)
    # Admission (shared/api/admission.py): consumer calls (/jobs/...) one API process has in
    # progress at once, working or queued for its api_job_threads (a wait=N call counts until it
    # starts waiting), at most api_max_job_calls_per_tenant of one tenant; more wait for a place,
    # bodies unread, tenants served in turn, at most api_max_queued_job_calls of them (of one
    # tenant api_max_queued_job_calls_per_tenant); beyond, 503 or 429 with Retry-After: 1, so a
    # burst can neither starve /health nor stand in front of another tenant. 0: no bound.
    api_max_job_calls: int = Field(default=32, ge=0)
    api_max_job_calls_per_tenant: int = Field(default=16, ge=0)
    api_max_queued_job_calls: int = Field(default=512, ge=0)
    api_max_queued_job_calls_per_tenant: int = Field(default=256, ge=0)
    # Fair claims (shared/services/fair_claims.py): a tenant holds at most tenant_max_concurrent_jobs
    # jobs processing at once (0: no cap; tenant_max_concurrent_jobs_by_tenant, a JSON object
    # {"<tenant id>": n}: a tenant's own cap); a job over it is queued again tenant_cap_retry_seconds later.
    # 8: fewer than the template's 10 workers, so another tenant's job always finds one.
    tenant_max_concurrent_jobs: int = Field(default=8, ge=0)
    tenant_max_concurrent_jobs_by_tenant: dict[uuid.UUID, NonNegativeInt] = {}
    tenant_cap_retry_seconds: int = Field(default=5, ge=0, le=900)
    # /health reports the database unavailable when it has not answered this fast.
    health_timeout_seconds: float = 5.0

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The environment wins over Secrets Manager, which wins over the defaults.
        return init_settings, env_settings, dotenv_settings, SecretsManagerSource(settings_cls), file_secret_settings

    @model_validator(mode="after")
    def _refuse_placeholders_in_prod(self) -> "Settings":
        if self.env == "prod":
            for name in ("jwt_secret", "encryption_key"):
                value = getattr(self, name)
                if value == PLACEHOLDER_SECRET or len(value) < 32:
                    raise ValueError(f"SHEETCALC_{name.upper()} must be set to a real secret in prod")
            if not self.database_url:
                raise ValueError("DATABASE_URL must be set in prod")
        return self

    @functools.cached_property
    def effective_database_url(self) -> str:
        """The configured database, or SQLite under the data dir (resolved once per settings: a
        path's resolution is a system call per directory, and every completion announced asks)."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'sheetcalc.db').resolve()}"

    @property
    def private_webhooks_allowed(self) -> bool:
        """Whether webhooks may target loopback and private addresses."""
        if self.allow_private_webhooks is not None:
            return self.allow_private_webhooks
        return self.env == "dev"


@functools.cache
def get_settings() -> Settings:
    """The process's settings, read from the environment on first use."""
    return Settings()


def reset_settings() -> None:
    """Forget cached settings (and what was built from them); for tests and the dev command."""
    get_settings.cache_clear()
