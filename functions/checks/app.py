"""Checks Lambda: a new version's background work, one message at a time, off the jobs queue.

Each record holds ``{"version_id": ...}``; ``version_checks.check_in_background`` runs the slower
engines' fidelity checks (up to ``SHEETCALC_FIDELITY_TIMEOUT_SECONDS``, 840 s) and the copy to
the tenant's document library. A record that raises (storage or database down, or a check past its
deadline: ``CheckDeadlineExpired``, so load never decides the engine) is reported back
and redelivered; after the last try ``functions.checks.dlq`` records the check as failed.
"""

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from shared.messages import version_id_from
from shared.observability import instrument, one_record_at_a_time
from shared.services import version_checks

# Module scope, as powertools shows it: building it does no I/O and reads no settings.
# Report every failed record rather than raising when all fail: SQS retries just those.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


@one_record_at_a_time
def record_handler(record: SQSRecord) -> None:
    """Run the checks of the version a message names; a malformed message is logged and dropped."""
    version_id = version_id_from(record.body)
    if version_id is not None:
        version_checks.check_in_background(version_id)


@instrument
def handler(event: dict, context) -> dict:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
