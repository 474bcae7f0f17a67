"""Hostile schemas and hostile inputs (issue 14, findings 1, 6, 7 and 8).

An administrator's input schema runs in the API on every execute, and a consumer's inputs are
stored with the job and returned by its GET and its webhook. So a schema may not fetch a URL or
read a file (`$ref` only inside the schema), a pattern is evaluated in linear time (RE2), and
whatever execute accepts can be stored on SQLite and PostgreSQL and read back; what could not is
refused at once with a clear 4xx, and no job exists for it.
"""

from __future__ import annotations

import json
import multiprocessing
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.envtools import settings_env
from tests.factories import store_schema_unchecked
from tests.receiver import WebhookReceiver

INPUTS = {"principal": 100000, "annual_rate": 0.05, "years": 10}
SECRET = "SECRET-CONTENT-7f3a9c"
# Generous: a hang bound, not a speed test. Each refusal below takes milliseconds.
HANG_BOUND_SECONDS = 60


def key(k):
    return {"X-API-Key": k}


def version_path(deployed) -> str:
    return f"/engines/{deployed.engine_id}/versions/{deployed.version_id}"


def jobs_total(deployed) -> int:
    return deployed.admin.get(f"/engines/{deployed.engine_id}/jobs").json()["total"]


def post_raw(client, deployed, body: str):
    """Execute with a body as sent on the wire (Python's json accepts NaN and lone surrogates)."""
    return client.post(
        deployed.execute_path, content=body.encode("ascii"),
        headers={**key(deployed.api_key), "Content-Type": "application/json"},
    )


class SchemaHost:
    """A real HTTP server that would serve a schema holding a secret, and counts its requests."""

    def __init__(self):
        self.requests: list[str] = []
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                host.requests.append(self.path)
                body = json.dumps({"enum": [SECRET]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/schema+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/schema.json"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def schema_host():
    with SchemaHost() as host:
        yield host


@pytest.fixture()
def secret_file(tmp_path):
    path = tmp_path / "secret.json"
    path.write_text(json.dumps({"enum": [SECRET]}))
    return path.as_uri()  # file:///...


def _validate_in_child(schema: dict, inputs: dict, conn) -> None:
    from shared.services import inputs as input_rules

    try:
        input_rules.validate(inputs, input_schema=schema, named_ranges=[])
        conn.send("valid")
    except Exception as exc:  # the verdict, whatever it is, is what the parent compares
        conn.send(getattr(exc, "message", repr(exc)))


def verdict_in_time(schema: dict, inputs: dict) -> str:
    """The service's verdict on ``inputs``, reached in a child process so that a backtracking
    match (which holds the GIL: no thread of this process could even time it out) fails the
    test at the hang bound instead of freezing the run."""
    ctx = multiprocessing.get_context("spawn")
    receiver, sender = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_validate_in_child, args=(schema, inputs, sender), daemon=True)
    child.start()
    try:
        assert receiver.poll(HANG_BOUND_SECONDS), f"no verdict within {HANG_BOUND_SECONDS} s: the schema's pattern backtracks"
        return receiver.recv()
    finally:
        child.kill()
        child.join()


# --- finding 1: $ref only inside the schema ----------------------------------------------------


@pytest.mark.parametrize("where", ["remote", "file"])
def test_a_schema_referring_outside_itself_is_refused_when_saved(deployed, schema_host, secret_file, where):
    ref = schema_host.url if where == "remote" else secret_file
    # GIVEN an input schema whose principal refers to an HTTP address or a local file
    schema = {"type": "object", "properties": {"principal": {"$ref": ref}}}
    # WHEN the administrator saves it
    r = deployed.admin.patch(version_path(deployed), json={"input_schema": schema})
    # THEN it is refused, saying why, and nothing is stored or fetched
    assert r.status_code == 422, r.text
    assert r.json()["detail"] == (
        f"input_schema is not a valid JSON Schema (Draft 7): $ref '{ref}' points outside the schema; "
        "only references inside it ('#/definitions/...') are allowed, nothing is fetched or read"
    )
    assert deployed.admin.get(f"/engines/{deployed.engine_id}").json()["versions"][0]["input_schema"] is None
    assert schema_host.requests == []


def test_a_reference_inside_the_schema_still_works(client, deployed):
    schema = {
        "$id": "https://example.com/loan.schema.json",
        "type": "object",
        "definitions": {"positive": {"type": "number", "exclusiveMinimum": 0}},
        "properties": {"principal": {"$ref": "#/definitions/positive"}},
    }
    assert deployed.admin.patch(version_path(deployed), json={"input_schema": schema}).status_code == 200

    r = client.post(deployed.execute_path, json={"inputs": {**INPUTS, "principal": -1}}, headers=key(deployed.api_key))

    assert (r.status_code, r.json()) == (400, {"detail": "Input validation failed: -1 is less than or equal to the minimum of 0 (at 'principal')"})
    r = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=key(deployed.api_key))
    assert r.status_code == 202, r.text


