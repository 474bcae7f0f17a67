"""The consumer API: execute, test, about, job status, download (API key auth, checked by the services)."""

import uuid
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from shared.api.deps import CONSUMER_SECURITY, CurrentConsumer, SessionDep, read_consumer_request
from shared.api import rate_headers
from shared.api.errors import responses
from shared.api.presenters import engine_contract as present_contract
from shared.api.presenters import jobs as present
from shared.api.schemas.jobs import AboutResponse, DownloadResponse, ExecuteRequest, ExecuteResponse, JobResponse
from shared.services import engine_contract, job_waits, jobs
from shared.services.callers import ConsumerRequest


def _consumer_responses() -> dict[int, dict]:
    # Every consumer route: 401/403, 429 with X-RateLimit-* headers (the rate limit), 503 (admission).
    out = responses(401, 403, 429, 503)
    out[429]["headers"] = {**out[429]["headers"], **rate_headers.openapi_headers()}
    out[429]["description"] = (
        "Too many requests: the API key's rate limit (SHEETCALC_CONSUMER_RATE_LIMIT) is used up, or, at execute, "
        "the tenant has its quota of unfinished jobs (SHEETCALC_TENANT_MAX_UNFINISHED_JOBS), or the tenant has "
        "its share of the requests an API process keeps waiting for a place (SHEETCALC_API_MAX_QUEUED_JOB_CALLS_PER_TENANT)"
    )
    out[503]["headers"] = {**responses(429)[429]["headers"]}
    out[503]["description"] = (
        "Service unavailable: the API process keeps as many requests waiting for a place as it may "
        "(SHEETCALC_API_MAX_QUEUED_JOB_CALLS), or this one waited too long, or a dependency is not answering; "
        "retry after Retry-After seconds"
    )
    return out


def _counted(status: int) -> dict[int, dict]:
    # The success answer carries X-RateLimit-* too, when a rate limit is configured.
    return {status: {"headers": rate_headers.openapi_headers()}}


router = APIRouter(prefix="/jobs", tags=["jobs"], responses=_consumer_responses())

IDEMPOTENCY_KEY = (
    "Optional, 1 to 255 characters (letters, digits, '-', '_', '.', ':'). The same key with the same request "
    "from the same key holder within 24 hours answers with the first job (202, same job_id); with a "
    "different request 409. Concurrent requests with one key make one job."
)
WAIT = (
    "Seconds (more than 0, at most 25) to hold the request until the job finishes; "
    "the answer then carries its outputs. Without it, or when the time passes first, the answer is as without wait."
    " An API key (or tenant) with as many requests waiting as it may have at once gets the answer at once, as without wait."
)


def _optional_string(name: str, where: str, description: str, **schema) -> dict:
    # As FastAPI documents a declared ``str | None`` query or header parameter.
    return {
        "name": name, "in": where, "required": False,
        "schema": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": description, **schema, "title": name.title()},
        "description": description,
    }


# The hot consumer routes (execute, test-execute, job status) read their key, address, wait and
# Idempotency-Key in one dependency step rather than four or five (FastAPI's solving of each
# dependency costs about what its read does). What the declared parameters and security
# dependencies documented is declared here instead, so the OpenAPI document is unchanged.
_WAIT_PARAMETER = _optional_string("wait", "query", WAIT, examples=["2"])
_IDEMPOTENCY_PARAMETER = _optional_string("Idempotency-Key", "header", IDEMPOTENCY_KEY)


@dataclass(frozen=True)
class ConsumerCall:
    """What a hot consumer route reads besides its path and body."""

    consumer: ConsumerRequest
    wait: float | None  # seconds (shared.services.job_waits), None without wait
    idempotency_key: str | None = None


async def _status_call(request: Request) -> ConsumerCall:
    # The key and address first, then wait (whose BadRequest answers before the path and body
    # are validated), as the separate dependencies were solved.
    consumer = await read_consumer_request(request)
    return ConsumerCall(consumer, job_waits.seconds(request.query_params.get("wait")))


async def _execute_call(request: Request) -> ConsumerCall:
    call = await _status_call(request)
    return ConsumerCall(call.consumer, call.wait, request.headers.get("idempotency-key"))


StatusCall = Annotated[ConsumerCall, Depends(_status_call)]
ExecuteCall = Annotated[ConsumerCall, Depends(_execute_call)]
_STATUS_DOCUMENT = {"security": CONSUMER_SECURITY, "parameters": [_WAIT_PARAMETER]}
_EXECUTE_DOCUMENT = {"security": CONSUMER_SECURITY, "parameters": [_WAIT_PARAMETER, _IDEMPOTENCY_PARAMETER]}
# execute?wait=N: the finished job, as GET /jobs/{job_id} shows it.
_FINISHED = {200: {"model": JobResponse, "description": "With wait: the job finished within it (the body GET /jobs/{job_id} gives)"}}


