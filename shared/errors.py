"""The project's exceptions. Domain code raises these; the HTTP edge maps them once.

Every exception carries the message a caller may see. Internal detail never goes into it:
log it where it is caught instead.
"""


class SheetcalcError(Exception):
    """Base class: ``message`` is safe to show to the caller."""

    status_code = 500

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class BadRequest(SheetcalcError):
    """The request is well formed but cannot be carried out (HTTP 400)."""

    status_code = 400


class InputValidationError(BadRequest):
    """Execute inputs do not fit the engine's input schema or named ranges."""

    def __init__(self, reason: str):
        super().__init__(f"Input validation failed: {reason}")
        self.reason = reason


class Unauthorized(SheetcalcError):
    """Missing or wrong credentials (HTTP 401)."""

    status_code = 401


class Forbidden(SheetcalcError):
    """Authenticated, but not allowed (HTTP 403)."""

    status_code = 403


class NotFound(SheetcalcError):
    """The thing does not exist for this caller (HTTP 404)."""

    status_code = 404


class Conflict(SheetcalcError):
    """The request clashes with the current state (HTTP 409)."""

    status_code = 409


class ActivationRefused(Conflict):
    """Activating a version the release gate refuses (HTTP 409): ``reasons`` say why, each
    ``{"code", "message"}``; an override reason activates it anyway."""

    def __init__(self, message: str, *, reasons: list[dict[str, str]]):
        super().__init__(message)
        self.reasons = reasons


class PayloadTooLarge(SheetcalcError):
    """An upload or body over the configured limit (HTTP 413)."""

    status_code = 413


class Invalid(SheetcalcError):
    """A value fails a domain rule that request validation cannot express (HTTP 422)."""

    status_code = 422


class WorkbookError(Invalid):
    """A workbook cannot be read, parsed or calculated."""


class WorkbookRefused(BadRequest):
    """An upload the service will not read: over a limit of the package guard, macro-enabled,
    or one the reader crashed on or could not finish within its time and memory (HTTP 400)."""


class OutputsTooLarge(WorkbookError):
    """A job's outputs over the size limit: the job fails with this message, which names the limit."""


class CalculationStopped(WorkbookError):
    """A calculation past its budget (time, CPU time or memory): the job fails with this message,
    which names the limit."""


class ServiceUnavailable(SheetcalcError):
    """A dependency (database, storage, queue) is not answering (HTTP 503)."""

    status_code = 503


class BadGateway(SheetcalcError):
    """An upstream service (Microsoft Graph, the identity platform) failed or refused (HTTP 502)."""

    status_code = 502


class TooManyRequests(SheetcalcError):
    """Over a limit on attempts, requests or jobs; worth retrying after ``retry_after`` seconds (HTTP 429)."""

    status_code = 429

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class UnimplementedFunction(WorkbookError):
    """A job output depending on a function the engine does not implement: the job fails with
    this message (naming the output; the fidelity report names the cell) rather than return a value."""