def test_a_reference_to_nothing_in_the_schema_is_refused_when_saved(deployed):
    schema = {"type": "object", "properties": {"principal": {"$ref": "#/definitions/missing"}}}

    r = deployed.admin.patch(version_path(deployed), json={"input_schema": schema})

    assert (r.status_code, r.json()["detail"]) == (
        422, "input_schema is not a valid JSON Schema (Draft 7): $ref '#/definitions/missing' does not point to anything in the schema"
    )


@pytest.mark.parametrize("where", ["remote", "file"])
def test_a_stored_schema_referring_outside_itself_fetches_nothing_at_execute(client, deployed, schema_host, secret_file, where):
    ref = schema_host.url if where == "remote" else secret_file
    # GIVEN such a schema already stored (saved before the rule existed)
    store_schema_unchecked(deployed, input_schema={"type": "object", "properties": {"principal": {"$ref": ref}}})
    # WHEN a consumer executes
    r = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=key(deployed.api_key))
    # THEN the schema is refused as the administrator's to correct: nothing fetched, read or echoed
    assert r.status_code == 400, r.text
    assert r.json()["detail"].startswith("Input validation failed: the engine's input_schema cannot be used ($ref ")
    assert r.json()["detail"].endswith("); an administrator must correct it")
    assert SECRET not in r.text
    assert schema_host.requests == []
    assert jobs_total(deployed) == 0


def test_a_schema_whose_references_loop_is_refused_when_saved(deployed):
    r = deployed.admin.patch(version_path(deployed), json={"input_schema": {"$ref": "#"}})

    assert (r.status_code, r.json()["detail"]) == (422, "input_schema is not a valid JSON Schema (Draft 7): its references loop without end")


# --- finding 7: patterns in linear time -------------------------------------------------------


@pytest.mark.parametrize("keyword", ["pattern", "patternProperties"])
def test_a_catastrophic_pattern_answers_at_once(client, deployed, keyword):
    # GIVEN `^(a+)+$`, which Python's backtracking engine needs 2^n steps to refuse on "a"*n + "!"
    if keyword == "pattern":
        schema = {"type": "object", "properties": {"note": {"type": "string", "pattern": "^(a+)+$"}}}
        inputs = {**INPUTS, "note": "a" * 40 + "!"}
    else:
        schema = {"type": "object", "patternProperties": {"^(a+)+$": {"type": "string"}}, "additionalProperties": {"type": "number"}}
        inputs = {**INPUTS, "a" * 40 + "!": 1}
    # WHEN 41 characters are checked against it (hours for a backtracking engine)
    # THEN the verdict comes (RE2 is linear in the text)
    verdict = verdict_in_time(schema, inputs)
    expected = f"Input validation failed: '{'a' * 40}!' does not match '^(a+)+$' (at 'note')" if keyword == "pattern" else "valid"
    assert verdict == expected  # (patternProperties: the key does not match, so it is an additional number)
    # AND over HTTP, once the schema is saved, execute answers the same
    assert deployed.admin.patch(version_path(deployed), json={"input_schema": schema}).status_code == 200
    r = client.post(deployed.execute_path, json={"inputs": inputs}, headers=key(deployed.api_key))
    assert (r.status_code, r.json().get("detail", "valid")) == ((400, expected) if keyword == "pattern" else (202, "valid")), r.text


