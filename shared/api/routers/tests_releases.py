"""An engine's test cases, its versions' test runs, the release gate's verdict and the release
history (management). Activation itself stays at ``POST .../versions/{version_id}/activate``
(shared/api/routers/engines.py), which goes through the gate."""

import uuid
from typing import Annotated

from fastapi import APIRouter, Body, Depends, Query, Request

from shared.api.deps import CurrentUser, SessionDep
from shared.api.errors import responses
from shared.api.presenters import tests_releases as present
from shared.api.schemas.tests_releases import (
    GateVerdict,
    ReleaseItem,
    TestCaseCreate,
    TestCaseDeleteResponse,
    TestCaseFromJob,
    TestCaseImportResponse,
    TestCaseItem,
    TestCaseUpdate,
    TestRunDetail,
)
from shared.errors import Invalid
from shared.repositories import test_cases as case_repo
from shared.services import releases, test_cases, test_runs

router = APIRouter(prefix="/engines", tags=["tests and releases"])

CSV_TYPES = {"text/csv", "application/csv"}
NDJSON_TYPES = {"application/x-ndjson", "application/jsonl", "application/json-lines", "application/ndjson"}
UNKNOWN_IMPORT = "Send the cases as CSV (text/csv) or JSON lines (application/x-ndjson), or as a multipart 'file' named .csv or .jsonl"
_IMPORT_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "text/csv": {"schema": {"type": "string"}},
            "application/x-ndjson": {"schema": {"type": "string"}},
            "multipart/form-data": {"schema": {"type": "object", "required": ["file"], "properties": {
                "file": {"type": "string", "format": "binary", "description": "A .csv or .jsonl (.ndjson) file"}}}},
        },
    }
}


def _fields(body) -> test_cases.CaseFields:
    tolerances = {k: v.model_dump() for k, v in body.tolerances.items()} if body.tolerances is not None else None
    return test_cases.CaseFields(name=body.name, inputs=body.inputs, expected=body.expected, tolerances=tolerances, enabled=body.enabled)


