"""CPU per SQS call against the dev stack's local AWS (shared/devstack/local_aws.py), both sides.

Starts the local AWS in this process and makes N calls of each kind with a boto3 client built as
the service builds its own (shared.adapters.aws), the queue kept near empty as in the dev stack.
The client side is this thread's CPU during the call (``time.thread_time``); the server side is
the CPU of moto's server thread handling that request. Prints microseconds per call and the load
average; back to back before and after a change, the load average says how noisy the figures are.

    .venv/bin/python bench/local_aws_calls.py            # 300 calls of each kind
    .venv/bin/python bench/local_aws_calls.py -n 50 --json
    .venv/bin/python bench/local_aws_calls.py --profile server --kind receive_empty
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shared.adapters import aws as aws_adapter  # noqa: E402
from shared.adapters.sqs_json import SqsCalls  # noqa: E402
from shared.devstack.local_aws import start_local_aws  # noqa: E402

KINDS = ("receive_empty", "send", "send_batch_10", "receive_10", "delete_batch_10", "s3_put", "s3_get")


def _expect(condition: bool, what: str) -> None:
    """A call that did not do what it is measured for makes the figures meaningless: stop."""
    if not condition:
        raise SystemExit(f"local AWS call did not do its work: {what}")


class _ServerClock:
    """CPU time moto's server threads spend on requests while ``counting`` (each request is
    timed in the thread that handles it, from reading it to the end of its answer).

    The server thread finishes a request (its log line, its bookkeeping) after the client has the
    answer; ``call`` waits for that end, so each request is counted or not as the call it belongs to.
    """

    def __init__(self) -> None:
        self.counting = False
        self.seconds = 0.0
        self.started = 0
        self.finished = 0
        self._changed = threading.Condition()

    def settle(self) -> None:
        """Wait until the server has finished every request it has read (the client has the
        answers of all it sent, so nothing of theirs is still to come)."""
        with self._changed:
            if not self._changed.wait_for(lambda: self.finished >= self.started, timeout=30):
                raise SystemExit("the local AWS did not finish a request within 30 s")

    def install(self, handler=None):
        """Time ``handler``'s requests (moto's request handler of the local AWS by default)."""
        if handler is None:
            from shared.devstack import local_aws

            handler = local_aws._KeepAliveRequestHandler
        original = handler.handle_one_request
        original_parse = handler.parse_request
        clock = self

        def parse_request(self_):
            self_._clock_request = True
            with clock._changed:
                clock.started += 1
            return original_parse(self_)

        def handle_one_request(self_):
            # A kept connection's thread also returns from here when the client closes it (no
            # request read): that is not a request finishing, or ``finished`` would run ahead of
            # ``started`` and ``settle`` stop waiting for the request still being finished.
            self_._clock_request = False
            start = time.thread_time()
            try:
                return original(self_)
            finally:
                if self_._clock_request:
                    with clock._changed:
                        if clock.counting:
                            clock.seconds += time.thread_time() - start
                        clock.finished += 1
                        clock._changed.notify_all()

        handler.handle_one_request, handler.parse_request = handle_one_request, parse_request

        def uninstall():
            handler.handle_one_request, handler.parse_request = original, original_parse

        return uninstall


def _kinds(sqs, s3, bucket: str, queue_url: str, *, via: str = "botocore"):
    """For each kind: (prepare, call, tidy); only ``call`` is measured, the queue stays near empty.
    ``via`` "direct": the three calls a job makes (SendMessageBatch, ReceiveMessage,
    DeleteMessageBatch) as the service makes them to the local endpoint (shared.adapters.sqs_json);
    the other kinds are botocore's either way."""
    state: dict[str, list] = {"messages": []}
    batched = SqsCalls(sqs) if via == "direct" else sqs
    attributes = {"MessageSystemAttributeNames": ["All"], "MessageAttributeNames": ["All"]}

    def nothing():
        pass

    def receive():
        state["messages"] = batched.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0,
                                                **attributes).get("Messages", [])

    def send():
        sqs.send_message(QueueUrl=queue_url, MessageBody='{"job_id": "x"}')

    def send_batch_10():
        batched.send_message_batch(QueueUrl=queue_url, Entries=[
            {"Id": str(i), "MessageBody": '{"job_id": "x"}'} for i in range(10)])

    def delete_batch():
        messages, state["messages"] = state["messages"], []
        if messages:
            answer = batched.delete_message_batch(QueueUrl=queue_url, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)])
            _expect(len(answer.get("Successful", [])) == len(messages), f"deleted {answer}")

    def receive_10():
        receive()
        _expect(len(state["messages"]) == 10, f"received {len(state['messages'])} of 10")

    def drain():
        receive()
        delete_batch()

    def s3_put():
        s3.put_object(Bucket=bucket, Key="bench/object", Body=b"x" * 4096)

    def s3_get():
        _expect(s3.get_object(Bucket=bucket, Key="bench/object")["Body"].read() == b"x" * 4096, "object read back")

    return {
        "receive_empty": (nothing, receive, nothing),
        "send": (nothing, send, drain),
        "send_batch_10": (nothing, send_batch_10, drain),
        "receive_10": (send_batch_10, receive_10, delete_batch),
        "delete_batch_10": (lambda: (send_batch_10(), receive()), delete_batch, nothing),
        "s3_put": (nothing, s3_put, nothing),
        "s3_get": (s3_put, s3_get, nothing),
    }


