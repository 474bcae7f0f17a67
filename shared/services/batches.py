"""Batches: many input sets in one call, one job per valid set, calculated in bulk.

A batch is a consumer's (the same key, whitelist and execute permission as execute). Each input
set is checked with execute's rules (``shared.services.inputs``); the refused ones are reported
by index and get no job. The jobs are ordinary jobs (``GET /jobs/{id}`` answers for them) with
``batch_id`` and ``batch_index``; they are inserted in one statement and queued as one message per
chunk of ``batch_chunk_size`` indexes (``shared.services.batch_runner``). The batch is done when
none of its jobs is pending or processing; its webhook is sent once then.
"""

from __future__ import annotations

import json
import logging
import math
import tempfile
import uuid
from collections.abc import Iterator
from typing import Any

import openpyxl
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from sqlalchemy.orm import Session

from shared.adapters import queues
from shared.config import get_settings
from shared.db.models import Batch, JobStatus
from shared.db.session import session_scope
from shared.db.types import utcnow
from shared.errors import (
    BadRequest,
    Forbidden,
    Invalid,
    PayloadTooLarge,
    SheetcalcError,
    Unauthorized,
)
from shared.repositories import batches as batch_repo
from shared.services.batch_completion import STATUSES, Progress, progress_of
from shared.services import inputs as input_rules
from shared.services import rate_limits
from shared.services.callers import INVALID_API_KEY, ConsumerRequest
from shared.services.jobs import (
    NO_EXECUTE,
    _active_version,
    _engine_for_caller,
    _permission,
    owner_caller,
)

log = logging.getLogger(__name__)

MAX_INPUT_SETS = 10_000
TOO_MANY = "A batch holds at most {limit:,} input sets; this one has {count:,}"
EMPTY = "A batch needs at least one input set"
NOT_AN_OBJECT = "Input validation failed: an input set must be a JSON object"
BATCH_NOT_FOUND = "Batch not found"
NO_VIEW = "Consumer does not have view permission for this batch"


def _refusal(inputs: Any, version) -> str | None:
    if not isinstance(inputs, dict):
        return NOT_AN_OBJECT
    try:
        input_rules.validate(inputs, input_schema=version.input_schema, named_ranges=version.named_ranges)
    except (BadRequest, Invalid, PayloadTooLarge) as exc:
        return exc.message
    return None


