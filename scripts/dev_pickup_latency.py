"""How soon a poller process picks up a message another process sends, on the dev stack's layout.

The local AWS runs in its own process (as ``sheetcalc dev`` runs it), an ``SqsPoller`` waits in a
20 s long poll in a second process, and this process sends ``--messages`` messages one at a time,
each carrying its send time; the poller's handler prints how long after that it got each. moto
answers a waiting ReceiveMessage when SendMessage arrives, so the figures are milliseconds, not
the long poll's 20 s. Prints the median, 95th percentile and maximum, and the load average.

    python scripts/dev_pickup_latency.py [--messages 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LONG_POLL_SECONDS = 20


def receive(endpoint_url: str, region: str, queue_url: str) -> None:
    from shared.devstack.local_aws import ensure_dummy_credentials
    from shared.devstack.pollers import SqsPoller

    ensure_dummy_credentials(region)

    def handler(event, context):
        now = time.time()
        for record in event["Records"]:
            print(f"{now - float(record['body']):.6f}", flush=True)
        return {}

    poller = SqsPoller(queue_url, handler, function_name="pickup-latency", endpoint_url=endpoint_url,
                       region=region, wait_time_seconds=LONG_POLL_SECONDS)
    print("polling", flush=True)
    poller.run()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--receive", nargs=3, metavar=("ENDPOINT", "REGION", "QUEUE_URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.receive:
        receive(*args.receive)
        return 0

    import boto3

    from shared.devstack.local_aws import ensure_dummy_credentials
    from shared.devstack.processes import spawn, stop_all

    with tempfile.TemporaryDirectory() as state_dir:
        aws_child = spawn("aws", {"state_dir": state_dir})
        receiver = None
        try:
            aws = aws_child.wait_ready(time.monotonic() + 180)
            ensure_dummy_credentials(aws["region"])
            receiver = subprocess.Popen(
                [sys.executable, __file__, "--receive", aws["endpoint_url"], aws["region"], aws["jobs_queue_url"]],
                stdout=subprocess.PIPE, text=True,
            )
            assert receiver.stdout.readline().strip() == "polling"
            time.sleep(0.5)  # inside its long poll
            sqs = boto3.session.Session().client("sqs", region_name=aws["region"], endpoint_url=aws["endpoint_url"])
            latencies = []
            for _ in range(args.messages):
                sqs.send_message(QueueUrl=aws["jobs_queue_url"], MessageBody=repr(time.time()))
                latencies.append(float(receiver.stdout.readline()) * 1000)
                time.sleep(0.02)  # the poller is back in a long poll, waiting
        finally:
            if receiver is not None:
                receiver.kill()
                receiver.wait()
            stop_all([aws_child], 30)
    latencies.sort()
    p95 = latencies[max(0, int(len(latencies) * 0.95) - 1)]
    print(f"pickup after SendMessage, {len(latencies)} messages: median {statistics.median(latencies):.1f} ms, "
          f"p95 {p95:.1f} ms, max {latencies[-1]:.1f} ms (long poll {LONG_POLL_SECONDS} s); "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
