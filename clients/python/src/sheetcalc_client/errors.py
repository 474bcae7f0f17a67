"""The exceptions the client raises: one per error the service documents.

The class follows the HTTP status; within a status, the service's documented messages (its
error table, used word for word) pick a narrower class, so ``except NotFound`` catches every
404 and ``except JobNotFound`` only the unknown job.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:  # pragma: no cover
    from sheetcalc_client.models import Job


class SheetcalcError(Exception):
    """Base class of everything the client raises."""


class NetworkError(SheetcalcError):
    """No answer from the service after every allowed attempt (the last httpx error is the cause)."""


class ApiError(SheetcalcError):
    """The service answered with an error status; ``detail`` is its ``{"detail": ...}``."""

    status_code: int = 0

    def __init__(self, detail: Any, *, status_code: int, response: httpx.Response | None = None):
        super().__init__(detail if isinstance(detail, str) else json.dumps(detail))
        self.detail = detail
        self.status_code = status_code
        self.response = response

    @property
    def body(self) -> Any:
        """The whole JSON answer (some errors carry more than ``detail``), or None."""
        try:
            return self.response.json() if self.response is not None else None
        except ValueError:
            return None


class BadRequest(ApiError):
    """400: the request is well formed but cannot be carried out."""


class InputValidationError(BadRequest):
    """400 ``Input validation failed: <reason>``: the inputs do not fit the engine."""

    @property
    def reason(self) -> str:
        return str(self.detail).removeprefix("Input validation failed: ")


class NoActiveVersion(BadRequest):
    """400 ``Engine has no active version``."""


class JobNotCompleted(BadRequest):
    """400 ``Job not completed yet. Current status: <status>`` (a download too early)."""

    @property
    def current_status(self) -> str:
        return str(self.detail).rsplit(": ", 1)[-1]


class Unauthorized(ApiError):
    """401: the API key (or the administrator's token) is missing, wrong or inactive."""


class Forbidden(ApiError):
    """403: authenticated, but not allowed (a permission, another consumer's job)."""


class IpNotAllowed(Forbidden):
    """403 ``Access denied: IP address not in whitelist``."""


class PasswordChangeRequired(Forbidden):
    """403 ``Password change required``: the administrator must change the temporary password first."""


class NotFound(ApiError):
    """404: no such engine, job, batch or resource for this caller."""


class EngineNotFound(NotFound):
    """404 ``Engine '<slug>' not found``."""


class JobNotFound(NotFound):
    """404 ``Job not found``."""


class BatchNotFound(NotFound):
    """404 ``Batch not found``."""


class FileNotAvailable(NotFound):
    """404: the job's filled workbook is not available (its version was deleted)."""


class Conflict(ApiError):
    """409: the request clashes with the current state."""


class IdempotencyConflict(Conflict):
    """409: the Idempotency-Key was used with a different request in the last 24 hours."""


class ActivationRefused(Conflict):
    """409 from activate: the release gate refuses the version; ``reasons`` says why
    (activate with an ``override_reason`` to go ahead anyway)."""

    @property
    def reasons(self) -> list[Any]:
        body = self.body
        return body.get("reasons", []) if isinstance(body, dict) else []


class PayloadTooLarge(ApiError):
    """413: a body, a job's inputs or a batch over its limit."""


class ValidationError(ApiError):
    """422: the request does not fit the API's schema; ``errors`` lists each field's problem."""

    @property
    def errors(self) -> list[dict[str, Any]]:
        return self.detail if isinstance(self.detail, list) else []

    @property
    def fields(self) -> dict[str, str]:
        """Each refused field's location, dotted (``body.inputs``), to its message."""
        return {".".join(str(part) for part in e.get("loc", [])): e.get("msg", "") for e in self.errors}


class RateLimited(ApiError):
    """429: a rate limit or quota; ``retry_after`` is the seconds the service asked to wait."""

    def __init__(self, detail: Any, *, status_code: int, response: httpx.Response | None = None, retry_after: float | None = None):
        super().__init__(detail, status_code=status_code, response=response)
        self.retry_after = retry_after


class ServerError(ApiError):
    """5xx: a fault or an outage on the service's side."""


class ServiceUnavailable(ServerError):
    """503: busy or a dependency not answering; ``retry_after`` when the service said."""

    def __init__(self, detail: Any, *, status_code: int, response: httpx.Response | None = None, retry_after: float | None = None):
        super().__init__(detail, status_code=status_code, response=response)
        self.retry_after = retry_after


class JobFailed(SheetcalcError):
    """The job finished ``failed``; ``error_message`` is the service's (generic) reason."""

    def __init__(self, job: Job):
        super().__init__(f"job {job.job_id} failed: {job.error_message}")
        self.job = job
        self.job_id = job.job_id
        self.error_message = job.error_message


class JobTimeout(SheetcalcError):
    """The job had not finished by the caller's deadline; it may still finish (poll ``job_id``)."""

    def __init__(self, job_id: str, status: str, seconds: float):
        super().__init__(f"job {job_id} is still {status} after {seconds:g} s")
        self.job_id = job_id
        self.status = status


class WebhookVerificationError(SheetcalcError):
    """A webhook's ``Sheetcalc-Signature`` does not sign its body with the secret, or is too old."""


# Within a status, the documented message (a prefix of it) that picks a narrower class.
_BY_MESSAGE: dict[int, list[tuple[str, type[ApiError]]]] = {
    400: [("Input validation failed:", InputValidationError), ("Engine has no active version", NoActiveVersion),
          ("Job not completed yet.", JobNotCompleted)],
    403: [("Access denied: IP address not in whitelist", IpNotAllowed), ("Password change required", PasswordChangeRequired)],
    404: [("Engine '", EngineNotFound), ("Job not found", JobNotFound), ("Batch not found", BatchNotFound),
          ("The result file is not available", FileNotAvailable)],
    409: [("Idempotency-Key was already used", IdempotencyConflict), ("The release gate refused", ActivationRefused)],
}
_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict, 413: PayloadTooLarge,
    422: ValidationError, 429: RateLimited, 503: ServiceUnavailable,
}


def retry_after(response: httpx.Response) -> float | None:
    """The ``Retry-After`` seconds of an answer, when it gives a number."""
    value = response.headers.get("Retry-After", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def error_for(response: httpx.Response) -> ApiError:
    """The exception for an error answer: by status, then by the documented message."""
    try:
        body = response.json()
        detail = body.get("detail", body) if isinstance(body, dict) else body
    except ValueError:
        detail = response.text or response.reason_phrase
    status = response.status_code
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else ApiError)
    if isinstance(detail, str):
        cls = next((narrower for prefix, narrower in _BY_MESSAGE.get(status, []) if detail.startswith(prefix)), cls)
    if issubclass(cls, (RateLimited, ServiceUnavailable)):
        return cls(detail, status_code=status, response=response, retry_after=retry_after(response))
    return cls(detail, status_code=status, response=response)
