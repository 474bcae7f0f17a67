"""Structured logs, metrics and traces (aws-lambda-powertools), quiet outside Lambda.

``logger`` writes JSON lines; ``bind_job`` / ``bind`` add ``tenant_id``, ``engine_id`` and
``job_id`` to every line that follows, until ``unbind_job``; a batch's record handler wrapped by
``one_record_at_a_time`` starts and ends each record with none of them bound. ``record_job_metrics`` emits CloudWatch metrics (EMF)
only inside a Lambda function, where a handler wrapped by ``instrument`` flushes them at the
end of each invocation; elsewhere (dev server, tests) it does nothing, so nothing piles up in
memory or lands on stdout. ``tracer`` is disabled outside Lambda.
"""

from __future__ import annotations

import functools
import logging
import os
import warnings
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import MetricUnit

SERVICE = "sheetcalc"
NAMESPACE = "Sheetcalc"
JOB_KEYS = ("tenant_id", "engine_id", "job_id")
# The project's own loggers (logging.getLogger(__name__) in shared/ and functions/).
LIBRARY_LOGGERS = ("shared", "functions")

# Job status -> count metric; calculation time is one more metric, in milliseconds.
_STATUS_METRICS = {"completed": "JobsCompleted", "failed": "JobsFailed"}
CALCULATION_TIME_METRIC = "CalculationTime"


def running_in_lambda() -> bool:
    """Whether this process is a Lambda function on AWS (not ``sam local``, not a dev server)."""
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME")) and not os.environ.get("AWS_SAM_LOCAL")


logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
# None lets powertools decide inside Lambda (it honours POWERTOOLS_TRACE_DISABLED).
tracer = Tracer(service=SERVICE, disabled=True if not running_in_lambda() else None)


def bind(**keys: Any) -> None:
    """Add ``keys`` to every following log line; a ``None`` value removes that key."""
    present = {name: str(value) for name, value in keys.items() if value is not None}
    absent = [name for name, value in keys.items() if value is None]
    if absent:
        logger.remove_keys(absent)
    if present:
        logger.append_keys(**present)


def bind_job(job: Any) -> None:
    """Log ``job``'s tenant, engine and id with every following line (any object with them)."""
    bind(
        tenant_id=getattr(job, "tenant_id", None),
        engine_id=getattr(job, "engine_id", None),
        job_id=getattr(job, "id", None) or getattr(job, "job_id", None),
    )


def unbind_job() -> None:
    """Stop logging the job keys (between records of one batch)."""
    logger.remove_keys(list(JOB_KEYS))


def one_record_at_a_time(record_handler: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Wrap a batch's record handler so that no record logs with the job keys of the one before."""

    @functools.wraps(record_handler)
    def handle(record: Any) -> Any:
        unbind_job()
        try:
            return record_handler(record)
        finally:
            unbind_job()

    return handle


def record_job_metrics(status: str, calc_ms: int | None) -> None:
    """Count a finished job by status and record its calculation time (Lambda only)."""
    if not running_in_lambda():
        return
    name = _STATUS_METRICS.get(str(getattr(status, "value", status)).lower())
    if name:
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
    if calc_ms is not None:
        metrics.add_metric(name=CALCULATION_TIME_METRIC, unit=MetricUnit.Milliseconds, value=calc_ms)


@functools.cache
def _route_library_logs() -> None:
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name)  # registered, so that the copy below finds it
    copy_config_to_registered_loggers(source_logger=logger, include=set(LIBRARY_LOGGERS))


def instrument(handler: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """Wrap a Lambda handler with context logging, tracing and metric flushing.

    Inside Lambda every invocation starts with clean log keys, is traced (responses are not
    recorded: they carry customer data) and flushes its metrics at the end. Outside Lambda,
    or without a context (tests calling ``handler(event, None)``), the handler runs as is.
    In Lambda the project's ``logging.getLogger(__name__)`` loggers write through ``logger``
    too, so their lines are JSON and carry the bound job keys.
    """
    if running_in_lambda():
        _route_library_logs()
    instrumented = metrics.log_metrics(
        tracer.capture_lambda_handler(
            logger.inject_lambda_context(handler, clear_state=True), capture_response=False
        )
    )

    @functools.wraps(handler)
    def wrapper(event: Any, context: Any) -> Any:
        if context is None or not running_in_lambda():
            return handler(event, context)
        with warnings.catch_warnings():
            # A webhook or API invocation that finished no job has no metric to publish.
            warnings.filterwarnings("ignore", message="No application metrics to publish")
            return instrumented(event, context)

    return wrapper
