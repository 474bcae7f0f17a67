"""A local AWS for the dev stack: moto's server on a loopback port, with the bucket and the
queues (each with its dead-letter queue) that ``template.yaml`` declares in the cloud.

With a ``state_dir`` (``sheetcalc dev`` passes ``<data dir>/aws``) the bucket's objects live on
disk too (``object_mirror``) and moto listens on the port it had last time when that port is
free, so uploaded workbooks, results and the download links already handed out survive a
restart. Queues start empty: what their lost messages asked for is rebuilt from the database
(``shared.services.sweeper``, run by the dev stack at start).

It answers only requests signed with the credentials of the process that starts it
(``local_auth.SignedRequestsOnly``), presigned download links included; anything else is 403.
``sheetcalc dev`` makes those credentials a random key pair of its data dir
(``use_dev_credentials``), which every one of its processes signs with.
"""

from __future__ import annotations

import collections
import functools
import io
import json
import logging
import os
import secrets
import socket
import string
from dataclasses import dataclass, field
from pathlib import Path

import boto3
from botocore.credentials import Credentials
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from moto.server import ThreadedMotoServer
from werkzeug.serving import make_server

from shared.devstack.local_auth import SignedRequestsOnly
from shared.devstack.object_mirror import ObjectMirror

log = logging.getLogger(__name__)

# As in template.yaml: a message is tried this many times before it goes to the dead-letter queue.
MAX_RECEIVE_COUNT = 3
JOBS_VISIBILITY_TIMEOUT = 60
# The jobs queue's handled messages are deleted in gathered calls, at most this long after (pollers.py).
JOBS_DELETE_DELAY_SECONDS = 0.05
# Under load the jobs poller lets this long pass between receives, so batches fill (pollers.py):
# at 16 clients, 3-5% more jobs/s and less CPU per job than at once (A/B runs, issue 15).
JOBS_GATHER_SECONDS = 0.01
# As long as a version check may take: the checks function's timeout on AWS (the formulas
# check's 840 s deadline, then the copy).
CHECKS_VISIBILITY_TIMEOUT = 900
WEBHOOKS_VISIBILITY_TIMEOUT = 30
DLQ_RETENTION_SECONDS = 14 * 24 * 3600


@dataclass(frozen=True)
class LocalAws:
    """A running moto server and the resources created on it."""

    endpoint_url: str
    region: str
    bucket: str
    jobs_queue_url: str
    jobs_dlq_url: str
    checks_queue_url: str
    checks_dlq_url: str
    webhooks_queue_url: str
    webhooks_dlq_url: str
    # The slow lane's queue (versions whose jobs cost more than SHEETCALC_VERSION_SLOW_LANE_MS).
    slow_jobs_queue_url: str = ""
    slow_jobs_dlq_url: str = ""
    # None in a process that only talks to a moto server another process runs (the dev stack).
    server: ThreadedMotoServer | None = field(default=None, repr=False, compare=False)
    mirror: ObjectMirror | None = field(default=None, repr=False, compare=False)

    def stop(self) -> None:
        """Shut the moto server down (its in-memory state is lost; mirrored objects stay on disk)."""
        if self.mirror is not None:
            self.mirror.detach()
        if self.server is not None:
            self.server.stop()

    def addresses(self) -> dict[str, str]:
        """Where the endpoints are, as plain strings another process rebuilds this from
        (``LocalAws(**addresses)``): no server, no mirror."""
        return {name: getattr(self, name) for name in _ADDRESS_FIELDS}


_ADDRESS_FIELDS = ("endpoint_url", "region", "bucket", "jobs_queue_url", "jobs_dlq_url", "checks_queue_url",
                   "checks_dlq_url", "webhooks_queue_url", "webhooks_dlq_url", "slow_jobs_queue_url", "slow_jobs_dlq_url")


