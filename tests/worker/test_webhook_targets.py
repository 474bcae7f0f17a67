"""Webhook targets outside dev: only global unicast addresses, judged by the IPv4 address an IPv6
form leads to, and the POST connects to the address that was checked (no DNS rebinding)."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import httpx
import pytest

from shared.adapters import http
from shared.config import reset_settings
from shared.services import webhook_targets, webhooks
from tests.receiver import WebhookReceiver
from tests.worker.test_redelivery_and_webhooks import job_row, submit

PUBLIC = "93.184.216.34"  # answered by the fake resolver; never really connected to

REFUSED = [
    "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
    "0.0.0.0", "240.0.0.1", "255.255.255.255", "192.0.2.1", "198.18.0.1",
    "224.0.0.1", "239.255.255.250", "233.252.0.1",  # multicast
    "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "fec0::1", "2001:db8::1",
    "ff02::1", "ff0e::1",  # multicast, link and global scope
    "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::a01:203",  # NAT64 of loopback, metadata, 10/8
    "64:ff9b:1::a01:203",  # local-use NAT64
    "2002:7f00:1::1", "2002:a9fe:a9fe::", "2002:c0a8:101::1",  # 6to4 of loopback, metadata, 192.168/16
    "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1",  # IPv4-mapped
    "::127.0.0.1", "::10.0.0.1", "::169.254.169.254",  # IPv4-compatible
    "2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
]
ALLOWED = [PUBLIC, "2606:4700:4700::1111", "64:ff9b::5db8:d822", "2002:5db8:d822::1", "::ffff:93.184.216.34"]


@pytest.fixture()
def outside_dev(monkeypatch):
    """Settings as in prod for webhook targets: private addresses refused."""
    monkeypatch.setenv("SHEETCALC_ALLOW_PRIVATE_WEBHOOKS", "false")
    reset_settings()
    yield
    monkeypatch.delenv("SHEETCALC_ALLOW_PRIVATE_WEBHOOKS")
    reset_settings()


@pytest.fixture()
def connections(monkeypatch) -> list[str]:
    """Every address a connection is opened to, but the local AWS's (the queues' own calls); the
    fake public address refuses, as if down."""
    seen: list[str] = []
    real = socket.create_connection
    local_aws = urlsplit(os.environ["SHEETCALC_AWS_ENDPOINT_URL"])

    def connect(address, *args, **kwargs):
        if (address[0], address[1]) == (local_aws.hostname, local_aws.port):
            return real(address, *args, **kwargs)
        seen.append(str(address[0]))
        if address[0] not in ("127.0.0.1", "::1"):
            raise ConnectionRefusedError(f"test: no connection to {address[0]}")
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", connect)
    return seen


def fake_resolver(monkeypatch, host: str, *answers: str) -> list[int]:
    """Resolve `host` to answers[0], then answers[1], ... (the last one for ever); counts calls."""
    real = socket.getaddrinfo
    calls = [0]

    def getaddrinfo(name, port, family=0, type=0, proto=0, flags=0):
        if name != host:
            return real(name, port, family, type, proto, flags)
        answer = answers[min(calls[0], len(answers) - 1)]
        calls[0] += 1
        fam = socket.AF_INET6 if ":" in answer else socket.AF_INET
        sockaddr = (answer, port or 0, 0, 0) if fam == socket.AF_INET6 else (answer, port or 0)
        return [(fam, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", sockaddr)]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return calls


def literal(address: str) -> str:
    return f"[{address}]" if ":" in address else address


@pytest.mark.parametrize("address", REFUSED)
def test_a_non_global_address_is_refused_outside_dev(outside_dev, connections, address):
    # WHEN a webhook targets the address directly
    outcome = webhooks._post(f"http://{literal(address)}:8080/hook", b'{"job_id":"x"}', {})
    # THEN nothing is connected to, and the attempt is recorded as a connection failure
    assert outcome.status_code == 0 and outcome.error_class == "refused_private_address" and connections == []
    assert webhook_targets.is_refused(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ALLOWED)
def test_a_global_address_is_allowed(address):
    assert not webhook_targets.is_refused(ipaddress.ip_address(address))
    target = webhook_targets.resolve(f"https://{literal(address)}/hook", allow_private=False)
    assert [ipaddress.ip_address(a) for a in target.addresses] == [ipaddress.ip_address(address)]


@pytest.mark.parametrize("url", ["ftp://example.com/x", "http:///x", "http://exa mple.com/", "not a url"])
def test_an_unusable_url_is_refused(url):
    with pytest.raises(webhook_targets.Refused):
        webhook_targets.resolve(url, allow_private=False)


def test_a_name_that_resolves_to_a_private_address_is_refused(client, deployed, run_worker, run_webhooks, outside_dev, connections, monkeypatch):
    with WebhookReceiver() as receiver:
        port = receiver.server.server_address[1]
        fake_resolver(monkeypatch, "internal.example.com", "127.0.0.1")
        job_id = submit(client, deployed, webhook_url=f"http://internal.example.com:{port}/hook")
        run_worker()
        run_webhooks()
        assert receiver.wait_for(1, timeout=0.5) == []
    assert connections == []
    job = job_row(job_id)
    assert job.webhook_response_status == 0 and job.webhook_sent_at is not None


def test_a_rebinding_resolver_cannot_redirect_the_post(client, deployed, run_worker, run_webhooks, outside_dev, connections, monkeypatch):
    # GIVEN a name that resolves to a public address first and to the local receiver afterwards
    with WebhookReceiver() as receiver:
        port = receiver.server.server_address[1]
        fake_resolver(monkeypatch, "hooks.example.com", PUBLIC, "127.0.0.1")
        job_id = submit(client, deployed, webhook_url=f"http://hooks.example.com:{port}/hook")
        # WHEN the webhook is sent
        run_worker()
        run_webhooks()
        # THEN it went to the address that was checked, and the private one got nothing
        assert receiver.wait_for(1, timeout=0.5) == []
    assert connections == [PUBLIC]
    assert job_row(job_id).webhook_response_status == 0


def test_in_dev_the_post_is_pinned_and_keeps_its_host_header(client, deployed, run_worker, run_webhooks, connections, monkeypatch):
    # GIVEN dev (loopback allowed) and a name that answers loopback, then something else
    with WebhookReceiver() as receiver:
        port = receiver.server.server_address[1]
        fake_resolver(monkeypatch, "hooks.example.com", "127.0.0.1", PUBLIC)
        job_id = submit(client, deployed, webhook_url=f"http://hooks.example.com:{port}/hook")
        run_worker()
        run_webhooks()
        got = receiver.wait_for(1)
    # THEN the POST reached the first answer, named as the URL names it
    assert len(got) == 1 and got[0]["headers"]["Host"] == f"hooks.example.com:{port}"
    assert got[0]["path"] == "/hook" and got[0]["json"]["job_id"] == job_id
    assert connections == ["127.0.0.1"] and job_row(job_id).webhook_response_status == 200


# -- the pinned connection itself


def test_a_refused_connection_moves_to_the_next_checked_address_and_posts_once(connections):
    with WebhookReceiver(status=202) as receiver:
        port = receiver.server.server_address[1]
        url = httpx.URL(f"http://hooks.example.com:{port}/hook")
        response = http.post_pinned(url, (PUBLIC, "127.0.0.1"), content=b'{"a": 1}', timeout=10, headers={})
        got = receiver.wait_for(1)
    assert response.status_code == 202 and len(got) == 1 and got[0]["json"] == {"a": 1}
    assert connections == [PUBLIC, "127.0.0.1"]


def test_a_redirect_is_not_followed():
    hits: list[str] = []

    class Redirect(BaseHTTPRequestHandler):
        def do_POST(self):
            hits.append(self.path)
            self.send_response(307)
            self.send_header("Location", "/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Redirect)) as server:
        url = httpx.URL(f"http://hooks.example.com:{server.server_address[1]}/hook")
        response = http.post_pinned(url, ("127.0.0.1",), content=b"{}", timeout=10, headers={})
    assert response.status_code == 307 and hits == ["/hook"]


class serving:
    """Run an HTTP server on a thread for the block."""

    def __init__(self, server):
        self.server = server

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self.server

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def self_signed(name: str, folder) -> tuple[str, str]:
    """A certificate for `name` that is its own authority, and its key: file paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / f"{name}.pem", folder / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return str(cert_path), str(key_path)