def test_references_that_fan_out_are_cut_short_with_a_clear_400(client, deployed):
    # GIVEN a schema whose references double at each of 40 levels (2^40 evaluations for one value)
    definitions = {f"d{i}": {"anyOf": [{"$ref": f"#/definitions/d{i + 1}"}] * 2} for i in range(40)}
    definitions["d40"] = {"type": "string"}
    schema = {"type": "object", "definitions": definitions, "properties": {"note": {"$ref": "#/definitions/d0"}}}
    inputs = {**INPUTS, "note": 1}
    # WHEN inputs are checked against it
    # THEN the check stops at its budget of work, as the administrator's schema to correct
    expected = (
        "Input validation failed: the engine's input_schema cannot be used "
        "(checking these inputs against it follows too many references); an administrator must correct it"
    )
    assert verdict_in_time(schema, inputs) == expected
    assert deployed.admin.patch(version_path(deployed), json={"input_schema": schema}).status_code == 200
    r = client.post(deployed.execute_path, json={"inputs": inputs}, headers=key(deployed.api_key))
    assert (r.status_code, r.json()) == (400, {"detail": expected})


def test_a_large_block_checked_through_a_reference_per_cell_is_within_the_budget(client, deployed):
    # 100 x 100 cells (10,001 values), each through a $ref: linear work, accepted
    schema = {
        "type": "object", "definitions": {"cell": {"type": "number", "minimum": 0}},
        "properties": {"block": {"type": "array", "items": {"type": "array", "items": {"$ref": "#/definitions/cell"}}}},
    }
    assert deployed.admin.patch(version_path(deployed), json={"input_schema": schema}).status_code == 200

    r = client.post(deployed.execute_path, json={"inputs": {**INPUTS, "block": [[1] * 100] * 100}}, headers=key(deployed.api_key))

    assert r.status_code == 202, r.text


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [(r"^(a)\1$", r"invalid escape sequence: \1"), ("^(?=a)", "invalid perl operator: (?="), ("(?<!a)b", "invalid perl operator: (?<!")],
)
def test_a_pattern_without_a_linear_time_match_is_refused_when_saved(deployed, pattern, reason):
    schema = {"type": "object", "properties": {"note": {"type": "string", "pattern": pattern}}}

    r = deployed.admin.patch(version_path(deployed), json={"input_schema": schema})

    assert (r.status_code, r.json()["detail"]) == (
        422, f"input_schema is not a valid JSON Schema (Draft 7): pattern {pattern!r} cannot be evaluated in linear time "
        f"({reason}); backreferences and lookaround are not supported",
    )


def test_a_stored_backreference_pattern_is_a_clear_400_at_execute(client, deployed):
    schema = {"type": "object", "properties": {"note": {"type": "string", "pattern": r"^(a+)+\1$"}}}
    inputs = {**INPUTS, "note": "a" * 40 + "!"}
    assert verdict_in_time(schema, inputs).startswith("Input validation failed: the engine's input_schema cannot be used (pattern ")
    store_schema_unchecked(deployed, input_schema=schema)

    r = client.post(deployed.execute_path, json={"inputs": inputs}, headers=key(deployed.api_key))

    assert r.status_code == 400, r.text
    assert r.json()["detail"].startswith("Input validation failed: the engine's input_schema cannot be used (pattern ")
    assert jobs_total(deployed) == 0


def test_a_regex_format_input_is_compiled_by_re2(client, deployed):
    schema = {"type": "object", "properties": {"filter": {"type": "string", "format": "regex"}}}
    assert deployed.admin.patch(version_path(deployed), json={"input_schema": schema}).status_code == 200

    r = client.post(deployed.execute_path, json={"inputs": {**INPUTS, "filter": r"(a)\1"}}, headers=key(deployed.api_key))

    assert (r.status_code, r.json()["detail"]) == (400, "Input validation failed: '(a)\\\\1' is not a 'regex' (at 'filter')")


