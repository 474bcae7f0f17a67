"""sheetcalc-client: a typed client for sheetcalc's consumer and management APIs."""

from sheetcalc_client._core import POLL_SCHEDULE, RetryPolicy
from sheetcalc_client._version import __version__
from sheetcalc_client.admin import AdminClient
from sheetcalc_client.aio import AsyncClient, AsyncEngine
from sheetcalc_client.client import Client, Engine
from sheetcalc_client.errors import (
    ActivationRefused, ApiError, BadRequest, BatchNotFound, Conflict, EngineNotFound, FileNotAvailable, Forbidden, IdempotencyConflict,
    InputValidationError, IpNotAllowed, JobFailed, JobNotCompleted, JobNotFound, JobTimeout, NetworkError, NoActiveVersion,
    NotFound, PasswordChangeRequired, PayloadTooLarge, RateLimited, ServerError, ServiceUnavailable, SheetcalcError,
    Unauthorized, ValidationError, WebhookVerificationError,
)
from sheetcalc_client.models import About, Accepted, BatchAccepted, BatchResult, BatchStatus, Download, Job
from sheetcalc_client.webhooks import verify

__all__ = [
    "POLL_SCHEDULE", "RetryPolicy", "__version__", "AdminClient", "AsyncClient", "AsyncEngine", "Client", "Engine",
    "ActivationRefused", "ApiError", "BadRequest", "BatchNotFound", "Conflict", "EngineNotFound", "FileNotAvailable", "Forbidden",
    "IdempotencyConflict", "InputValidationError", "IpNotAllowed", "JobFailed", "JobNotCompleted", "JobNotFound",
    "JobTimeout", "NetworkError", "NoActiveVersion", "NotFound", "PasswordChangeRequired", "PayloadTooLarge",
    "RateLimited", "ServerError", "ServiceUnavailable", "SheetcalcError", "Unauthorized", "ValidationError",
    "WebhookVerificationError", "About", "Accepted", "BatchAccepted", "BatchResult", "BatchStatus", "Download", "Job",
    "verify",
]
