"""Checks dead-letter queue Lambda: a version check whose message ran out of deliveries.

Each record holds ``{"version_id": ...}``. ``version_checks.give_up`` records the engine checks
still pending as failed in the version's fidelity report, and a pending document-library copy
as failed; the version keeps the engine it has. A record that raises is reported back, stays on
this queue and is tried again.
"""

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from shared.messages import version_id_from
from shared.observability import instrument, logger, one_record_at_a_time
from shared.services import version_checks

processor = BatchProcessor(event_type=EventType.SQS)


@one_record_at_a_time
def record_handler(record: SQSRecord) -> None:
    """Record the check a dead-lettered message names as failed; a malformed message is dropped."""
    version_id = version_id_from(record.body)
    if version_id is None:
        # Nothing to record, and retrying cannot help; the body stays in the log for an operator.
        logger.error("unreadable dead letter dropped", extra={"message_id": record.message_id, "body": record.body[:500]})
        return
    version_checks.give_up(version_id)
    logger.warning("dead-lettered version check recorded as failed", extra={"version_id": str(version_id)})


@instrument
def handler(event: dict, context) -> dict:
    """SQS entry point; answers with the records to retry (partial batch response)."""
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