@router.get("/{engine_id}/test-cases", response_model=list[TestCaseItem], responses=responses(404))
def list_test_cases(engine_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """The engine's test cases, oldest first: each new version is run against the enabled ones."""
    return [present.case_item(c) for c in test_cases.list_for_engine(session, tenant_id=user.tenant_id, engine_id=engine_id)]


@router.post("/{engine_id}/test-cases", status_code=201, response_model=TestCaseItem, responses=responses(404, 422))
def create_test_case(engine_id: uuid.UUID, body: TestCaseCreate, session: SessionDep, user: CurrentUser):
    """Add a test case: inputs, the outputs they must give, and a tolerance per output (exact when none)."""
    return present.case_item(test_cases.create(session, tenant_id=user.tenant_id, engine_id=engine_id, fields=_fields(body)))


async def _import_document(request: Request) -> tuple[str, str]:
    """The import's text and kind ("csv" or "ndjson"), from a plain body or a multipart file."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "multipart/form-data":
        form = await request.form()
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise Invalid("The multipart body has no 'file'")
        name = (upload.filename or "").lower()
        kind = "csv" if name.endswith(".csv") else "ndjson" if name.endswith((".jsonl", ".ndjson")) else None
        kind = kind or ("csv" if upload.content_type in CSV_TYPES else "ndjson" if upload.content_type in NDJSON_TYPES else None)
        data = await upload.read()
    else:
        kind = "csv" if content_type in CSV_TYPES else "ndjson" if content_type in NDJSON_TYPES else None
        data = await request.body()
    if kind is None:
        raise Invalid(UNKNOWN_IMPORT)
    try:
        return data.decode("utf-8"), kind
    except UnicodeDecodeError:
        raise Invalid("The file is not UTF-8 text") from None


@router.post(
    "/{engine_id}/test-cases/import", status_code=201, response_model=TestCaseImportResponse,
    responses=responses(404, 413, 422), openapi_extra=_IMPORT_BODY,
)
def import_test_cases(
    engine_id: uuid.UUID, session: SessionDep, user: CurrentUser, document: Annotated[tuple[str, str], Depends(_import_document)],
):
    """Add test cases in bulk, all or none: CSV or JSON lines, as the body or a multipart `file`.

    CSV: a header row, then one case per row. Columns named after the engine's inputs hold the
    inputs; `expected.<output>` the outputs the case checks; optional `tolerance.<output>.absolute`,
    `tolerance.<output>.relative` and `case.name`. Cells are numbers, TRUE/FALSE, Excel errors
    (`#N/A`), a JSON list for a range (`[[1,2],[3,4]]`), or text; a leading apostrophe keeps the rest
    as text; an empty cell leaves the input (or output) out. JSON lines: one object per line with
    `name`, `inputs`, `expected`, `tolerances`, `enabled`. A bad row adds nothing; the message names it."""
    text, kind = document
    added = test_cases.import_cases(session, tenant_id=user.tenant_id, engine_id=engine_id, text=text, kind=kind)
    return TestCaseImportResponse(imported=len(added), cases=[present.case_item(c) for c in added])


@router.post(
    "/{engine_id}/test-cases/from-job/{job_id}", status_code=201, response_model=TestCaseItem, responses=responses(404, 422),
)
def create_test_case_from_job(
    engine_id: uuid.UUID, job_id: uuid.UUID, session: SessionDep, user: CurrentUser,
    body: Annotated[TestCaseFromJob | None, Body()] = None,
):
    """A test case from one of the engine's completed jobs: its inputs, and its outputs as the expected ones."""
    body = body or TestCaseFromJob()
    tolerances = {k: v.model_dump() for k, v in body.tolerances.items()} if body.tolerances is not None else None
    case = test_cases.create_from_job(session, tenant_id=user.tenant_id, engine_id=engine_id, job_id=job_id,
                                      name=body.name, tolerances=tolerances)
    return present.case_item(case)


@router.patch("/{engine_id}/test-cases/{case_id}", response_model=TestCaseItem, responses=responses(404, 422))
def update_test_case(engine_id: uuid.UUID, case_id: uuid.UUID, body: TestCaseUpdate, session: SessionDep, user: CurrentUser):
    """Change a test case (name, inputs, expected outputs, tolerances, enabled); fields left out are kept."""
    changes = body.model_dump(include=body.model_fields_set)
    if "tolerances" in changes and body.tolerances is not None:
        changes["tolerances"] = {k: v.model_dump() for k, v in body.tolerances.items()}
    case = test_cases.update(session, tenant_id=user.tenant_id, engine_id=engine_id, case_id=case_id, **changes)
    return present.case_item(case)


@router.delete("/{engine_id}/test-cases/{case_id}", response_model=TestCaseDeleteResponse, responses=responses(404))
def delete_test_case(engine_id: uuid.UUID, case_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Delete a test case; the runs that used it keep their results."""
    case = test_cases.delete(session, tenant_id=user.tenant_id, engine_id=engine_id, case_id=case_id)
    return TestCaseDeleteResponse(message=f"Test case '{case.name}' deleted")


@router.post(
    "/{engine_id}/versions/{version_id}/test-runs", status_code=202, response_model=TestRunDetail,
    responses=responses(404, 422, 503),
)
def run_tests(engine_id: uuid.UUID, version_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Run the engine's enabled test cases on the version, in the background (each case calculated
    as a job would be, within the job budget). Poll `GET .../test-runs/latest`. 422 when the engine
    has no enabled case."""
    return present.run_detail(test_runs.run_now(session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id))


@router.get("/{engine_id}/versions/{version_id}/test-runs/latest", response_model=TestRunDetail, responses=responses(404))
def latest_test_run(engine_id: uuid.UUID, version_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """The version's latest test run: per case and output, what was expected, what came and the difference."""
    return present.run_detail(test_runs.latest(session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id))


@router.get("/{engine_id}/versions/{version_id}/gate", response_model=GateVerdict, responses=responses(404))
def gate(engine_id: uuid.UUID, version_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """What the release gate says now about activating the version: allowed, or the reasons it
    refuses (activating then needs an `override_reason`)."""
    reasons = releases.verdict(session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id)
    enabled = case_repo.count_cases(session, tenant_id=user.tenant_id, engine_id=engine_id, enabled_only=True)
    return present.verdict(reasons, enabled)


@router.get("/{engine_id}/releases", response_model=list[ReleaseItem], responses=responses(404))
def list_releases(
    engine_id: uuid.UUID, session: SessionDep, user: CurrentUser,
    limit: Annotated[int, Query(ge=1, le=200)] = 50, offset: Annotated[int, Query(ge=0, le=2**31)] = 0,
):
    """The engine's release history, newest first: each activation, who made it, the version it
    replaced, the test (and replay) results it was made on, and any override with its reason."""
    rows = releases.list_for_engine(session, tenant_id=user.tenant_id, engine_id=engine_id, limit=limit, offset=offset)
    return [present.release_item(r) for r in rows]
