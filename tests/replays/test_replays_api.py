"""The HTTP side of comparing versions: the diff, asking for a replay (N bounds), reading it, and
tenancy (another tenant's versions and replays are not found)."""

from __future__ import annotations

import pytest

from tests.factories import deploy_loan, make_admin
from tests.replays.helpers import upload


@pytest.fixture()
def candidate(deployed, loan_xlsx):
    return upload(deployed, loan_xlsx, "2.0")


def base(deployed, version_id):
    return f"/engines/{deployed.engine_id}/versions/{version_id}"


@pytest.mark.parametrize("count", [0, -1, 10_001])
def test_a_count_out_of_bounds_is_refused(deployed, candidate, count):
    r = deployed.admin.post(base(deployed, candidate) + "/replays", json={"count": count})
    assert r.status_code == 422


def test_a_negative_tolerance_is_refused(deployed, candidate):
    r = deployed.admin.post(base(deployed, candidate) + "/replays", json={"tolerance": {"absolute": -1}})
    assert r.status_code == 422


def test_a_replay_is_accepted_listed_and_read(deployed, candidate):
    r = deployed.admin.post(base(deployed, candidate) + "/replays", json={"count": 10, "tolerance": {"relative": 1e-9}})
    assert r.status_code == 202
    replay = r.json()
    assert (replay["requested"], replay["baseline_version"], replay["version_id"]) == (10, "1.0", candidate)
    assert replay["tolerance"]["default"] == {"absolute": None, "relative": 1e-9}
    listed = deployed.admin.get(base(deployed, candidate) + "/replays").json()
    assert [item["id"] for item in listed] == [replay["id"]]
    got = deployed.admin.get(base(deployed, candidate) + f"/replays/{replay['id']}")
    assert got.status_code == 200 and got.json()["id"] == replay["id"]
    # AND the same replay is not found under another version
    assert deployed.admin.get(base(deployed, deployed.version_id) + f"/replays/{replay['id']}").status_code == 404


def test_the_diff_defaults_to_the_active_version(deployed, candidate):
    r = deployed.admin.get(base(deployed, candidate) + "/diff")
    assert r.status_code == 200
    assert r.json()["against"]["id"] == deployed.version_id and r.json()["same_workbook"] is True


def test_another_tenants_versions_and_replays_are_not_found(deployed, candidate, client, loan_xlsx):
    replay = deployed.admin.post(base(deployed, candidate) + "/replays", json={"count": 5}).json()
    other = deploy_loan(make_admin(client), loan_xlsx)
    stranger = other.admin
    assert stranger.get(base(deployed, candidate) + f"/replays/{replay['id']}").status_code == 404
    assert stranger.get(base(deployed, candidate) + "/replays").status_code == 404
    assert stranger.post(base(deployed, candidate) + "/replays", json={"count": 5}).status_code == 404
    assert stranger.get(base(deployed, candidate) + "/diff").status_code == 404
    # AND a version of theirs named as the other side is not found either
    assert deployed.admin.get(base(deployed, candidate) + f"/diff?against={other.version_id}").status_code == 404
    # AND under their own engine path, the replay's id means nothing
    assert stranger.get(base(other, other.version_id) + f"/replays/{replay['id']}").status_code == 404
