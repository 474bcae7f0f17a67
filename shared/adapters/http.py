"""Outbound HTTP to an address decided beforehand: the connection goes to a given IP while the
request keeps its URL's Host header, and for https its TLS server name (SNI) and the name the
certificate is checked against.

httpx resolves a URL's host itself when it connects; connecting to the IP literal instead, with
the Host header set from the original URL and httpcore's documented ``sni_hostname`` request
extension, pins the connection without any private API. Environment proxies are ignored
(``trust_env=False``): a proxy would resolve the name again, past the pin.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class Answer:
    """The receiver's status and the start of its body (at most ``read_limit`` bytes were read)."""

    status_code: int
    body_start: bytes


def post_pinned(
    url: httpx.URL,
    addresses: tuple[str, ...],
    *,
    content: bytes,
    timeout: float,
    headers: dict[str, str],
    read_limit: int = 1024,
) -> Answer:
    """POST the bytes `content` to `url` through the first of `addresses` that accepts a connection.

    One request: a further address is tried only when the connection to the previous one could
    not be made, before anything was sent, and only while `timeout` has not run out. Redirects
    are never followed; of the answer's body only the first `read_limit` bytes are read. Raises
    httpx.HTTPError as httpx does.
    """
    host = url.raw_host.decode("ascii")
    extensions = {"sni_hostname": host} if url.scheme == "https" else {}
    deadline = time.monotonic() + timeout
    with httpx.Client(trust_env=False, follow_redirects=False) as client:
        for index, address in enumerate(addresses):
            remaining = deadline - time.monotonic()
            try:
                with client.stream(
                    "POST",
                    url.copy_with(host=address),
                    content=content,
                    headers={**headers, "Host": url.netloc.decode("ascii")},
                    extensions=extensions,
                    timeout=timeout if index == 0 else max(remaining, 0.001),
                ) as response:
                    return Answer(response.status_code, _start_of(response, read_limit))
            except (httpx.ConnectError, httpx.ConnectTimeout):
                if index == len(addresses) - 1 or deadline - time.monotonic() <= 0:
                    raise
    raise httpx.ConnectError("no address to connect to")


def _start_of(response: httpx.Response, limit: int) -> bytes:
    start = b""
    try:
        for chunk in response.iter_bytes():
            start += chunk
            if len(start) >= limit:
                break
    except httpx.HTTPError:
        pass  # the status has arrived: a body cut short or too slow is kept as far as it came
    return start[:limit]
