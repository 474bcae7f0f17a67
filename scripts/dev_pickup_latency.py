"""How soon a poller process picks up a message another process sends, on the dev stack's layout.

The local AWS runs in its own process (as ``sheetcalc dev`` runs it), an ``SqsPoller`` waits in a
20 s long poll in a second process, and this process sends ``--messages`` messages one at a time;
the poller's handler prints when it got each. moto answers a waiting ReceiveMessage when
SendMessage arrives, so the figures are milliseconds, not the long poll's 20 s. Two figures per
message: from the SendMessage call (the sender's and moto's work for the send included) and from
its answer (the message is on the queue; this is the poller's own delay). Prints each one's
median, 95th percentile and maximum, and the load average.

``--datagram-wake`` also measures, interleaved with the above on another queue, the alternative
of waking an idle poller through a unix datagram socket once SendMessage has answered, the poller
then receiving with ``WaitTimeSeconds=0`` (what ``shared/adapters/completions.py`` does for
waiters): one more ReceiveMessage round trip after the send, where the long poll's answer is
already on its way.

    python scripts/dev_pickup_latency.py [--messages 200] [--datagram-wake]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LONG_POLL_SECONDS = 20


def receive(endpoint_url: str, region: str, queue_url: str, wake_path: str | None) -> None:
    from shared.devstack.local_aws import ensure_dummy_credentials
    from shared.devstack.pollers import SqsPoller

    ensure_dummy_credentials(region)

    def handler(event, context):
        now = time.time()
        for _ in event["Records"]:
            print(f"{now:.6f}", flush=True)
        return {}

    poller = SqsPoller(queue_url, handler, function_name="pickup-latency", endpoint_url=endpoint_url,
                       region=region, wait_time_seconds=LONG_POLL_SECONDS)
    if wake_path is None:
        print("polling", flush=True)
        poller.run()
        return
    wake = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    wake.bind(wake_path)
    print("polling", flush=True)
    while True:
        wake.recv(64)
        messages = poller.receive(wait_time_seconds=0)
        if messages:
            poller.deliver(messages)


def _summary(name: str, values: list[float]) -> str:
    values = sorted(values)
    p95 = values[max(0, int(len(values) * 0.95) - 1)]
    return f"{name}: median {statistics.median(values):.1f} ms, p95 {p95:.1f} ms, max {values[-1]:.1f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--datagram-wake", action="store_true",
                        help="also measure a poller woken by a unix datagram, then WaitTimeSeconds=0")
    parser.add_argument("--receive", nargs=4, metavar=("ENDPOINT", "REGION", "QUEUE_URL", "WAKE"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.receive:
        endpoint, region, queue_url, wake_path = args.receive
        receive(endpoint, region, queue_url, wake_path or None)
        return 0

    import boto3

    from shared.devstack.local_aws import ensure_dummy_credentials
    from shared.devstack.processes import spawn, stop_all

    with tempfile.TemporaryDirectory() as state_dir:
        aws_child = spawn("aws", {"state_dir": state_dir})
        receivers: dict[str, subprocess.Popen] = {}
        wake_path = os.path.join(state_dir, "wake.sock")
        try:
            aws = aws_child.wait_ready(time.monotonic() + 180)
            ensure_dummy_credentials(aws["region"])
            ways = {"long poll": (aws["jobs_queue_url"], "")}
            if args.datagram_wake:
                ways["datagram wake"] = (aws["webhooks_queue_url"], wake_path)
            for way, (queue_url, path) in ways.items():
                receivers[way] = subprocess.Popen(
                    [sys.executable, __file__, "--receive", aws["endpoint_url"], aws["region"], queue_url, path],
                    stdout=subprocess.PIPE, text=True,
                )
                assert receivers[way].stdout.readline().strip() == "polling"
            time.sleep(0.5)  # inside its long poll
            sqs = boto3.session.Session().client("sqs", region_name=aws["region"], endpoint_url=aws["endpoint_url"])
            waker = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            from_call = {way: [] for way in ways}
            from_answer = {way: [] for way in ways}
            for _ in range(args.messages):
                for way, (queue_url, path) in ways.items():
                    called = time.time()
                    sqs.send_message(QueueUrl=queue_url, MessageBody="ping")
                    answered = time.time()
                    if path:
                        waker.sendto(b"1", path)
                    handled = float(receivers[way].stdout.readline())
                    from_call[way].append((handled - called) * 1000)
                    from_answer[way].append((handled - answered) * 1000)
                    time.sleep(0.02)  # the poller is back in a long poll, waiting
        finally:
            for receiver in receivers.values():
                receiver.kill()
                receiver.wait()
            stop_all([aws_child], 30)
    for way in ways:
        print(f"{way}, {args.messages} messages (long poll {LONG_POLL_SECONDS} s):")
        print("  " + _summary("pickup after the SendMessage call", from_call[way]))
        print("  " + _summary("pickup after SendMessage answered", from_answer[way]))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
