"""An engine exported from one running service and imported into another answers alike.

GIVEN two ``sheetcalc dev`` stacks (each its own process, port and data dir; on SQLite each its
own database, on PostgreSQL a database of its own), the sample engine deployed on the
first, WHEN it is exported there and imported into a tenant of the second, THEN the consumers of
both get the same outputs for several inputs, and the second holds none of the first's keys.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import second_deployment_env
from tests.e2e.console import LOAN, api_session, new_tenant

pytestmark = pytest.mark.e2e

INPUTS = [
    {"principal": 250000, "annual_rate": 0.045, "years": 30},
    {"principal": 120000, "annual_rate": 0.0725, "years": 15, "start_date": "2027-02-28"},
    {"principal": 5000, "annual_rate": 0.01, "years": 1},
]
ALL = {"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True}


def _outputs(client, tenant_slug: str, engine_slug: str, key: dict, inputs: dict) -> dict:
    r = client.post(f"/jobs/execute/{tenant_slug}/{engine_slug}?wait=25", headers=key, json={"inputs": inputs})
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "completed", r.text
    return r.json()["outputs"]


def test_an_engine_exported_from_one_stack_and_imported_into_another_answers_alike(dev_stack, restartable_dev_stack):
    source_tenant = new_tenant(dev_stack, "export")
    with api_session(dev_stack, source_tenant) as source:
        engine = source.post("/engines", json={"name": "Loan quote"}).json()
        v = source.post(f"/engines/{engine['id']}/versions", data={"version": "1.0"},
                        files={"file": ("loan.xlsx", LOAN.read_bytes())}).json()
        assert source.post(f"/engines/{engine['id']}/versions/{v['id']}/activate").status_code == 200
        consumer = source.post("/consumers", json={"name": "Pricing app"}).json()
        assert source.put(f"/engines/{engine['id']}/access/{consumer['id']}", json=ALL).status_code == 200
        source_key = {"X-API-Key": consumer["api_key"]}
        r = source.get(f"/engines/{engine['id']}/export")
        assert r.status_code == 200 and r.headers["content-type"] == "application/zip"
        archive = r.content
        expected = [_outputs(source, source_tenant["slug"], engine["slug"], source_key, i) for i in INPUTS]
    assert source_key["X-API-Key"].encode() not in archive

    other = restartable_dev_stack(second_deployment_env())
    other.start()
    target_tenant = new_tenant(other.current, "import")
    with api_session(other.current, target_tenant) as target:
        r = target.post("/engines/import", files={"file": ("loan.zip", archive, "application/zip")})
        assert r.status_code == 201, r.text
        imported = r.json()
        assert imported["engine"]["slug"] == engine["slug"]
        assert [v["is_active"] for v in imported["versions"]] == [True]
        # the exported key is not a key here; a consumer of the new service is made and granted
        assert target.post(f"/jobs/execute/{target_tenant['slug']}/{engine['slug']}", headers=source_key,
                           json={"inputs": INPUTS[0]}).status_code == 401
        consumer = target.post("/consumers", json={"name": "Pricing app"}).json()
        assert target.put(f"/engines/{imported['engine']['id']}/access/{consumer['id']}", json=ALL).status_code == 200
        key = {"X-API-Key": consumer["api_key"]}

        got = [_outputs(target, target_tenant["slug"], engine["slug"], key, i) for i in INPUTS]

    assert got == expected
    assert round(got[0]["monthly_payment"], 2) == 1266.71  # PMT(0.045/12, 360, -250000) in Excel
