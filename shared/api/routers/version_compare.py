"""A version compared: with another version (the diff), and on recorded production jobs (shadow replays)."""

import uuid

from fastapi import APIRouter, Query, status

from shared.api.deps import CurrentUser, SessionDep
from shared.api.errors import responses
from shared.api.schemas.version_compare import ReplayCreate, ReplayResponse, ReplaySummary, VersionDiffResponse
from shared.services import replays, version_diff
from shared.services.output_compare import Tolerance

router = APIRouter(prefix="/engines", tags=["engines"])

VERSION = "/{engine_id}/versions/{version_id}"


@router.get(VERSION + "/diff", response_model=VersionDiffResponse, responses=responses(404, 422, 503))
def diff(engine_id: uuid.UUID, version_id: uuid.UUID, session: SessionDep, user: CurrentUser,
         against: uuid.UUID | None = Query(default=None, description="The version to compare with; default the active version")):
    """What changed from ``against`` to this version: named ranges, schemas, formulas and constants per sheet."""
    return version_diff.diff(session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id, against_id=against)


@router.post(VERSION + "/replays", response_model=ReplayResponse, status_code=status.HTTP_202_ACCEPTED, responses=responses(404, 409, 422))
def create_replay(engine_id: uuid.UUID, version_id: uuid.UUID, body: ReplayCreate, session: SessionDep, user: CurrentUser):
    """Replay the inputs of the active version's last ``count`` completed production jobs on this version, in a worker."""
    tolerance = Tolerance(absolute=body.tolerance.absolute, relative=body.tolerance.relative) if body.tolerance else None
    return replays.create(session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id, count=body.count, tolerance=tolerance)


@router.get(VERSION + "/replays", response_model=list[ReplaySummary], responses=responses(404))
def list_replays(engine_id: uuid.UUID, version_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """The version's replays, newest first (the last 50)."""
    return [ReplaySummary.of(r) for r in replays.list_for_version(session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id)]


@router.get(VERSION + "/replays/{replay_id}", response_model=ReplayResponse, responses=responses(404))
def get_replay(engine_id: uuid.UUID, version_id: uuid.UUID, replay_id: uuid.UUID, session: SessionDep, user: CurrentUser):
    """A replay: its progress, and its report once completed."""
    return replays.get(session, tenant_id=user.tenant_id, engine_id=engine_id, version_id=version_id, replay_id=replay_id)
