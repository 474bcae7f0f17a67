"""`sheetcalc dev` (uvicorn) cuts off a huge chunked body at its route's limit: an anonymous
caller streaming 200 MB to /auth/login gets 413 once the 2 MB limit is passed, and the server's
memory does not grow with the body (it drops the rest as it arrives)."""

from __future__ import annotations

import json
import select
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.e2e

CHUNK = 64 * 1024
TOTAL = 200 * 1024 * 1024
JSON_LIMIT = 2 * 1024 * 1024
# Loopback socket buffers hold a few MB between what we sent and what the server has read.
IN_FLIGHT = 16 * 1024 * 1024


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def test_a_chunked_200_mb_login_body_gets_413_at_the_limit_and_the_server_memory_stays_flat(dev_stack):
    url = urlsplit(dev_stack.base_url)
    pid = dev_stack.process.pid
    before = rss_bytes(pid)
    peak = before
    answered_after: int | None = None
    response = b""
    chunk = f"{CHUNK:x}\r\n".encode() + b"a" * CHUNK + b"\r\n"
    opening = b'{"email": "a@b.c", "password": "'
    sent = 0
    with socket.create_connection((url.hostname, url.port), timeout=60) as sock:
        sock.sendall(
            b"POST /auth/login HTTP/1.1\r\nHost: " + url.netloc.encode() + b"\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            + f"{len(opening):x}\r\n".encode() + opening + b"\r\n"
        )
        while sent < TOTAL:
            sock.sendall(chunk)
            sent += CHUNK
            if answered_after is None and select.select([sock], [], [], 0)[0]:
                answered_after = sent
                response = sock.recv(65536)
            if sent % (4 * 1024 * 1024) == 0:
                peak = max(peak, rss_bytes(pid))
        sock.sendall(b"0\r\n\r\n")
        while b"\r\n\r\n" not in response or len(response.split(b"\r\n\r\n", 1)[1]) < 10:
            more = sock.recv(65536)
            if not more:
                break
            response += more
    after = rss_bytes(pid)
    peak = max(peak, after)

    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), response[:300]
    assert json.loads(body) == {"detail": "The request body is larger than the 2 MB limit"}
    # the answer came while the body was still streaming, just past the limit
    assert answered_after is not None and answered_after <= JSON_LIMIT + IN_FLIGHT, answered_after
    # and the server kept none of the 200 MB (before the limit it held every byte: +200 MB or more)
    assert peak - before < 32 * 1024 * 1024, f"RSS grew {(peak - before) / 2**20:.1f} MB (before {before / 2**20:.0f} MB)"
    print(f"413 after {answered_after / 2**20:.1f} MB sent of {TOTAL / 2**20:.0f} MB; server RSS {before / 2**20:.0f} MB -> peak {peak / 2**20:.0f} MB")
