"""A job runs inside its budget, and a version's cost is measured, judged and shown.

Workbooks from tests/calc/budget_workbooks.py: with the switch at 0 a job is one cell; at 1 it is
seconds of SUMPRODUCTs on any machine, so the small budgets below are passed whatever its speed.
"""

from __future__ import annotations

import uuid

import pytest

from shared.api.presenters.engines import version_created
from shared.db.models import EngineVersion
from shared.db.session import session_scope
from shared.errors import WorkbookRefused
from shared.repositories import tenants as tenant_repo
from shared.services import engines, versions
from tests.calc.budget_workbooks import always_heavy, heavy_when_switched_on
from tests.factories import deploy_loan, submit_job
from tests.worker.test_redelivery_and_webhooks import job_row, sqs_event

QUICK_TOTAL = 2000 * 2001 / 2


@pytest.fixture(scope="module")
def switchable() -> bytes:
    return heavy_when_switched_on()


# The time budget of the test that runs past it: a quick job (the model's load has a budget of its
# own, as long) is done well within it on a loaded machine, and a heavy one (160 million
# multiplications: over a minute here, and many times the budget on a fast machine) is not.
TIME_BUDGET_S = 5


@pytest.fixture(scope="module")
def much_heavier_when_switched() -> bytes:
    return heavy_when_switched_on(formulas=8_000)


def upload(admin, data: bytes):
    tenant_id = uuid.UUID(admin.tenant_id)
    with session_scope() as session:
        tenant = tenant_repo.get_tenant(session, tenant_id=tenant_id)
        engine = engines.create(session, tenant_id=tenant_id, name=f"Costly {uuid.uuid4().hex[:6]}", slug=None, description=None).engine
        return versions.upload(session, tenant=tenant, engine_id=engine.id, version="1.0", filename="costly.xlsx", data=data)


def test_a_job_past_its_time_budget_fails_naming_it_and_its_batch_goes_on(admin, much_heavier_when_switched, configure):
    from functions.worker.app import handler

    # GIVEN a version whose jobs are quick unless switched on, and a time budget per job
    deployed = deploy_loan(admin, much_heavier_when_switched)
    configure(job_max_seconds=TIME_BUDGET_S)
    quick, heavy, after = (submit_job(deployed, {"switch": s}) for s in (0, 1, 0))
    # WHEN the three come as one batch
    assert handler(sqs_event(quick, heavy, after), None) == {"batchItemFailures": []}
    # THEN the heavy one failed with a message naming the limit, and the others completed
    failed = job_row(heavy)
    assert failed.status == "failed"
    assert failed.error_message == f"The calculation took longer than its {TIME_BUDGET_S} s time budget and was stopped"
    assert [job_row(j).outputs for j in (quick, after)] == [{"total": 8000 * 8001 / 2}] * 2


def test_a_job_past_its_cpu_budget_fails_naming_it(admin, switchable, configure):
    from functions.worker.app import handler

    deployed = deploy_loan(admin, switchable)
    configure(job_max_seconds=600, job_max_cpu_seconds=1)
    heavy = submit_job(deployed, {"switch": 1})
    assert handler(sqs_event(heavy), None) == {"batchItemFailures": []}
    assert job_row(heavy).error_message == "The calculation used more than its 1 s CPU-time budget and was stopped"


def test_the_upload_measures_what_a_job_costs_and_the_answer_shows_it(admin, switchable):
    # WHEN a version is uploaded
    uploaded = upload(admin, switchable)
    cost = uploaded.version.cost
    # THEN its cost was measured on its uploaded values, by its engine
    assert cost["engine"] == "ironcalc" and cost["runs"] >= 1
    assert 0 < cost["calc_ms_p50"] <= cost["calc_ms_p95"]
    assert cost["peak_memory_mb"] > 0
    # AND the upload's answer shows it, with the lane its jobs take (one-cell jobs: the standard one)
    shown = version_created(uploaded).model_dump()["cost"]
    assert shown == {**cost, "lane": "standard"}


def test_a_version_costlier_than_the_limit_is_refused_at_upload_saying_why(admin, configure):
    # GIVEN a limit of 20 ms per job, and a workbook whose every calculation is 2.5 million multiplications
    configure(version_max_calc_ms=20)
    # WHEN it is uploaded THEN it is refused, with the measured time and the limit
    with pytest.raises(WorkbookRefused) as refused:
        upload(admin, always_heavy(rows=5_000, formulas=500))
    assert "to calculate with ironcalc, over the limit of 20 ms per job (SHEETCALC_VERSION_MAX_CALC_MS)" in refused.value.message


def test_a_version_over_a_limit_lowered_since_its_upload_is_refused_at_activation(admin, configure):
    uploaded = upload(admin, always_heavy(rows=5_000, formulas=500))
    configure(version_max_calc_ms=20)
    with session_scope() as session, pytest.raises(WorkbookRefused) as refused:
        versions.activate(session, tenant_id=uuid.UUID(admin.tenant_id), engine_id=uploaded.version.engine_id, version_id=uploaded.version.id)
    assert "over the limit of 20 ms per job" in refused.value.message


def test_a_pin_is_measured_and_judged_like_an_upload(admin, configure):
    deployed = deploy_loan(admin, always_heavy(rows=5_000, formulas=500))
    configure(version_max_calc_ms=20)
    # WHEN the administrator pins the formulas engine, whose model of this workbook costs far more than 20 ms
    r = admin.patch(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}", json={"calc_engine": "formulas"})
    # THEN the pin is refused with the reason, and the version keeps its engine
    assert r.status_code == 400, r.text
    assert "to calculate with formulas, over the limit of 20 ms per job" in r.json()["detail"]
    with session_scope() as session:
        version = session.get(EngineVersion, uuid.UUID(deployed.version_id))
        assert (version.calc_engine, version.calc_engine_pinned, version.cost["engine"]) == ("ironcalc", False, "ironcalc")


def test_a_version_over_the_slow_lane_threshold_has_its_jobs_on_the_slow_lane(admin, loan_xlsx, configure, local_aws):
    from functions.worker.app import handler
    from tests.conftest import drain

    # GIVEN a slow-lane threshold every real job is over, and a version uploaded under it
    configure(version_slow_lane_ms=0)
    deployed = deploy_loan(admin, loan_xlsx)
    with session_scope() as session:
        assert session.get(EngineVersion, uuid.UUID(deployed.version_id)).lane == "slow"
    # WHEN a consumer executes it
    job_id = submit_job(deployed, {"principal": 1000, "annual_rate": 0.05, "years": 1})
    # THEN its message is on the slow lane's queue, not the jobs queue, and a worker there computes it
    assert drain(local_aws.jobs_queue_url, handler) == 0
    assert drain(local_aws.slow_jobs_queue_url, handler) == 1
    assert job_row(job_id).status == "completed"
