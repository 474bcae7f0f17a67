"""The README's quick start and the guide's walkthrough (docs/getting-started.md), each block run
verbatim with bash against `sheetcalc dev`.

The server is started as "Run it" suggests with options: its own `--data-dir` and a port that is
not the default. Each block runs at the repository root, as a reader would run it, with `BASE` and
`DATA_DIR` set as the server tells them to, and must leave no file there.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import openpyxl
import pytest

from tests.e2e.conftest import free_port
from tests.receiver import WebhookReceiver

REPO = Path(__file__).resolve().parents[2]
# Caches Python writes beside the sources it imports are not the walkthrough's files.
NOT_THE_WALKTHROUGHS = {".git", ".venv", "__pycache__", ".pytest_cache"}
# A deadline that only an endless loop reaches (the walkthrough's own poll stops after a minute).
HANG_SECONDS = 600

pytestmark = pytest.mark.e2e


WALKTHROUGH = (REPO / "docs" / "getting-started.md", "walkthrough")
QUICK_START = (REPO / "README.md", "quickstart")


def marked_block(page: tuple[Path, str]) -> str:
    """The bash block between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` of a page."""
    path, name = page
    block = path.read_text().split(f"<!-- {name}:start -->", 1)[1].split(f"<!-- {name}:end -->", 1)[0]
    return re.search(r"```bash\n(.*?)```", block, re.S).group(1)


def for_tenant(block: str, slug: str) -> str:
    """The block for tenant ``slug`` instead of "acme" (another test may have taken that one)."""
    return (block.replace("--slug acme", f"--slug {slug}")
            .replace("/jobs/execute/acme/", f"/jobs/execute/{slug}/")
            .replace("admin@acme.example", f"admin@{slug}.example"))


def walkthrough_for(slug: str) -> str:
    return for_tenant(marked_block(WALKTHROUGH), slug)


def checkout_files() -> set[str]:
    """Every file under the repository root (ignored ones too), but Python's caches and .git."""
    found = set()
    for folder, subfolders, files in os.walk(REPO):
        subfolders[:] = [name for name in subfolders if name not in NOT_THE_WALKTHROUGHS]
        found.update(os.path.relpath(os.path.join(folder, name), REPO) for name in files)
    return found


def reader_env(dev_stack, tmp_path: Path, **variables: str) -> dict[str, str]:
    """A reader's terminal: the venv on the PATH, the README's variables set, temporary files in tmp_path."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    return {
        **dev_stack.env,  # no SHEETCALC_* at all: DATA_DIR is what tells create-tenant where to go
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "TMPDIR": str(temporary),
        **variables,
    }


def test_the_readmes_quick_start_runs_as_written(dev_stack, tmp_path):
    # GIVEN the server started with --data-dir and a port of its own, and a reader at the
    # repository root with BASE and DATA_DIR set to match
    env = reader_env(dev_stack, tmp_path, BASE=dev_stack.base_url, DATA_DIR=str(dev_stack.data_dir))
    before = checkout_files()
    # WHEN the quick start's block runs
    script = "set -euo pipefail\n" + for_tenant(marked_block(QUICK_START), "acme-quick")
    run = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=HANG_SECONDS)
    # THEN it ends printing the annuity formula's monthly payment, and leaves no file in the checkout
    assert run.returncode == 0, run.stdout + run.stderr
    r, n = 0.045 / 12, 360
    expected = 250000 * r / (1 - (1 + r) ** -n)
    assert float(run.stdout.strip().splitlines()[-1]) == pytest.approx(expected, rel=1e-12), run.stdout
    assert checkout_files() - before == set()


def test_the_guides_walkthrough_runs_as_written(dev_stack, tmp_path):
    # GIVEN the server started with --data-dir and a port of its own, as "Run it" shows
    assert not dev_stack.base_url.endswith(":8000") and "SHEETCALC_DATA_DIR" not in dev_stack.env
    # AND a reader at the repository root with BASE and DATA_DIR set to match, and a receiver listening
    env = reader_env(dev_stack, tmp_path, BASE=dev_stack.base_url, DATA_DIR=str(dev_stack.data_dir))
    before = checkout_files()
    with WebhookReceiver() as receiver:
        env["WEBHOOK_URL"] = receiver.url
        script = "set -euo pipefail\n" + walkthrough_for("acme-readme")
        run = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=HANG_SECONDS)
        assert run.returncode == 0, run.stdout + run.stderr
        hooks = receiver.wait_for(1)
    # THEN the checkout gained no file: they are all in the walkthrough's own temporary folder
    assert checkout_files() - before == set()
    (work,) = (tmp_path / "tmp").iterdir()
    assert sorted(p.name for p in work.iterdir()) == ["consumer.json", "filled.xlsx", "job.json", "tenant.json", "version.json"]
    # AND the job completed with the annuity formula's payment
    job = json.loads((work / "job.json").read_text())
    r, n = 0.045 / 12, 360
    expected = 250000 * r / (1 - (1 + r) ** -n)
    assert job["status"] == "completed"
    assert job["outputs"]["monthly_payment"] == pytest.approx(expected, rel=1e-12)
    assert str(round(expected, 6))[:10] in run.stdout
    # AND the webhook arrived, AND the filled workbook carries the answer
    assert hooks and hooks[0]["json"]["job_id"] == job["job_id"]
    wb = openpyxl.load_workbook(work / "filled.xlsx", data_only=True)
    sheet, ref = next(iter(wb.defined_names["monthly_payment"].destinations))
    assert wb[sheet][ref.replace("$", "")].value == pytest.approx(expected, rel=1e-12)


def test_the_walkthrough_against_no_server_fails_loudly_and_ends(dev_stack, tmp_path):
    # GIVEN a reader whose BASE names no server, pasting the block (no `set -e` in a terminal)
    env = reader_env(dev_stack, tmp_path, BASE=f"http://127.0.0.1:{free_port()}", DATA_DIR=str(dev_stack.data_dir),
                     WEBHOOK_URL="http://127.0.0.1:9/hook")
    before = checkout_files()

    # WHEN the block runs to its end
    run = subprocess.run(["bash", "-c", walkthrough_for("acme-nowhere")], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=HANG_SECONDS)

    # THEN it ended instead of polling for ever, saying which answer was missing and why
    assert "walkthrough: no access_token in the answer: (nothing)" in run.stderr, run.stderr
    assert "Failed to connect" in run.stderr or "Couldn't connect" in run.stderr, run.stderr
    assert "walkthrough: no outputs.monthly_payment in the answer" in run.stderr, run.stderr
    # AND it left nothing in the checkout either
    assert checkout_files() - before == set()
