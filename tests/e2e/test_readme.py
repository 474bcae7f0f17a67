"""The README's walkthrough block, run verbatim with bash against `sheetcalc dev`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import openpyxl
import pytest

from tests.receiver import WebhookReceiver

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e


def walkthrough() -> str:
    text = (REPO / "README.md").read_text()
    block = text.split("<!-- walkthrough:start -->", 1)[1].split("<!-- walkthrough:end -->", 1)[0]
    return re.search(r"```bash\n(.*?)```", block, re.S).group(1)


def test_readme_walkthrough_runs_as_written(dev_stack, tmp_path):
    # GIVEN a user at the repository root with the venv active and a webhook receiver listening
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    env = {
        **dev_stack.env,
        "BASE": dev_stack.base_url,
        "SHEETCALC_DATA_DIR": str(dev_stack.data_dir),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    # the README's tenant slug is "acme": use a data dir of its own if another test took it
    with WebhookReceiver() as receiver:
        env["WEBHOOK_URL"] = receiver.url
        script = "set -euo pipefail\n" + walkthrough().replace("--slug acme", "--slug acme-readme").replace(
            "/jobs/execute/acme/", "/jobs/execute/acme-readme/"
        ).replace("admin@acme.example", "admin@acme-readme.example")
        run = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
        assert run.returncode == 0, run.stdout + run.stderr
        hooks = receiver.wait_for(1)
    # THEN the job completed with the annuity formula's payment
    job = json.loads((tmp_path / "job.json").read_text())
    r, n = 0.045 / 12, 360
    expected = 250000 * r / (1 - (1 + r) ** -n)
    assert job["status"] == "completed"
    assert job["outputs"]["monthly_payment"] == pytest.approx(expected, rel=1e-12)
    assert str(round(expected, 6))[:10] in run.stdout
    # AND the webhook arrived, AND the filled workbook carries the answer
    assert hooks and hooks[0]["json"]["job_id"] == job["job_id"]
    wb = openpyxl.load_workbook(tmp_path / "filled.xlsx", data_only=True)
    sheet, ref = next(iter(wb.defined_names["monthly_payment"].destinations))
    assert wb[sheet][ref.replace("$", "")].value == pytest.approx(expected, rel=1e-12)
