"""The local AWS answers only requests signed with its own credentials.

moto's server accepts any request, signed or not, so without this anyone on the machine could
read every tenant's workbooks and results from the dev stack's S3 (or empty its queues, or reset
it through moto's own API). ``SignedRequestsOnly`` sits in front of moto's WSGI app and answers
403 to every request that is not signed (Signature Version 4) with the key pair it was given:

- a request signed in its ``Authorization`` header (every boto3 call, and the service's direct
  SQS calls, ``shared.adapters.sqs_json``) names that key id, and its signature is computed again
  here with botocore's own signer (``SigV4Auth``, ``S3SigV4Auth``) over the headers it says it
  signed, the raw path and query, and its body: a body whose ``X-Amz-Content-SHA256`` is a digest
  must have that digest (S3's ``UNSIGNED-PAYLOAD`` forms are accepted, as S3 accepts them), and
  its ``X-Amz-Date`` must be within 15 minutes of now, as AWS requires;
- a presigned URL (``X-Amz-Credential`` ... ``X-Amz-Signature`` in its query, the download links
  the service hands out) is computed again with ``S3SigV4QueryAuth`` and refused once expired.

Signatures are compared in constant time. The key pair is the process's own AWS credentials when
the local AWS starts (``local_aws.start_local_aws``): ``sheetcalc dev`` makes them a random pair
of its data dir (``local_aws.use_dev_credentials``), which its API and poller processes sign with.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import re
import time
from calendar import timegm
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote
from xml.sax.saxutils import escape

from botocore.auth import (
    STREAMING_UNSIGNED_PAYLOAD_TRAILER,
    UNSIGNED_PAYLOAD,
    S3SigV4Auth,
    S3SigV4QueryAuth,
    SigV4Auth,
    SigV4QueryAuth,
)
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

ALGORITHM = "AWS4-HMAC-SHA256"
# AWS refuses a signed request whose time is further than this from its own clock.
MAX_CLOCK_SKEW_SECONDS = 15 * 60
# The longest a presigned URL may last (SigV4's own limit: 7 days).
MAX_PRESIGNED_SECONDS = 7 * 24 * 3600
_AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256\s+Credential=(?P<credential>[^,\s]+),\s*SignedHeaders=(?P<headers>[^,\s]+),"
    r"\s*Signature=(?P<signature>[0-9a-f]{64})\s*"
)
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")
_UNSIGNED_BODIES = frozenset({UNSIGNED_PAYLOAD, STREAMING_UNSIGNED_PAYLOAD_TRAILER})
_TIMESTAMP = re.compile(r"(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z")


class Refused(Exception):
    """Why a request is answered 403: an AWS error code and its message."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


UNSIGNED = Refused("AccessDenied", "Requests to the dev stack's local AWS must be signed with its credentials")
WRONG_KEY = Refused("InvalidAccessKeyId", "The access key id is not the dev stack's")
BAD_SIGNATURE = Refused("SignatureDoesNotMatch", "The request signature does not match")
EXPIRED = Refused("AccessDenied", "Request has expired")


def _seconds(timestamp: str) -> int:
    """Seconds since the epoch of a SigV4 timestamp (20261127T165007Z)."""
    match = _TIMESTAMP.fullmatch(timestamp)
    if match is None:
        raise Refused("AccessDenied", "X-Amz-Date is not a SigV4 timestamp")
    year, month, day, hour, minute, second = (int(part) for part in match.groups())
    try:
        return timegm((year, month, day, hour, minute, second, 0, 0, 0))
    except (ValueError, OverflowError):
        raise Refused("AccessDenied", "X-Amz-Date is not a SigV4 timestamp") from None


def _header(environ: dict, name: str) -> str | None:
    """A request header as WSGI holds it (Content-Type and Content-Length apart)."""
    key = name.upper().replace("-", "_")
    return environ.get(key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}")


def _read_body(environ: dict) -> bytes:
    """The request's body, read whole and put back for the app behind."""
    stream = environ.get("wsgi.input")
    if stream is None:
        return b""
    if environ.get("wsgi.input_terminated"):
        body = stream.read()
    else:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        body = stream.read(length) if length > 0 else b""
    environ["wsgi.input"] = io.BytesIO(body)
    return body


