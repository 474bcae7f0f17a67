"""A tiny webhook receiver for trying sheetcalc locally: prints every POST it gets and answers 200.

Usage: python3 examples/webhook_receiver.py [--port 9000]
"""

import argparse
import json
from http.server import BaseHTTPRequestHandler, HTTPServer


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            print(json.dumps(json.loads(body), indent=2), flush=True)
        except ValueError:
            print(body.decode(errors="replace"), flush=True)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=9000)
    port = parser.parse_args().port
    print(f"listening on http://127.0.0.1:{port}/hook", flush=True)
    HTTPServer(("127.0.0.1", port), Receiver).serve_forever()