def measure(n: int, kinds=KINDS, profile: str | None = None, via: str = "botocore") -> dict[str, dict[str, float]]:
    """Client and server CPU microseconds per call of each kind (``profile``: cProfile one side),
    the job's three calls ``via`` botocore or direct (``_kinds``)."""
    clock = _ServerClock()
    uninstall = clock.install()
    stack = start_local_aws(prefix=f"bench{os.getpid()}")
    try:
        sqs = aws_adapter._client("sqs", stack.region, stack.endpoint_url)
        s3 = aws_adapter._client("s3", stack.region, stack.endpoint_url)
        table = _kinds(sqs, s3, stack.bucket, stack.checks_queue_url, via=via)
        results: dict[str, dict[str, float]] = {}
        for kind in kinds:
            prepare, call, tidy = table[kind]
            for _ in range(min(5, n)):  # warm
                prepare(), call(), tidy()
            profiler = cProfile.Profile(time.thread_time) if profile == "client" else None
            client = 0.0
            clock.seconds = 0.0
            for _ in range(n):
                prepare()
                clock.settle()
                clock.counting = True
                if profiler:
                    profiler.enable()
                thread0 = time.thread_time()
                call()
                client += time.thread_time() - thread0
                if profiler:
                    profiler.disable()
                clock.settle()
                clock.counting = False
                tidy()
            if profiler:
                print(f"--- {kind}: cProfile of the client side, {n} calls ---")
                pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
            results[kind] = {"client_us": round(client / n * 1e6, 1), "server_us": round(clock.seconds / n * 1e6, 1)}
        return results
    finally:
        stack.stop()
        uninstall()


def _profile_server(n: int, kind: str) -> None:
    """cProfile of moto's server threads while ``n`` calls of ``kind`` (and their tidying) run."""
    from shared.devstack import local_aws

    profilers: list[cProfile.Profile] = []
    handler = local_aws._KeepAliveRequestHandler
    original = handler.handle_one_request

    def handle_one_request(self):
        profiler = cProfile.Profile(time.thread_time)  # CPU: waiting for the next request is not counted
        profilers.append(profiler)
        profiler.enable()
        try:
            return original(self)
        finally:
            profiler.disable()

    handler.handle_one_request = handle_one_request
    try:
        measure(n, [kind])
    finally:
        handler.handle_one_request = original
    stats = pstats.Stats(profilers[0])
    for profiler in profilers[1:]:
        stats.add(profiler)
    print(f"--- {kind}: cProfile of the server side (every request, setup and tidying too) ---")
    stats.sort_stats("tottime").print_stats(35)
    stats.sort_stats("cumulative").print_stats(50)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=300, help="calls of each kind")
    parser.add_argument("--kind", action="append", choices=KINDS, help="only these kinds")
    parser.add_argument("--profile", choices=("client", "server"), help="print a cProfile of one side")
    parser.add_argument("--via", choices=("direct", "botocore", "both"), default="direct",
                        help="the job's three calls as the service makes them to a local endpoint (direct, "
                             "shared/adapters/sqs_json.py), through botocore, or both one after the other")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    kinds = tuple(args.kind or KINDS)
    if args.profile == "server":
        _profile_server(args.n, kinds[0])
        return 0
    vias = ("direct", "botocore") if args.via == "both" else (args.via,)
    results = {via: measure(args.n, kinds, profile=args.profile, via=via) for via in vias}
    load = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"n": args.n, "load_1m": load, "calls": results}))
        return 0
    print(f"{args.n} calls of each kind, load average {load:.2f}")
    print(f"{'via':<10}{'call':<18}{'client us':>12}{'server us':>12}")
    for via, figures_by_kind in results.items():
        for kind, figures in figures_by_kind.items():
            print(f"{via:<10}{kind:<18}{figures['client_us']:>12.1f}{figures['server_us']:>12.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
