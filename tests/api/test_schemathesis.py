"""schemathesis over /openapi.json against the app: every documented operation, with generated
valid and invalid requests, answers without a 5xx and with a body that matches its schema.

Management operations carry a live administrator's token, consumer operations the deployed
engine's real slugs and a real API key (the version's test key on the test endpoint), and the ids
in paths are real ones, so the requests reach the services rather than stopping at a 401 or
404. The operations that would end the token's session are left out. The data is made once by
tests/factories.py; each operation is its own test in its own savepoint (tests/conftest.py), so
one that deletes the engine deletes it for itself only.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from shared.api.app import create_app
from shared.services import webhooks
from tests.conftest import drain
from tests.envtools import settings_env
from tests.factories import ALL_PERMISSIONS, Deployed, create_tenant, deploy_loan, sign_in, submit_batch, submit_job

# Bounds the run: about 40 operations x (explicit examples + this many generated cases).
MAX_EXAMPLES = 12
INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30}

schema = schemathesis.openapi.from_asgi("/openapi.json", create_app())
schema.config.generation.update(max_examples=MAX_EXAMPLES)
schema.config.phases.update(phases=["examples", "fuzzing"])
schema = (
    schema
    # They end the token's session, and every later case would be a 401.
    .exclude(path="/auth/logout")
    .exclude(path="/auth/change-password")
)

CASES = {"run": 0, "5xx": 0}


@pytest.fixture(scope="module")
def world(local_aws, loan_xlsx) -> tuple[Deployed, dict[str, str]]:
    """A tenant with a deployed engine and a completed job of its consumer, committed once for the
    module (each operation's changes to it are rolled back with its savepoint), and the real value
    of every path parameter."""
    from functions.worker.app import handler

    deployed = deploy_loan(sign_in(None, create_tenant()), loan_xlsx, flags=ALL_PERMISSIONS)
    job_id = submit_job(deployed, INPUTS)
    batch_id = submit_batch(deployed, [INPUTS, {"principal": [1]}])
    drain(local_aws.jobs_queue_url, handler)
    return deployed, {
        "engine_id": deployed.engine_id, "version_id": deployed.version_id, "consumer_id": deployed.consumer_id,
        "tenant_slug": deployed.admin.slug, "engine_slug": deployed.engine_slug, "job_id": job_id,
        "batch_id": batch_id,
    }


@pytest.fixture()
def no_outbound_calls(monkeypatch, run_worker, run_webhooks):
    """Generated webhook URLs and storage credentials never leave the machine: the webhook POST is
    recorded instead of sent (drained here, while still replaced), and Microsoft's identity and
    Graph addresses point at a closed loopback port."""
    sent: list[str] = []
    monkeypatch.setattr(webhooks, "_post", lambda url, body: sent.append(url) or 0)
    with settings_env(SHEETCALC_GRAPH_AUTHORITY_HOST="http://127.0.0.1:9", SHEETCALC_GRAPH_BASE_URL="http://127.0.0.1:9/v1.0"):
        yield sent
        run_worker()
        run_webhooks()


def _credentials(case, deployed: Deployed) -> dict[str, str]:
    path = case.operation.path
    if path.startswith("/jobs/test/"):
        return {"X-API-Key": deployed.test_key}
    if path.startswith("/jobs/"):
        return {"X-API-Key": deployed.api_key}
    return deployed.admin.headers


@schema.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
def test_no_operation_answers_5xx_or_off_its_schema(case, world, no_outbound_calls):
    deployed, real = world
    for name in case.path_parameters or {}:
        if name in real:
            case.path_parameters[name] = real[name]
    CASES["run"] += 1
    response = case.call(headers=_credentials(case, deployed))
    if response.status_code >= 500:
        CASES["5xx"] += 1
    case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])


def test_zz_no_case_of_the_run_answered_5xx(capsys):
    """Across every operation above: how many cases ran (printed for the README's figures), none a 5xx."""
    with capsys.disabled():
        print(f"\nschemathesis: {CASES['run']} cases, {CASES['5xx']} answered 5xx")
    assert CASES["5xx"] == 0
