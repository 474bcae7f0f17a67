"""GET /jobs/openapi/{tenant_slug}/{engine_slug}: one engine's contract as an OpenAPI 3.1 document.

It must validate (openapi-spec-validator), and a client generated from it by a real generator
(openapi-python-client, run as its command line is) must calculate the engine: execute, poll,
download, against the real app. The expected payment is the annuity formula Excel's PMT
documents, not a number of our engine.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from openapi_spec_validator import validate

from shared.db.session import session_scope
from shared.repositories import engines as engine_repo
from shared.services import engines, versions
from shared.services.jobs import NO_ABOUT, NO_ACTIVE_VERSION
from tests.factories import deploy_loan

DRAFT7 = "http://json-schema.org/draft-07/schema#"
INPUT_SCHEMA = {
    "$schema": DRAFT7,
    "type": "object",
    "definitions": {"money": {"type": "number", "minimum": 0}},
    "properties": {
        "principal": {"$ref": "#/definitions/money"},
        "annual_rate": {"type": "number"},
        "years": {"type": "integer", "minimum": 1},
    },
    "required": ["principal", "annual_rate", "years"],
}
OUTPUT_SCHEMA = {
    "$schema": DRAFT7,
    "type": "object",
    "properties": {"monthly_payment": {"type": "number"}, "total_paid": {"type": "number"}},
}


def key(k):
    return {"X-API-Key": k}


def annuity(principal, annual_rate, years):
    """The monthly payment by the annuity formula Excel's PMT documents."""
    r, n = annual_rate / 12, years * 12
    return principal * r / (1 - (1 + r) ** -n)


def contract_path(deployed) -> str:
    return f"/jobs/openapi/{deployed.admin.slug}/{deployed.engine_slug}"


def declare_schemas(deployed) -> None:
    with session_scope() as session:
        versions.update_schemas(
            session, tenant_id=uuid.UUID(deployed.admin.tenant_id), engine_id=uuid.UUID(deployed.engine_id),
            version_id=uuid.UUID(deployed.version_id), input_schema=INPUT_SCHEMA, output_schema=OUTPUT_SCHEMA,
        )


