"""The conformance run's shared state: the formulas child started once the cases are collected
(it works while IronCalc and the service calculate in this process), each case's outcome kept
for the per-function table printed at the end of the session."""

from __future__ import annotations

import concurrent.futures
import multiprocessing

import pytest

from tests.conformance import harness


class Conformance:
    """Outcomes by case id, computed on first request."""

    def __init__(self) -> None:
        self.pool: concurrent.futures.ProcessPoolExecutor | None = None
        self.futures: dict[str, concurrent.futures.Future] = {}
        self.outcomes: dict[str, harness.Outcome] = {}

    def start(self, cases: list[harness.Case]) -> None:
        if not cases or self.pool is not None:
            return
        self.pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        for data, targets in harness.formulas_jobs(cases):
            future = self.pool.submit(harness.formulas_batch, data, targets)
            self.futures.update(dict.fromkeys(targets, future))

    def formulas(self, case: harness.Case):
        future = self.futures.get(case.id)
        if future is None:
            return "failed: not run"
        try:
            return future.result().get(case.id, "failed: no answer")
        except Exception as exc:  # noqa: BLE001 - the child crashed on this workbook
            return f"failed: {type(exc).__name__}"

    def outcome(self, case: harness.Case) -> harness.Outcome:
        if case.id not in self.outcomes:
            self.start([case])
            data = harness.build(case)
            self.outcomes[case.id] = harness.Outcome(
                case, harness.ironcalc_alone(case, data), self.formulas(case), harness.service(case, data)
            )
        return self.outcomes[case.id]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None


STATE = Conformance()


@pytest.fixture(scope="session")
def conformance() -> Conformance:
    return STATE


def pytest_collection_modifyitems(session, config, items):
    cases = [
        item.callspec.params["case"] for item in items
        if item.fspath.basename == "test_conformance.py" and hasattr(item, "callspec") and "case" in item.callspec.params
    ]
    STATE.start(cases)


def pytest_sessionfinish(session, exitstatus):
    STATE.close()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not STATE.outcomes:
        return
    table = harness.per_function(STATE.outcomes)
    write = terminalreporter.write_line
    terminalreporter.section("conformance: cases matching Excel per function")
    write(f"{'function':<24} {'cases':>5} {'IronCalc':>9} {'formulas':>9} {'service':>8} {'gaps':>5}")
    for function, row in table.items():
        write(f"{function:<24} {row['cases']:>5} {row['ironcalc']:>9} {row['formulas']:>9} {row['service']:>8} {row['known_gap']:>5}")
    totals = {k: sum(r[k] for r in table.values()) for k in ("cases", "ironcalc", "formulas", "service", "known_gap")}
    write(f"{'total':<24} {totals['cases']:>5} {totals['ironcalc']:>9} {totals['formulas']:>9} {totals['service']:>8} {totals['known_gap']:>5}")
