"""Approximate lookups over whole columns through the service: upload (with or without Excel's
values in the file) and a job answer Excel's value with IronCalc, no background switch needed."""

from __future__ import annotations

import openpyxl
import pytest

from tests.api.test_engine_choice import deploy, run
from tests.calc.conftest import add_name, to_bytes
from tests.calc.test_fidelity import excel_saved


def rates_over_whole_columns(cached: bool) -> bytes:
    """The rates workbook's bands in A1:B6, looked up over $A:$B; Excel's 0.07 for a score of
    720 (the largest band <= 720 is 670 -> 0.07, Excel's approximate-match rule)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Rates"
    bands = [(300, 0.12), (580, 0.09), (670, 0.07), (740, 0.055), (800, 0.045), (850, 0.04)]
    for row, (score, rate) in enumerate(bands, start=1):
        ws.cell(row, 1, score)
        ws.cell(row, 2, rate)
    ws["D1"] = 720
    ws["E1"] = "=VLOOKUP(D1,$A:$B,2,TRUE)"
    ws["E3"] = '=IF(E1>0.08,"high","normal")'
    add_name(wb, "score", "Rates!$D$1")
    add_name(wb, "rate", "Rates!$E$1")
    add_name(wb, "band", "Rates!$E$3")
    return excel_saved(wb, {"Rates!E1": 0.07, "Rates!E3": "normal"}) if cached else to_bytes(wb)


@pytest.mark.parametrize("cached", [True, False], ids=["Excel's values in the file", "no values in the file"])
def test_a_whole_column_lookup_is_right_at_upload_and_in_jobs(client, admin, run_worker, cached):
    # GIVEN the workbook uploaded
    engine, version, key = deploy(admin, rates_over_whole_columns(cached))

    # THEN IronCalc serves it, nothing is pending, and no cell is flagged
    assert version["calc_engine"] == "ironcalc"
    if cached:
        assert version["fidelity"]["cells_compared"] == version["fidelity"]["cells_matching"] == 2
        assert "formulas" not in version["fidelity"]["engines"]  # no background check queued
    assert not any("known to get wrong" in w for w in version["warnings"])

    # WHEN jobs run, THEN they answer Excel's values (largest band <= score)
    job = run(client, admin, engine, key, run_worker, 720)
    assert job["status"] == "completed", job
    assert job["outputs"] == {"rate": 0.07, "band": "normal"}
    assert run(client, admin, engine, key, run_worker, 590)["outputs"]["rate"] == 0.09
    assert run(client, admin, engine, key, run_worker, 900)["outputs"]["rate"] == 0.04
