"""What one job may return: a version whose jobs would return more than ``max_output_cells``
cells is refused at upload, and an output schema selecting that many when it is saved, each
naming the range, its cells and the limit; one job's outputs over ``max_output_bytes`` fail the
job with a message naming the limit."""

from __future__ import annotations

import io
import uuid

import openpyxl
import pytest
from openpyxl.workbook.defined_name import DefinedName

from shared.config import get_settings
from shared.db.session import session_scope
from shared.errors import Invalid, OutputsTooLarge, WorkbookRefused
from shared.repositories import tenants as tenant_repo
from shared.services import engines, output_limits, versions
from tests.factories import submit_job

LOAN_OUTPUT_CELLS = 4 + 12 * 4  # monthly_payment, total_paid, total_interest, end_date; schedule (12 x 4)


def wide_output_workbook(cells: int = 200_000) -> bytes:
    """A one-cell input and a name over ``cells`` cells of a column whose first cell is a formula
    (so the whole range is an output): a 20-byte request would return every cell."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Data"
    sheet["A1"], sheet["B1"] = 2, "=A1*2"
    book.defined_names["rate"] = DefinedName("rate", attr_text="Data!$A$1")
    book.defined_names["everything"] = DefinedName("everything", attr_text=f"Data!$B$1:$B${cells}")
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def upload(admin, data: bytes):
    """The workbook uploaded as version 1.0 of a new engine of the admin's tenant, through the service."""
    tenant_id = uuid.UUID(admin.tenant_id)
    with session_scope() as session:
        tenant = tenant_repo.get_tenant(session, tenant_id=tenant_id)
        engine = engines.create(session, tenant_id=tenant_id, name="Wide", slug=None, description=None).engine
        return versions.upload(session, tenant=tenant, engine_id=engine.id, version="1.0", filename="wide.xlsx", data=data)


def ranges(*shapes: tuple[str, str, int, int]) -> list[dict]:
    """Stored named ranges (EngineVersion.named_ranges) of (name, kind, rows, cols)."""
    return [{"name": n, "sheet": "S", "ref": f"A1:A{r * c}", "kind": k, "rows": r, "cols": c} for n, k, r, c in shapes]


# -- at upload


def test_an_upload_whose_named_output_range_holds_200000_cells_is_refused_naming_it(admin):
    # GIVEN an engine, and a workbook whose named output range covers 200,000 cells
    engine = admin.post("/engines", json={"name": "Wide"}).json()
    # WHEN its administrator uploads it
    r = admin.post(f"/engines/{engine['id']}/versions", data={"version": "1.0"}, files={"file": ("wide.xlsx", wide_output_workbook())})
    # THEN it is refused (400), and the message names the range, where it is, its cells and the limit
    assert r.status_code == 400, r.text
    detail = r.json()["detail"]
    assert "'everything' (Data!B1:B200000)" in detail and "200,000 cells" in detail and "limit of 10,000 output cells" in detail
    # AND no version was stored
    assert admin.get(f"/engines/{engine['id']}").json()["versions"] == []


def test_a_workbook_exactly_at_the_limit_uploads_and_one_cell_over_it_is_refused(admin, loan_xlsx, configure):
    # GIVEN a limit exactly the loan workbook's output cells
    configure(max_output_cells=LOAN_OUTPUT_CELLS)
    # THEN it uploads
    assert upload(admin, loan_xlsx).version.named_ranges
    # WHEN the limit is one cell less
    configure(max_output_cells=LOAN_OUTPUT_CELLS - 1)
    with pytest.raises(WorkbookRefused) as refused:
        upload(admin, loan_xlsx)
    # THEN no single range is over it, so the total is named, with the largest range first
    message = refused.value.message
    assert f"the output ranges return {LOAN_OUTPUT_CELLS} cells together, over the limit of {LOAN_OUTPUT_CELLS - 1} output cells" in message
    assert "the largest: 'schedule' (" in message and "48 cells)" in message


def test_a_range_alone_over_the_limit_is_the_one_named(admin, loan_xlsx, configure):
    configure(max_output_cells=20)
    with pytest.raises(WorkbookRefused) as refused:
        upload(admin, loan_xlsx)
    assert "named range 'schedule' (" in refused.value.message and "returns 48 cells, over the limit of 20" in refused.value.message


# -- when an output schema is saved


def patch_schema(deployed, output_schema):
    return deployed.admin.patch(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}", json={"output_schema": output_schema})


def test_an_output_schema_narrowing_the_outputs_below_the_limit_is_saved(deployed, configure):
    # GIVEN a limit below the loan's 52 output cells (its version uploaded before the limit fell)
    configure(max_output_cells=10)
    # WHEN the output schema lists only the one-cell outputs
    r = patch_schema(deployed, {"type": "object", "properties": {"monthly_payment": {"type": "number"}, "total_paid": {"type": "number"}}})
    # THEN it is saved
    assert r.status_code == 200, r.text


def test_an_output_schema_selecting_too_many_cells_is_refused_naming_the_range(deployed, configure):
    configure(max_output_cells=10)
    # WHEN the output schema lists the 48-cell schedule
    r = patch_schema(deployed, {"type": "object", "properties": {"Schedule": {"type": "array"}}})
    # THEN it is refused (422) naming it, and the version keeps its schema
    assert r.status_code == 422, r.text
    assert "named range 'schedule' (" in r.json()["detail"] and "48 cells, over the limit of 10" in r.json()["detail"]
    [version] = deployed.admin.get(f"/engines/{deployed.engine_id}").json()["versions"]
    assert version["output_schema"] is None


