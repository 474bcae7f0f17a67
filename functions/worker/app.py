"""Worker Lambda: a batch of SQS job messages, each calculated once; failures reported per record."""

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from shared.adapters import queues
from shared.messages import parse
from shared.observability import instrument, logger, one_record_at_a_time
from shared.services import job_runner

# Module scope, as powertools shows it: building it does no I/O and reads no settings.
# Report every failed record rather than raising when all fail: SQS retries just those.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


@one_record_at_a_time
def record_handler(record: SQSRecord) -> None:
    """Run the job a message names; a malformed message is logged and dropped."""
    message = parse(record.body)
    if message is None:
        return
    if message.kind == "version_check":
        # Queued before version checks had a queue of their own: hand it to the checks function.
        queues.enqueue_version_check(message.id)
        logger.info("version check moved to the checks queue", extra={"version_id": str(message.id)})
        return
    job_runner.run_job(message.id)


@instrument
def handler(event: dict, context) -> dict:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
