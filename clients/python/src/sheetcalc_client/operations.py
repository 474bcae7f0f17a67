"""The consumer API's calls, once, as I/O-free generators (``_core``): execute, submit, poll,
about, the engine's contract, downloads and batches. ``Client`` and ``AsyncClient`` run them."""

from __future__ import annotations

import enum
import random
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel

from sheetcalc_client._version import __version__
from sheetcalc_client._core import POLL_SCHEDULE, Http, Op, RetryPolicy, Sleep, poll_pauses, send
from sheetcalc_client.errors import JobFailed, JobTimeout
from sheetcalc_client.models import About, Accepted, BatchAccepted, BatchStatus, Download, Job

MAX_WAIT_SECONDS = 25.0
USER_AGENT = f"sheetcalc-client/{__version__}"

Inputs = Mapping[str, Any] | BaseModel


class Default(enum.Enum):
    """A keyword left to the client's setting."""

    DEFAULT = 0


DEFAULT = Default.DEFAULT


def inputs_json(inputs: Inputs) -> dict[str, Any]:
    """Inputs as the request's JSON: a model's fields by alias, those left unset left out (an
    input left out keeps the value the workbook was saved with; ``None`` clears it)."""
    if isinstance(inputs, BaseModel):
        return inputs.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dict(inputs)


def new_idempotency_key() -> str:
    """A key for one logical call: sent again, unchanged, on each of its retries."""
    return f"sdk-{uuid.uuid4()}"


