"""On AWS a job's claim lasts as long as the worker may hold it, and a little more: not the
settings' 15 minutes. template.yaml sets the lease for every function (the worker claims with it,
the sweeper hands back claims past it, so they must read one value), above the timeout of every
function that claims jobs, and the settings' default stays above it (safe wherever it is not set)."""

from __future__ import annotations

from shared.config import Settings
from tests.infra.test_template import _function_setting, _functions, _number, load_template

# The functions that claim jobs: the worker (jobs, batch chunks).
CLAIMING = {"functions.worker.app.handler"}
# The least time between a worker's timeout and the end of its claim's lease.
MARGIN_SECONDS = 30


def _lease(template: dict, function: dict) -> float:
    env = (function["Properties"].get("Environment") or {}).get("Variables") or {}
    env = {**template["Globals"]["Function"]["Environment"]["Variables"], **env}
    return float(env["SHEETCALC_PROCESSING_LEASE_SECONDS"])


def test_every_function_reads_one_lease_longer_than_any_worker_may_hold_a_claim():
    template = load_template()
    functions = _functions(template)
    leases = {name: _lease(template, function) for name, function in functions.items()}
    # GIVEN one lease for every function
    assert len(set(leases.values())) == 1, leases
    lease = next(iter(leases.values()))
    # THEN it outlasts the timeout of every function that claims jobs, by a margin
    claiming = {name: f for name, f in functions.items() if f["Properties"]["ImageConfig"]["Command"][0] in CLAIMING}
    assert claiming
    for name, function in claiming.items():
        timeout = _number(template, _function_setting(template, function, "Timeout"))
        assert lease >= timeout + MARGIN_SECONDS, f"{name}: lease {lease} s, timeout {timeout} s"
    # AND it is shorter than the settings' default, which stays the safe value where nothing sets it
    assert lease < Settings.model_fields["processing_lease_seconds"].default