def generate_client(document: dict, where: Path, monkeypatch):
    """The package openapi-python-client generates from `document`, imported (importable for the test)."""
    import json

    name = f"engine_client_{uuid.uuid4().hex[:8]}"
    spec, config = where / "contract.json", where / "config.yaml"
    spec.write_text(json.dumps(document))
    config.write_text("post_hooks: []\n")  # no formatter run: the generated code as generated
    generator = Path(sys.executable).with_name("openapi-python-client")
    done = subprocess.run(
        [str(generator), "generate", "--path", str(spec), "--output-path", str(where / name), "--meta", "none",
         "--config", str(config)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr  # it skips what it cannot read
    monkeypatch.syspath_prepend(str(where))
    return importlib.import_module(name)


def test_the_document_validates_and_carries_the_versions_schemas(client, deployed):
    # GIVEN an engine whose active version declares its input and output schemas
    declare_schemas(deployed)
    # WHEN a consumer allowed to view its about page asks for its contract
    r = client.get(contract_path(deployed), headers=key(deployed.api_key))
    # THEN it is a valid OpenAPI 3.1 document of the engine's three calls
    assert r.status_code == 200, r.text
    doc = r.json()
    validate(doc)
    assert doc["openapi"] == "3.1.0"
    assert (doc["info"]["title"], doc["info"]["version"]) == ("Loan quote", "1.0")
    assert doc["servers"] == [{"url": "http://testserver"}]
    assert sorted((path, method) for path, item in doc["paths"].items() for method in item) == [
        (f"/jobs/execute/{deployed.admin.slug}/{deployed.engine_slug}", "post"),
        ("/jobs/{job_id}", "get"),
        ("/jobs/{job_id}/download", "get"),
    ]
    # AND the API key header is its security scheme
    assert doc["components"]["securitySchemes"] == {
        "ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key", "description": "A consumer API key"}
    }
    assert doc["security"] == [{"ApiKey": []}]
    # AND the version's schemas are inlined, their own $refs moved to where they now live
    schemas = doc["components"]["schemas"]
    assert schemas["Inputs"]["properties"]["principal"] == {"$ref": "#/components/schemas/Inputs_money"}
    assert schemas["Inputs_money"] == INPUT_SCHEMA["definitions"]["money"]
    assert schemas["Inputs"]["required"] == INPUT_SCHEMA["required"]
    assert "$schema" not in schemas["Inputs"]
    assert schemas["Outputs"]["properties"] == OUTPUT_SCHEMA["properties"]
    assert schemas["ExecuteRequest"]["properties"]["inputs"] == {"$ref": "#/components/schemas/Inputs"}
    assert {"$ref": "#/components/schemas/Outputs"} in schemas["Job"]["properties"]["outputs"]["anyOf"]


def test_a_version_without_schemas_gets_them_from_its_named_ranges(client, admin, deployed):
    r = client.get(contract_path(deployed), headers=key(deployed.api_key))
    assert r.status_code == 200, r.text
    validate(r.json())
    schemas = r.json()["components"]["schemas"]
    with session_scope() as session:
        ranges = engine_repo.get_version(session, tenant_id=uuid.UUID(admin.tenant_id), version_id=uuid.UUID(deployed.version_id)).named_ranges
    for kind, schema in (("input", schemas["Inputs"]), ("output", schemas["Outputs"])):
        mine = [n for n in ranges if n["kind"] == kind]
        assert list(schema["properties"]) == [n["name"] for n in mine]
        assert "required" not in schema  # execute keeps the uploaded value of an input left out
        for rng in mine:
            prop = schema["properties"][rng["name"]]
            if rng["rows"] > 1 and rng["cols"] > 1:
                assert (prop["type"], prop["maxItems"], prop["items"]["maxItems"]) == ("array", rng["rows"], rng["cols"])
            elif rng["rows"] * rng["cols"] > 1:
                assert (prop["type"], prop["maxItems"]) == ("array", rng["rows"] * rng["cols"])
            elif rng.get("is_date"):
                assert prop == {"type": "string", "format": "date"}
            else:
                assert prop == {}  # any JSON value: the upload keeps no types for a range


def test_a_generated_client_calculates_the_engine(client, deployed, run_worker, tmp_path, monkeypatch):
    # GIVEN a client generated from the engine's contract by openapi-python-client
    declare_schemas(deployed)
    doc = client.get(contract_path(deployed), headers=key(deployed.api_key)).json()
    generated = generate_client(doc, tmp_path, monkeypatch)
    api = importlib.import_module(f"{generated.__name__}.api.default")
    models = importlib.import_module(f"{generated.__name__}.models")
    consumer = generated.AuthenticatedClient(base_url=doc["servers"][0]["url"], token=deployed.api_key, prefix="", auth_header_name="X-API-Key")
    # The real app, through httpx: the ASGI test transport in place of a socket.
    consumer.set_httpx_client(client.__class__(client.app, base_url=doc["servers"][0]["url"], headers=key(deployed.api_key)))
    execute, get_job, download = (importlib.import_module(f"{api.__name__}.{n}") for n in ("execute", "get_job", "download"))

    # WHEN it executes the engine with typed inputs
    inputs = models.Inputs(principal=100000.0, annual_rate=0.05, years=10)
    queued = execute.sync_detailed(client=consumer, body=models.ExecuteRequest(inputs=inputs), idempotency_key="quote-1")
    assert queued.status_code == 202, queued.content
    job_id = queued.parsed.job_id
    # AND a retry with the same Idempotency-Key gets the same job back
    again = execute.sync_detailed(client=consumer, body=models.ExecuteRequest(inputs=inputs), idempotency_key="quote-1")
    assert (again.status_code, again.parsed.job_id) == (202, job_id)
    run_worker()
    job = get_job.sync(client=consumer, job_id=job_id, wait=5)  # finished already: answers at once

    # THEN the job it reads back is typed: completed, with the engine's outputs
    assert isinstance(job, models.Job), job
    assert job.status == models.JobStatus.COMPLETED
    assert isinstance(job.outputs, models.Outputs)
    assert job.outputs.monthly_payment == pytest.approx(annuity(100000, 0.05, 10), rel=1e-12)
    # AND the filled workbook downloads through the generated call
    link = download.sync(client=consumer, job_id=job_id)
    assert isinstance(link, models.Download), link
    assert httpx.get(link.download_url).content[:2] == b"PK"
    # AND errors come back as the contract's Error model
    missing = get_job.sync(client=consumer, job_id=uuid.uuid4())
    assert isinstance(missing, models.Error) and missing.detail == "Job not found"


def test_the_contract_is_guarded_as_the_about_page_is(client, admin, deployed, loan_xlsx):
    path = contract_path(deployed)
    assert (client.get(path).status_code, client.get(path).json()) == (401, {"detail": "Invalid API key"})
    assert client.get(f"/jobs/openapi/{admin.slug}/nope", headers=key(deployed.api_key)).json() == {"detail": "Engine 'nope' not found"}
    no_about = deploy_loan(admin, loan_xlsx, flags={"can_execute": True, "can_view_jobs": True, "can_download": True, "can_view_about": False})
    r = client.get(contract_path(no_about), headers=key(no_about.api_key))
    assert (r.status_code, r.json()) == (403, {"detail": NO_ABOUT})
    inactive = deploy_loan(admin, loan_xlsx, activate=False)
    r = client.get(contract_path(inactive), headers=key(inactive.api_key))
    assert (r.status_code, r.json()) == (400, {"detail": NO_ACTIVE_VERSION})
    # The IP whitelist is checked before the key: an unlisted address learns nothing about keys.
    with session_scope() as session:
        engines.update(session, tenant_id=uuid.UUID(admin.tenant_id), engine_id=uuid.UUID(deployed.engine_id),
                       ip_whitelist_enabled=True, ip_whitelist=["10.9.8.7"])
    r = client.get(path, headers=key("not-a-key"))
    assert (r.status_code, r.json()) == (403, {"detail": "Access denied: IP address not in whitelist"})
