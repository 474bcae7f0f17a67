"""``Client``: the consumer API, blocking. ``client.engine(...)`` gives a handle typed by models."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

import httpx
from pydantic import BaseModel

from sheetcalc_client._core import POLL_SCHEDULE, RetryPolicy
from sheetcalc_client._sync import SyncSession
from sheetcalc_client.models import About, BatchAccepted, BatchResult, BatchStatus, Job
from sheetcalc_client.errors import JobFailed
from sheetcalc_client.operations import DEFAULT, ConsumerCalls, Default, Inputs

I = TypeVar("I", bound=BaseModel)
O = TypeVar("O", bound=BaseModel)

DEFAULT_WAIT = 20.0
DEFAULT_JOB_TIMEOUT = 300.0


class Client(SyncSession):
    """A consumer of sheetcalc engines, with an API key (or a version's test key).

    ``wait``: seconds execute asks the service to hold the answer (at most 25; None: never).
    ``job_timeout``: seconds ``execute`` waits for a job in all before ``JobTimeout``.
    ``retry``: the retry policy for connection errors, 429 and 5xx. ``sleep``, ``clock`` and
    ``rng`` can be replaced (tests); ``transport`` or ``http`` too (an ``httpx.MockTransport``).
    """

    def __init__(
        self, base_url: str, api_key: str, *, timeout: float = 40.0, wait: float | None = DEFAULT_WAIT,
        job_timeout: float | None = DEFAULT_JOB_TIMEOUT, retry: RetryPolicy | None = None,
        sleep: Callable[[float], Any] | None = None, clock: Callable[[], float] | None = None,
        rng: random.Random | None = None, poll_schedule: tuple[float, ...] = POLL_SCHEDULE,
        transport: httpx.BaseTransport | None = None, http: httpx.Client | None = None,
    ):
        self.calls = ConsumerCalls(api_key=api_key, retry=retry, wait=wait, job_timeout=job_timeout, clock=clock, rng=rng,
                                   poll_schedule=poll_schedule)
        super().__init__(base_url, timeout=timeout, sleep=sleep, transport=transport, http=http)

    @classmethod
    def from_profile(cls, profile: str | None = None, **kwargs: Any) -> Client:
        """A client from the environment (SHEETCALC_URL, SHEETCALC_API_KEY) or a profile of the config file."""
        from sheetcalc_client.config import load_profile

        found = load_profile(profile)
        if not found.api_key:
            raise ValueError(f"profile {found.name!r} has no API key (SHEETCALC_API_KEY or api_key in {found.source})")
        return cls(found.url, found.api_key, **kwargs)

    # --- one job ------------------------------------------------------------------------------

    def execute(
        self, engine: str, inputs: Inputs, *, wait: float | None | Default = DEFAULT, timeout: float | None | Default = DEFAULT,
        webhook_url: str | None = None, idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Run the engine's active version on ``inputs`` and return the outputs (``JobFailed`` if the job failed).

        Asks the service to wait (``wait=``), then polls with back-off 1, 2, 4, 8, 15 s. One
        Idempotency-Key (given, or made here) is sent on every retry, so a retry never makes a second job.
        """
        return self._runner.run(self.calls.run_job(
            self.calls.execute_url(engine), inputs, wait=self.calls.wait_or(wait), timeout=self.calls.timeout_or(timeout),
            webhook_url=webhook_url, idempotency_key=idempotency_key,
        ))

    def test_execute(
        self, engine: str, version_id: str, inputs: Inputs, *, wait: float | None | Default = DEFAULT,
        timeout: float | None | Default = DEFAULT, webhook_url: str | None = None, idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """As ``execute``, on the given version (active or not); the client's key must be that version's test key."""
        return self._runner.run(self.calls.run_job(
            self.calls.test_url(engine, version_id), inputs, wait=self.calls.wait_or(wait), timeout=self.calls.timeout_or(timeout),
            webhook_url=webhook_url, idempotency_key=idempotency_key,
        ))

    def submit(self, engine: str, inputs: Inputs, *, webhook_url: str | None = None, idempotency_key: str | None = None) -> str:
        """Queue a job and return its id at once (no wait)."""
        accepted = self._runner.run(self.calls.post_job(
            self.calls.execute_url(engine), inputs, wait=None, webhook_url=webhook_url, idempotency_key=idempotency_key,
        ))
        return str(accepted.job_id)

    def job(self, job_id: str, *, wait: float | None = None) -> Job:
        """The job as it is now (with ``wait``, held until it finishes or ``wait`` seconds pass)."""
        return self._runner.run(self.calls.job(job_id, wait=wait))

    def wait_for(self, job_id: str, *, timeout: float | None | Default = DEFAULT) -> Job:
        """Poll with back-off until the job has finished (completed or failed), and return it."""
        job = self.job(job_id)
        if job.finished:
            return job
        return self._runner.run(self.calls.finished_job(job_id, timeout=self.calls.timeout_or(timeout)))

    def about(self, engine: str) -> About:
        return self._runner.run(self.calls.about(engine))

    def contract(self, engine: str) -> dict[str, Any]:
        """The engine's OpenAPI 3.1 document, to generate typed models from."""
        return self._runner.run(self.calls.contract(engine))

    def download(self, job_id: str, path: str | Path) -> Path:
        """Save the completed job's filled workbook at ``path`` (a folder: under its suggested name)."""
        link = self._runner.run(self.calls.download_link(job_id))
        target = Path(path)
        if target.is_dir():
            target = target / link.filename
        response = self._runner.run(self.calls.streamed(self.calls.file_request(link)))
        try:
            with target.open("wb") as out:
                for chunk in response.iter_bytes():
                    out.write(chunk)
        finally:
            response.close()
        return target

    # --- batches ------------------------------------------------------------------------------

    def submit_batch(self, engine: str, input_sets: list[Inputs], *, webhook_url: str | None = None) -> BatchAccepted:
        """Queue one job per valid input set; refused sets are listed in ``invalid``."""
        return self._runner.run(self.calls.submit_batch(engine, input_sets, webhook_url=webhook_url))

    def batch(self, batch_id: str) -> BatchStatus:
        return self._runner.run(self.calls.batch(batch_id))

    def wait_for_batch(
        self, batch_id: str, *, timeout: float | None | Default = DEFAULT,
        on_progress: Callable[[BatchStatus], None] | None = None,
    ) -> BatchStatus:
        """Poll with back-off until every job of the batch has finished; ``on_progress`` sees each status."""
        return self._runner.run(self.calls.finished_batch(batch_id, timeout=self.calls.timeout_or(timeout), on_progress=on_progress))

    def batch_results(self, batch_id: str) -> Iterator[BatchResult]:
        """The results, one per input set in order, read as the service streams them."""
        response = self._runner.run(self.calls.streamed(self.calls.results_request(batch_id)))
        try:
            for line in response.iter_lines():
                if line.strip():
                    yield BatchResult.model_validate(json.loads(line))
        finally:
            response.close()

    def batch_workbook(self, batch_id: str, path: str | Path) -> Path:
        """Save the results as one workbook, a row per input set."""
        response = self._runner.run(self.calls.streamed(self.calls.results_request(batch_id, format="xlsx")))
        target = Path(path)
        try:
            with target.open("wb") as out:
                for chunk in response.iter_bytes():
                    out.write(chunk)
        finally:
            response.close()
        return target

    def run_batch(
        self, engine: str, input_sets: list[Inputs], *, timeout: float | None | Default = DEFAULT,
        on_progress: Callable[[BatchStatus], None] | None = None,
    ) -> list[BatchResult]:
        """Submit a batch, wait for it, and return every result in input order."""
        accepted = self.submit_batch(engine, input_sets)
        self.wait_for_batch(accepted.batch_id, timeout=timeout, on_progress=on_progress)
        return list(self.batch_results(accepted.batch_id))

    # --- typed engines ------------------------------------------------------------------------

    @overload
    def engine(self, engine: str) -> Engine[Any, Any]: ...
    @overload
    def engine(self, engine: str, *, inputs: type[I], outputs: type[O]) -> Engine[I, O]: ...

    def engine(self, engine: str, *, inputs: type[Any] | None = None, outputs: type[Any] | None = None) -> Engine[Any, Any]:
        """A handle on one engine; with models (``sheetcalc-client generate``) its calls are typed."""
        return Engine(self, engine, inputs, outputs)



class Engine(Generic[I, O]):
    """One engine, its inputs and outputs as pydantic models: ``execute(I) -> O``."""

    def __init__(self, client: Client, name: str, inputs: type[I] | None, outputs: type[O] | None):
        self.client, self.name, self.inputs_model, self.outputs_model = client, name, inputs, outputs

    def execute(self, inputs: I, **options: Any) -> O:
        outputs = self.client.execute(self.name, inputs, **options)
        return self.outputs_model.model_validate(outputs) if self.outputs_model else outputs  # type: ignore[return-value]

    def test_execute(self, version_id: str, inputs: I, **options: Any) -> O:
        outputs = self.client.test_execute(self.name, version_id, inputs, **options)
        return self.outputs_model.model_validate(outputs) if self.outputs_model else outputs  # type: ignore[return-value]

    def submit(self, inputs: I, **options: Any) -> str:
        return self.client.submit(self.name, inputs, **options)

    def result(self, job_id: str, **options: Any) -> O:
        """The outputs of a submitted job, once finished (``JobFailed`` if it failed)."""
        job = self.client.wait_for(job_id, **options)
        if job.status == "failed":
            raise JobFailed(job)
        return self.outputs_model.model_validate(job.outputs or {}) if self.outputs_model else job.outputs  # type: ignore[return-value]

    def run_batch(self, input_sets: list[I], **options: Any) -> list[BatchResult]:
        return self.client.run_batch(self.name, list(input_sets), **options)

    def about(self) -> About:
        return self.client.about(self.name)
