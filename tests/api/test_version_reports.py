"""A version's fidelity check in full, for the console's Fidelity page: the differing cells too."""

from __future__ import annotations

from tests.calc.test_formulas_engine import rates_workbook


def upload(admin, data):
    engine = admin.post("/engines", json={"name": "Rates"}).json()
    r = admin.post(f"/engines/{engine['id']}/versions", data={"version": "1"}, files={"file": ("rates.xlsx", data)})
    assert r.status_code == 201, r.text
    return engine["id"], r.json()["id"]


def test_the_report_lists_the_cells_that_differ_from_excel(admin, run_checks):
    # GIVEN a workbook IronCalc gets wrong, just uploaded (checked with IronCalc only so far)
    engine_id, version_id = upload(admin, rates_workbook())
    r = admin.get(f"/engines/{engine_id}/versions/{version_id}/fidelity")
    assert r.status_code == 200, r.text
    report = r.json()
    # THEN it names the engine, the counts and each differing cell with Excel's value and ours
    assert (report["engine"], report["calc_engine"], report["calc_engine_pinned"], report["checked"]) == ("ironcalc", "ironcalc", False, True)
    assert report["cells_compared"] == 3 and report["cells_matching"] < 3
    assert report["mismatches_total"] == 3 - report["cells_matching"] == len(report["mismatches"])
    first = report["mismatches"][0]
    assert set(first) == {"sheet", "cell", "formula", "expected", "actual"}
    assert "VLOOKUP" in first["formula"].upper() and first["expected"] != first["actual"]
    assert report["engines"]["formulas"]["status"] == "pending"
    run_checks()
    after = admin.get(f"/engines/{engine_id}/versions/{version_id}/fidelity").json()
    assert (after["engine"], after["cells_matching"], after["mismatches"]) == ("formulas", 3, [])


def test_a_matching_workbook_has_no_differing_cells(admin, deployed):
    report = admin.get(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}/fidelity").json()
    assert report["cells_compared"] == report["cells_matching"] and report["mismatches_total"] == 0 and report["mismatches"] == []


def test_another_tenants_version_is_not_found(client, deployed):
    from tests.factories import make_admin

    other = make_admin(client)
    r = other.get(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}/fidelity")
    assert (r.status_code, r.json()["detail"]) == (404, "Engine not found")
