"""`sheetcalc check WORKBOOK.xlsx [--engine NAME] [--json]`, as CONTRACT.md states it."""

import json
import subprocess
import sys

import pytest

from shared.cli import main
from tests.calc.test_fidelity import known_workbook
from tests.calc.test_formulas_engine import rates_workbook


@pytest.fixture
def write(tmp_path):
    def write(name: str, data: bytes):
        path = tmp_path / name
        path.write_bytes(data)
        return str(path)

    return write


def test_a_workbook_with_a_difference_exits_1_and_reports_it_as_json(write, capsys):
    path = write("prices.xlsx", known_workbook())

    status = main(["check", path, "--engine", "ironcalc", "--json"])

    out = json.loads(capsys.readouterr().out)
    assert status == 1
    assert out == {
        "engine": "ironcalc", "cells_compared": 8, "cells_matching": 7,
        "mismatches": [{"sheet": "Prices", "cell": "B7", "formula": "=2+2", "expected": 5,
                        "actual": 4}],
        "unsupported_functions": [],
    }


def test_without_engine_the_service_choice_is_used_and_all_match_exits_0(write, capsys):
    path = write("rates.xlsx", rates_workbook())

    status = main(["check", path, "--json"])

    out = json.loads(capsys.readouterr().out)
    assert status == 0
    assert (out["engine"], out["cells_compared"], out["cells_matching"]) == ("formulas", 3, 3)
    assert out["mismatches"] == []


def test_the_text_report_names_each_differing_cell(write, capsys):
    path = write("rates.xlsx", rates_workbook())

    status = main(["check", path, "--engine", "ironcalc"])

    text = capsys.readouterr().out
    assert status == 1
    assert "cells compared: 3, matching: 1" in text
    assert 'Rates!E1  =VLOOKUP(D1,INDIRECT("A1:B20"),2,TRUE)  Excel: 0.07  ironcalc: 0' in text


def test_an_unreadable_file_exits_2(write, capsys):
    assert main(["check", write("broken.xlsx", b"not a workbook")]) == 2
    assert main(["check", "/no/such/file.xlsx"]) == 2
    assert "sheetcalc:" in capsys.readouterr().err


def test_an_unknown_engine_exits_2(write, capsys):
    assert main(["check", write("prices.xlsx", known_workbook()), "--engine", "excel"]) == 2


def test_the_console_script_runs_it(write):
    path = write("prices.xlsx", known_workbook())
    done = subprocess.run(
        [sys.executable, "-m", "shared.cli", "check", path, "--engine", "formulas", "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 1
    assert json.loads(done.stdout)["cells_matching"] == 7


def test_json_output_is_json_only_when_ironcalc_prints_warnings(tmp_path):
    # GIVEN a workbook with a superscript font, which makes IronCalc 0.9.1 print
    # `Unexpected feature XmlNode { name: "vertAlign" ...}` on the process's stdout
    import openpyxl
    from openpyxl.styles import Font

    from tests.calc.test_fidelity import excel_saved

    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["B1"], ws["C1"] = 2, "=A1*3", "m2"
    ws["C1"].font = Font(vertAlign="superscript")
    path = tmp_path / "superscript.xlsx"
    path.write_bytes(excel_saved(wb, {"Sheet!B1": 6}))

    # WHEN it is checked with --json in a process of its own
    done = subprocess.run(
        [sys.executable, "-m", "shared.cli", "check", str(path), "--engine", "ironcalc", "--json"],
        capture_output=True, check=False,
    )

    # THEN stdout is exactly one JSON object; the warning went to stderr
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "engine": "ironcalc", "cells_compared": 1, "cells_matching": 1, "mismatches": [],
        "unsupported_functions": [],
    }
    assert b"vertAlign" in done.stderr


def test_a_choice_made_without_an_engine_that_ran_out_of_time_says_so(write, capsys, monkeypatch):
    # GIVEN a workbook formulas gets right, and a formulas check that runs out of time (injected)
    from shared.calc.fidelity import choice as choice_module
    from shared.calc.fidelity.report import FidelityReport

    real = choice_module.check_engine
    monkeypatch.setattr(
        choice_module, "check_engine",
        lambda data, name, **limits: real(data, name, **limits) if name == "ironcalc"
        else FidelityReport(engine=name, status="timeout", error="no answer"),
    )
    path = write("rates.xlsx", rates_workbook())

    # WHEN the service's choice is checked
    status = main(["check", path, "--json", "--timeout", "30"])

    # THEN the answer is IronCalc's, and stderr says formulas did not finish
    captured = capsys.readouterr()
    assert status == 1 and json.loads(captured.out)["engine"] == "ironcalc"
    assert "formulas did not finish within 30 s" in captured.err
