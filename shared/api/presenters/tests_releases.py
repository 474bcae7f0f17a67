"""Test cases, test runs, the gate's verdict and releases, as the management API shows them."""

from __future__ import annotations

from shared.api.schemas.tests_releases import GateVerdict, ReleaseItem, TestCaseItem, TestRunDetail, VersionTestsSummary
from shared.db.models import Release, TestCase, TestRun
from shared.services import test_runs


def case_item(case: TestCase) -> TestCaseItem:
    return TestCaseItem(
        id=case.id, engine_id=case.engine_id, name=case.name, inputs=case.inputs, expected=case.expected,
        tolerances=case.tolerances or {}, enabled=case.enabled, source_job_id=case.source_job_id,
        created_at=case.created_at, updated_at=case.updated_at,
    )


def run_detail(run: TestRun) -> TestRunDetail:
    return TestRunDetail(
        id=run.id, engine_id=run.engine_id, version_id=run.version_id, trigger=run.trigger, status=run.status,
        passed=run.passed, failed=run.failed, total=run.passed + run.failed, error=run.error, results=run.results or [],
        created_at=run.created_at, finished_at=run.finished_at,
    )


def tests_summary(run: TestRun | None) -> VersionTestsSummary | None:
    """The additive ``tests`` field of a version item."""
    brief = test_runs.summary(run)
    return VersionTestsSummary(**brief) if brief else None


def verdict(reasons: list[dict], enabled_cases: int) -> GateVerdict:
    return GateVerdict(allowed=not reasons, reasons=reasons, enabled_test_cases=enabled_cases)


def release_item(release: Release) -> ReleaseItem:
    return ReleaseItem(
        id=release.id, engine_id=release.engine_id, version_id=release.version_id, version=release.version,
        previous_version_id=release.previous_version_id, previous_version=release.previous_version,
        activated_by=release.activated_by, activated_by_email=release.activated_by_email, activated_at=release.activated_at,
        test_run=release.test_run_summary, replay=release.replay_summary, gate_reasons=release.gate_reasons,
        override_reason=release.override_reason,
    )