@pytest.mark.parametrize("certified", ["hooks.example.com", "other.example.com"])
def test_https_through_a_pinned_address_sends_the_name_as_sni_and_checks_the_certificate_for_it(tmp_path, monkeypatch, certified):
    # GIVEN an https receiver on loopback with a certificate for `certified`, trusted by the client
    cert, key = self_signed(certified, tmp_path)
    server_names: list[str | None] = []
    requests: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            requests.append({"host": self.headers["Host"], "json": json.loads(body)})
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, name, ctx: server_names.append(name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    trusting = ssl.create_default_context(cafile=cert)
    real_client = httpx.Client
    monkeypatch.setattr(httpx, "Client", lambda **kw: real_client(verify=trusting, **kw))
    with serving(server):
        url = httpx.URL(f"https://hooks.example.com:{server.server_address[1]}/hook")
        # WHEN the POST is pinned to 127.0.0.1
        if certified == "hooks.example.com":
            response = http.post_pinned(url, ("127.0.0.1",), content=b'{"ok": true}', timeout=10, headers={})
            # THEN TLS named the host, the certificate was checked for it, and Host is the URL's
            assert response.status_code == 200
            assert requests == [{"host": f"hooks.example.com:{url.port}", "json": {"ok": True}}]
        else:
            # THEN a certificate for another name is refused, although the address is the pinned one
            with pytest.raises(httpx.ConnectError):
                http.post_pinned(url, ("127.0.0.1",), content=b'{"ok": true}', timeout=10, headers={})
            assert requests == []
    assert server_names[:1] == ["hooks.example.com"]


def test_an_ipv6_address_is_pinned_in_brackets():
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")

    class V6(ThreadingHTTPServer):
        address_family = socket.AF_INET6

    hosts: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            hosts.append(self.headers["Host"])
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    try:
        server = V6(("::1", 0), Handler)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with serving(server):
        url = httpx.URL(f"http://hooks.example.com:{server.server_address[1]}/hook")
        response = http.post_pinned(url, ("::1",), content=b"{}", timeout=10, headers={})
    assert response.status_code == 204 and hosts == [f"hooks.example.com:{url.port}"]

