"""A version's reports for the console: its fidelity check against Excel, with the differing cells,
and the schemas suggested from its workbook."""

import uuid

from fastapi import APIRouter

from shared.api.deps import CurrentUser, SessionDep
from shared.api.errors import responses
from shared.api.schemas.version_reports import FidelityReportResponse, SuggestedSchemasResponse
from shared.services import schema_suggestions, versions

router = APIRouter(prefix="/engines", tags=["engines"])


@router.get("/{engine_id}/versions/{version_id}/fidelity", response_model=FidelityReportResponse, responses=responses(404))
def fidelity(engine_id: uuid.UUID, version_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """The version's fidelity check in full: engine used, cells compared and matching, the differing cells."""
    version = versions.get(session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id)
    report = version.fidelity_report or {}
    return FidelityReportResponse(
        calc_engine=version.calc_engine, calc_engine_pinned=version.calc_engine_pinned, checked=bool(report),
        engine=report.get("engine"), cells_compared=report.get("cells_compared", 0),
        cells_matching=report.get("cells_matching", 0), match_rate=report.get("match_rate"),
        mismatches_total=report.get("mismatches_total", 0), mismatches=report.get("mismatches", []),
        unsupported_functions=report.get("unsupported_functions", []), engines=report.get("engines", {}),
        skipped=report.get("skipped") or {}, flagged_total=report.get("flagged_total", 0),
        flagged_outputs=report.get("flagged_outputs") or [],
        unimplemented=report.get("unimplemented") or {},
    )


@router.get("/{engine_id}/versions/{version_id}/suggested-schema", response_model=SuggestedSchemasResponse, responses=responses(404, 503))
def suggested_schema(engine_id: uuid.UUID, version_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """Input and output schemas suggested from the workbook (types, Excel's data validation, shapes); nothing is saved."""
    return schema_suggestions.for_version(session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id)