class ConsumerCalls:
    """What the sync and async clients share: settings and the calls as generators."""

    def __init__(
        self, *, api_key: str, retry: RetryPolicy | None, wait: float | None, job_timeout: float | None,
        clock: Callable[[], float] | None, rng: random.Random | None, poll_schedule: tuple[float, ...],
    ):
        if wait is not None and not 0 < wait <= MAX_WAIT_SECONDS:
            raise ValueError(f"wait must be more than 0 and at most {MAX_WAIT_SECONDS:g} seconds, or None")
        self.api_key = api_key
        self.retry = retry or RetryPolicy()
        self.wait = wait
        self.job_timeout = job_timeout
        self.clock = clock or time.monotonic
        self.rng = rng or random.Random()
        self.poll_schedule = poll_schedule or POLL_SCHEDULE

    def wait_or(self, wait: float | None | Default) -> float | None:
        return self.wait if wait is DEFAULT else wait

    def timeout_or(self, timeout: float | None | Default) -> float | None:
        return self.job_timeout if timeout is DEFAULT else timeout

    # --- requests -----------------------------------------------------------------------------

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {"X-API-Key": self.api_key, "User-Agent": USER_AGENT, **(extra or {})}

    def _get(self, url: str, params: dict[str, Any] | None = None) -> Op[Any]:
        response = yield from send(Http("GET", url, params=params, headers=self._headers(), safe=True), self.retry, self.rng)
        return response.json()

    def engine_path(self, engine: str) -> str:
        """``tenant/engine`` as a path; a bare ``engine`` takes its tenant from the key (``tenant_<uuid>``)."""
        tenant, _, slug = engine.rpartition("/")
        if not tenant:
            tenant = self.api_key.rpartition("_")[0]
            if not tenant:
                raise ValueError(f"{engine!r}: give the engine as 'tenant/engine' (the key names no tenant)")
        if not slug or "/" in tenant:
            raise ValueError(f"{engine!r}: give the engine as 'tenant/engine'")
        return f"{quote(tenant, safe='')}/{quote(slug, safe='')}"

    # --- jobs ---------------------------------------------------------------------------------

    def post_job(
        self, url: str, inputs: Inputs, *, wait: float | None, webhook_url: str | None, idempotency_key: str | None,
    ) -> Op[Job | Accepted]:
        """POST an execute (or test-execute): 200 is the finished job, 202 the accepted one."""
        body: dict[str, Any] = {"inputs": inputs_json(inputs)}
        if webhook_url is not None:
            body["webhook_url"] = webhook_url
        headers = self._headers({"Idempotency-Key": idempotency_key or new_idempotency_key()})
        params = {"wait": f"{wait:g}"} if wait else None
        response = yield from send(Http("POST", url, params=params, json=body, headers=headers, safe=True), self.retry, self.rng)
        data = response.json()
        return Job.model_validate(data) if response.status_code == 200 else Accepted.model_validate(data)

    def job(self, job_id: str, *, wait: float | None = None) -> Op[Job]:
        data = yield from self._get(f"/jobs/{quote(str(job_id), safe='')}", {"wait": f"{wait:g}"} if wait else None)
        return Job.model_validate(data)

    def finished_job(self, job_id: str, *, timeout: float | None, started: float | None = None) -> Op[Job]:
        """Poll the job with the back-off schedule until it has finished or ``timeout`` seconds
        (from ``started``) have passed (then ``JobTimeout``)."""
        started = self.clock() if started is None else started
        status = "pending"
        for pause in poll_pauses(self.poll_schedule):
            if timeout is not None:
                left = started + timeout - self.clock()
                if left <= 0:
                    raise JobTimeout(str(job_id), status, timeout)
                pause = min(pause, left)
            yield Sleep(pause)
            job = yield from self.job(job_id)
            if job.finished:
                return job
            status = job.status
        raise AssertionError("unreachable")  # pragma: no cover

    def run_job(
        self, url: str, inputs: Inputs, *, wait: float | None, timeout: float | None, webhook_url: str | None,
        idempotency_key: str | None,
    ) -> Op[dict[str, Any]]:
        """Execute with ``wait=``, poll when the answer comes first, and return the outputs."""
        started = self.clock()
        job = yield from self.post_job(url, inputs, wait=wait, webhook_url=webhook_url, idempotency_key=idempotency_key)
        if not (isinstance(job, Job) and job.finished):
            job = yield from self.finished_job(job.job_id, timeout=timeout, started=started)
        if job.status == "failed":
            raise JobFailed(job)
        return job.outputs or {}

    def execute_url(self, engine: str) -> str:
        return f"/jobs/execute/{self.engine_path(engine)}"

    def test_url(self, engine: str, version_id: str) -> str:
        return f"/jobs/test/{self.engine_path(engine)}/{quote(str(version_id), safe='')}"

    def about(self, engine: str) -> Op[About]:
        return About.model_validate((yield from self._get(f"/jobs/about/{self.engine_path(engine)}")))

    def contract(self, engine: str) -> Op[dict[str, Any]]:
        """The engine's own OpenAPI 3.1 document (its inputs' and outputs' schemas inlined)."""
        return (yield from self._get(f"/jobs/openapi/{self.engine_path(engine)}"))

    def download_link(self, job_id: str) -> Op[Download]:
        return Download.model_validate((yield from self._get(f"/jobs/{quote(str(job_id), safe='')}/download")))

    def file_request(self, link: Download) -> Http:
        """The storage's temporary URL, fetched without the API key (it is pre-authenticated)."""
        return Http("GET", link.download_url, headers={"User-Agent": USER_AGENT}, safe=True, stream=True)

    # --- batches ------------------------------------------------------------------------------

    def submit_batch(self, engine: str, input_sets: list[Inputs], *, webhook_url: str | None) -> Op[BatchAccepted]:
        body: dict[str, Any] = {"inputs": [inputs_json(item) for item in input_sets]}
        if webhook_url is not None:
            body["webhook_url"] = webhook_url
        # No Idempotency-Key on batches: retried only where the service cannot have made it (not safe).
        request = Http("POST", f"/jobs/batch/{self.engine_path(engine)}", json=body, headers=self._headers())
        response = yield from send(request, self.retry, self.rng)
        return BatchAccepted.model_validate(response.json())

    def batch(self, batch_id: str) -> Op[BatchStatus]:
        return BatchStatus.model_validate((yield from self._get(f"/jobs/batch/{quote(str(batch_id), safe='')}")))

    def finished_batch(
        self, batch_id: str, *, timeout: float | None, on_progress: Callable[[BatchStatus], None] | None,
    ) -> Op[BatchStatus]:
        """Poll the batch with the back-off schedule until ``done`` (or ``JobTimeout``)."""
        started = self.clock()
        status = yield from self.batch(batch_id)
        for pause in poll_pauses(self.poll_schedule):
            if on_progress is not None:
                on_progress(status)
            if status.done:
                return status
            if timeout is not None:
                left = started + timeout - self.clock()
                if left <= 0:
                    raise JobTimeout(str(batch_id), "not done", timeout)
                pause = min(pause, left)
            yield Sleep(pause)
            status = yield from self.batch(batch_id)
        raise AssertionError("unreachable")  # pragma: no cover

    def results_request(self, batch_id: str, *, format: str = "jsonl") -> Http:
        params = {"format": format} if format != "jsonl" else None
        return Http("GET", f"/jobs/batch/{quote(str(batch_id), safe='')}/results", params=params,
                    headers=self._headers(), safe=True, stream=True)

    def streamed(self, request: Http) -> Op[Any]:
        """A streamed answer (results, a file): retried like any request until its status is good."""
        return (yield from send(request, self.retry, self.rng))
