"""SUBTOTAL over a filtered list and GETPIVOTDATA through the service: the upload flags what no
correction can fix, and a job answers Excel's subtotal (Microsoft's SUBTOTAL page: rows a
filter left out are ignored whatever the function number)."""

from __future__ import annotations

from tests.api.test_engine_choice import deploy
from tests.calc.conftest import add_name, to_bytes
from tests.calc.test_corrections_more import filtered_list


def test_a_filtered_subtotal_is_right_in_jobs_and_getpivotdata_is_flagged_at_upload(
    client, admin, run_worker
):
    # GIVEN amounts 10, 20, 30, 40 with the 20 filtered out, a SUBTOTAL over them, and a
    # GETPIVOTDATA whose data_field comes from a cell (which the saved pivot tables do not
    # settle), uploaded without Excel's values
    wb = filtered_list()
    ws = wb.active
    ws["C1"] = "=SUBTOTAL(9,A2:A5)"
    ws["C2"] = '=GETPIVOTDATA(B1,$A$1)'
    add_name(wb, "first", "Sheet!$A$2")
    add_name(wb, "total", "Sheet!$C$1")
    engine, version, key = deploy(admin, to_bytes(wb))

    # THEN the upload's warnings name the GETPIVOTDATA cell, and only it, as one no correction
    # can fix
    flagged = [w for w in version["warnings"] if w.startswith("Sheet!")]
    assert len(flagged) == 1 and flagged[0].startswith("Sheet!C2 =GETPIVOTDATA"), version["warnings"]

    # WHEN a job changes the first amount, THEN the subtotal leaves the filtered 20 out
    url = f"/jobs/execute/{admin.slug}/{engine['slug']}"
    job = client.post(url, json={"inputs": {"first": 16}}, headers=key).json()
    run_worker()
    done = client.get(f"/jobs/{job['job_id']}", headers=key).json()
    assert done["status"] == "completed", done
    assert done["outputs"] == {"total": 86}
