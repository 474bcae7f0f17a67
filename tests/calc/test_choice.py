"""The per-workbook engine choice made at upload, and the report kept with the version."""

import openpyxl
import pytest

from shared.calc.fidelity.choice import choose_engine, pick
from shared.calc.fidelity.report import FidelityReport
from shared.calc.fidelity.stored_report import report_for_engine, report_summary
from shared.errors import WorkbookError

from .test_fidelity import excel_saved, known_workbook
from .test_formulas_engine import rates_workbook


def simple_workbook() -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["A2"] = 2, 3
    ws["B1"] = "=A1*A2"
    ws["B2"] = '=IF(B1>5,"big","small")'
    return excel_saved(wb, {"Sheet!B1": 6, "Sheet!B2": "big"})


def test_a_workbook_only_formulas_calculates_right_gets_formulas():
    # GIVEN an approximate VLOOKUP over a range with a blank tail, where IronCalc 0.9.1
    # lands on the blank rows (answers 0) and Excel answers 0.07
    data = rates_workbook()

    # WHEN the service chooses an engine for it
    choice = choose_engine(data)

    # THEN it is formulas, which matches every cell; IronCalc's misses stay in the report
    assert choice.engine == "formulas"
    assert choice.workbook.engine_name == "formulas"
    assert choice.workbook.calculate({"score": 720})["rate"] == 0.07
    assert choice.report["cells_compared"] == choice.report["cells_matching"] == 3
    assert choice.report["engines"]["ironcalc"]["cells_matching"] == 1  # only the IF's "normal"
    assert choice.warnings == []


def test_a_workbook_ironcalc_matches_keeps_ironcalc_without_running_formulas():
    choice = choose_engine(simple_workbook())
    assert choice.engine == "ironcalc"
    assert choice.report["match_rate"] == 1.0
    assert choice.report["engines"]["formulas"]["status"] == "not_run"
    assert choice.warnings == []


def test_on_a_tie_the_faster_engine_wins():
    choice = choose_engine(simple_workbook(), check_all=True)
    assert choice.reports["formulas"].cells_matching == choice.reports["ironcalc"].cells_matching
    assert choice.engine == "ironcalc"


def test_pick_prefers_more_matching_cells_then_ironcalc():
    def report(engine, matching, status="ok"):
        return FidelityReport(engine=engine, cells_compared=10, cells_matching=matching,
                              status=status)

    assert pick({"ironcalc": report("ironcalc", 9), "formulas": report("formulas", 10)}) == "formulas"
    assert pick({"ironcalc": report("ironcalc", 10), "formulas": report("formulas", 10)}) == "ironcalc"
    assert pick({"ironcalc": report("ironcalc", 1),
                 "formulas": report("formulas", 10, status="timeout")}) == "ironcalc"
    assert pick({"ironcalc": report("ironcalc", 0, status="failed")}) is None


def test_a_difference_becomes_upload_warnings_naming_the_cell():
    choice = choose_engine(known_workbook())  # Prices!B7 claims 2+2 = 5
    assert choice.engine == "ironcalc"  # both engines miss that one cell: a tie
    assert choice.report["mismatches"] == [
        {"sheet": "Prices", "cell": "B7", "formula": "=2+2", "expected": 5, "actual": 4}]
    assert choice.warnings[0].startswith("1 of 8 formula cells differ")
    assert "Prices!B7 =2+2: Excel 5, ironcalc 4" in choice.warnings[1]


def test_formulas_past_its_deadline_is_not_offered():
    choice = choose_engine(rates_workbook(), timeout_s=0.05)
    assert choice.engine == "ironcalc"
    assert choice.report["engines"]["formulas"]["status"] == "timeout"
    assert choice.warnings  # IronCalc's differences are still reported


def test_the_summary_for_the_version_detail_has_no_cell_list():
    choice = choose_engine(rates_workbook())
    summary = report_summary(choice.report)
    assert summary == {
        "engine": "formulas", "cells_compared": 3, "cells_matching": 3, "match_rate": 1.0,
        "mismatches_total": 0, "unsupported_functions": [], "engines": choice.report["engines"],
    }
    assert report_summary(None) is None


def test_a_pinned_engine_gets_its_own_figures():
    choice = choose_engine(rates_workbook())
    pinned = report_for_engine(choice.report, "ironcalc")
    assert (pinned["engine"], pinned["cells_matching"], pinned["mismatches_total"]) == ("ironcalc", 1, 2)


def test_an_unreadable_file_is_refused():
    with pytest.raises(WorkbookError):
        choose_engine(b"PK\x03\x04 broken")
