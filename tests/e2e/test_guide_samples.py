"""Every code sample of the consumers' guide (docs/consumers/), run against ``sheetcalc dev``.

Each fenced block on those pages is marked by an HTML comment on the line before it:

- ``<!-- sample: NAME -->`` a sample a reader runs: bash through ``bash`` (after the page's
  ``variables`` block, as a terminal would have it), Python through the venv's python, JavaScript
  through ``node``;
- ``<!-- output: NAME -->`` a JSON answer the page claims, compared with the real one: the same
  keys (``"…": "…"`` allows more), the same words, numbers of the same kind (a decimal to the
  places shown), timestamps as ISO UTC, and ``…`` in a string standing for any string;
- ``<!-- not-run: why -->`` a fragment that is no command (the headers a key travels in).

A block left unmarked, a marked sample no test runs, or a test whose sample is gone fails here.
Placeholders are swapped for the stack's: the base URL, the ``acme_…`` key, the tenant ``acme``,
the ``whsec_…`` secret, and the webhook addresses for a receiver of the test's own. Samples run
in a temporary folder, so their files (``filled.xlsx``, ``loan.json``) never land in the checkout.
The "Python client" page documents the SDK and is tested with it, not here.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

import httpx
import openpyxl
import pytest

from tests.e2e.console import LOAN, api_session, new_tenant
from tests.receiver import WebhookReceiver

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "docs" / "consumers" / name for name in
         ("index.md", "idempotency-and-batches.md", "webhooks.md", "errors.md", "contract.md")]
MARK = re.compile(r"<!-- (sample|output|not-run): *(.*?) *-->")
FENCE = re.compile(r"^```(\w*)\s*$")
RUNNERS = {"bash": "bash", "python": "python", "js": "node"}
# Only a hung sample reaches it; the samples' own deadlines are a few minutes at most.
HANG_SECONDS = 600
WEBHOOK_WAIT_SECONDS = 120
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30}


@dataclass
class Block:
    page: str
    kind: str  # sample, output, not-run
    name: str
    language: str
    code: str


def blocks() -> list[Block]:
    """Every fenced block of the consumers' pages, with the marker on the line before it (or none)."""
    found = []
    for path in PAGES:
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            opening = FENCE.match(lines[i])
            if not opening:
                i += 1
                continue
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            mark = MARK.fullmatch(lines[i - 1].strip()) if i else None
            found.append(Block(path.name, mark.group(1) if mark else "", mark.group(2) if mark else "",
                               opening.group(1), "\n".join(lines[i + 1:end]) + "\n"))
            i = end + 1
    return found


def block(kind: str, name: str) -> Block:
    (found,) = [b for b in blocks() if (b.kind, b.name) == (kind, name)]
    return found


# The samples each test below runs, and the claimed answers it compares: kept in step with the pages.
RUN = {"variables", "about", "execute", "poll", "wait", "download", "python-client", "js-client", "idempotent-execute",
       "batch", "verify-python", "verify-js", "verify-shell", "signed-request", "signing-secret", "contract", "generate-client"}
CLAIMS = {"execute", "batch", "webhook-body", "no-execute-permission"}


# ------------------------------------------------------------------------------- the pages alone


def test_every_block_on_the_consumer_pages_is_a_marked_sample_output_or_fragment():
    unmarked = [f"{b.page}: {b.code.splitlines()[0]}" for b in blocks() if not b.kind]
    assert unmarked == [], "blocks without <!-- sample|output|not-run: ... --> before them"
    for b in blocks():
        if b.kind == "sample":
            assert b.language in RUNNERS, f"{b.page}: sample {b.name} is {b.language!r}, which no runner runs"
        if b.kind == "output":
            json.loads(b.code)  # a claimed answer is JSON


def test_every_sample_is_run_and_every_claim_compared_by_a_test_here():
    names = {kind: sorted(b.name for b in blocks() if b.kind == kind) for kind in ("sample", "output")}
    assert names["sample"] == sorted(RUN) and names["output"] == sorted(CLAIMS)
    assert all(len(set(v)) == len(v) for v in names.values()), "a marker name used twice"


