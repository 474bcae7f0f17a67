"""One engine's contract as an OpenAPI 3.1 document: execute, poll and download, its own schemas.

The request and response bodies are the consumer API's own models (shared/api/schemas/jobs.py,
as /openapi.json has them), with `inputs` and `outputs` narrowed to the engine's schemas, so a
generated client is typed for that engine. A version's definitions become components of their
own and its `$ref`s follow them; the `$schema` dialect line is left out (OpenAPI 3.1 schemas are
JSON Schema 2020-12).
"""

from __future__ import annotations

import re
from typing import Any

from shared.api.schemas.jobs import DownloadResponse, ExecuteRequest, ExecuteResponse, JobResponse, JobStatusName
from shared.services.engine_contract import Contract
from shared.services import idempotency
from shared.services.job_waits import MAX_WAIT_SECONDS

API_KEY_HEADER = "X-API-Key"  # shared/api/deps.py reads the key from this header
_REFS = "#/components/schemas/{model}"
_ERRORS = {
    "400": "Invalid inputs (`Input validation failed: ...`), no active version, or a wait out of range",
    "401": "Missing or invalid API key",
    "403": "The caller's address is not allowed, or the key lacks the permission",
    "404": "No such engine or job for this key",
    "409": "The Idempotency-Key was used with a different request",
    "429": "Rate limit or the tenant's quota of unfinished jobs reached",
}


def _component_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)


def _components(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """A version's schema as components: itself under `name`, each of its top-level definitions
    (`definitions`, `$defs`) under `name_<definition>` (generators follow a `$ref` to a component,
    not into one), local `$ref`s rewritten to match, `$schema` left out."""
    schema = dict(schema)
    definitions: dict[str, Any] = {}
    for keyword in ("definitions", "$defs"):
        found = schema.get(keyword)
        if isinstance(found, dict):
            del schema[keyword]
            definitions.update({f"#/{keyword}/{_pointer_escape(k)}": (k, v) for k, v in found.items()})
    targets = {pointer: f"#/components/schemas/{_component_name(name + '_' + k)}" for pointer, (k, _) in definitions.items()}

    def moved(node: Any) -> Any:
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                if key == "$schema":
                    continue
                if key == "$ref" and isinstance(value, str) and value.startswith("#"):
                    out[key] = targets.get(value) or f"#/components/schemas/{name}{value[1:]}"
                else:
                    out[key] = moved(value)
            return out
        if isinstance(node, list):
            return [moved(item) for item in node]
        return node

    out = {name: moved(schema)}
    for pointer, (key, definition) in definitions.items():
        out[targets[pointer].rsplit("/", 1)[1]] = moved(definition)
    return out


def _pointer_escape(text: str) -> str:
    return text.replace("~", "~0").replace("/", "~1")


def _model(model, **properties) -> dict[str, Any]:
    schema = model.model_json_schema(ref_template=_REFS)
    schema.pop("example", None)  # the loan example of /openapi.json fits no other engine
    schema["properties"].update(properties)
    return schema


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _answer(status: str, model: str, description: str, *errors: str) -> dict[str, Any]:
    out = {status: {"description": description, "content": {"application/json": {"schema": _ref(model)}}}}
    for code in errors:
        out[code] = {"description": _ERRORS[code], "content": {"application/json": {"schema": _ref("Error")}}}
    return out


def document(contract: Contract, *, base_url: str, tenant_slug: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the engine's calls, served from `base_url`."""
    engine, version = contract.engine, contract.version
    job_id = {"name": "job_id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}
    idempotency_key = {
        "name": "Idempotency-Key", "in": "header", "required": False,
        "schema": {"type": "string", "pattern": f"^{idempotency.KEY_PATTERN}$"},
        "description": "Send a retry with the same key and body within 24 h and get the first job back (same job_id)",
    }
    wait = {
        "name": "wait", "in": "query", "required": False,
        "schema": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_WAIT_SECONDS},
        "description": "Seconds (at most 25) to hold the answer until the job has finished; then it carries the outputs",
    }
    schemas = {
        **_components(contract.input_schema, "Inputs"),
        **_components(contract.output_schema, "Outputs"),
        "ExecuteRequest": _model(ExecuteRequest, inputs=_ref("Inputs")),
        "ExecuteResponse": _model(ExecuteResponse),
        "Job": _model(
            JobResponse,
            status={"type": "string", "enum": list(JobStatusName.__args__)},
            inputs={"anyOf": [_ref("Inputs"), {"type": "null"}]},
            outputs={"anyOf": [_ref("Outputs"), {"type": "null"}], "description": "Set once the job has completed"},
        ),
        "Download": _model(DownloadResponse),
        "Error": {"type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"]},
    }
    schemas["Job"]["title"] = "Job"
    schemas["Download"]["title"] = "Download"
    how = "declared by the version" if contract.declared else "derived from the workbook's named ranges"
    return {
        "openapi": "3.1.0",
        "info": {
            "title": engine.name,
            "version": version.version,
            "description": (
                (engine.description + "\n\n" if engine.description else "")
                + f"The sheetcalc engine `{engine.slug}`, version {version.version} (inputs {how}). "
                "Execute queues a job; poll it until it is completed or failed; download its filled workbook."
            ),
        },
        "servers": [{"url": base_url}],
        "security": [{"ApiKey": []}],
        "paths": {
            f"/jobs/execute/{tenant_slug}/{engine.slug}": {"post": {
                "operationId": "execute",
                "summary": f"Calculate {engine.name}",
                "parameters": [wait, idempotency_key],
                "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("ExecuteRequest")}}},
                "responses": {
                    **_answer("200", "Job", "With wait: the job finished within it"),
                    **_answer("202", "ExecuteResponse", "The job is queued", "400", "401", "403", "404", "409", "429"),
                },
            }},
            "/jobs/{job_id}": {"get": {
                "operationId": "get_job",
                "summary": "The job's status; inputs and outputs once it has finished",
                "parameters": [job_id, wait],
                "responses": _answer("200", "Job", "The job", "400", "401", "403", "404", "429"),
            }},
            "/jobs/{job_id}/download": {"get": {
                "operationId": "download",
                "summary": "A temporary URL to the filled workbook of a completed job",
                "parameters": [job_id],
                "responses": _answer("200", "Download", "A link valid for about an hour", "400", "401", "403", "404", "429"),
            }},
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {"ApiKey": {
                "type": "apiKey", "in": "header", "name": API_KEY_HEADER, "description": "A consumer API key",
            }},
        },
    }