def ensure_dummy_credentials(region: str = "us-east-1") -> None:
    """Give boto3 credentials and a region when the environment has none (the local AWS then
    answers requests signed with these)."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", region)


DEV_SECRETS_FILE = "secrets.json"  # the dev stack's secrets file (shared.devstack.server), 0600
_DEV_CREDENTIALS = {"aws_access_key_id": "AWS_ACCESS_KEY_ID", "aws_secret_access_key": "AWS_SECRET_ACCESS_KEY"}
_KEY_ID_ALPHABET = string.ascii_uppercase + "234567"  # as AWS's own key ids


def use_dev_credentials(data_dir: Path) -> None:
    """Sign with, and have the local AWS accept only, the dev stack's own key pair: generated
    once into ``data_dir/secrets.json`` (so download links outlive a restart) and put in this
    process's environment, for the processes it starts too. Whatever AWS credentials the
    environment had are not used against the local AWS (nor handed to its processes)."""
    path = Path(data_dir) / DEV_SECRETS_FILE
    stored = json.loads(path.read_text()) if path.exists() else {}
    if any(not stored.get(key) for key in _DEV_CREDENTIALS):
        stored.setdefault("aws_access_key_id", "AKIA" + "".join(secrets.choice(_KEY_ID_ALPHABET) for _ in range(16)))
        stored.setdefault("aws_secret_access_key", secrets.token_urlsafe(30))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as file:
            json.dump(stored, file, indent=2)
    os.chmod(path, 0o600)
    for name in ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        os.environ.pop(name, None)
    for key, env in _DEV_CREDENTIALS.items():
        os.environ[env] = stored[key]


def _own_credentials() -> Credentials:
    """The credentials this process's boto3 clients sign with (the environment's, first)."""
    credentials = boto3.session.Session().get_credentials()
    if credentials is None:
        raise RuntimeError("no AWS credentials to sign the local AWS's requests with")
    return credentials


def create_queue_with_dlq(sqs, name: str, *, visibility_timeout: int,
                          max_receive_count: int = MAX_RECEIVE_COUNT) -> tuple[str, str]:
    """Create queue ``name`` and ``name-dlq`` with a redrive policy; return both urls."""
    dlq_url = sqs.create_queue(
        QueueName=f"{name}-dlq", Attributes={"MessageRetentionPeriod": str(DLQ_RETENTION_SECONDS)}
    )["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receive_count)}
    url = sqs.create_queue(
        QueueName=name,
        Attributes={"VisibilityTimeout": str(visibility_timeout), "RedrivePolicy": json.dumps(redrive)},
    )["QueueUrl"]
    return url, dlq_url


ENDPOINT_FILE = "endpoint.json"


def _has_all(*owners_and_names: tuple[object, str]) -> bool:
    """Whether moto still has every internal a shortcut below replaces; when one is gone (a moto
    upgrade), the shortcut is not made and moto's own path runs, slower but right."""
    missing = [f"{getattr(owner, '__name__', owner)}.{name}" for owner, name in owners_and_names
               if not hasattr(owner, name)]
    if missing:
        log.warning("moto has changed (%s missing): running without the local AWS's shortcuts", ", ".join(missing))
    return not missing


def _sqs_backlogs_made_cheap() -> None:
    """moto's SQS made fast enough for a backlog of thousands of messages.

    moto checks each message it receives against the queue's retention period by computing every
    queue attribute, approximate counts included (a pass over all messages), and each pass asks
    every message whether it is visible through a datetime-built clock (about 25 us a call on a
    busy machine). A backlog of thousands (a restart queueing its pending jobs again, a burst of
    executes) took seconds per send and per batch received. Retention is read as the one
    attribute it is, and moto's SQS clock is ``time.time()`` (the same seconds since the epoch,
    without building datetimes). Same answers; a pass over a queue stays, at a fraction of the cost.
    """
    import time as _time

    from moto.core import utils as moto_utils
    from moto.sqs import models as sqs_models

    if not _has_all((sqs_models, "unix_time"), (sqs_models, "unix_time_millis"), (moto_utils, "unix_time"),
                    (sqs_models.SQSBackend, "is_message_valid_based_on_retention_period"),
                    (sqs_models.SQSBackend, "get_queue")):
        return

    def unix_time(dt=None) -> float:
        return _time.time() if dt is None else moto_utils.unix_time(dt)

    def unix_time_millis(dt=None) -> float:
        return unix_time(dt) * 1000.0

    def is_message_valid_based_on_retention_period(self, queue_name, message) -> bool:
        retention_period = int(self.get_queue(queue_name).message_retention_period)
        return retention_period + message.sent_timestamp / 1000 > unix_time()

    sqs_models.unix_time, sqs_models.unix_time_millis = unix_time, unix_time_millis
    sqs_models.SQSBackend.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period


