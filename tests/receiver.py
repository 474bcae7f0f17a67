"""A real HTTP server on loopback that records webhook POSTs (a stand-in for a consumer's endpoint)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class WebhookReceiver:
    """Records each POST's path, headers, raw body and JSON body (a POST whose body stops short of
    its Content-Length, as when the sender is killed, in ``truncated`` instead); answers ``status`` (with ``answer``
    as its body) after ``delay`` seconds, and, given a ``hold`` event, not before it is set (30 s
    at most; the POST is recorded first)."""

    def __init__(self, status: int = 200, delay: float = 0.0, hold: threading.Event | None = None, answer: bytes = b""):
        self.status, self.delay, self.hold, self.answer = status, delay, hold, answer
        self.requests: list[dict] = []
        self.truncated: list[dict] = []  # POSTs whose body never fully arrived, kept apart
        self._arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                if len(body) < length:  # the sender went away mid-body (a killed process): no request
                    with receiver._arrived:
                        receiver.truncated.append({"path": self.path, "headers": dict(self.headers), "raw": body})
                    return
                time.sleep(receiver.delay)
                with receiver._arrived:
                    receiver.requests.append(
                        {"path": self.path, "headers": dict(self.headers), "raw": body, "json": json.loads(body or b"null")}
                    )
                    receiver._arrived.notify_all()
                if receiver.hold is not None:
                    receiver.hold.wait(30)
                try:
                    self.send_response(receiver.status)
                    self.send_header("Content-Length", str(len(receiver.answer)))
                    self.end_headers()
                    self.wfile.write(receiver.answer)
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "WebhookReceiver":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, count: int, timeout: float = 20.0) -> list[dict]:
        """Block until ``count`` requests have arrived (or the timeout passes)."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.requests) < count and time.monotonic() < deadline:
                self._arrived.wait(deadline - time.monotonic())
        return list(self.requests)
