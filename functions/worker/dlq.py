"""The jobs dead-letter queue's handler: a job whose message ran out of deliveries ends failed.

Each record holds ``{"job_id": ...}``. The job is marked failed with a generic message (and its
webhook queued, if one was asked for) by ``job_runner.fail_dead_lettered``; a record that fails
(the database is down, say) goes back to this queue and is tried again.
"""

from __future__ import annotations

import json

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from shared.observability import bind, instrument, logger
from shared.secrets import load_secrets_into_env
from shared.services import job_runner

processor = BatchProcessor(event_type=EventType.SQS)


def _job_id(body: str) -> str | None:
    try:
        message = json.loads(body)
    except ValueError:
        return None
    job_id = message.get("job_id") if isinstance(message, dict) else None
    return str(job_id) if job_id else None


def record_handler(record: SQSRecord) -> None:
    """Fail the job named by one dead-lettered message."""
    job_id = _job_id(record.body)
    bind(job_id=job_id)
    if job_id is None:
        # Nothing to fail, and retrying cannot help: log it so an operator can look, and drop it.
        logger.error("unreadable dead letter dropped", extra={"message_id": record.message_id, "body": record.body[:500]})
        return
    job_runner.fail_dead_lettered(job_id)
    logger.warning("dead-lettered job failed")


@instrument
def handler(event: dict, context) -> dict:
    """SQS entry point; answers with the records to retry (partial batch response)."""
    load_secrets_into_env()
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