class _Untracked(list):
    """A list that keeps nothing: moto's per-class list of every instance, for SQS messages."""

    def append(self, _item) -> None:
        pass


class _RecentHandles(set):
    """The receipt handles of the last ``limit`` deleted messages (moto keeps all of them)."""

    limit = 100_000

    def __init__(self) -> None:
        super().__init__()
        self._order: collections.deque[str] = collections.deque()

    def update(self, *handle_lists) -> None:
        for handles in handle_lists:
            for handle in handles:
                if handle not in self:
                    self.add(handle)
                    self._order.append(handle)
        while len(self._order) > self.limit:
            self.discard(self._order.popleft())


def _sqs_memory_kept_flat() -> None:
    """moto's SQS made to forget the messages it has done with.

    moto keeps every model object it ever made in a list on its class (for its dashboard and its
    reset), so every message sent, and the copy of it each ReceiveMessage answers with, stayed in
    the local AWS's memory for good: about 1.3 MB per 1,000 jobs, measured over 15,000. And each
    queue remembers the receipt handle of every message deleted from it, so that a second delete
    with the same handle is a no-op rather than an error. Here SQS messages are not listed, and a
    queue remembers the last 100,000 deleted handles (the pollers delete within milliseconds).
    """
    from moto.sqs import models as sqs_models

    if not _has_all((sqs_models.Message, "instances_tracked"), (sqs_models.Queue, "__init__")):
        return
    if isinstance(sqs_models.Message.instances_tracked, _Untracked):
        return
    sqs_models.Message.instances_tracked = _Untracked()
    queue_init = sqs_models.Queue.__init__

    @functools.wraps(queue_init)
    def __init__(self, *args, **kwargs) -> None:
        queue_init(self, *args, **kwargs)
        if isinstance(getattr(self, "deleted_messages", None), set):
            recent = _RecentHandles()
            recent.update(self.deleted_messages)
            self.deleted_messages = recent

    sqs_models.Queue.__init__ = __init__