# --- finding 8: what execute accepts can be stored and returned -------------------------------


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ('"\\ud800": 1', "a key contains a lone UTF-16 surrogate (like \\ud800), which is not Unicode text"),
        ('"note": "x\\udfff"', "the text at 'note' contains a lone UTF-16 surrogate (like \\ud800), which is not Unicode text"),
        ('"note": ["ok", "a\\u0000b"]', "the text at 'note/1' contains a NUL character (\\u0000), which cannot be stored"),
        ('"a\\u0000": 1', "a key contains a NUL character (\\u0000), which cannot be stored"),
        ('"note": NaN', "NaN at 'note' is not a JSON number: numbers must be finite (RFC 8259)"),
        ('"note": Infinity', "Infinity at 'note' is not a JSON number: numbers must be finite (RFC 8259)"),
        ('"note": -Infinity', "-Infinity at 'note' is not a JSON number: numbers must be finite (RFC 8259)"),
        ('"note": 1e999', "Infinity at 'note' is not a JSON number: numbers must be finite (RFC 8259)"),
        ('"deep": ' + "[" * 900 + "]" * 900, "nesting deeper than 64 levels at 'deep/0/0/0/...'"),
    ],
    ids=["surrogate-key", "surrogate-value", "nul-value", "nul-key", "nan", "infinity", "-infinity", "overflow", "900-deep"],
)
def test_inputs_that_could_not_be_stored_or_returned_are_refused(client, deployed, run_worker, body, reason):
    # WHEN a consumer sends inputs that JSON per RFC 8259, PostgreSQL or the job's own GET could not carry
    r = post_raw(client, deployed, '{"inputs": {"principal": 1, "annual_rate": 0.05, "years": 10, ' + body + "}}")
    # THEN it is a 400 naming the problem (never the bad text itself), and no job exists
    assert r.status_code == 400, r.text
    assert r.json() == {"detail": f"Input validation failed: {reason}"}
    assert jobs_total(deployed) == 0
    assert run_worker() == 0


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/\u0000hook", "http://127.0.0.1:9/ho ok", "http://127.0.0.1:9/\ud800"])
def test_a_webhook_url_that_could_not_be_stored_or_requested_is_refused(client, deployed, url):
    body = json.dumps({"inputs": INPUTS, "webhook_url": url})  # ASCII, with \u escapes as sent on the wire

    r = post_raw(client, deployed, body)

    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["loc"] == ["body", "webhook_url"]
    assert jobs_total(deployed) == 0


@pytest.mark.parametrize("body", ['{"inputs": NaN}', '{"inputs": "\\ud800"}', '{"inputs": {}, "webhook_url": 5e999}', "[" * 900 + "]" * 900])
def test_a_refused_body_is_echoed_in_a_422_that_can_be_sent(client, deployed, body):
    # FastAPI's 422 echoes the refused value; a NaN or a lone surrogate in it used to be a 500
    r = post_raw(client, deployed, body)

    assert r.status_code == 422, r.text
    assert json.loads(r.content)["detail"][0]["loc"][0] == "body"


def test_unusual_but_valid_inputs_are_stored_returned_and_sent(client, deployed, run_worker, run_webhooks):
    # GIVEN inputs at the edges of what is accepted: astral-plane text in keys and values, a big
    # integer, an unmapped key nested 60 deep, a key with a quote and a backslash
    nested: list = []
    for _ in range(58):
        nested = [nested]
    inputs = {**INPUTS, "🙂 ключ": "値 \U0001f600", "big": 10**30, "deep": nested, 'q"\\': "\t"}
    with WebhookReceiver() as receiver:
        r = client.post(deployed.execute_path, json={"inputs": inputs, "webhook_url": receiver.url}, headers=key(deployed.api_key))
        assert r.status_code == 202, r.text
        job_id = r.json()["job_id"]
        # WHEN the job runs and its webhook is sent
        assert run_worker() == 1
        assert run_webhooks() == 1
        posted = receiver.wait_for(1)
    # THEN the job reads back with exactly those inputs, and the webhook carried them
    job = client.get(f"/jobs/{job_id}", headers=key(deployed.api_key))
    assert job.status_code == 200, job.text
    assert job.json()["status"] == "completed" and job.json()["inputs"] == inputs
    assert job.json()["webhook_response_status"] == 200
    assert [p["json"]["inputs"] for p in posted] == [inputs]