def _accepted_or_finished(job, wait: float | None):
    if wait is not None and job_waits.finished(job):
        return JSONResponse(present.job_status(job).model_dump(mode="json", exclude_unset=True))
    return present.accepted(job)


@router.post(
    "/execute/{tenant_slug}/{engine_slug}", status_code=202, response_model=ExecuteResponse,
    responses={**responses(400, 404, 409, 413, 503), **_counted(202), **_FINISHED}, openapi_extra=_EXECUTE_DOCUMENT,
)
async def execute(tenant_slug: str, engine_slug: str, body: ExecuteRequest, call: ExecuteCall):
    """Queue a calculation on the engine's active version. Poll the job, or give a webhook_url,
    or give wait=N to have the finished job (200) in this answer when it finishes within N seconds.

    The inputs are checked before anything is queued: against the input schema (whose `$ref`s
    stay inside it and whose patterns run in linear time), then against the named ranges.
    """
    job = await job_waits.execute(lambda session, job_id: jobs.execute(
        session, request=call.consumer, tenant_slug=tenant_slug, engine_slug=engine_slug, inputs=body.inputs,
        webhook_url=body.webhook_url, waiting=call.wait is not None, idempotency_key=call.idempotency_key, job_id=job_id,
    ), wait=call.wait)
    return _accepted_or_finished(job, call.wait)


@router.post(
    "/test/{tenant_slug}/{engine_slug}/{version_id}", status_code=202, response_model=ExecuteResponse,
    responses={**responses(400, 404, 409, 413, 503), **_counted(202), **_FINISHED}, openapi_extra=_EXECUTE_DOCUMENT,
)
async def test_execute(tenant_slug: str, engine_slug: str, version_id: uuid.UUID, body: ExecuteRequest, call: ExecuteCall):
    """Queue a calculation on a given version, active or not, with that version's test key (wait=N as at execute)."""
    job = await job_waits.execute(lambda session, job_id: jobs.test_execute(
        session, request=call.consumer, tenant_slug=tenant_slug, engine_slug=engine_slug, version_id=version_id,
        inputs=body.inputs, webhook_url=body.webhook_url, idempotency_key=call.idempotency_key, job_id=job_id,
    ), wait=call.wait)
    return _accepted_or_finished(job, call.wait)


@router.get("/about/{tenant_slug}/{engine_slug}", response_model=AboutResponse, responses={**responses(400, 404), **_counted(200)})
def about(tenant_slug: str, engine_slug: str, session: SessionDep, consumer: CurrentConsumer):
    """The engine's name, active version and schemas."""
    return present.about(*jobs.about(session, request=consumer, tenant_slug=tenant_slug, engine_slug=engine_slug))


@router.get(
    "/openapi/{tenant_slug}/{engine_slug}", response_model=dict[str, Any], responses={**responses(400, 404), **_counted(200)},
)
def engine_openapi(tenant_slug: str, engine_slug: str, request: Request, session: SessionDep, consumer: CurrentConsumer):
    """An OpenAPI 3.1 document of this engine alone: execute, poll and download, with the active
    version's input and output schemas inlined, to generate a typed client from. Same access as about."""
    contract = engine_contract.for_consumer(session, request=consumer, tenant_slug=tenant_slug, engine_slug=engine_slug)
    return present_contract.document(contract, base_url=str(request.base_url).rstrip("/"), tenant_slug=tenant_slug)


# Only the fields the job's status carries are set (spec rule 3), so unset fields are left out.
@router.get(
    "/{job_id}", response_model=JobResponse, response_model_exclude_unset=True, responses={**responses(400, 404), **_counted(200)},
    openapi_extra=_STATUS_DOCUMENT,
)
async def get_job(job_id: uuid.UUID, call: StatusCall):
    """The job's status; inputs and outputs once it has finished. With wait=N, answered when the
    job finishes or N seconds have passed, whichever comes first."""
    job = await job_waits.get_job(
        lambda session: jobs.get_job(session, request=call.consumer, job_id=job_id), job_id=job_id, wait=call.wait,
    )
    return present.job_status(job)


@router.get("/{job_id}/download", response_model=DownloadResponse, responses={**responses(400, 404), **_counted(200)})
def download(job_id: uuid.UUID, session: SessionDep, consumer: CurrentConsumer):
    """A temporary (about one hour) URL to the filled workbook of a completed job."""
    return present.download(jobs.download(session, request=consumer, job_id=job_id))
