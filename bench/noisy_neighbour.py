"""Noisy neighbour: tenant A runs its worst allowed workbooks while tenant B's one-cell jobs are timed.

Starts `sheetcalc dev` (production defaults for every brake and budget), then tenant A ("bench")
uploads three workbooks built here, each as costly as the limits allow:

- ``formulas``: a column of ``--formula-cells`` cells ``=ROW()*1000003+$C$1`` summed, pinned to
  the `formulas` engine (its pin is measured in the fence and judged like an upload);
- ``table``: a one-variable what-if data table of ``--table-rows`` substitutions, each over a
  2,000-row SUMPRODUCT;
- ``output``: one named output range of ``--output-cells`` cells (the output-cell limit).

For ``--seconds``, A keeps ``--a-concurrency`` jobs of each in flight (execute, then poll), while
tenant B ("neighbour", the sample loan workbook) runs one job at a time and /health is probed
every 50 ms. Prints B's end-to-end time per job (p50, p95, max), /health (p50, p99, max), and
what A's jobs did (completed, failed and why, refused with 429). Goal on this 2-core machine:
B's p95 at most 2 s and /health's p99 at most 100 ms.

    .venv/bin/python bench/noisy_neighbour.py [--db sqlite|postgresql] [--seconds 60]
"""

from __future__ import annotations

import argparse
import collections
import io
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import openpyxl
from openpyxl.workbook.defined_name import DefinedName

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from _report import header, machine  # noqa: E402
from burst import _deploy_neighbour  # noqa: E402
from throughput import HealthProbe, dev_stack, deploy, percentile, scratch_postgres  # noqa: E402

from tests.packages import edit_sheet  # noqa: E402

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"


def _save(wb: openpyxl.Workbook) -> bytes:
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def _name(wb: openpyxl.Workbook, name: str, ref: str) -> None:
    wb.defined_names[name] = DefinedName(name, attr_text=ref)


def formulas_workbook(cells: int) -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "S"
    ws["C1"] = 1
    for r in range(1, cells + 1):
        ws.cell(r, 1, f"=ROW()*1000003+$C$1")
    ws["D1"] = f"=SUM(A1:A{cells})"
    _name(wb, "x", "S!$C$1")
    _name(wb, "total", "S!$D$1")
    return _save(wb)


def data_table_workbook(rows: int, body_rows: int = 2_000) -> bytes:
    """x (B1) an input; the table substitutes A5:A{rows+4} into B2, each over a SUMPRODUCT of
    ``body_rows`` rows (B4); total (C1) sums the table's body."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "T"
    ws["B1"], ws["B2"] = 1, 1
    for r in range(2, body_rows + 2):
        ws.cell(r, 4, r)
    ws["B4"] = f"=SUMPRODUCT($D$2:$D${body_rows + 1},$D$2:$D${body_rows + 1})*B2+B1"
    last = rows + 4
    for r in range(5, last + 1):
        ws.cell(r, 1, r)
        ws.cell(r, 2, "=0")  # placeholders, replaced by the table's definition below
    ws["C1"] = f"=SUM(B5:B{last})"
    _name(wb, "x", "T!$B$1")
    _name(wb, "total", "T!$C$1")
    data = _save(wb)
    definition = f'<f t="dataTable" ref="B5:B{last}" dt2D="0" dtr="0" r1="B2"/>'

    def rewrite(sheet: str) -> str:
        for r in range(5, last + 1):
            sheet = re.sub(rf'(<c r="B{r}"[^>]*>)<f>0</f>', lambda m: m.group(1) + (definition if r == 5 else ""), sheet, count=1)
        return sheet

    return edit_sheet(data, rewrite)


def output_workbook(cells: int, cols: int = 10) -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "O"
    ws["A1"] = 1
    rows = cells // cols
    for r in range(2, rows + 2):
        for c in range(1, cols + 1):
            ws.cell(r, c, f"=$A$1*{r * cols + c}")
    _name(wb, "x", "O!$A$1")
    _name(wb, "grid", f"O!$A$2:${openpyxl.utils.get_column_letter(cols)}${rows + 1}")
    return _save(wb)


def _admin(base: str) -> httpx.Client:
    """An HTTP client signed in as tenant bench's administrator (throughput.deploy set its password)."""
    http = httpx.Client(base_url=base, timeout=120)
    token = http.post("/auth/login", json={"email": "bench@bench.example", "password": "bench-password-1"}).json()["access_token"]
    http.cookies.clear()
    http.headers["Authorization"] = f"Bearer {token}"
    return http