def _names(values: list[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for item in values:
        seen.update(dict.fromkeys(item))
    return list(seen)


def create(
    session: Session, *, request: ConsumerRequest, tenant_slug: str, engine_slug: str, input_sets: list[Any], webhook_url: str | None = None,
) -> Progress:
    """Check every input set, insert one job per valid one and queue them in chunks."""
    engine, caller, active = _engine_for_caller(session, request=request, tenant_slug=tenant_slug, engine_slug=engine_slug)
    if caller.consumer is None:
        raise Unauthorized(INVALID_API_KEY)
    if not _permission(session, caller, engine.id, "can_execute"):
        raise Forbidden(NO_EXECUTE)
    if len(input_sets) > MAX_INPUT_SETS:
        raise PayloadTooLarge(TOO_MANY.format(limit=MAX_INPUT_SETS, count=len(input_sets)))
    if not input_sets:
        raise BadRequest(EMPTY)
    version = _active_version(active)

    invalid, valid = [], []
    for index, inputs in enumerate(input_sets):
        reason = _refusal(inputs, version)
        if reason is None:
            valid.append((index, inputs))
        else:
            invalid.append({"index": index, "error": reason})
    if valid:
        rate_limits.ensure_room_for_a_batch(session, tenant_id=engine.tenant_id, jobs=len(valid))
    now = utcnow()
    props = (version.output_schema or {}).get("properties")
    batch = Batch(
        id=uuid.uuid4(), tenant_id=engine.tenant_id, engine_id=engine.id, engine_slug=engine.slug, version_id=version.id,
        consumer_id=caller.consumer.id, total=len(input_sets), chunk_size=get_settings().batch_chunk_size, invalid=invalid,
        input_names=_names([inputs for _, inputs in valid]), output_names=list(props) if isinstance(props, dict) else [],
        webhook_url=webhook_url, created_at=now,
    )
    common = dict(
        tenant_id=engine.tenant_id, engine_id=engine.id, engine_name=engine.name, engine_slug=engine.slug,
        version_id=version.id, version=version.version, version_sha256=version.content_sha256, consumer_id=caller.consumer.id, consumer_name=caller.consumer.name,
        is_test=False, status=JobStatus.PENDING, webhook_url=None, execution_time_ms=None,
        created_at=now, updated_at=now, batch_id=batch.id,
    )
    jobs = [dict(common, id=uuid.uuid4(), inputs=inputs, batch_index=index) for index, inputs in valid]
    batch_repo.add(session, batch, jobs)
    session.commit()
    _queue_chunks(batch, lane=version.lane)
    return Progress(batch, {**dict.fromkeys(STATUSES, 0), JobStatus.PENDING: len(jobs), "invalid": len(invalid)})


def _queue_chunks(batch: Batch, *, lane: str = "standard") -> None:
    # Every chunk is queued, even one of refused sets only: its run finds the batch done.
    try:
        for chunk in range(math.ceil(batch.total / batch.chunk_size)):
            queues.enqueue_batch_chunk(batch.id, chunk, tenant_id=batch.tenant_id, lane=lane)
    except SheetcalcError:
        # The jobs are stored: the sweeper queues them again one by one (README, "Nothing accepted is lost").
        log.exception("could not queue every chunk of batch %s", batch.id)


def _own_batch(session: Session, *, request: ConsumerRequest, batch_id: uuid.UUID) -> Batch:
    batch = batch_repo.get(session, batch_id=batch_id)
    caller = owner_caller(session, request=request, row=batch, not_found=BATCH_NOT_FOUND)
    if caller.consumer is None or batch.consumer_id != caller.consumer.id or not _permission(session, caller, batch.engine_id, "can_view_jobs"):
        raise Forbidden(NO_VIEW)
    return batch


def get(session: Session, *, request: ConsumerRequest, batch_id: uuid.UUID) -> Progress:
    """A batch of the caller's own, with its progress."""
    return progress_of(session, _own_batch(session, request=request, batch_id=batch_id))


def results_of(session: Session, *, request: ConsumerRequest, batch_id: uuid.UUID) -> Batch:
    """A batch of the caller's own, whose results may be read (``result_lines``, ``result_workbook``)."""
    return _own_batch(session, request=request, batch_id=batch_id)


def results(batch: Batch, *, with_inputs: bool = False) -> Iterator[dict[str, Any]]:
    """One result per input set, in index order: index, job_id, status, and outputs or error
    (and the job's inputs, when asked)."""
    invalid = iter(batch.invalid)
    refused = next(invalid, None)
    with session_scope() as session:
        for job in batch_repo.jobs_in_order(session, batch_id=batch.id):
            while refused is not None and refused["index"] < job.batch_index:
                yield _refused(refused)
                refused = next(invalid, None)
            yield _result(job, with_inputs)
    while refused is not None:
        yield _refused(refused)
        refused = next(invalid, None)


def _refused(item: dict) -> dict[str, Any]:
    return {"index": item["index"], "job_id": None, "status": "invalid", "error": item["error"]}


def _result(job, with_inputs: bool) -> dict[str, Any]:
    line = {"index": job.batch_index, "job_id": str(job.id), "status": str(job.status)}
    if with_inputs:
        line["inputs"] = job.inputs
    if job.status == JobStatus.COMPLETED:
        line["outputs"] = job.outputs
    elif job.status == JobStatus.FAILED:
        line["error"] = job.error_message
    return line


def result_lines(batch: Batch, *, lines_per_piece: int = 500) -> Iterator[bytes]:
    """The results as JSON lines (one per input set, in order), sent a few hundred lines at a time."""
    piece: list[str] = []
    for line in results(batch):
        piece.append(json.dumps(line, ensure_ascii=False))
        if len(piece) == lines_per_piece:
            yield ("\n".join(piece) + "\n").encode()
            piece = []
    if piece:
        yield ("\n".join(piece) + "\n").encode()


def _cell(sheet, value: Any) -> Any:
    # A range of more than one cell (a list) goes in one cell as JSON text, as does text a cell
    # cannot hold (control characters). Text is always text: "=..." is never written as a formula.
    if isinstance(value, (list, dict)) or (isinstance(value, str) and ILLEGAL_CHARACTERS_RE.search(value)):
        value = json.dumps(value, ensure_ascii=False)
        value = ILLEGAL_CHARACTERS_RE.sub(lambda m: json.dumps(m.group())[1:-1], value)
    if isinstance(value, str):
        if len(value) > CELL_MAX_CHARACTERS:
            value = value[: CELL_MAX_CHARACTERS - 1] + "…"
        cell = WriteOnlyCell(sheet, value)
        cell.data_type = "s"
        return cell
    return value


# Excel's limit on the characters of one cell ("Excel specifications and limits").
CELL_MAX_CHARACTERS = 32_767
_CHUNK = 1 << 20


def result_workbook(batch: Batch) -> Iterator[bytes]:
    """The results as one workbook, in chunks: a row per input set; columns index, the input
    names, the output names, status, error. Multi-cell values are JSON text in their cell (cut at
    Excel's 32,767 characters, ending in "…"). Memory stays flat whatever the batch's size: the
    rows are read a page at a time (twice when the output names are not recorded) and the
    workbook is written to a temporary file, then read back a chunk at a time."""
    output_names = batch.output_names or _names(
        [r["outputs"] for r in results(batch) if isinstance(r.get("outputs"), dict)]
    )
    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("Results")
    sheet.append(["index", *batch.input_names, *output_names, "status", "error"])
    for row in results(batch, with_inputs=True):
        given, outputs = row.get("inputs") or {}, row.get("outputs") or {}
        sheet.append([
            row["index"], *(_cell(sheet, given.get(n)) for n in batch.input_names),
            *(_cell(sheet, outputs.get(n)) for n in output_names), row["status"], _cell(sheet, row.get("error")),
        ])
    out = tempfile.TemporaryFile()
    try:
        book.save(out)
        out.seek(0)
    except BaseException:
        out.close()
        raise
    return _chunks(out)


def _chunks(file) -> Iterator[bytes]:
    with file:
        while chunk := file.read(_CHUNK):
            yield chunk