def test_a_claim_fails_on_another_word_a_missing_or_extra_key_or_a_number_off_its_places():
    claim = {"job_id": "0b9a…", "status": "pending", "created_at": "2026-03-01T09:00:00.123456Z", "payment": 1266.71, "ms": 4}
    real = {"job_id": "5e1f", "status": "pending", "created_at": "2026-11-28T01:02:03.4Z", "payment": 1266.7133, "ms": 17}
    assert_as_claimed(claim, real)
    for changed in ({"status": "completed"}, {"created_at": "yesterday"}, {"payment": 1266.7}, {"ms": 4.5}, {"extra": 1}):
        with pytest.raises(AssertionError):
            assert_as_claimed(claim, {**real, **changed})
    with pytest.raises(AssertionError):
        assert_as_claimed(claim, {k: v for k, v in real.items() if k != "ms"})
    assert_as_claimed({"a": 1, "…": "…"}, {"a": 2, "b": 3})  # "…" as a key admits more


# ------------------------------------------------------------------------------- a reader's stack


@dataclass
class Reader:
    """A consumer's terminal: the tenant and its key, an administrator's token, a webhook receiver."""

    base_url: str
    slug: str
    key: str
    token: str
    receiver: WebhookReceiver
    folder: Path
    env: dict
    no_execute_key: str  # a consumer that may view the engine's jobs, not execute it

    def code(self, b: Block) -> str:
        """The block with the page's placeholders swapped for this stack's."""
        code = b.code.replace("http://127.0.0.1:8000", self.base_url)
        code = re.sub(r"acme_[0-9a-f]*…", self.key, code)
        code = code.replace("/acme/", f"/{self.slug}/").replace('"acme"', f'"{self.slug}"')
        code = re.sub(r"https://example\.com/hooks/\w+|http://127\.0\.0\.1:9000/hook", self.receiver.url, code)
        return code

    def run(self, name: str, *, after: str = "", swap: dict | None = None, **env: str) -> subprocess.CompletedProcess:
        """Run sample ``name`` as its page shows it, with ``swap``'s placeholders replaced too (``after``:
        what a reader does next with its code), in ``env``."""
        b = block("sample", name)
        if b.language == "js" and not shutil.which("node"):
            pytest.fail("node is not installed (scripts/test.sh installs Debian's nodejs)", pytrace=False)
        code = self.code(b)
        for placeholder, value in (swap or {}).items():
            assert placeholder in code, f"{b.page}: sample {name} has no {placeholder!r} any more"
            code = code.replace(placeholder, value)
        code += after
        if b.language == "bash":
            if name != "variables":
                code = self.code(block("sample", "variables")) + code
            argv = ["bash", "-c", "set -euo pipefail\n" + code]
        else:
            script = self.folder / ("sample.py" if b.language == "python" else "sample.js")
            script.write_text(code)
            argv = [sys.executable if b.language == "python" else "node", str(script)]
        done = subprocess.run(argv, check=False, cwd=self.folder, env={**self.env, **env}, capture_output=True, text=True,
                              timeout=HANG_SECONDS)
        assert done.returncode == 0, f"{b.page}: sample {name} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return done


@pytest.fixture(scope="module")
def reader(dev_stack, tmp_path_factory):
    """A tenant with the loan engine active as ``loan-quote``, a key allowed everything on it."""
    tenant = new_tenant(dev_stack, "guide")
    with api_session(dev_stack, tenant) as api:
        engine = api.post("/engines", json={"name": "Loan quote", "slug": "loan-quote"}).json()
        version = api.post(f"/engines/{engine['id']}/versions", data={"version": "1.0"},
                           files={"file": ("loan-quote.xlsx", LOAN.read_bytes())}).json()
        assert api.post(f"/engines/{engine['id']}/versions/{version['id']}/activate").status_code == 200
        consumer = api.post("/consumers", json={"name": "Pricing app"}).json()
        api.put(f"/engines/{engine['id']}/access/{consumer['id']}",
                json={"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": True})
        reader_only = api.post("/consumers", json={"name": "Reporting"}).json()
        api.put(f"/engines/{engine['id']}/access/{reader_only['id']}", json={"can_execute": False, "can_view_jobs": True})
    login = httpx.post(f"{dev_stack.base_url}/auth/login", json={"email": tenant["email"], "password": tenant["password"]}, timeout=60)
    assert login.status_code == 200, login.text
    folder = tmp_path_factory.mktemp("guide-samples")
    env = {**dev_stack.env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "TMPDIR": str(folder)}
    with WebhookReceiver() as receiver:
        yield Reader(dev_stack.base_url, tenant["slug"], consumer["api_key"], login.json()["access_token"], receiver,
                     folder, env, reader_only["api_key"])


