"""A cell the correction layer cannot compute as Excel would for one job's inputs never reaches
that job's consumer as a value.

The layer reads a date written as text in the forms Excel's pages and saved files settle; a form
they do not (a weekday's name: "Monday, August 22, 2011") is refused and the cell keeps
IronCalc's #VALUE!, which IFERROR turns into a plausible fallback. The upload cannot know (the
text arrives with the job), so the job fails for the outputs calculated from such a cell and
answers the others' jobs as before.
"""

from __future__ import annotations

import uuid

from shared.db.models import Job, JobStatus
from shared.db.session import session_scope
from shared.repositories import engines as engine_repo
from shared.services.job_runner import run_jobs
from tests.calc.conftest import named_formulas
from tests.factories import deploy_loan, submit_job


def workbook() -> bytes:
    """`written` (input, A1) a date as text; `due` 30 days after it, 0 when it is no date;
    `label` calculated from nothing the layer reads."""
    return named_formulas(
        {"due": "=IFERROR(DATEVALUE(A1)+30,0)", "label": '=UPPER(B1)&"!"'},
        cells={"A1": "8/22/2011", "B1": "ok"},
        names={"written": "$A$1", "tag": "$B$1"},
    )


def run(deployed, inputs: dict) -> Job:
    job_id = uuid.UUID(submit_job(deployed, inputs))
    run_jobs([job_id])
    with session_scope() as session:
        return session.get(Job, job_id)


def test_a_job_whose_output_comes_from_a_cell_not_computed_as_excel_would_fails(admin):
    deployed = deploy_loan(admin, workbook())
    # GIVEN a date in a form Excel reads: the job answers Excel's date (DATEVALUE's page:
    # "Aug 22, 2011" is 40777), though IronCalc alone answers #VALUE!, here the fallback 0
    done = run(deployed, {"written": "Aug 22, 2011"})
    assert done.status == JobStatus.COMPLETED, done.error_message
    assert done.outputs["due"] == 40777 + 30
    # WHEN a job sends a form the service cannot read as Excel would
    failed = run(deployed, {"written": "Monday, August 22, 2011"})
    # THEN it fails, naming the output but not the cell, and returns no value
    assert failed.status == JobStatus.FAILED and not failed.outputs
    assert failed.error_message == (
        "Output 'due' cannot be calculated as Excel would for these inputs: it depends on a cell "
        "the service cannot reproduce for them"
    )


def test_outputs_not_calculated_from_the_flagged_cell_are_not_held_back(admin):
    # GIVEN a version whose output schema asks only for the label
    deployed = deploy_loan(admin, workbook())
    with session_scope() as session:
        version = engine_repo.get_version(session, tenant_id=uuid.UUID(admin.tenant_id), version_id=uuid.UUID(deployed.version_id))
        version.output_schema = {"type": "object", "properties": {"label": {"type": "string"}}}
    # WHEN a job sends the date the layer refuses
    job = run(deployed, {"written": "Monday, August 22, 2011", "tag": "fine"})
    # THEN the label, calculated from nothing flagged, is answered
    assert job.status == JobStatus.COMPLETED, job.error_message
    assert job.outputs == {"label": "FINE!"}


def test_a_cell_the_upload_already_flagged_does_not_fail_jobs(admin):
    # GIVEN a TEXT format code the layer does not implement ([DBNum1]): flagged by the upload's
    # own calculation, so the upload's warnings and the version's report already name the cell
    deployed = deploy_loan(admin, named_formulas(
        {"shown": '=TEXT(A1,"[DBNum1]0")', "doubled": "=A1*2"}, cells={"A1": 5}, names={"amount": "$A$1"},
    ))
    # WHEN a job runs
    job = run(deployed, {"amount": 7})
    # THEN it completes as before (the report, not each job, says the cell is not Excel's)
    assert job.status == JobStatus.COMPLETED, job.error_message
    assert job.outputs["doubled"] == 14
