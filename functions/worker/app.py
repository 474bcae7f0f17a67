"""Worker Lambda: a batch of SQS job messages calculated together, each job once; failures
reported per record (ReportBatchItemFailures), so SQS redelivers just those."""

from __future__ import annotations

import uuid

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from shared.adapters import queues
from shared.messages import parse
from shared.observability import instrument, logger, one_record_at_a_time, unbind_job
from shared.services import batch_runner, job_runner, replay_runner


class RecordFailed(Exception):
    """A record handled alone (``record_handler``) that must come again."""


def handle_records(records: list[SQSRecord]) -> list[str]:
    """Handle a batch of messages; returns the message ids that must come again.

    Version checks are handed to their own queue one by one; the job messages are run as one
    batch (``job_runner.run_jobs``). A malformed message is logged and dropped.
    """
    failed: list[str] = []
    jobs: dict[uuid.UUID, str] = {}  # job id -> the message that answers for it (a duplicate is a no-op)
    lane = "standard"
    for record in records:
        try:
            message = parse(record.body)
            if message is None:
                continue
            if message.kind == "version_check":
                # Queued before version checks had a queue of their own: hand it to the checks function.
                queues.enqueue_version_check(message.id)
                logger.info("version check moved to the checks queue", extra={"version_id": str(message.id)})
                continue
            if message.kind == "batch_chunk":  # a chunk of a batch's jobs, on one model (its own claim and finish)
                batch_runner.run_chunk(message.id, message.chunk, lane=queues.lane_of(record.event_source_arn))
                continue
            if message.kind == "replay":  # a shadow replay: no job rows (shared.services.replay_runner)
                replay_runner.run(message.id)
                continue
            jobs.setdefault(message.id, record.message_id)
            lane = queues.lane_of(record.event_source_arn)
        except Exception:
            logger.exception("message could not be handled", extra={"message_id": record.message_id})
            failed.append(record.message_id)
        finally:
            unbind_job()
    if jobs:
        try:
            batch = job_runner.run_jobs(list(jobs), lane=lane)
            retry = [job_id for job_id in jobs if job_id in batch.retry]
        except Exception:
            logger.exception("the batch's jobs could not be claimed or finished")
            retry = list(jobs)
        finally:
            unbind_job()
        failed += [jobs[job_id] for job_id in retry]
    return failed


@one_record_at_a_time
def record_handler(record: SQSRecord) -> None:
    """One message alone (a batch of one); raises when it must come again."""
    if handle_records([record]):
        raise RecordFailed(record.message_id)


@instrument
def handler(event: dict, context) -> dict:
    unbind_job()
    failed = handle_records([SQSRecord(raw) for raw in event.get("Records") or []])
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed]}