class _Drained(io.RawIOBase):
    """A request body read to its end (every read answers b"")."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        return 0


class _KeepAliveRequestHandler(MotoRequestHandler):
    """moto's request handler, keeping the connection open for the client's next request.

    Werkzeug's server closes every connection after one answer (``Connection: close``, then it
    reads whatever the client sent after the request as an unread body), so each boto3 call to
    the local AWS paid a new TCP connection and a new server thread. Here a request's body
    (``Content-Length``, not chunked) is read whole before the app runs, and what werkzeug reads
    after the answer is that finished body, not the next request, so the connection can stay; a
    chunked body, an HTTP/1.0 client or a client asking for ``close`` still gets the close.
    """

    _keep_alive = False
    # An answer goes out in several writes: on a kept connection, Nagle's algorithm would hold
    # the last one back until the client's delayed ACK (40 ms).
    disable_nagle_algorithm = True

    def handle_one_request(self) -> None:
        self._keep_alive = False  # an unparseable request is answered with the close
        stream = self.rfile
        try:
            super().handle_one_request()
        finally:
            self.rfile = stream

    def make_environ(self):
        environ = super().make_environ()
        if self.close_connection or environ.get("wsgi.input_terminated") or self.request_version != "HTTP/1.1":
            return environ
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return environ
        environ["wsgi.input"] = io.BytesIO(self.rfile.read(length) if length > 0 else b"")
        self.rfile = io.BufferedReader(_Drained())  # until the next request
        self._keep_alive = True
        return environ

    def send_header(self, keyword: str, value: str) -> None:
        if self._keep_alive and keyword.lower() == "connection" and value.lower() == "close":
            return
        super().send_header(keyword, value)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        # Werkzeug builds each request's line (decoded path, colours) before its logger drops it;
        # the dev stack sets the logger to WARNING, so nobody would see it. Unset, werkzeug
        # decides (it sets INFO and logs), as before.
        werkzeug_log = logging.getLogger("werkzeug")
        if werkzeug_log.level != logging.NOTSET and not werkzeug_log.isEnabledFor(logging.INFO):
            return
        super().log_request(code, size)


class _SqsCallsDirect:
    """A WSGI app in front of moto's: SQS calls go straight to moto's SQS responses.

    moto's server hands every request to a Flask app per service (routing, request and app
    contexts, CORS and debug hooks, then ``convert_to_flask_response``), which was about a fifth
    of the local AWS's CPU per SQS call at 16 clients (issue 15; 1.1-1.3 -> 0.9-1.0 ms a call,
    measured in-process). SQS's JSON protocol names its action in ``X-Amz-Target``
    (``AmazonSQS.SendMessageBatch``), and every such call reaches one function,
    ``SQSResponse.dispatch``: here it is called as ``convert_to_flask_response`` calls it (moto's
    normalized request as its server builds it, a ``ClientError`` answered 400 with its
    message, the answer in Flask's response class), without the Flask layers around it. Every
    other request (S3, SQS's query protocol, moto's own API) goes to moto's app unchanged.
    """

    _TARGET_PREFIX = "AmazonSQS."

    def __init__(self, app) -> None:
        from botocore.exceptions import ClientError
        from flask import Response
        from moto.moto_server.werkzeug_app import BackendRequest
        from moto.sqs.responses import SQSResponse

        self._app, self._dispatch, self._request_class = app, SQSResponse.dispatch, BackendRequest
        self._response_class, self._client_error = Response, ClientError

    def __call__(self, environ, start_response):
        if environ.get("REQUEST_METHOD") != "POST" or not environ.get("HTTP_X_AMZ_TARGET", "").startswith(self._TARGET_PREFIX):
            return self._app(environ, start_response)
        request = self._request_class(environ)
        try:
            result = self._dispatch(request, request.raw_url, dict(request.headers))
        except self._client_error as exc:
            result = 400, {}, exc.response["Error"]["Message"]
        status, headers, content = result if len(result) == 3 else (200, {}, result)
        return self._response_class(response=content, status=status, headers=headers)(environ, start_response)


def _moto_app():
    """moto's server app, with SQS calls taken straight to moto's SQS (``_SqsCallsDirect``)
    unless moto no longer has what that calls."""
    from moto.moto_server import werkzeug_app
    from moto.sqs import responses as sqs_responses

    app = DomainDispatcherApplication(create_backend_app)
    if not _has_all((werkzeug_app, "BackendRequest"), (sqs_responses, "SQSResponse")):
        return app
    if not _has_all((sqs_responses.SQSResponse, "dispatch")):
        return app
    return _SqsCallsDirect(app)


class _KeepAliveMotoServer(ThreadedMotoServer):
    """``ThreadedMotoServer`` with ``_KeepAliveRequestHandler``: a thread per connection, and
    connections kept, instead of a thread and a connection per request; SQS calls go straight
    to moto's SQS (``_moto_app``); only requests signed with ``credentials`` get through."""

    def __init__(self, *args, credentials: Credentials, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._credentials = credentials

    def _server_entry(self) -> None:
        app = SignedRequestsOnly(_moto_app(), self._credentials)
        self._server = make_server(self._ip_address, self._port, app, True,
                                   request_handler=_KeepAliveRequestHandler)
        self._server_ready_event.set()
        self._server.serve_forever()


# Hosts whose backend moto's dispatcher remembers (the dev stack asks for two: S3 and SQS).
_KNOWN_HOSTS_LIMIT = 64


def _moto_dispatch_made_cheap() -> None:
    """moto's server without the per-request work whose answer never changes.

    For every request moto's dispatcher lists its own package directory and stats each of its
    ~180 entries (``backends.list_of_moto_modules``), matches the host against every service's
    URL patterns, and lists the response class's methods with ``inspect.getmembers``: half of an
    empty ReceiveMessage's CPU in the server (3.4 -> 1.7 ms, measured in-process). The answers
    depend only on moto's installed files and classes, so each is worked out once. Same routing.
    """
    from moto import backends
    from moto.core import responses as moto_responses
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    if getattr(DomainDispatcherApplication, "_sheetcalc_cached", False):
        return
    if not _has_all((backends, "list_of_moto_modules"), (moto_responses, "method_names_from_class"),
                    (DomainDispatcherApplication, "get_backend_for_host")):
        return
    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules
    moto_responses.method_names_from_class = functools.cache(moto_responses.method_names_from_class)
    backend_for_host = DomainDispatcherApplication.get_backend_for_host
    known: dict[str | None, object] = {}

    def get_backend_for_host(self, host):
        if host in known:
            return known[host]
        backend = backend_for_host(self, host)
        if len(known) < _KNOWN_HOSTS_LIMIT:
            known[host] = backend
        return backend

    DomainDispatcherApplication.get_backend_for_host = get_backend_for_host
    DomainDispatcherApplication._sheetcalc_cached = True


def _random_strings_drawn_at_once() -> None:
    """moto's random strings drawn in one ``choices`` call instead of a ``choice`` per character:
    each received message gets a 185-letter receipt handle and each answer a 52-character request
    id, 2% of the local AWS's CPU at 16 clients (py-spy, issue 15). Same alphabet, same length,
    same (seedable) random source, moto's ``mock_random``."""
    import string

    from moto.moto_api._internal import moto_random
    from moto.sqs import models as sqs_models

    if not _has_all((sqs_models, "generate_receipt_handle"), (moto_random, "MotoRandom"),
                    (moto_random.MotoRandom, "get_random_string")):
        return

    def generate_receipt_handle() -> str:
        from moto.moto_api._internal import mock_random

        return "".join(mock_random.choices(string.ascii_lowercase, k=185))

    def get_random_string(self, length: int = 20, include_digits: bool = True, lower_case: bool = False) -> str:
        drawn = "".join(self.choices(string.ascii_letters + string.digits if include_digits else string.ascii_letters, k=length))
        return drawn.lower() if lower_case else drawn

    sqs_models.generate_receipt_handle = generate_receipt_handle
    moto_random.MotoRandom.get_random_string = get_random_string


def _names_converted_once() -> None:
    """moto's ``camelcase_to_underscores`` (a character loop) remembered per name: every SQS call
    converts its action's name, and every SendMessage converts the name of each of the queue's
    ~20 attributes (moto builds them all to read ``ContentBasedDeduplication``), a twelfth of the
    local AWS's CPU at 16 clients (py-spy, issue 15). The names are the service's own, a few
    dozen; the same function of the same string."""
    from moto.core import responses as moto_responses
    from moto.core import utils as moto_utils
    from moto.sqs import models as sqs_models

    if not _has_all((moto_utils, "camelcase_to_underscores"), (moto_responses, "camelcase_to_underscores"),
                    (sqs_models, "camelcase_to_underscores")):
        return
    if hasattr(sqs_models.camelcase_to_underscores, "cache_info"):
        return  # made already
    convert = functools.lru_cache(maxsize=1024)(moto_utils.camelcase_to_underscores)
    moto_responses.camelcase_to_underscores = sqs_models.camelcase_to_underscores = convert


def _port_is_free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        # As moto's server binds it: connections of a killed predecessor in TIME_WAIT do not count.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _previous_port(state_dir: Path, host: str) -> int:
    """The port moto had in this state dir last time, when it is free again; else 0 (any)."""
    try:
        port = int(json.loads((state_dir / ENDPOINT_FILE).read_text())["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    if _port_is_free(host, port):
        return port
    log.warning("local S3 port %d is taken: download links handed out before this restart will not work", port)
    return 0


def start_local_aws(*, host: str = "127.0.0.1", port: int = 0, region: str = "us-east-1",
                    bucket: str = "sheetcalc-workbooks", prefix: str = "sheetcalc",
                    state_dir: Path | None = None) -> LocalAws:
    """Start moto on ``host:port`` (0: any free port) and create the bucket and queues.

    With ``state_dir``, the bucket's objects are kept in and restored from ``state_dir/s3``, and
    ``port`` 0 means the port used last time in ``state_dir`` if it is free. It answers only
    requests signed with this process's AWS credentials (dummy ones if it has none).
    """
    ensure_dummy_credentials(region)
    credentials = _own_credentials()
    _sqs_backlogs_made_cheap()
    _sqs_memory_kept_flat()
    _moto_dispatch_made_cheap()
    _names_converted_once()
    _random_strings_drawn_at_once()
    if state_dir is not None:
        state_dir = Path(state_dir)
        state_dir.mkdir(parents=True, exist_ok=True)
        port = port or _previous_port(state_dir, host)
    werkzeug_log = logging.getLogger("werkzeug")
    if werkzeug_log.level == logging.NOTSET:
        # Otherwise moto's werkzeug server logs every request (the pollers make one a second).
        werkzeug_log.setLevel(logging.WARNING)
    server = _KeepAliveMotoServer(ip_address=host, port=port, verbose=False, credentials=credentials)
    server.start()
    bound_host, bound_port = server.get_host_and_port()
    endpoint_url = f"http://{bound_host}:{bound_port}"
    mirror = None
    try:
        session = boto3.session.Session()
        s3 = session.client("s3", region_name=region, endpoint_url=endpoint_url)
        if region == "us-east-1":
            s3.create_bucket(Bucket=bucket)
        else:
            s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": region})
        if state_dir is not None:
            mirror = ObjectMirror(bucket, state_dir / "s3" / bucket)
            restored = mirror.restore()
            mirror.attach()
            if restored:
                log.info("restored %d objects into the local S3 bucket", restored)
            (state_dir / ENDPOINT_FILE).write_text(json.dumps({"port": bound_port}))
        sqs = session.client("sqs", region_name=region, endpoint_url=endpoint_url)
        jobs_url, jobs_dlq_url = create_queue_with_dlq(
            sqs, f"{prefix}-jobs", visibility_timeout=JOBS_VISIBILITY_TIMEOUT
        )
        slow_jobs_url, slow_jobs_dlq_url = create_queue_with_dlq(
            sqs, f"{prefix}-slow-jobs", visibility_timeout=JOBS_VISIBILITY_TIMEOUT
        )
        checks_url, checks_dlq_url = create_queue_with_dlq(
            sqs, f"{prefix}-checks", visibility_timeout=CHECKS_VISIBILITY_TIMEOUT
        )
        webhooks_url, webhooks_dlq_url = create_queue_with_dlq(
            sqs, f"{prefix}-webhooks", visibility_timeout=WEBHOOKS_VISIBILITY_TIMEOUT
        )
    except BaseException:
        if mirror is not None:
            mirror.detach()
        server.stop()
        raise
    return LocalAws(
        endpoint_url=endpoint_url,
        region=region,
        bucket=bucket,
        jobs_queue_url=jobs_url,
        jobs_dlq_url=jobs_dlq_url,
        checks_queue_url=checks_url,
        checks_dlq_url=checks_dlq_url,
        webhooks_queue_url=webhooks_url,
        webhooks_dlq_url=webhooks_dlq_url,
        slow_jobs_queue_url=slow_jobs_url,
        slow_jobs_dlq_url=slow_jobs_dlq_url,
        server=server,
        mirror=mirror,
    )
