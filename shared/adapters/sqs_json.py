"""The three SQS calls a job makes in the dev stack (SendMessageBatch, ReceiveMessage,
DeleteMessageBatch) sent straight over SQS's JSON protocol to a plain-HTTP endpoint (the local
AWS), with botocore's signer; botocore's client does everything else.

A call through a boto3 client runs botocore's whole request pipeline: a dozen event hooks,
model-driven validation and serialization, the signer, urllib3's pool and response objects, then
model-driven parsing. For these small JSON calls that was about three quarters of the client's CPU
per call (bench/local_aws_calls.py), and the calls were a fifth of the dev stack's CPU at
PostgreSQL 16 clients (py-spy, issue 15). Here a call is its JSON body, signed with the client's
credentials (SigV4 for this one request shape, ``_Signer``, checked against botocore's signer),
POSTed on a kept-alive connection of its own per thread (``_Connection``: the request written
whole, a Content-Length answer read back), its JSON answer read back in the shape botocore gives
(binary message attributes decoded to bytes, as botocore does).

Only for a client whose endpoint is ``http://`` (the dev stack's moto): HTTPS, proxies, endpoint
rules and the rest of AWS are botocore's business, and so is every answer this path does not
take: any status but 200, an answer that is not JSON, a connection that fails (and arguments that
are not plain JSON: binary message attributes, which botocore encodes). The call is then
made again through the client itself, with botocore's retries, its errors (``ClientError``) and
its parsing, exactly as before. (A send whose connection broke after SQS had it may so arrive
twice, as with botocore's own retry; a job's second message is a no-op: ``jobs.claim_many``.)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import socket
import threading
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

from botocore.client import BaseClient

log = logging.getLogger(__name__)

# The client's method for each action this module sends itself.
_METHODS = {"SendMessageBatch": "send_message_batch", "ReceiveMessage": "receive_message", "DeleteMessageBatch": "delete_message_batch"}
# As botocore's default read timeout: longer than any long poll (WaitTimeSeconds <= 20).
_TIMEOUT_SECONDS = 60


class SqsCalls:
    """``send_message_batch``, ``receive_message`` and ``delete_message_batch`` with a boto3
    client's arguments and answers; over SQS's JSON protocol when the client's endpoint is plain
    HTTP, otherwise (and for every answer that is not a plain success) through the client."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._connections = threading.local()
        self._direct = False
        if not isinstance(client, BaseClient):  # a stand-in: all its calls are its own
            return
        endpoint, credentials = urlsplit(client.meta.endpoint_url or ""), self._credentials(client)
        if endpoint.scheme != "http" or not endpoint.hostname or credentials is None:
            return
        self._host, self._port = endpoint.hostname, endpoint.port or 80
        self._region, self._credentials_of_client = client.meta.region_name, credentials
        # The Host header as botocore writes it: the port only when it is not HTTP's own.
        name = f"[{endpoint.hostname}]" if ":" in endpoint.hostname else endpoint.hostname
        host = name if endpoint.port in (None, 80) else f"{name}:{endpoint.port}"
        self._signer = _Signer(host, self._region)
        self._direct = True

    @staticmethod
    def _credentials(client: Any):
        # The client's own (botocore keeps them on its signer; None, and botocore's path, if not).
        signer = getattr(client, "_request_signer", None)
        return getattr(signer, "_credentials", None)

    @property
    def direct(self) -> bool:
        """Whether calls go over SQS's JSON protocol from here (a plain-HTTP endpoint)."""
        return self._direct

    def send_message_batch(self, **params: Any) -> dict:
        return self._call("SendMessageBatch", params)

    def receive_message(self, **params: Any) -> dict:
        return self._call("ReceiveMessage", params)

    def delete_message_batch(self, **params: Any) -> dict:
        return self._call("DeleteMessageBatch", params)

    def _call(self, action: str, params: dict) -> dict:
        if self._direct:
            answer = self._post(action, params)
            if answer is not None:
                return _decoded(action, answer)
        return getattr(self._client, _METHODS[action])(**params)

    def _post(self, action: str, params: dict) -> dict | None:
        """The call's JSON answer, or None when it is anything but a 200 with a JSON object."""
        try:
            body = json.dumps(params, separators=(",", ":")).encode()
        except (TypeError, ValueError):
            return None  # bytes (a binary message attribute): botocore encodes those
        request = self._signer.request(action, body, self._credentials_of_client.get_frozen_credentials())
        connection = self._connection()
        try:
            status, data = connection.exchange(request)
        except (OSError, ValueError):
            log.debug("SQS %s over a kept connection failed; through botocore instead", action, exc_info=True)
            self._drop_connection()
            return None
        if not connection.open:
            self._drop_connection()
        if status != 200 or data is None:
            return None  # botocore makes the call again and answers it: retries, ClientError
        try:
            answer = json.loads(data)
        except ValueError:
            return None
        return answer if isinstance(answer, dict) else None

    def _connection(self) -> _Connection:
        connection = getattr(self._connections, "connection", None)
        if connection is None:
            connection = _Connection(self._host, self._port)
            self._connections.connection = connection
        return connection

    def _drop_connection(self) -> None:
        connection = getattr(self._connections, "connection", None)
        self._connections.connection = None
        if connection is not None:
            connection.close()