class SignedRequestsOnly:
    """A WSGI app in front of ``app`` that lets through only requests signed with ``credentials``."""

    def __init__(self, app: Callable, credentials: Credentials, *, clock: Callable[[], float] = time.time):
        self._app, self._clock = app, clock
        frozen = credentials.get_frozen_credentials()
        self._credentials = Credentials(frozen.access_key, frozen.secret_key)
        self._access_key = frozen.access_key

    def __call__(self, environ: dict, start_response: Callable) -> Any:
        try:
            self.verify(environ)
        except Refused as refused:
            return self._refuse(environ, start_response, refused)
        return self._app(environ, start_response)

    def verify(self, environ: dict) -> None:
        """Return if the request is signed with the credentials; raise Refused otherwise."""
        authorization = _header(environ, "Authorization")
        query = environ.get("QUERY_STRING", "")
        if authorization:
            self._verify_header_signature(environ, authorization)
        elif "X-Amz-Signature=" in query or "X-Amz-Credential=" in query:
            self._verify_presigned(environ, query)
        else:
            raise UNSIGNED

    # --- the two ways a request is signed ---------------------------------------------------

    def _verify_header_signature(self, environ: dict, authorization: str) -> None:
        match = _AUTHORIZATION.fullmatch(authorization)
        if match is None:
            raise UNSIGNED
        region, service, day = self._scope(match["credential"])
        signed = match["headers"].split(";")
        if "host" not in signed or "x-amz-date" not in signed:
            raise Refused("AccessDenied", "A signed request must sign its Host and X-Amz-Date headers")
        timestamp = _header(environ, "X-Amz-Date") or ""
        if not timestamp.startswith(day):
            raise Refused("AccessDenied", "X-Amz-Date is not the day of the credential scope")
        if abs(self._clock() - _seconds(timestamp)) > MAX_CLOCK_SKEW_SECONDS:
            raise Refused("RequestTimeTooSkewed", "The request's time is too far from the local AWS's")
        body = _read_body(environ)
        content_sha256 = _header(environ, "X-Amz-Content-SHA256")
        if content_sha256 is not None and content_sha256 not in _UNSIGNED_BODIES and not (
            _HEX_DIGEST.fullmatch(content_sha256) and hmac.compare_digest(content_sha256, hashlib.sha256(body).hexdigest())
        ):
            raise Refused("XAmzContentSHA256Mismatch", "The body's digest is not the one signed")
        request = self._request(environ, signed, environ.get("QUERY_STRING", ""), body)
        request.context["timestamp"] = timestamp
        signer = (S3SigV4Auth if service == "s3" else SigV4Auth)(self._credentials, service, region)
        self._compare(signer, request, match["signature"])

    def _verify_presigned(self, environ: dict, query: str) -> None:
        pairs = [pair.partition("=") for pair in query.split("&")]
        values: dict[str, str] = {}
        for key, _, value in pairs:
            if key.startswith("X-Amz-"):
                if key in values:
                    raise UNSIGNED  # two of a signing parameter: not what a signer writes
                values[key] = unquote(value)
        if values.get("X-Amz-Algorithm") != ALGORITHM or "X-Amz-Signature" not in values:
            raise UNSIGNED
        region, service, day = self._scope(values.get("X-Amz-Credential", ""))
        timestamp = values.get("X-Amz-Date", "")
        try:
            expires = int(values.get("X-Amz-Expires", ""))
        except ValueError:
            raise UNSIGNED from None
        signed_at = _seconds(timestamp)
        if not timestamp.startswith(day) or not 0 < expires <= MAX_PRESIGNED_SECONDS:
            raise UNSIGNED
        now = self._clock()
        if now > signed_at + expires:
            raise EXPIRED
        if signed_at > now + MAX_CLOCK_SKEW_SECONDS:
            raise Refused("AccessDenied", "The link is signed for a time yet to come")
        signed = values.get("X-Amz-SignedHeaders", "").split(";")
        if "host" not in signed:
            raise Refused("AccessDenied", "A presigned link must sign its Host header")
        # Signed over the query without its signature, as the signer wrote it (botocore's canonical
        # query is the URL's own pairs, sorted).
        unsigned_query = "&".join(
            f"{key}={value}" if sep else key for key, sep, value in pairs if key != "X-Amz-Signature"
        )
        request = self._request(environ, signed, unsigned_query, b"")
        request.context["timestamp"] = timestamp
        signer_class = S3SigV4QueryAuth if service == "s3" else SigV4QueryAuth
        self._compare(signer_class(self._credentials, service, region, expires=expires), request, values["X-Amz-Signature"])

    # --- shared steps --------------------------------------------------------------------------

    def _scope(self, credential: str) -> tuple[str, str, str]:
        """(region, service, day) of a credential scope naming our key; Refused otherwise."""
        parts = credential.split("/")
        if len(parts) != 5 or parts[4] != "aws4_request" or not all(parts):
            raise UNSIGNED
        if not hmac.compare_digest(parts[0].encode(), self._access_key.encode()):
            raise WRONG_KEY
        return parts[2], parts[3], parts[1]

    @staticmethod
    def _request(environ: dict, signed: list[str], query: str, body: bytes) -> AWSRequest:
        """The request as its signer saw it: the headers it signed, its raw path and query, its body."""
        headers = {}
        for name in signed:
            value = _header(environ, name)
            if value is None:
                raise BAD_SIGNATURE  # it signed a header it did not send
            headers[name] = value
        raw = environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ.get("PATH_INFO", "/")
        path = raw.split("?", 1)[0]
        url = f"http://{headers['host']}{path}" + (f"?{query}" if query else "")
        return AWSRequest(method=environ.get("REQUEST_METHOD", "GET"), url=url, data=body, headers=headers)

    @staticmethod
    def _compare(signer: SigV4Auth, request: AWSRequest, signature: str) -> None:
        expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
        if not hmac.compare_digest(expected.encode(), signature.encode()):
            raise BAD_SIGNATURE

    @staticmethod
    def _refuse(environ: dict, start_response: Callable, refused: Refused) -> list[bytes]:
        if _header(environ, "X-Amz-Target"):  # SQS's JSON protocol
            body = json.dumps({"__type": refused.code, "message": refused.message}).encode()
            content_type = "application/x-amz-json-1.0"
        else:  # S3 (and the query protocols) answer in XML
            body = (
                '<?xml version="1.0" encoding="UTF-8"?>\n'
                f"<Error><Code>{refused.code}</Code><Message>{escape(refused.message)}</Message></Error>"
            ).encode()
            content_type = "application/xml"
        start_response("403 Forbidden", [("Content-Type", content_type), ("Content-Length", str(len(body)))])
        return [body]