def deploy_worst(http: httpx.Client, args) -> tuple[dict[str, str], dict[str, dict]]:
    """Tenant A's three engines; their execute paths, and each version's measured cost (or refusal)."""
    consumer = http.get("/consumers").json()[0]  # the bench consumer throughput.deploy made
    built = {
        "formulas": (formulas_workbook(args.formula_cells), "formulas"),
        "table": (data_table_workbook(args.table_rows), None),
        "output": (output_workbook(args.output_cells), None),
    }
    paths, costs = {}, {}
    for slug, (data, pin) in built.items():
        engine = http.post("/engines", json={"name": slug, "slug": slug}).json()
        up = http.post(f"/engines/{engine['id']}/versions", data={"version": "1"}, files={"file": (f"{slug}.xlsx", data)})
        if up.status_code != 201:
            costs[slug] = {"refused": up.json().get("detail")}
            continue
        version = up.json()
        costs[slug] = version.get("cost") or {}
        if pin:
            pinned = http.patch(f"/engines/{engine['id']}/versions/{version['id']}", json={"calc_engine": pin})
            if pinned.status_code != 200:
                costs[slug] = {"refused": pinned.json().get("detail")}
                continue
            costs[slug] = pinned.json().get("cost") or {}
        http.post(f"/engines/{engine['id']}/versions/{version['id']}/activate").raise_for_status()
        http.put(f"/engines/{engine['id']}/access/{consumer['id']}",
                 json={"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}).raise_for_status()
        paths[slug] = f"/jobs/execute/bench/{slug}"
    return paths, costs


def _until_done(http: httpx.Client, job_id: str, key: dict, deadline: float) -> dict:
    while time.monotonic() < deadline:
        view = http.get(f"/jobs/{job_id}", params={"wait": 10}, headers=key)
        if view.status_code == 200 and view.json().get("status") in ("completed", "failed"):
            return view.json()
        time.sleep(0.05)
    return {"status": "unfinished"}


def tenant_a(base: str, path: str, key: dict, stop: threading.Event, tally: collections.Counter, lock: threading.Lock) -> None:
    with httpx.Client(base_url=base, timeout=120) as http:
        while not stop.is_set():
            r = http.post(path, json={"inputs": {"x": 2}}, headers=key)
            if r.status_code == 429:
                with lock:
                    tally["429"] += 1
                stop.wait(float(r.headers.get("Retry-After", "1")))
                continue
            if r.status_code != 202:
                with lock:
                    tally[f"http {r.status_code}"] += 1
                stop.wait(1)
                continue
            view = _until_done(http, r.json()["job_id"], key, time.monotonic() + 300)
            with lock:
                tally[view["status"] if view["status"] != "failed" else f"failed: {view.get('error_message')}"] += 1


def tenant_b(base: str, key: dict, stop: threading.Event, seconds: list[float], failures: collections.Counter) -> None:
    with httpx.Client(base_url=base, timeout=120) as http:
        while not stop.is_set():
            began = time.perf_counter()
            r = http.post("/jobs/execute/neighbour/loan", params={"wait": 25},
                          json={"inputs": {"principal": 1000, "annual_rate": 0.05, "years": 1}}, headers=key)
            body = r.json() if r.status_code in (200, 202) else {}
            if r.status_code not in (200, 202):
                failures[f"http {r.status_code}"] += 1
                stop.wait(0.5)
                continue
            if body.get("status") not in ("completed", "failed"):
                body = _until_done(http, body["job_id"], key, time.monotonic() + 300)
            seconds.append(time.perf_counter() - began)
            if body.get("status") != "completed":
                failures[body.get("status", "?")] += 1
            stop.wait(0.2)


def run(stack, args) -> dict:
    a_key = deploy(stack)
    b_key = _deploy_neighbour(stack)
    http = _admin(stack.base)
    paths, costs = deploy_worst(http, args)
    stop, lock = threading.Event(), threading.Lock()
    tally: collections.Counter = collections.Counter()
    b_seconds: list[float] = []
    b_failures: collections.Counter = collections.Counter()
    probe = HealthProbe(stack.base, interval=0.05)
    threads = [threading.Thread(target=tenant_a, args=(stack.base, path, a_key, stop, tally, lock), daemon=True)
               for path in paths.values() for _ in range(args.a_concurrency)]
    threads.append(threading.Thread(target=tenant_b, args=(stack.base, b_key, stop, b_seconds, b_failures), daemon=True))
    probe.start()
    for t in threads:
        t.start()
    time.sleep(args.seconds)
    stop.set()
    for t in threads:
        t.join(330)
    probe.stop()
    return {"costs": costs, "a": dict(tally), "b_seconds": b_seconds, "b_failures": dict(b_failures),
            "health_ms": probe.ms, "health_failures": probe.failures}


def report(result: dict, machine_fields: dict, args) -> str:
    b, h = result["b_seconds"], result["health_ms"]

    def q(values, p, scale=1.0, unit=""):
        v = percentile(values, p)
        return "-" if v is None else f"{v * scale:.{0 if unit == ' ms' and v * scale >= 10 else 2}f}{unit}"

    lines = [header(machine_fields, f"{args.seconds} s, A: {args.a_concurrency} jobs in flight per workbook")]
    for slug, cost in result["costs"].items():
        lines.append(f"A's {slug}: " + (f"refused: {cost['refused']}" if "refused" in cost else
                     f"p50 {cost.get('calc_ms_p50')} ms, p95 {cost.get('calc_ms_p95')} ms, {cost.get('peak_memory_mb')} MB, lane {cost.get('lane')}"))
    lines.append(f"A's jobs: {dict(sorted(result['a'].items()))}")
    lines.append(f"B's one-cell jobs: {len(b)}, end to end p50 {q(b, 50, 1000, ' ms')}, p95 {q(b, 95, 1000, ' ms')}, "
                 f"max {q(b, 100, 1000, ' ms')}; not completed: {result['b_failures'] or 0}")
    lines.append(f"/health: {len(h)} probes, p50 {q(h, 50, 1, ' ms')}, p99 {q(h, 99, 1, ' ms')}, max {q(h, 100, 1, ' ms')}, "
                 f"failed {result['health_failures']}")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--pg-admin-url", default=os.environ.get("SHEETCALC_BENCH_PG_ADMIN_URL", PG_ADMIN_URL))
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--a-concurrency", type=int, default=4)
    parser.add_argument("--formula-cells", type=int, default=2_000)
    parser.add_argument("--table-rows", type=int, default=1_000)
    parser.add_argument("--output-cells", type=int, default=10_000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.db == "postgresql":
            with scratch_postgres(args.pg_admin_url) as url, dev_stack(Path(tmp), url, env={}) as stack:
                fields, result = machine(url), run(stack, args)
        else:
            with dev_stack(Path(tmp), None, env={}) as stack:
                fields, result = machine(None), run(stack, args)
    print(report(result, fields, args))
    return result


if __name__ == "__main__":
    main()
