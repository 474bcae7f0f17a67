"""What a worker batch asks of the database, counted (not timed), so a regression shows on any machine.

A batch of 10 jobs of one version is one claim, one read of the version, one finish for all ten
(``UPDATE ... FROM`` the outcomes, returning what the rollups need), the rollups (one multi-row
upsert per rollup table; on PostgreSQL all five tables' in one statement), and on PostgreSQL one
NOTIFY for the ten, inside the finishing transaction. On
PostgreSQL every statement is one round trip once its connection has prepared it
(``shared/db/pg8000_prepared.py``), and so is COMMIT; BEGIN travels with the first statement. Issue 15's figures before:
34 statements and 117 round trips for the same batch; 9 statements and 13 round trips before
the rollups were one statement on PostgreSQL. The tests commit for real, as the worker
does, so the counts are the production path's (no test savepoints).
"""

from __future__ import annotations

import os
import uuid

import pytest

from shared.db.models import Job, JobStatus
from shared.db.session import get_engine, session_scope
from shared.services.job_runner import run_jobs
from tests.factories import deploy_loan, submit_job
from tests.statement_counter import counting

ON_POSTGRES = bool(os.environ.get("SHEETCALC_TEST_DATABASE_URL"))  # as tests/conftest.py chooses
INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10}
# claim, version, finish, the five rollup tables (daily, consumer, consumer x engine, two
# histograms; on PostgreSQL one statement for the five), NOTIFY
STATEMENTS = 5 if ON_POSTGRES else 8
# each statement, and the COMMIT of the two transactions (the claim; the finish): each BEGIN goes
# in one write with its transaction's first statement
ROUND_TRIPS = STATEMENTS + 2 if ON_POSTGRES else 0


@pytest.fixture(autouse=True)
def one_pooled_connection():
    """The worker's warm-up and the batch counted run on one connection: the pool starts empty,
    and a test's one thread checks out the connection it returned. (A pool hands out its idle
    connections in turn, so after other tests the counted batch could get one that has not
    prepared these statements, and pay a BEGIN and a prepare per statement more.)"""
    get_engine().dispose()


def ten_jobs(deployed) -> list[uuid.UUID]:
    return [uuid.UUID(submit_job(deployed, {**INPUTS, "principal": 100000 + i})) for i in range(10)]


def statuses(ids: list[uuid.UUID]) -> set[str]:
    with session_scope() as session:
        return {str(session.get(Job, job_id).status) for job_id in ids}


@pytest.mark.own_transactions
def test_a_batch_of_ten_jobs_costs_a_fixed_number_of_statements_and_round_trips(admin, loan_xlsx):
    # GIVEN a deployed engine, a worker that has run one batch already (its model loaded, its
    # connections' statements prepared), and ten more jobs queued
    deployed = deploy_loan(admin, loan_xlsx)
    run_jobs(ten_jobs(deployed))
    ids = ten_jobs(deployed)
    # WHEN the worker runs the ten as one batch
    with counting() as seen:
        batch = run_jobs(ids)
    # THEN every job is completed
    assert set(batch.statuses.values()) == {JobStatus.COMPLETED} and statuses(ids) == {JobStatus.COMPLETED}
    # AND the batch cost the statements and round trips above, whatever the number of jobs in it
    # (a statement text new to a pooled connection adds one round trip to prepare it, once)
    assert (seen.statements, seen.commits) == (STATEMENTS, 2), seen.by_kind()
    assert seen.round_trips - seen.prepares == ROUND_TRIPS, seen.waits


@pytest.mark.own_transactions
def test_one_job_costs_the_same_statements_as_ten(admin, loan_xlsx):
    # GIVEN a warm worker and one job queued
    deployed = deploy_loan(admin, loan_xlsx)
    run_jobs(ten_jobs(deployed)[:1])
    job_id = uuid.UUID(submit_job(deployed, INPUTS))
    # WHEN the worker runs it alone THEN it costs what a batch of ten costs: per batch, not per job
    with counting() as seen:
        run_jobs([job_id])
    assert seen.statements == STATEMENTS and seen.round_trips - seen.prepares == ROUND_TRIPS