class _Signer:
    """AWS Signature Version 4 of one shape of request, the only one sent here: ``POST /`` with
    no query, a JSON body, and the headers Content-Type, Host, X-Amz-Date, X-Amz-Target (and
    X-Amz-Security-Token with temporary credentials), all of them signed, as botocore's
    ``SigV4Auth`` signs the same request (tests compare the two). botocore's signer builds and
    normalises a generic request each time (a fifth of a direct call's CPU); here the canonical
    request is a format string and the day's signing key is derived once per day and key."""

    def __init__(self, host: str, region: str) -> None:
        self.host, self.region = host, region
        self._keys: dict[tuple[str, str], bytes] = {}

    def _signing_key(self, secret: str, day: str) -> bytes:
        key = self._keys.get((secret, day))
        if key is None:
            key = f"AWS4{secret}".encode()
            for part in (day, self.region, "sqs", "aws4_request"):
                key = hmac.new(key, part.encode(), hashlib.sha256).digest()
            self._keys = {(secret, day): key}  # only today's
        return key

    def headers(self, action: str, body: bytes, credentials: Any, now: datetime | None = None) -> list[tuple[str, str]]:
        """The request's headers, Authorization included."""
        stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
        day = stamp[:8]
        signed = [("content-type", "application/x-amz-json-1.0"), ("host", self.host), ("x-amz-date", stamp)]
        if credentials.token:
            signed.append(("x-amz-security-token", credentials.token))
        signed.append(("x-amz-target", f"AmazonSQS.{action}"))
        names = ";".join(name for name, _ in signed)
        canonical = "POST\n/\n\n" + "".join(f"{name}:{value}\n" for name, value in signed) + "\n" + names + "\n" \
            + hashlib.sha256(body).hexdigest()
        scope = f"{day}/{self.region}/sqs/aws4_request"
        to_sign = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
        signature = hmac.new(self._signing_key(credentials.secret_key, day), to_sign.encode(), hashlib.sha256).hexdigest()
        authorization = f"AWS4-HMAC-SHA256 Credential={credentials.access_key}/{scope}, SignedHeaders={names}, Signature={signature}"
        return [*signed, ("authorization", authorization)]

    def request(self, action: str, body: bytes, credentials: Any) -> bytes:
        """The whole HTTP/1.1 request, ready to write."""
        lines = "".join(f"{name}: {value}\r\n" for name, value in self.headers(action, body, credentials))
        return f"POST / HTTP/1.1\r\n{lines}content-length: {len(body)}\r\n\r\n".encode("latin-1") + body


class _Connection:
    """One kept-alive HTTP/1.1 connection and just what these calls need of it: a request written
    whole, an answer's status line, its headers and a ``Content-Length`` body read back (what the
    local AWS sends; ``http.client`` parsed each answer's headers as an e-mail message, a fifth of
    a direct call's CPU). An answer without a length (chunked, or ended by closing) is not read:
    the status comes back with no body, the connection is closed, and botocore makes the call."""

    # Longest status line or header line read (the local AWS's are far shorter).
    _MAX_LINE = 65536

    def __init__(self, host: str, port: int) -> None:
        # socket.create_connection, as http.client connects (so test recorders see it alike).
        self.sock = socket.create_connection((host, port), timeout=_TIMEOUT_SECONDS)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buffer = bytearray()  # read from the socket, not yet taken
        self.open = True

    def exchange(self, request: bytes) -> tuple[int, bytes | None]:
        """Send ``request``; the answer's status and body (None when it has no Content-Length).
        OSError when the connection fails, ValueError when the answer is not HTTP."""
        self.sock.sendall(request)
        status_line = self._line()
        version, status = status_line.split(None, 2)[:2]
        if not version.startswith(b"HTTP/"):
            raise ValueError("not an HTTP answer")
        length, close = None, version != b"HTTP/1.1"
        while True:
            line = self._line()
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection":
                close = value.strip().lower() == b"close"
            elif name == b"transfer-encoding":
                length, close = None, True
        if length is None:
            self.close()
            return int(status), None
        while len(self._buffer) < length:
            self._receive()
        body = bytes(self._buffer[:length])
        del self._buffer[:length]
        if close:
            self.close()
        return int(status), body

    def _line(self) -> bytes:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end + 1])
                del self._buffer[:end + 1]
                return line
            if len(self._buffer) > self._MAX_LINE:
                raise ValueError("header line too long")
            self._receive()

    def _receive(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionResetError("the local AWS closed the connection")
        self._buffer += data

    def close(self) -> None:
        self.open = False
        self.sock.close()


def _decoded(action: str, answer: dict) -> dict:
    """``answer`` as botocore parses it: message attributes' binary values (base64 in the JSON)
    as bytes. Everything else in these three answers is a string, a number or a list of them."""
    if action == "ReceiveMessage":
        for message in answer.get("Messages", []):
            for value in message.get("MessageAttributes", {}).values():
                if "BinaryValue" in value:
                    value["BinaryValue"] = base64.b64decode(value["BinaryValue"])
                if "BinaryListValues" in value:
                    value["BinaryListValues"] = [base64.b64decode(v) for v in value["BinaryListValues"]]
    return answer
