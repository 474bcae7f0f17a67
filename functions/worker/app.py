"""Worker Lambda: a batch of SQS job messages, each calculated once; failures reported per record."""

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from shared.messages import parse
from shared.observability import instrument
from shared.secrets import load_secrets_into_env
from shared.services import job_runner, version_checks

load_secrets_into_env()
# Report every failed record rather than raising when all fail: SQS retries just those.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def record_handler(record: SQSRecord) -> None:
    """Run the job (or the version check) a message names; a malformed message is logged and dropped."""
    message = parse(record.body)
    if message is None:
        return
    if message.kind == "version_check":
        version_checks.check_in_background(message.id)
    else:
        job_runner.run_job(message.id)


@instrument
def handler(event: dict, context) -> dict:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