# --- finding 6: the size and key count of one job's inputs -------------------------------------


def test_inputs_over_the_size_limit_are_413(client, deployed):
    # GIVEN the default limit of 256 KiB of inputs (SHEETCALC_MAX_INPUT_BYTES)
    inputs = {**INPUTS, "note": "x" * (256 * 1024)}

    r = client.post(deployed.execute_path, json={"inputs": inputs}, headers=key(deployed.api_key))

    assert r.status_code == 413, r.text
    size = len(json.dumps(inputs, separators=(",", ":")))
    assert r.json() == {"detail": f"The inputs are {size} bytes as JSON; the limit is 262144 bytes"}
    assert jobs_total(deployed) == 0


def test_the_input_limits_come_from_the_settings(client, deployed):
    with settings_env(SHEETCALC_MAX_INPUT_BYTES="200", SHEETCALC_MAX_INPUT_KEYS="5"):
        small = client.post(deployed.execute_path, json={"inputs": INPUTS}, headers=key(deployed.api_key))
        large = client.post(deployed.execute_path, json={"inputs": {**INPUTS, "note": "x" * 200}}, headers=key(deployed.api_key))
        many = client.post(
            deployed.execute_path, json={"inputs": {**INPUTS, "extra": {"a": 1, "b": 2, "c": 3}}}, headers=key(deployed.api_key)
        )

    assert small.status_code == 202, small.text
    assert large.status_code == 413
    assert (many.status_code, many.json()) == (400, {"detail": "Input validation failed: more than 5 keys, nested objects included"})


def test_more_input_keys_than_the_limit_are_400(client, deployed):
    inputs = {**INPUTS, **{f"k{i}": i for i in range(1000)}}

    r = client.post(deployed.execute_path, json={"inputs": inputs}, headers=key(deployed.api_key))

    assert (r.status_code, r.json()) == (400, {"detail": "Input validation failed: more than 1000 keys, nested objects included"})
    assert jobs_total(deployed) == 0


# --- schemas are stored and returned too -----------------------------------------------------


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ('{"maximum": NaN}', "NaN at 'maximum' is not a JSON number: numbers must be finite (RFC 8259)"),
        ('{"description": "\\u0000"}', "the text at 'description' contains a NUL character (\\u0000), which cannot be stored"),
        ('{"not": ' + '{"not": ' * 100 + "{}" + "}" * 100 + "}", "nesting deeper than 64 levels at 'not/not/not/not/...'"),
    ],
    ids=["nan", "nul", "deep"],
)
def test_a_schema_that_could_not_be_stored_or_returned_is_refused(deployed, body, reason):
    r = deployed.admin.patch(
        version_path(deployed), content=('{"input_schema": ' + body + "}").encode(), headers={"Content-Type": "application/json"}
    )

    assert (r.status_code, r.json()) == (422, {"detail": f"input_schema cannot be stored: {reason}"})


def test_the_openapi_document_states_the_schema_and_input_rules(client):
    doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    for field in ("input_schema", "output_schema"):
        described = schemas["EngineVersionUpdate"]["properties"][field]["description"]
        assert "`$ref` may point only inside the schema" in described and "RE2" in described
    assert "RFC 8259" in schemas["ExecuteRequest"]["properties"]["inputs"]["description"]
    assert "413" in doc["paths"]["/jobs/execute/{tenant_slug}/{engine_slug}"]["post"]["responses"]
