"""The command line: profiles (flags, then environment, then the config file), inputs from flags,
JSON or CSV (one job per row), and verify-webhook's exit status."""

from __future__ import annotations

import argparse
import hashlib
import hmac
import io
import json
import time

import httpx
import pytest

from client_fakes import BASE, KEY, FakeService
from sheetcalc_client import cli
from sheetcalc_client.client import Client
from sheetcalc_client.config import load_profile

CONFIG = """
default_profile = "dev"
[profiles.dev]
url = "http://dev.test:8000/"
api_key = "acme_dev-key"
[profiles.prod]
url = "https://prod.test"
api_key = "acme_prod-key"
admin_email = "ops@acme.example"
"""


@pytest.fixture()
def config(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    return {"SHEETCALC_CONFIG": str(path)}


def test_the_default_profile_then_a_named_one(config):
    assert load_profile(env=config).url == "http://dev.test:8000" and load_profile(env=config).api_key == "acme_dev-key"
    prod = load_profile("prod", env=config)
    assert (prod.url, prod.api_key, prod.admin_email) == ("https://prod.test", "acme_prod-key", "ops@acme.example")
    assert load_profile(env={**config, "SHEETCALC_PROFILE": "prod"}).name == "prod"


def test_the_environment_wins_over_the_file_and_flags_over_both(config):
    env = {**config, "SHEETCALC_URL": "http://env.test", "SHEETCALC_API_KEY": "acme_env"}
    assert (load_profile(env=env).url, load_profile(env=env).api_key) == ("http://env.test", "acme_env")
    assert load_profile(env=env, api_key="acme_flag").api_key == "acme_flag"


def test_an_unknown_named_profile_is_an_error(config):
    with pytest.raises(ValueError):
        load_profile("staging", env=config)


def test_the_default_config_path_follows_xdg(tmp_path):
    (tmp_path / "sheetcalc").mkdir()
    (tmp_path / "sheetcalc" / "config.toml").write_text(CONFIG)
    assert load_profile(env={"XDG_CONFIG_HOME": str(tmp_path)}).api_key == "acme_dev-key"


def args(**given) -> argparse.Namespace:
    return argparse.Namespace(**{"json": None, "csv": None, "input": None, **given})


def test_inputs_from_flags_are_json_values_or_text():
    assert cli.read_input_sets(args(input=["principal=250000", "rate=0.045", "start=2026-01-01", "tags=[1,2]"])) == [
        {"principal": 250000, "rate": 0.045, "start": "2026-01-01", "tags": [1, 2]}]


def test_csv_rows_are_one_input_set_each_and_flags_apply_to_every_row(tmp_path):
    rows = tmp_path / "loans.csv"
    rows.write_text("principal,years,start_date\n250000,30,2026-01-01\n100000,,\n")
    assert cli.read_input_sets(args(csv=str(rows), input=["annual_rate=0.05"])) == [
        {"principal": 250000, "years": 30, "start_date": "2026-01-01", "annual_rate": 0.05},
        {"principal": 100000, "annual_rate": 0.05}]


def test_no_inputs_is_a_usage_error():
    with pytest.raises(cli.UsageError):
        cli.read_input_sets(args())


def test_run_with_csv_makes_one_job_per_row_and_prints_their_outputs(tmp_path, monkeypatch, capsys):
    service = FakeService()
    made = []

    def accept(request):
        made.append(json.loads(request.content)["inputs"])
        return httpx.Response(202, json={"job_id": f"job-{len(made)}", "status": "pending"})

    service.on("POST", "/jobs/execute/acme/loan", accept)
    for n in (1, 2):
        service.on("GET", f"/jobs/job-{n}", httpx.Response(200, json={
            "job_id": f"job-{n}", "status": "completed", "outputs": {"payment": n * 10}}))
    monkeypatch.setattr(cli, "Client", lambda url, key, **kw: Client(url, key, transport=service.transport(), **kw))
    monkeypatch.setenv("SHEETCALC_CONFIG", str(tmp_path / "none.toml"))
    rows = tmp_path / "loans.csv"
    rows.write_text("principal\n1\n2\n")

    assert cli.main(["--url", BASE, "--api-key", KEY, "run", "acme/loan", "--csv", str(rows)]) == 0

    assert made == [{"principal": 1}, {"principal": 2}]
    assert json.loads(capsys.readouterr().out) == [
        {"row": 0, "status": "completed", "outputs": {"payment": 10}}, {"row": 1, "status": "completed", "outputs": {"payment": 20}}]


def test_verify_webhook_exits_0_for_a_good_signature_and_1_otherwise(tmp_path, monkeypatch, capsys):
    secret, raw = "whsec_" + "ab" * 32, b'{"job_id": "x", "status": "completed"}'
    t = int(time.time())
    signature = f"t={t},v1=" + hmac.new(secret.encode(), f"{t}.".encode() + raw, hashlib.sha256).hexdigest()
    (tmp_path / "body.json").write_bytes(raw)
    monkeypatch.setenv("SHEETCALC_CONFIG", str(tmp_path / "none.toml"))
    common = ["verify-webhook", "--signature", signature, "--body", str(tmp_path / "body.json")]
    assert cli.main([*common, "--secret", secret]) == 0
    assert cli.main([*common, "--secret", "whsec_wrong"]) == 1
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(raw + b"!")))
    assert cli.main(["verify-webhook", "--signature", signature, "--secret", secret]) == 1
    assert capsys.readouterr().out.splitlines()[0] == "valid"


def test_a_missing_api_key_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SHEETCALC_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.delenv("SHEETCALC_API_KEY", raising=False)
    assert cli.main(["--url", BASE, "about", "acme/loan"]) == 2
    assert "no API key" in capsys.readouterr().err
