"""The consumer API's batches: many input sets in one call, their progress and their results."""

import uuid
from typing import Literal

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from shared.adapters.storage import XLSX_CONTENT_TYPE as XLSX_MEDIA_TYPE
from shared.api.deps import CurrentConsumer, SessionDep
from shared.api.errors import responses
from shared.api.presenters import batches as present
from shared.api.routers.jobs import _consumer_responses, _counted
from shared.api.schemas.batches import BatchAccepted, BatchRequest, BatchStatus
from shared.services import batches

router = APIRouter(prefix="/jobs/batch", tags=["jobs"], responses=_consumer_responses())


@router.post(
    "/{tenant_slug}/{engine_slug}", status_code=202, response_model=BatchAccepted,
    responses={**responses(400, 404, 413, 503), **_counted(202)},
)
def create_batch(tenant_slug: str, engine_slug: str, body: BatchRequest, session: SessionDep, consumer: CurrentConsumer):
    """Queue one job per valid input set (up to 10,000) on the engine's active version.

    Each set is checked as execute checks its inputs; the refused ones are listed by index with
    the reason and get no job. Poll the batch, read its results, or give a webhook_url: it is
    called once, when every job of the batch has finished.
    """
    progress = batches.create(
        session, request=consumer, tenant_slug=tenant_slug, engine_slug=engine_slug, input_sets=body.inputs, webhook_url=body.webhook_url
    )
    return present.accepted(progress)


@router.get("/{batch_id}", response_model=BatchStatus, responses={**responses(404), **_counted(200)})
def get_batch(batch_id: uuid.UUID, session: SessionDep, consumer: CurrentConsumer):
    """The batch's jobs counted by status, and whether all have finished."""
    return present.status(batches.get(session, request=consumer, batch_id=batch_id))


@router.get(
    "/{batch_id}/results", responses={
        **responses(404),
        200: {
            "headers": _counted(200)[200]["headers"],
            "description": "JSON lines, one per input set in order: index, job_id, status, and outputs (completed) or error "
                           "(failed, invalid); or, with format=xlsx, one workbook with a row per input set",
            "content": {"application/x-ndjson": {}, XLSX_MEDIA_TYPE: {}},
        },
    },
)
def batch_results(batch_id: uuid.UUID, session: SessionDep, consumer: CurrentConsumer, format: Literal["jsonl", "xlsx"] = "jsonl"):
    """The results so far: JSON lines (streamed), or a workbook whose columns are index, the input
    names, the output names, status and error (a multi-cell value is JSON text in its cell)."""
    batch = batches.results_of(session, request=consumer, batch_id=batch_id)
    if format == "xlsx":
        return StreamingResponse(
            batches.result_workbook(batch), media_type=XLSX_MEDIA_TYPE,
            headers={"Content-Disposition": f'attachment; filename="batch_{str(batch.id)[:8]}.xlsx"'},
        )
    return StreamingResponse(batches.result_lines(batch), media_type="application/x-ndjson")
