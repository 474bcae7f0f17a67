"""Webhook Lambda: one delivery attempt per finished job, at most once; and the redeliveries
administrators ask for, each at most once."""

import logging

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from shared.messages import parse
from shared.observability import instrument, one_record_at_a_time
from shared.services import webhooks

log = logging.getLogger(__name__)

# Module scope, as powertools shows it: building it does no I/O and reads no settings.
# Report every failed record rather than raising when all fail: SQS retries just those.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


@one_record_at_a_time
def record_handler(record: SQSRecord) -> None:
    """Deliver the webhook of the job a message names, or the redelivery it names; a malformed
    message is logged and dropped."""
    message = parse(record.body)
    if message is not None and message.kind == "job":
        webhooks.deliver(message.id)
    elif message is not None and message.kind == "webhook_redelivery":
        webhooks.redeliver(message.id)
    elif message is not None:
        log.error("dropping a webhooks queue message that names no job")


@instrument
def handler(event: dict, context) -> dict:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
