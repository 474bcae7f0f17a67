"""The three SQS calls a job makes in the dev stack (SendMessageBatch, ReceiveMessage,
DeleteMessageBatch) sent straight over SQS's JSON protocol to a plain-HTTP endpoint (the local
AWS), with botocore's signer; botocore's client does everything else.

A call through a boto3 client runs botocore's whole request pipeline: a dozen event hooks,
model-driven validation and serialization, the signer, urllib3's pool and response objects, then
model-driven parsing. For these small JSON calls that was about three quarters of the client's CPU
per call (bench/local_aws_calls.py), and the calls were a fifth of the dev stack's CPU at
PostgreSQL 16 clients (py-spy, issue 15). Here a call is its JSON body, signed by botocore's own
SigV4 signer with the client's credentials, POSTed on a kept-alive ``http.client`` connection
(one per thread), its JSON answer read back in the shape botocore gives (binary message
attributes decoded to bytes, as botocore does).

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
import http.client
import json
import logging
import threading
from typing import Any
from urllib.parse import urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
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
        self._url = f"http://{endpoint.netloc}/"
        self._host, self._port = endpoint.hostname, endpoint.port or 80
        self._region, self._credentials_of_client = client.meta.region_name, credentials
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
        request = AWSRequest(method="POST", url=self._url, data=body, headers={
            "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": f"AmazonSQS.{action}",
        })
        SigV4Auth(self._credentials_of_client.get_frozen_credentials(), "sqs", self._region).add_auth(request)
        connection = self._connection()
        try:
            connection.request("POST", "/", body=body, headers=dict(request.headers.items()))
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            log.debug("SQS %s over a kept connection failed; through botocore instead", action, exc_info=True)
            self._drop_connection()
            return None
        if response.status != 200:
            return None  # botocore makes the call again and answers it: retries, ClientError
        try:
            answer = json.loads(data)
        except ValueError:
            return None
        return answer if isinstance(answer, dict) else None

    def _connection(self) -> http.client.HTTPConnection:
        connection = getattr(self._connections, "connection", None)
        if connection is None:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=_TIMEOUT_SECONDS)
            self._connections.connection = connection
        return connection

    def _drop_connection(self) -> None:
        connection = getattr(self._connections, "connection", None)
        self._connections.connection = None
        if connection is not None:
            connection.close()


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