def test_removing_the_output_schema_is_refused_when_every_output_range_is_too_many(deployed, configure):
    # GIVEN a schema narrowing the outputs, saved under a limit the whole set is over
    configure(max_output_cells=10)
    assert patch_schema(deployed, {"type": "object", "properties": {"monthly_payment": {}}}).status_code == 200
    # WHEN it is removed (every output range would be returned again)
    r = patch_schema(deployed, None)
    # THEN that is refused too
    assert r.status_code == 422 and "'schedule'" in r.json()["detail"]


def test_a_large_input_range_listed_in_the_output_schema_counts(admin, configure):
    # GIVEN a version with a 1-cell output and a 5,000-cell input range (inputs are not returned)
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Data"
    sheet["A1"], sheet["B1"] = 2, "=A1*2"
    book.defined_names["result"] = DefinedName("result", attr_text="Data!$B$1")
    book.defined_names["table"] = DefinedName("table", attr_text="Data!$C$1:$D$2500")
    buffer = io.BytesIO()
    book.save(buffer)
    configure(max_output_cells=1000)
    uploaded = upload(admin, buffer.getvalue())
    # WHEN an output schema asks for the input range as an output
    with pytest.raises(Invalid) as refused, session_scope() as session:
        versions.update_schemas(
            session, tenant_id=uuid.UUID(admin.tenant_id), engine_id=uploaded.version.engine_id, version_id=uploaded.version.id,
            output_schema={"properties": {"result": {}, "table": {}}},
        )
    # THEN it is refused naming it
    assert "named range 'table' (Data!C1:D2500) returns 5,000 cells" in refused.value.message


# -- the rule itself


def test_the_selection_is_the_engines_one():
    named = ranges(("a", "output", 10, 1), ("B", "output", 2, 2), ("c", "input", 100, 1))
    # no schema, or a schema without properties: every output range
    assert [r[0] for r in output_limits.selected_outputs(named, None)] == ["a", "B"]
    assert [r[0] for r in output_limits.selected_outputs(named, {"properties": {}})] == ["a", "B"]
    # a schema's properties, of any kind, without regard to case, each once; unknown names return nothing
    chosen = output_limits.selected_outputs(named, {"properties": {"b": {}, "C": {}, "c": {}, "nothing": {}}})
    assert [(r[0], r[3]) for r in chosen] == [("B", 4), ("c", 100)]


def test_the_total_is_refused_naming_the_three_largest():
    named = ranges(("small", "output", 1, 1), ("mid", "output", 400, 1), ("big", "output", 500, 1), ("tiny", "output", 1, 2), ("x", "output", 200, 1))
    with pytest.raises(WorkbookRefused) as refused:
        output_limits.check_version_outputs(named, None, get_settings().model_copy(update={"max_output_cells": 1000}))
    message = refused.value.message
    assert "return 1,103 cells together, over the limit of 1,000" in message
    assert message.index("'big'") < message.index("'mid'") < message.index("'x'") and "'small'" not in message


# -- one job's outputs, in bytes


def test_outputs_within_the_byte_limit_pass_and_one_byte_over_fails_naming_the_limit():
    outputs = {"total": 1266.71, "label": "prêt"}  # "ê" is two bytes in UTF-8
    size = output_limits.outputs_size(outputs)
    assert size == len('{"total":1266.71,"label":"prêt"}'.encode())
    output_limits.check_job_outputs(outputs, get_settings().model_copy(update={"max_output_bytes": size}))
    with pytest.raises(OutputsTooLarge) as refused:
        output_limits.check_job_outputs(outputs, get_settings().model_copy(update={"max_output_bytes": size - 1}))
    assert refused.value.message.startswith(f"The job's outputs are {size} bytes as JSON, over the limit of {size - 1} bytes")


def test_the_default_limit_is_named_in_megabytes():
    with pytest.raises(OutputsTooLarge) as refused:
        output_limits.check_job_outputs({"blob": "x" * (1024 * 1024)})
    assert "over the limit of 1 MB for one job's outputs" in refused.value.message


def test_a_job_whose_outputs_are_over_the_byte_limit_fails_with_a_message_naming_it(client, deployed, run_worker, configure):
    # GIVEN a loan job's outputs, as the worker computed them under the default limits
    inputs = {"principal": 250000, "annual_rate": 0.045, "years": 30}
    first = submit_job(deployed, inputs)
    run_worker()
    done = client.get(f"/jobs/{first}", headers={"X-API-Key": deployed.api_key}).json()
    size = output_limits.outputs_size(done["outputs"])
    # WHEN the limit is exactly their size, the same job completes; one byte less, it fails
    configure(max_output_bytes=size)
    at_limit = submit_job(deployed, inputs)
    run_worker()
    configure(max_output_bytes=size - 1)
    over = submit_job(deployed, inputs)
    run_worker()
    assert client.get(f"/jobs/{at_limit}", headers={"X-API-Key": deployed.api_key}).json()["status"] == "completed"
    failed = client.get(f"/jobs/{over}", headers={"X-API-Key": deployed.api_key}).json()
    # THEN its message names the size and the limit, and nothing internal
    assert failed["status"] == "failed" and "outputs" not in failed
    assert failed["error_message"].startswith(f"The job's outputs are {size:,} bytes as JSON, over the limit of {size - 1:,} bytes")
