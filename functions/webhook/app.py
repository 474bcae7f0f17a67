"""Webhook Lambda: one delivery attempt per finished job, at most once."""

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from shared.messages import job_id_from
from shared.observability import instrument, one_record_at_a_time
from shared.services import webhooks

# Module scope, as powertools shows it: building it does no I/O and reads no settings.
# Report every failed record rather than raising when all fail: SQS retries just those.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


@one_record_at_a_time
def record_handler(record: SQSRecord) -> None:
    """Deliver the webhook of the job a message names; a malformed message is logged and dropped."""
    job_id = job_id_from(record.body)
    if job_id is not None:
        webhooks.deliver(job_id)


@instrument
def handler(event: dict, context) -> dict:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
