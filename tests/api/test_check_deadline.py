"""A background engine check that runs out of time: reported as such, and the version checked
again rather than left on the engine the upload chose (machine load never decides the engine)."""

from __future__ import annotations

import uuid

import pytest

from shared.calc.fidelity.report import FidelityReport
from shared.services import version_checks
from tests.api.test_engine_choice import deploy
from tests.calc.test_formulas_engine import rates_workbook


def detail(admin, engine):
    return admin.get(f"/engines/{engine['id']}").json()["versions"][0]


def test_a_check_past_its_deadline_is_reported_and_checked_again(client, admin, monkeypatch):
    # GIVEN a workbook formulas gets right and IronCalc wrong, uploaded (IronCalc for now)
    engine, version, _ = deploy(admin, rates_workbook())
    version_id = uuid.UUID(version["id"])
    real_check = version_checks.check_engine
    # WHEN its formulas check runs out of time (the deadline injected)
    monkeypatch.setattr(
        version_checks, "check_engine",
        lambda data, name, **limits: FidelityReport(engine=name, status="timeout", error="no answer within 240 s"),
    )
    with pytest.raises(version_checks.CheckDeadlineExpired):
        version_checks.check_in_background(version_id)

    # THEN the version says so and stays pending (its message is handed back), not settled on IronCalc
    line = detail(admin, engine)["fidelity"]["engines"]["formulas"]
    assert line["status"] == "pending" and line["timeouts"] == 1
    assert "no answer within 240 s" in line["error"]

    # WHEN the redelivered check finishes in time
    monkeypatch.setattr(version_checks, "check_engine", real_check)
    assert version_checks.check_in_background(version_id) == "formulas"

    # THEN the version is calculated by the engine matching Excel best, as on an idle machine
    version = detail(admin, engine)
    assert version["calc_engine"] == "formulas"
    assert version["fidelity"]["engines"]["formulas"]["status"] == "ok"


def test_a_check_that_never_finishes_in_time_is_recorded_as_a_timeout(client, admin, monkeypatch):
    # GIVEN a version whose formulas check ran out of time
    engine, version, _ = deploy(admin, rates_workbook())
    version_id = uuid.UUID(version["id"])
    monkeypatch.setattr(
        version_checks, "check_engine",
        lambda data, name, **limits: FidelityReport(engine=name, status="timeout", error="no answer within 240 s"),
    )
    with pytest.raises(version_checks.CheckDeadlineExpired):
        version_checks.check_in_background(version_id)

    # WHEN its message is dead-lettered after the last try
    version_checks.give_up(version_id)

    # THEN the check is reported as timed out, and IronCalc (the only engine checked) serves it
    version = detail(admin, engine)
    line = version["fidelity"]["engines"]["formulas"]
    assert line["status"] == "timeout" and "deadline" in line["error"]
    assert version["calc_engine"] == "ironcalc"
