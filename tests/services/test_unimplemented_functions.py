"""A function the engine does not implement never reaches a consumer as a value.

FORECAST.ETS is an Excel 2016 function (Microsoft's "Forecasting functions (reference)" page)
that IronCalc 0.9.1 parses but answers `#N/IMPL!` for; wrapped in IFERROR its cell shows a
plausible number. The upload names the cell and everything calculated from it, the version
records which named outputs depend on it, and a job asking for such an output fails naming it.
"""

from __future__ import annotations

import uuid

import pytest
from openpyxl import Workbook

from shared.calc.fidelity import unimplemented
from shared.calc.xlsx.cells import read_excel_cells
from shared.db.models import Job, JobStatus
from shared.db.session import session_scope
from shared.repositories import engines as engine_repo
from shared.services import version_checks
from shared.services.job_runner import run_jobs
from tests.calc.conftest import add_name, one_sheet, to_bytes
from tests.factories import deploy_loan, submit_job

ETS = "_xlfn.FORECAST.ETS(A2,A3:A6,B3:B6)"


def workbook() -> bytes:
    """rate (input) in A1; B1 calls FORECAST.ETS under IFERROR; C1 and D1 are calculated from B1;
    E1 only from the input. Named outputs: guessed (B1), total (D1), plain (E1)."""
    data = {"A1": 2, "A2": 5, "B1": f"=IFERROR({ETS},A1*10)", "C1": "=B1+1", "D1": "=SUM(C1:C1)*2", "E1": "=A1*3"}
    for row, (x, y) in enumerate([(1, 10), (2, 20), (3, 30), (4, 40)], start=3):
        data[f"A{row}"], data[f"B{row}"] = x, y
    return one_sheet(data, {"rate": "$A$1", "guessed": "$B$1", "total": "$D$1", "plain": "$E$1"})


def test_the_implicit_intersection_excel_365_writes_as_single_is_implemented():
    # Excel 365 writes @ as _xlfn.SINGLE(...); IronCalc reads it back as @ and calculates it
    assert unimplemented.unknown_to("ironcalc", {"SINGLE", "FORECAST.ETS"}) == {"FORECAST.ETS"}


def test_the_cells_their_dependants_and_the_outputs_depending_on_them_are_named():
    # GIVEN the workbook and IronCalc's list of what it does not implement
    data = workbook()
    unknown = unimplemented.unknown_to("ironcalc", {"FORECAST.ETS", "IFERROR", "SUM"})
    assert unknown == {"FORECAST.ETS"}
    # WHEN it is analysed
    section = unimplemented.analyse(read_excel_cells(data), unknown, {"rate": "Sheet1!$A$1", "guessed": "Sheet1!$B$1",
                                                                         "total": "Sheet1!$D$1", "plain": "Sheet1!$E$1"})
    # THEN B1 is named, C1 and D1 are its dependants (through C1:C1 too), E1 is not
    assert [(c["cell"], c["functions"]) for c in section["cells"]] == [("B1", ["FORECAST.ETS"])]
    assert sorted(d["cell"] for d in section["dependants"]) == ["C1", "D1"]
    assert {d["via"] for d in section["dependants"]} == {"Sheet1!B1"}
    # AND the outputs holding or reading them, with the calling cell and its function
    assert section["outputs"] == [
        {"output": "guessed", "cell": "Sheet1!B1", "function": "FORECAST.ETS"},
        {"output": "total", "cell": "Sheet1!B1", "function": "FORECAST.ETS"},
    ]


def test_a_workbook_calling_only_known_functions_has_nothing_to_name():
    assert unimplemented.analyse(read_excel_cells(workbook()), set()) == {}


def test_the_upload_warns_and_the_version_records_the_outputs(admin):
    # GIVEN the workbook uploaded as a version
    deployed = deploy_loan(admin, workbook(), activate=False)
    tenant_id = uuid.UUID(admin.tenant_id)
    with session_scope() as session:
        version = engine_repo.get_version(session, tenant_id=tenant_id, version_id=uuid.UUID(deployed.version_id))
        # THEN its fidelity report names the cells and the outputs
        section = version.fidelity_report[unimplemented.REPORT_KEY]
        assert section["cells_total"] == 1 and section["dependants_total"] == 2
        # AND the gate's function answers the outputs (by row or by id)
        expected = [
            {"output": "guessed", "cell": "Sheet1!B1", "function": "FORECAST.ETS"},
            {"output": "total", "cell": "Sheet1!B1", "function": "FORECAST.ETS"},
        ]
        assert version_checks.unimplemented_outputs(session, tenant_id=tenant_id, version=version) == expected
        assert version_checks.unimplemented_outputs(session, tenant_id=tenant_id, version=version.id) == expected
        # AND a version of another tenant is not found
        with pytest.raises(Exception) as refused:
            version_checks.unimplemented_outputs(session, tenant_id=uuid.uuid4(), version=version.id)
        assert type(refused.value).__name__ == "NotFound"
    # AND the upload's warnings say so (built from the same report)
    warnings = unimplemented.warnings(section)
    assert any("Sheet1!B1 (FORECAST.ETS)" in w for w in warnings)
    assert any("Sheet1!C1, Sheet1!D1" in w or "Sheet1!D1, Sheet1!C1" in w for w in warnings)
    assert any(w.startswith("Output 'total' depends on Sheet1!B1, which calls FORECAST.ETS") for w in warnings)


