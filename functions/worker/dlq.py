"""Jobs dead-letter queue Lambda: a job whose message ran out of deliveries ends failed.

Each record holds ``{"job_id": ...}``. ``job_runner.fail_dead_lettered`` marks the job failed with
a generic message (and queues its webhook, if one was asked for); a record that raises (the
database is down, say) is reported back, stays on this queue and is tried again. A version check
dead-lettered here (queued on the jobs queue before checks had a queue of their own) is recorded
as failed, as ``functions.checks.dlq`` does.
"""

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from shared.messages import parse
from shared.observability import bind, instrument, logger, one_record_at_a_time
from shared.services import batch_runner, job_runner, replay_runner, version_checks

processor = BatchProcessor(event_type=EventType.SQS)


@one_record_at_a_time
def record_handler(record: SQSRecord) -> None:
    """Fail the job a dead-lettered message names; a malformed message is logged and dropped."""
    message = parse(record.body)
    if message is not None and message.kind == "version_check":
        version_checks.give_up(message.id)
        logger.warning("dead-lettered version check recorded as failed")
        return
    if message is not None and message.kind == "batch_chunk":
        return batch_runner.give_up_chunk(message.id, message.chunk)
    if message is not None and message.kind == "replay":
        replay_runner.give_up(message.id)
        return
    job_id = message.id if message is not None else None
    if job_id is None:
        # Nothing to fail, and retrying cannot help; the body stays in the log for an operator.
        logger.error("unreadable dead letter dropped", extra={"message_id": record.message_id, "body": record.body[:500]})
        return
    bind(job_id=job_id)
    job_runner.fail_dead_lettered(str(job_id))
    logger.warning("dead-lettered job failed")


@instrument
def handler(event: dict, context) -> dict:
    """SQS entry point; answers with the records to retry (partial batch response)."""
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
