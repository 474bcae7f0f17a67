"""``AsyncClient``: the consumer API for asyncio, the same calls as ``Client``."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

import httpx
from pydantic import BaseModel

from sheetcalc_client._async import AsyncRunner
from sheetcalc_client._core import POLL_SCHEDULE, RetryPolicy
from sheetcalc_client.client import DEFAULT_JOB_TIMEOUT, DEFAULT_WAIT
from sheetcalc_client.errors import JobFailed
from sheetcalc_client.models import About, BatchAccepted, BatchResult, BatchStatus, Job
from sheetcalc_client.operations import DEFAULT, ConsumerCalls, Default, Inputs

I = TypeVar("I", bound=BaseModel)
O = TypeVar("O", bound=BaseModel)


class AsyncClient:
    """As ``Client``, with ``await``; ``sleep`` is an awaitable (``asyncio.sleep`` by default)."""

    def __init__(
        self, base_url: str, api_key: str, *, timeout: float = 40.0, wait: float | None = DEFAULT_WAIT,
        job_timeout: float | None = DEFAULT_JOB_TIMEOUT, retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[Any]] | None = None, clock: Callable[[], float] | None = None,
        rng: random.Random | None = None, poll_schedule: tuple[float, ...] = POLL_SCHEDULE,
        transport: httpx.AsyncBaseTransport | None = None, http: httpx.AsyncClient | None = None,
    ):
        self.calls = ConsumerCalls(api_key=api_key, retry=retry, wait=wait, job_timeout=job_timeout, clock=clock, rng=rng,
                                   poll_schedule=poll_schedule)
        self._own_http = http is None
        self.http = http or httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout, transport=transport)
        self._runner = AsyncRunner(self.http, sleep)

    async def aclose(self) -> None:
        if self._own_http:
            await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def execute(
        self, engine: str, inputs: Inputs, *, wait: float | None | Default = DEFAULT, timeout: float | None | Default = DEFAULT,
        webhook_url: str | None = None, idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Run the engine's active version and return the outputs (see ``Client.execute``)."""
        return await self._runner.run(self.calls.run_job(
            self.calls.execute_url(engine), inputs, wait=self.calls.wait_or(wait), timeout=self.calls.timeout_or(timeout),
            webhook_url=webhook_url, idempotency_key=idempotency_key,
        ))

    async def test_execute(
        self, engine: str, version_id: str, inputs: Inputs, *, wait: float | None | Default = DEFAULT,
        timeout: float | None | Default = DEFAULT, webhook_url: str | None = None, idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        return await self._runner.run(self.calls.run_job(
            self.calls.test_url(engine, version_id), inputs, wait=self.calls.wait_or(wait),
            timeout=self.calls.timeout_or(timeout), webhook_url=webhook_url, idempotency_key=idempotency_key,
        ))

    async def submit(self, engine: str, inputs: Inputs, *, webhook_url: str | None = None, idempotency_key: str | None = None) -> str:
        accepted = await self._runner.run(self.calls.post_job(
            self.calls.execute_url(engine), inputs, wait=None, webhook_url=webhook_url, idempotency_key=idempotency_key,
        ))
        return str(accepted.job_id)

    async def job(self, job_id: str, *, wait: float | None = None) -> Job:
        return await self._runner.run(self.calls.job(job_id, wait=wait))

    async def wait_for(self, job_id: str, *, timeout: float | None | Default = DEFAULT) -> Job:
        job = await self.job(job_id)
        if job.finished:
            return job
        return await self._runner.run(self.calls.finished_job(job_id, timeout=self.calls.timeout_or(timeout)))

    async def about(self, engine: str) -> About:
        return await self._runner.run(self.calls.about(engine))

    async def contract(self, engine: str) -> dict[str, Any]:
        return await self._runner.run(self.calls.contract(engine))

    async def download(self, job_id: str, path: str | Path) -> Path:
        link = await self._runner.run(self.calls.download_link(job_id))
        target = Path(path)
        if target.is_dir():
            target = target / link.filename
        await self._save(self.calls.file_request(link), target)
        return target

    async def submit_batch(self, engine: str, input_sets: list[Inputs], *, webhook_url: str | None = None) -> BatchAccepted:
        return await self._runner.run(self.calls.submit_batch(engine, input_sets, webhook_url=webhook_url))

    async def batch(self, batch_id: str) -> BatchStatus:
        return await self._runner.run(self.calls.batch(batch_id))

    async def wait_for_batch(
        self, batch_id: str, *, timeout: float | None | Default = DEFAULT, on_progress: Callable[[BatchStatus], None] | None = None,
    ) -> BatchStatus:
        return await self._runner.run(
            self.calls.finished_batch(batch_id, timeout=self.calls.timeout_or(timeout), on_progress=on_progress)
        )

    async def batch_results(self, batch_id: str) -> AsyncIterator[BatchResult]:
        response = await self._runner.run(self.calls.streamed(self.calls.results_request(batch_id)))
        try:
            async for line in response.aiter_lines():
                if line.strip():
                    yield BatchResult.model_validate(json.loads(line))
        finally:
            await response.aclose()

    async def batch_workbook(self, batch_id: str, path: str | Path) -> Path:
        await self._save(self.calls.results_request(batch_id, format="xlsx"), Path(path))
        return Path(path)

    async def run_batch(
        self, engine: str, input_sets: list[Inputs], *, timeout: float | None | Default = DEFAULT,
        on_progress: Callable[[BatchStatus], None] | None = None,
    ) -> list[BatchResult]:
        accepted = await self.submit_batch(engine, input_sets)
        await self.wait_for_batch(accepted.batch_id, timeout=timeout, on_progress=on_progress)
        return [result async for result in self.batch_results(accepted.batch_id)]

    async def _save(self, request: Any, target: Path) -> None:
        response = await self._runner.run(self.calls.streamed(request))
        try:
            with target.open("wb") as out:
                async for chunk in response.aiter_bytes():
                    out.write(chunk)
        finally:
            await response.aclose()

    @overload
    def engine(self, engine: str) -> AsyncEngine[Any, Any]: ...
    @overload
    def engine(self, engine: str, *, inputs: type[I], outputs: type[O]) -> AsyncEngine[I, O]: ...

    def engine(self, engine: str, *, inputs: type[Any] | None = None, outputs: type[Any] | None = None) -> AsyncEngine[Any, Any]:
        return AsyncEngine(self, engine, inputs, outputs)


class AsyncEngine(Generic[I, O]):
    """One engine with typed inputs and outputs, for asyncio."""

    def __init__(self, client: AsyncClient, name: str, inputs: type[I] | None, outputs: type[O] | None):
        self.client, self.name, self.inputs_model, self.outputs_model = client, name, inputs, outputs

    def _outputs(self, outputs: dict[str, Any]) -> O:
        return self.outputs_model.model_validate(outputs) if self.outputs_model else outputs  # type: ignore[return-value]

    async def execute(self, inputs: I, **options: Any) -> O:
        return self._outputs(await self.client.execute(self.name, inputs, **options))

    async def test_execute(self, version_id: str, inputs: I, **options: Any) -> O:
        return self._outputs(await self.client.test_execute(self.name, version_id, inputs, **options))

    async def submit(self, inputs: I, **options: Any) -> str:
        return await self.client.submit(self.name, inputs, **options)

    async def result(self, job_id: str, **options: Any) -> O:
        job = await self.client.wait_for(job_id, **options)
        if job.status == "failed":
            raise JobFailed(job)
        return self._outputs(job.outputs or {})

    async def about(self) -> About:
        return await self.client.about(self.name)
