"""The benches measure what they say: their statistics, the server's process tree read from
/proc, and one tiny run of each against the real stack (bench/throughput.py on `sheetcalc dev`
as a subprocess, bench/worker_handler.py on its own moto server in another process)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench import throughput
from bench.throughput import iso_ms_between, percentile, summary, tree_cpu_seconds, tree_pids, tree_rss_mb

REPO = Path(__file__).resolve().parents[2]


def test_percentiles_interpolate_between_closest_ranks():
    assert percentile([4, 1, 3, 2], 50) == 2.5
    assert percentile(list(range(1, 101)), 95) == pytest.approx(95.05)
    assert percentile([7.0], 99) == 7.0
    assert percentile([], 50) is None


def test_summary_gives_p50_p95_p99_and_max():
    assert summary([10, 20, 30, 40, 50]) == {"p50": 30, "p95": pytest.approx(48), "p99": pytest.approx(49.6), "max": 50}
    assert summary([]) == {"p50": None, "p95": None, "p99": None, "max": None}


def test_server_latency_is_read_from_the_jobs_timestamps():
    assert iso_ms_between("2026-11-23T10:00:00.250000Z", "2026-11-23T10:00:01.000000Z") == pytest.approx(750)
    assert iso_ms_between("2026-11-23T10:00:00+00:00", "2026-11-23T10:00:00.012+00:00") == pytest.approx(12)


def test_the_process_tree_includes_children_and_their_cpu_and_memory():
    busy = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\nimport sys; sys.stdin.read()"
    child = subprocess.Popen([sys.executable, "-c", busy], stdin=subprocess.PIPE)
    try:
        assert child.pid in tree_pids(os.getpid())
        deadline = time.monotonic() + 60
        while tree_cpu_seconds(child.pid) < 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tree_cpu_seconds(child.pid) >= 0.3
        assert tree_rss_mb(os.getpid()) > tree_rss_mb(child.pid) > 1
    finally:
        child.communicate(b"")


def _database_option() -> list[str]:
    url = os.environ.get("SHEETCALC_TEST_DATABASE_URL")
    return ["--db", "postgresql", "--pg-admin-url", url] if url else ["--db", "sqlite"]


@pytest.mark.e2e
def test_throughput_runs_jobs_at_each_level_and_reports_them(capsys):
    report = throughput.main([*_database_option(), "--concurrency", "1,3", "--jobs", "4", "--warmup", "1",
                              "--calc-jobs", "3", "--json"])

    levels = report["runs"][0]["levels"]
    assert [(r["concurrency"], r["jobs"], r["errors"]) for r in levels] == [(1, 4, {}), (3, 4, {})]
    for r in levels:
        assert r["jobs_per_s"] > 0 and r["cpu_ms_per_job"] > 0 and r["rss_mb_end"] > 0
        # The client's span (execute sent -> completion seen) contains the server's.
        assert r["server_ms"]["max"] <= r["client_ms"]["max"]
        assert r["health_ms"]["failed"] == 0
    assert report["calculation"]["jobs"] == 3
    assert json.loads(capsys.readouterr().out)["runs"][0]["db"] == report["runs"][0]["db"]


def test_a_job_started_while_the_level_settles_is_not_recorded():
    # GIVEN a level whose recorded part starts at t=100 (perf_counter seconds)
    tally = throughput.Tally(measure_from=100.0)
    finished = {"status": "completed", "created_at": "2026-11-27T10:00:00Z", "completed_at": "2026-11-27T10:00:00.010Z"}
    # WHEN one job started before it and one after finish
    asyncio.run(throughput._record(tally, finished, started=99.9))
    asyncio.run(throughput._record(tally, finished, started=100.1))
    # THEN only the second is a job of the level; a failed job is an error whenever it started
    assert tally.jobs == 1 and tally.server_ms == [pytest.approx(10)]
    asyncio.run(throughput._record(tally, {**finished, "status": "failed"}, started=50.0))
    assert tally.errors == {"job failed": 1}


def test_the_cpu_speed_probe_reports_its_loops_own_cpu_time():
    probe = throughput.CpuSpeedProbe()
    try:
        deadline = time.monotonic() + 60
        while len(probe.samples) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        # A fixed loop's CPU time: positive, and far below the 0.25 s between samples.
        assert len(probe.samples) >= 3
        assert all(0 < us < 250_000 for us in probe.samples)
        assert probe.median_since(len(probe.samples)) is None
    finally:
        probe.stop()


def _row(db: str, **fields) -> dict:
    """A level as measure_level reports it (16 clients), with ``fields`` in place of its figures."""
    return {"db": db, "concurrency": 16, "jobs": 600, "errors": {}, "jobs_per_s": 300.0,
            "client_ms": summary([40.0]), "server_ms": summary([20.0]), "cpu_ms_per_job": 4.8, "bench_cpu_ms_per_job": 0.2,
            "rss_mb_start": 1000.0, "rss_mb_end": 1001.0, "health_ms": {"p50": 2.0, "p99": 3.0, "max": 4.0},
            "load_avg_1m": 3.0, "cpu_probe_us": 190.0, "timeline": None, **fields}


def test_a_levels_row_shows_health_p99_and_the_cpu_probe():
    level = _row("sqlite", jobs=100, health_ms={"p50": 2.0, "p99": 12.5, "max": 60.0}, cpu_probe_us=187.4)
    row = throughput.table({"runs": [{"db": "sqlite", "levels": [level], "memory": None}]}).splitlines()[2]
    assert "| 2.0 / 12.5 / 60.0 | 3.00 | 187 | 100 (0) |" in row


def test_a_levels_timeline_is_printed_second_by_second():
    level = _row("postgresql", timeline=[{"jobs_per_s": 320.4, "cpu_ms_per_job": 4.61}, {"jobs_per_s": 0.0, "cpu_ms_per_job": None}])
    text = throughput.table({"runs": [{"db": "postgresql", "levels": [level], "memory": None}]})
    assert "postgresql x16, second by second: jobs/s 320 0; CPU ms/job 4.6 -" in text


def test_the_timeline_counts_the_jobs_recorded_in_each_second():
    # GIVEN a timeline over this process sampling every 0.2 s, and a level's tally filling up
    timeline = throughput.Timeline(os.getpid(), interval=0.2)
    timeline.tally = throughput.Tally()
    timeline.start()
    try:
        deadline = time.monotonic() + 60
        while len(timeline.seconds) < 3 and time.monotonic() < deadline:
            timeline.tally.client_ms.append(1.0)  # a job recorded
            time.sleep(0.01)
    finally:
        timeline.stop()
    # THEN each sample after the first job counts the jobs recorded in it, as a rate
    assert len(timeline.seconds) >= 3
    assert any(second["jobs_per_s"] > 0 for second in timeline.seconds)
    assert all(second["jobs_per_s"] >= 0 for second in timeline.seconds)
    assert sum(second["jobs_per_s"] for second in timeline.seconds) * 0.2 <= timeline.tally.jobs


def test_the_memory_run_names_the_kinds_of_its_failed_requests():
    # GIVEN a memory run in which two executes were refused
    memory = {"jobs": 10, "errors": {"execute 503": 2}, "rss_mb": [[0, 1000.0], [10, 1001.0]]}
    report = {"runs": [{"db": "sqlite", "levels": [], "memory": memory}]}
    # WHEN the report is tabled THEN the memory line says how many failed and how
    assert "sqlite: RSS MB after jobs (10 jobs, 2 errors (execute 503: 2)): 0: 1000, 10: 1001" in throughput.table(report)


def test_worker_handler_bench_completes_every_job_in_batches():
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHEETCALC_") and k != "DATABASE_URL"}
    done = subprocess.run([sys.executable, "bench/worker_handler.py", "--batch-sizes", "1,3", "--jobs", "6",
                           "--warmup", "1", "--json"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout)["rows"]
    assert [(r["batch_size"], r["jobs"], r["invocations"], r["jobs_per_invocation"]) for r in rows] == [(1, 6, 6, 1.0), (3, 6, 2, 3.0)]
    assert all(r["ms_per_job"] > 0 for r in rows)


def test_a_profiles_stacks_are_grouped_by_the_first_group_any_frame_belongs_to():
    from bench.profile_summary import summarize

    raw = [
        'process 1:"sheetcalc dev";ThreadedMotoServer._server_entry (moto/moto_server/threaded_moto_server.py);'
        "BaseClient._make_api_call (botocore/client.py) 6\n",
        'process 1:"sheetcalc dev";run_job (shared/services/job_runner.py);calculate (shared/calc/ironcalc/workbook.py) 2\n',
        'process 1:"sheetcalc dev";Server.run (uvicorn/server.py);Session.execute (sqlalchemy/orm/session.py) 1\n',
        'process 1:"sheetcalc dev";Server.run (uvicorn/server.py);JSONDecoder.raw_decode (json/decoder.py) 1\n',
        "\n",
    ]

    result = summarize(raw, top=1)

    assert result["samples"] == 10
    assert result["groups"] == {"local AWS (moto)": 60, "calculation": 20, "database": 10, "API framework": 10}
    assert result["leaves"] == [("BaseClient._make_api_call (botocore/client.py)", 60)]


def test_api_request_bench_times_execute_and_both_kinds_of_get():
    # GIVEN a fresh process with none of the test run's settings (the bench sets up its own)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHEETCALC_") and k != "DATABASE_URL"}
    # WHEN the API bench runs a handful of requests of each kind
    done = subprocess.run([sys.executable, "bench/api_request.py", "--requests", "4", "--warmup", "1", "--json"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    # THEN every request got its expected answer and is reported, with the messages it queued
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert list(report["rows"]) == ["execute", "get_pending", "get_completed"]
    for row in report["rows"].values():
        assert row["requests"] == 4 and row["cpu_us_per_request"] > 0 and row["statements_per_request"] > 0
    assert report["queue"] == "stub" and report["messages_to_stub"] == 5  # one warm-up and four measured executes


def test_local_aws_calls_bench_reports_both_sides_of_every_kind_of_call():
    # GIVEN a fresh process (the bench starts its own local AWS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHEETCALC_")}
    # WHEN the local AWS bench makes a few calls of each kind
    done = subprocess.run([sys.executable, "bench/local_aws_calls.py", "-n", "3", "--via", "both", "--json"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    # THEN each call did its work (the bench stops otherwise) and each is reported with CPU on both
    # sides, the job's calls made directly (as the service makes them) and through botocore
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert list(report["calls"]) == ["direct", "botocore"]
    for calls in report["calls"].values():
        assert list(calls) == ["receive_empty", "send", "send_batch_10", "receive_10", "delete_batch_10", "s3_put", "s3_get"]
        for figures in calls.values():
            assert figures["client_us"] > 0 and figures["server_us"] > 0


class _ServedConnection:
    """A request handler as the clock sees one: a kept connection's call ends either with no request
    (the client closed it) or with a request whose thread finishes after the client has its answer."""

    def __init__(self, *, request: bool) -> None:
        self.request = request
        self.answered = threading.Event()
        self.finish = threading.Event()

    def parse_request(self) -> bool:
        return True

    def handle_one_request(self) -> None:
        if not self.request:
            return
        self.parse_request()
        sum(range(20_000))  # the request's work
        self.answered.set()
        self.finish.wait(timeout=600)  # its log line and bookkeeping, after the answer


def test_the_server_clock_waits_for_a_request_after_a_connection_closed_without_one():
    from bench.local_aws_calls import _ServerClock

    clock = _ServerClock()

    class Handler(_ServedConnection):
        pass

    uninstall = clock.install(Handler)
    try:
        # GIVEN a kept connection the client closed without sending a request
        Handler(request=False).handle_one_request()
        assert (clock.started, clock.finished) == (0, 0)
        # WHEN a measured request has been answered but its thread is still finishing it
        clock.counting = True
        served = Handler(request=True)
        thread = threading.Thread(target=served.handle_one_request)
        thread.start()
        assert served.answered.wait(timeout=600)
        # THEN settling still waits for it (what settle waits on is not yet true) ...
        assert clock.finished < clock.started
        served.finish.set()
        thread.join(timeout=600)
        clock.settle()
        # ... and its CPU is counted once it ends
        assert (clock.started, clock.finished) == (1, 1)
        assert clock.seconds > 0
    finally:
        uninstall()


def _level(db: str, clients: int, jobs_per_s: float, cpu: float) -> dict:
    return {"db": db, "concurrency": clients, "jobs_per_s": jobs_per_s, "cpu_ms_per_job": cpu,
            "client_ms": {"p50": 10.0, "p95": 20.0}, "errors": {}}


def test_alternating_runs_are_tabled_per_run_and_summarised_per_build():
    from bench import alternate

    # GIVEN two pairs of reports, base then this, one level each
    report = lambda jobs_per_s, cpu: {"runs": [{"levels": [_level("sqlite", 16, jobs_per_s, cpu)]}]}  # noqa: E731
    results = [(1, "base", "06:00", report(100.0, 10.0)), (1, "this", "06:01", report(120.0, 9.0)),
               (2, "base", "06:02", report(110.0, 11.0)), (2, "this", "06:03", report(130.0, 8.0))]

    # WHEN they are tabled
    rows = alternate.rows(results)
    medians = alternate.medians(rows)

    # THEN each run is a row in the order run, and each build has its medians, base first
    assert [(r["pair"], r["build"], r["jobs_per_s"]) for r in rows] == [(1, "base", 100.0), (1, "this", 120.0),
                                                                      (2, "base", 110.0), (2, "this", 130.0)]
    assert [(m["build"], m["runs"], m["jobs_per_s"], m["cpu_ms_per_job"]) for m in medians] == [
        ("base", 2, 105.0, 10.5), ("this", 2, 125.0, 8.5)]
    assert "| 2 | this | 06:03 | sqlite | 16 | 130.0 | 8.0 | 10.0 / 20.0 | 0 |" in alternate.table(rows, medians, "HEAD~1")


@pytest.mark.e2e
def test_alternate_bench_runs_both_builds_and_leaves_no_worktree():
    # WHEN this checkout is compared with its own HEAD, one pair, a few jobs
    done = subprocess.run([sys.executable, "bench/alternate.py", "--base", "HEAD", "--pairs", "1", "--json", "--",
                           *_database_option(), "--concurrency", "1", "--jobs", "2", "--warmup", "1", "--calc-jobs", "0"],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)

    # THEN each build ran its jobs without an error, and the base's worktree is gone (another run of
    # the suite may have one of its own meanwhile: only this run's is looked for)
    assert [(r["build"], r["errors"]) for r in report["rows"]] == [("base", {}), ("this", {})]
    assert all(r["jobs_per_s"] > 0 for r in report["rows"])
    worktrees = subprocess.run(["git", "-C", str(REPO), "worktree", "list"], capture_output=True, text=True).stdout
    assert report["base_checkout"] not in worktrees and not Path(report["base_checkout"]).exists()