def test_a_version_stored_before_the_record_is_analysed_from_its_workbook(admin):
    deployed = deploy_loan(admin, workbook(), activate=False)
    tenant_id = uuid.UUID(admin.tenant_id)
    with session_scope() as session:
        version = engine_repo.get_version(session, tenant_id=tenant_id, version_id=uuid.UUID(deployed.version_id))
        version.fidelity_report = {k: v for k, v in version.fidelity_report.items() if k != unimplemented.REPORT_KEY}
    with session_scope() as session:
        outputs = version_checks.unimplemented_outputs(session, tenant_id=tenant_id, version=uuid.UUID(deployed.version_id))
        assert [o["output"] for o in outputs] == ["guessed", "total"]
    with session_scope() as session:
        version = engine_repo.get_version(session, tenant_id=tenant_id, version_id=uuid.UUID(deployed.version_id))
        assert version.fidelity_report[unimplemented.REPORT_KEY]["outputs"] == outputs


def test_a_job_whose_output_depends_on_it_fails_naming_the_cell_and_function(admin):
    # GIVEN the version active and a job for it (IronCalc alone would answer guessed = 30)
    deployed = deploy_loan(admin, workbook())
    job_id = uuid.UUID(submit_job(deployed, {"rate": 3}))
    # WHEN the worker runs it
    run_jobs([job_id])
    # THEN it failed, naming the output but not the workbook's cell or formula; no outputs are returned
    with session_scope() as session:
        job = session.get(Job, job_id)
        assert job.status == JobStatus.FAILED and not job.outputs
        assert job.error_message == (
            "Output 'guessed' cannot be calculated: it depends on a function the calculation engine "
            "does not implement (the version's fidelity report names the cell)"
        )


def test_an_output_the_engine_answers_unimplemented_for_fails_even_without_a_record():
    assert unimplemented.output_failure({}, {"a": 1, "b": [[1, "#N/IMPL!"]]}) == (
        "Output 'b' cannot be calculated: it depends on a function the calculation engine does not implement"
    )
    assert unimplemented.output_failure({}, {"a": 1, "b": "#N/A"}) is None


def test_a_lambda_called_by_a_defined_name_or_a_let_binding_is_not_a_missing_function():
    # GIVEN a workbook calling Double (a LAMBDA kept in a defined name) and f (bound by LET)
    book = Workbook()
    sheet = book.active
    sheet.title = "Sheet1"
    sheet["A1"] = "=Double(6)"
    sheet["A2"] = "=_xlfn.LET(_xlpm.f,_xlfn.LAMBDA(_xlpm.x,_xlpm.x*2),f(3))"
    sheet["A3"] = f"=_xlfn.LET(_xlpm.a,1,{ETS}+_xlpm.a)"
    add_name(book, "Double", "_xlfn.LAMBDA(_xlpm.x,_xlpm.x*2)")
    # WHEN it is analysed with every name IronCalc does not know
    section = unimplemented.analyse(read_excel_cells(to_bytes(book)), {"DOUBLE", "F", "FORECAST.ETS"})
    # THEN only the real missing function is named
    assert [(c["cell"], c["functions"]) for c in section["cells"]] == [("A3", ["FORECAST.ETS"])]


def test_an_output_reading_a_spill_is_answered_not_refused(admin):
    # GIVEN an Excel 365 workbook: SEQUENCE(rate) spilling from B1 and D1 summing its spill (B1#,
    # which a file writes _xlfn.ANCHORARRAY(B1), a name IronCalc does not implement)
    from tests.calc.test_dynamic_arrays import excel365, spilled

    book = Workbook()
    sheet = book.active
    sheet.title = "Sheet1"
    sheet["A1"] = 3
    spilled(sheet, "B1", "=_xlfn.SEQUENCE(A1)", "B1:B3")
    sheet["D1"] = "=SUM(_xlfn.ANCHORARRAY(B1))"
    add_name(book, "rate", "Sheet1!$A$1")
    add_name(book, "total", "Sheet1!$D$1")
    deployed = deploy_loan(admin, excel365(book))
    # THEN the upload names nothing the engine lacks
    with session_scope() as session:
        version = engine_repo.get_version(session, tenant_id=uuid.UUID(admin.tenant_id),
                                          version_id=uuid.UUID(deployed.version_id))
        assert not (version.fidelity_report.get(unimplemented.REPORT_KEY) or {}).get("outputs")
    # AND a job gets the sum of the spill its input sizes: 1+2+3+4
    job_id = uuid.UUID(submit_job(deployed, {"rate": 4}))
    run_jobs([job_id])
    with session_scope() as session:
        job = session.get(Job, job_id)
        assert job.status == JobStatus.COMPLETED, job.error_message
        assert job.outputs["total"] == 10
