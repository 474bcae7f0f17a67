"""Each error the interface specification documents becomes its own exception, by status and
then by the documented message (the spec's error table, word for word)."""

from __future__ import annotations

import httpx
import pytest

from client_fakes import BASE, KEY
import sheetcalc_client as sc
from sheetcalc_client import Client, RetryPolicy
from sheetcalc_client.errors import error_for

# (status, detail, the class raised, the classes it is also an instance of)
SPEC_ERRORS = [
    (400, "Input validation failed: 'years' is a required property", sc.InputValidationError, sc.BadRequest),
    (400, "Engine has no active version", sc.NoActiveVersion, sc.BadRequest),
    (400, "Job not completed yet. Current status: processing", sc.JobNotCompleted, sc.BadRequest),
    (400, "wait must be a number of seconds greater than 0 and at most 25", sc.BadRequest, sc.ApiError),
    (401, "Invalid API key", sc.Unauthorized, sc.ApiError),
    (403, "Consumer does not have execute permission for this engine", sc.Forbidden, sc.ApiError),
    (403, "Consumer does not have view permission for this job", sc.Forbidden, sc.ApiError),
    (403, "Consumer does not have download permission for this job", sc.Forbidden, sc.ApiError),
    (403, "Access denied: IP address not in whitelist", sc.IpNotAllowed, sc.Forbidden),
    (403, "Password change required", sc.PasswordChangeRequired, sc.Forbidden),
    (404, "Engine 'loan-quote' not found", sc.EngineNotFound, sc.NotFound),
    (404, "Job not found", sc.JobNotFound, sc.NotFound),
    (404, "Batch not found", sc.BatchNotFound, sc.NotFound),
    (404, "The result file is not available for this job", sc.FileNotAvailable, sc.NotFound),
    (409, "Idempotency-Key was already used with a different request in the last 24 hours; send a new key for a new request",
     sc.IdempotencyConflict, sc.Conflict),
    (413, "The request body is larger than the 2 MB limit", sc.PayloadTooLarge, sc.ApiError),
    (500, "Internal server error", sc.ServerError, sc.ApiError),
    (502, "Bad gateway", sc.ServerError, sc.ApiError),
]


@pytest.mark.parametrize(("status", "detail", "cls", "parent"), SPEC_ERRORS)
def test_a_documented_error_becomes_its_exception(status, detail, cls, parent):
    error = error_for(httpx.Response(status, json={"detail": detail}))
    assert type(error) is cls and isinstance(error, parent) and isinstance(error, sc.SheetcalcError)
    assert error.status_code == status and error.detail == detail and str(error) == detail


def test_the_narrower_classes_carry_what_their_message_says():
    assert error_for(httpx.Response(400, json={"detail": "Input validation failed: years: -1 is less than 1"})).reason \
        == "years: -1 is less than 1"
    assert error_for(httpx.Response(400, json={"detail": "Job not completed yet. Current status: pending"})).current_status \
        == "pending"


def test_a_422_lists_each_refused_field():
    detail = [{"loc": ["body", "inputs"], "msg": "Field required", "type": "missing"},
              {"loc": ["body", "webhook_url"], "msg": "Value error, webhook_url must begin with http:// or https://",
               "type": "value_error"}]
    error = error_for(httpx.Response(422, json={"detail": detail}))
    assert isinstance(error, sc.ValidationError) and error.errors == detail
    assert error.fields == {"body.inputs": "Field required",
                            "body.webhook_url": "Value error, webhook_url must begin with http:// or https://"}


def test_a_429_and_a_503_carry_retry_after():
    limited = error_for(httpx.Response(429, headers={"Retry-After": "7"}, json={"detail": "Too many jobs in progress: 1000"}))
    assert isinstance(limited, sc.RateLimited) and limited.retry_after == 7
    busy = error_for(httpx.Response(503, json={"detail": "The job could not be queued"}))
    assert isinstance(busy, sc.ServiceUnavailable) and isinstance(busy, sc.ServerError) and busy.retry_after is None


def test_an_answer_that_is_not_json_still_becomes_an_error():
    error = error_for(httpx.Response(502, text="<html>Bad Gateway</html>"))
    assert isinstance(error, sc.ServerError) and "Bad Gateway" in str(error)


def test_the_client_raises_them(service):
    service.on("GET", "/jobs/about/acme/loan", httpx.Response(404, json={"detail": "Engine 'loan' not found"}))
    with pytest.raises(sc.EngineNotFound):
        Client(BASE, KEY, transport=service.transport(), retry=RetryPolicy(max_attempts=1)).about("acme/loan")