def posted(reader: Reader, header: str, value: str) -> dict:
    """The POST the receiver got with ``header: value``, waiting for it as long as a hung stack would take."""
    deadline = time.monotonic() + WEBHOOK_WAIT_SECONDS
    while time.monotonic() < deadline:
        found = [r for r in reader.receiver.requests if r["headers"].get(header) == value]
        if found:
            assert len(found) == 1, f"posted {len(found)} times: {found}"
            return found[0]
        reader.receiver.wait_for(len(reader.receiver.requests) + 1, 1)
    raise AssertionError(f"no POST with {header}: {value} within {WEBHOOK_WAIT_SECONDS} s: {reader.receiver.requests}")


def claimed_in_comment(name: str):
    """The answer a bash sample claims in a ``# {...}`` comment."""
    return json.loads(re.search(r"# (\{.*\})", block("sample", name).code).group(1))


def last_json(output: str):
    """The last line of a sample's output that is JSON."""
    for line in reversed(output.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    raise AssertionError(f"no JSON line in the output:\n{output}")


def annuity() -> float:
    r, n = INPUTS["annual_rate"] / 12, INPUTS["years"] * 12
    return INPUTS["principal"] * r / (1 - (1 + r) ** -n)


def assert_as_claimed(claimed, actual, where: str = "answer") -> None:
    """``actual`` is what the page's ``claimed`` answer says it is (the rules of the module's docstring)."""
    if isinstance(claimed, dict):
        assert isinstance(actual, dict), f"{where}: {actual!r} is no object"
        keys = set(claimed) - {"…"}
        missing, extra = keys - set(actual), set(actual) - keys
        assert not missing, f"{where}: the page shows {sorted(missing)}, the answer has no such key: {actual}"
        assert "…" in claimed or not extra, f"{where}: the answer has {sorted(extra)}, which the page does not show"
        for key in keys:
            assert_as_claimed(claimed[key], actual[key], f"{where}.{key}")
    elif isinstance(claimed, str) and "…" in claimed:
        assert isinstance(actual, str), f"{where}: {actual!r}"
    elif isinstance(claimed, str) and ISO_UTC.match(claimed):
        assert isinstance(actual, str) and ISO_UTC.match(actual), f"{where}: {actual!r} is no ISO UTC time"
    elif isinstance(claimed, bool) or claimed is None or isinstance(claimed, str):
        assert actual == claimed, f"{where}: the page says {claimed!r}, the answer {actual!r}"
    elif isinstance(claimed, float):
        places = len(repr(claimed).split(".")[1])
        assert isinstance(actual, (int, float)) and round(actual, places) == claimed, f"{where}: {claimed!r} vs {actual!r}"
    elif isinstance(claimed, int):
        assert isinstance(actual, int) and not isinstance(actual, bool), f"{where}: {actual!r} is no integer"
    else:
        assert actual == claimed, f"{where}: the page says {claimed!r}, the answer {actual!r}"


@pytest.fixture(scope="module")
def executed(reader):
    """The execute sample's answer, and the job once finished."""
    answer = json.loads(reader.run("execute").stdout)
    job = httpx.get(f"{reader.base_url}/jobs/{answer['job_id']}", params={"wait": 25}, headers={"X-API-Key": reader.key}, timeout=60).json()
    while job["status"] not in ("completed", "failed"):
        job = httpx.get(f"{reader.base_url}/jobs/{answer['job_id']}", params={"wait": 25}, headers={"X-API-Key": reader.key}, timeout=60).json()
    assert job["status"] == "completed", job
    return answer, job


@pytest.fixture(scope="module")
def secret(reader):
    """The tenant's signing secret, read (once) with the page's own sample."""
    answer = last_json(reader.run("signing-secret", TOKEN=reader.token).stdout)
    assert_as_claimed(claimed_in_comment("signing-secret"), answer, "signing secret")
    assert answer["secret"].startswith("whsec_") and len(answer["secret"]) == len("whsec_") + 64, answer
    return answer["secret"]


# ------------------------------------------------------------------------------- Calling an engine


def test_the_variables_block_sets_base_and_key(reader):
    done = reader.run("variables", after='printf "%s %s\\n" "$BASE" "$KEY"\n')
    assert done.stdout.split() == [reader.base_url, reader.key]


def test_about_answers_what_the_page_lists(reader):
    about = json.loads(reader.run("about").stdout)
    assert {"name", "slug", "description", "version", "input_schema", "output_schema", "updated_at", "calc_ms_p50",
            "calc_ms_p95"} <= set(about)
    assert (about["slug"], about["version"]) == ("loan-quote", "1.0")


def test_execute_answers_202_as_the_page_shows_and_posts_the_webhook_it_names(reader, executed):
    answer, _ = executed
    assert_as_claimed(json.loads(block("output", "execute").code), answer, "execute")
    assert answer["status"] == "pending"
    # AND the webhook_url of the sample (swapped for the receiver) got the finished job
    assert posted(reader, "Sheetcalc-Job-Id", answer["job_id"])["json"]["status"] == "completed"


def test_the_webhook_body_is_as_the_page_shows(reader, executed):
    answer, _ = executed
    hook = posted(reader, "Sheetcalc-Job-Id", answer["job_id"])
    claimed = json.loads(block("output", "webhook-body").code)
    # The page's inputs are those of the execute sample but start_date, which the sample sends too
    claimed["inputs"]["start_date"] = "2026-01-01"
    assert_as_claimed(claimed, hook["json"], "webhook")


def test_poll_answers_the_fields_of_the_table(reader, executed):
    answer, _ = executed
    job = json.loads(reader.run("poll", JOB_ID=answer["job_id"]).stdout)
    assert {"job_id", "status", "created_at", "updated_at", "inputs", "outputs", "completed_at", "execution_time_ms",
            "webhook_url", "webhook_sent_at", "webhook_response_status"} <= set(job)
    assert job["status"] == "completed" and job["outputs"]["monthly_payment"] == pytest.approx(annuity(), rel=1e-12)


def test_execute_with_wait_answers_the_finished_job(reader):
    job = json.loads(reader.run("wait").stdout)
    assert job["status"] == "completed", job
    assert job["outputs"]["monthly_payment"] == pytest.approx(annuity(), rel=1e-12)


def test_the_download_sample_saves_the_filled_workbook(reader, executed):
    answer, _ = executed
    done = reader.run("download", JOB_ID=answer["job_id"])
    link = last_json(done.stdout)
    assert_as_claimed(claimed_in_comment("download"), link, "download")
    assert link["filename"].endswith(".xlsx")
    workbook = reader.folder / "filled.xlsx"
    assert zipfile.is_zipfile(workbook)
    wb = openpyxl.load_workbook(workbook, data_only=True)
    sheet, ref = next(iter(wb.defined_names["monthly_payment"].destinations))
    assert wb[sheet][ref.replace("$", "")].value == pytest.approx(annuity(), rel=1e-12)


def test_the_python_client_prints_the_outputs(reader):
    outputs = ast.literal_eval(reader.run("python-client").stdout.strip().splitlines()[-1])
    assert outputs["monthly_payment"] == pytest.approx(annuity(), rel=1e-12)


def test_the_javascript_client_prints_the_outputs(reader):
    printed = reader.run("js-client").stdout
    payment = re.search(r"monthly_payment: ([0-9.]+)", printed)
    assert payment and float(payment.group(1)) == pytest.approx(annuity(), rel=1e-12), printed


# ------------------------------------------------------------------------------- Idempotency keys and batches


def test_the_same_idempotency_key_answers_the_very_same_body(reader):
    # GIVEN the page's key made unique to this run (the stack may have seen it within 24 hours)
    swap = {"quote-2026-03-01-000123": f"quote-{uuid.uuid4()}"}
    # WHEN the sample runs twice, THEN both answers are the very same body, the job still pending
    first, again = (reader.run("idempotent-execute", swap=swap).stdout for _ in range(2))
    assert first == again and json.loads(first)["status"] == "pending"


def test_the_batch_sample_makes_a_job_per_set_and_posts_one_webhook_when_done(reader):
    batch = json.loads(reader.run("batch").stdout)
    assert_as_claimed(json.loads(block("output", "batch").code), batch, "batch")
    assert (batch["total"], batch["jobs"], batch["counts"]["invalid"]) == (2, 2, 0), batch
    hook = posted(reader, "Sheetcalc-Batch-Id", batch["batch_id"])
    assert hook["json"]["status"] == "completed" and hook["json"]["counts"]["completed"] == 2, hook
    # with the fields the page lists for it
    assert set(hook["json"]) == {"batch_id", "status", "total", "counts", "created_at", "completed_at", "results_url"}


# ------------------------------------------------------------------------------- Signed webhooks


VERIFY_DRIVERS = {
    "verify-python": "\nimport os, sys\nsys.stdout.write(str(verify(os.environ['SECRET'], os.environ['HEADER'], open(os.environ['BODY_FILE'], 'rb').read())))\n",
    "verify-js": "\nconst fs = require('fs');\nprocess.stdout.write(String(verify(process.env.SECRET, process.env.HEADER, fs.readFileSync(process.env.BODY_FILE))));\n",
    "verify-shell": '\nif verify "$SECRET" "$HEADER" "$BODY_FILE"; then printf True; else printf False; fi\n',
}


@pytest.mark.parametrize("name", sorted(VERIFY_DRIVERS))
def test_each_verifier_accepts_a_real_webhook_and_refuses_a_changed_byte(reader, executed, secret, name):
    hook = posted(reader, "Sheetcalc-Job-Id", executed[0]["job_id"])
    verdicts = []
    for body in (hook["raw"], hook["raw"].replace(b'"completed"', b'"Completed"')):
        (reader.folder / "body.bin").write_bytes(body)
        done = reader.run(name, after=VERIFY_DRIVERS[name], SECRET=secret, HEADER=hook["headers"]["Sheetcalc-Signature"], BODY_FILE=str(reader.folder / "body.bin"))
        verdicts.append(done.stdout.strip().lower())
    assert verdicts == ["true", "false"]


def test_a_request_signed_with_curl_is_accepted_by_the_python_verifier(reader, secret):
    reader.run("signed-request", swap={"whsec_…": secret})
    mine = posted(reader, "Sheetcalc-Job-Id", "00000000-0000-0000-0000-000000000000")
    namespace: dict = {}
    exec(block("sample", "verify-python").code, namespace)  # noqa: S102 (the page's own code, as a receiver runs it)
    assert namespace["verify"](secret, mine["headers"]["Sheetcalc-Signature"], mine["raw"]) is True
    assert namespace["verify"](secret, mine["headers"]["Sheetcalc-Signature"], mine["raw"] + b" ") is False


# ------------------------------------------------------------------------------- Errors, and the contract


def test_an_error_answer_is_as_the_page_shows(reader):
    r = httpx.post(f"{reader.base_url}/jobs/execute/{reader.slug}/loan-quote", json={"inputs": INPUTS},
                   headers={"X-API-Key": reader.no_execute_key}, timeout=60)
    assert r.status_code == 403
    assert_as_claimed(json.loads(block("output", "no-execute-permission").code), r.json(), "error")


def test_the_contract_is_fetched_and_a_typed_client_generated_from_it(reader):
    reader.run("contract")
    contract = json.loads((reader.folder / "loan.json").read_text())
    assert contract["openapi"].startswith("3.1")
    reader.run("generate-client")
    package = reader.folder / "loan_client"
    assert (package / "__init__.py").exists() and (package / "client.py").exists(), sorted(p.name for p in package.iterdir())
