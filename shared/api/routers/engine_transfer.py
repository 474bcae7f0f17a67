"""Engine export (a zip download) and import (a new engine from one), for administrators."""

from typing import Annotated

from fastapi import APIRouter, File, Form, Response, UploadFile
from pydantic import AfterValidator

import uuid

from shared.api import limits
from shared.api.deps import CurrentTenant, CurrentUser, SessionDep
from shared.api.errors import responses
from shared.api.presenters import engines as present
from shared.api.schemas.common import refuse_nul
from shared.api.schemas.engine_transfer import EngineImportResponse, ImportedVersion
from shared.config import get_settings
from shared.errors import Invalid, PayloadTooLarge
from shared.services import engine_transfer

router = APIRouter(prefix="/engines", tags=["engines"])

ZIP = "application/zip"


@router.get(
    "/{engine_id}/export", response_class=Response, responses={**responses(404), 200: {"content": {ZIP: {}}}},
)
def export_engine(engine_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """The engine as a zip archive: manifest.json (format version, name, slug, each version's label,
    schemas, engine choice and pin, fidelity report, which is active; the test cases) and each
    version's workbook. Never in it: API keys, consumers and access, webhook secrets, the IP whitelist, jobs."""
    filename, data = engine_transfer.export(session, tenant_id=user.tenant_id, engine_id=engine_id)
    return Response(data, media_type=ZIP, headers={"Content-Disposition": f'attachment; filename="{filename}"'})


@router.post("/import", status_code=201, response_model=EngineImportResponse,
             responses=responses(400, 409, 413, 422, 503))
@limits.takes_upload
def import_engine(
    session: SessionDep,
    tenant: CurrentTenant,
    file: Annotated[UploadFile, File(description="An archive from GET /engines/{engine_id}/export")],
    slug: Annotated[str | None, Form(min_length=1, max_length=100, pattern=r"^[a-z0-9-]+$"), AfterValidator(refuse_nul)] = None,
    name: Annotated[str | None, Form(min_length=1, max_length=255), AfterValidator(refuse_nul)] = None,
):
    """Create a new engine from an export archive: each version uploaded again (every upload check:
    limits, the fidelity check, the cost budget), its schemas and pinned engine set again, its test
    cases added, the exported active version activated. `slug` (409 when taken) and `name` replace
    the archive's; without `slug`, a taken slug gets a suffix, and `changes` says so. A damaged or
    changed archive is 400, a manifest this service cannot read 422, a version the upload refuses
    its upload's 4xx naming the version; nothing is created then."""
    limit = get_settings().max_upload_bytes
    data = file.file.read(limit + 1)
    if len(data) > limit:
        raise PayloadTooLarge(f"The archive is larger than the {limit // (1024 * 1024)} MB upload limit")
    if not data:
        raise Invalid("The uploaded file is empty")
    report = engine_transfer.import_engine(session, tenant=tenant, data=data, slug=slug, name=name)
    return EngineImportResponse(
        engine=present.engine_list_item(report.view),
        versions=[
            ImportedVersion(id=v.version.id, version=v.version.version, calc_engine=v.version.calc_engine,
                            calc_engine_pinned=bool(v.version.calc_engine_pinned), is_active=v.is_active,
                            test_api_key=v.test_api_key, warnings=v.warnings)
            for v in report.versions
        ],
        changes=report.changes,
        test_cases_imported=report.test_cases_imported,
    )
