"""template.yaml and the Dockerfiles describe a service that can run: checked without AWS or Docker.

Every function's image command names a handler that imports; every Dockerfile copies files
that exist; queues have dead-letter queues; visibility timeouts fit their consumers; the bucket
expires job results and nothing else; the settings the template sets are ones the code reads.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
LAMBDA_BASE_IMAGE = "public.ecr.aws/lambda/python:3.11"


class CloudFormationLoader(yaml.SafeLoader):
    """A YAML loader that reads CloudFormation short forms (!Ref, !Sub, !GetAtt, ...)."""


def _intrinsic(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node):
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if tag_suffix == "Ref":
        return {"Ref": value}
    if tag_suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{tag_suffix}": value}


CloudFormationLoader.add_multi_constructor("!", _intrinsic)


def load_template() -> dict:
    """template.yaml as plain data, intrinsics as their long forms."""
    return yaml.load(TEMPLATE.read_text(), Loader=CloudFormationLoader)


@pytest.fixture(scope="module")
def template() -> dict:
    return load_template()


def _resources(template: dict, *types: str) -> dict[str, dict]:
    return {name: res for name, res in template["Resources"].items() if res["Type"] in types}


def _functions(template: dict) -> dict[str, dict]:
    return _resources(template, "AWS::Serverless::Function")


def _function_setting(template: dict, function: dict, key: str):
    props = function.get("Properties", {})
    if key in props:
        return props[key]
    return template.get("Globals", {}).get("Function", {}).get(key)


def _ref_name(value) -> str | None:
    """The logical id a Ref or GetAtt points at."""
    if isinstance(value, dict):
        if "Ref" in value:
            return value["Ref"]
        if "Fn::GetAtt" in value:
            return value["Fn::GetAtt"][0]
    return None


def _number(template: dict, value) -> float:
    """A literal number, or a parameter's default."""
    name = _ref_name(value)
    if name is not None:
        value = template["Parameters"][name]["Default"]
    return float(value)


def _dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    lines: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, rest = line.partition(" ")
        lines.append((keyword.upper(), rest.strip()))
    return lines


def _dockerfile_cmd(path: Path) -> list[str]:
    cmds = [rest for keyword, rest in _dockerfile_instructions(path) if keyword == "CMD"]
    assert cmds, f"{path} has no CMD"
    return json.loads(cmds[-1])


def _image_commands(template: dict) -> dict[str, tuple[str, str]]:
    """Function logical id -> (handler path, where it was named)."""
    commands = {}
    for name, function in _functions(template).items():
        props = function["Properties"]
        command = (props.get("ImageConfig") or {}).get("Command")
        where = f"{name} ImageConfig.Command"
        if not command:
            dockerfile = ROOT / function["Metadata"]["Dockerfile"]
            command, where = _dockerfile_cmd(dockerfile), f"{dockerfile.relative_to(ROOT)} CMD"
        assert len(command) == 1, f"{where}: expected one handler, got {command}"
        commands[name] = (command[0], where)
    return commands


def _dockerfiles(template: dict) -> list[Path]:
    return sorted({ROOT / f["Metadata"]["Dockerfile"] for f in _functions(template).values()})


def _import_handler(dotted: str):
    module_name, _, attribute = dotted.rpartition(".")
    module = importlib.import_module(module_name)
    return getattr(module, attribute)


# ----------------------------------------------------------------------------- functions


def test_every_function_is_an_image_built_from_the_repository_root(template):
    functions = _functions(template)
    assert {"ApiFunction", "WorkerFunction", "WebhookFunction", "DeadLetterFunction", "MigrateFunction"} <= set(functions)
    for name, function in functions.items():
        assert function["Properties"]["PackageType"] == "Image", name
        metadata = function["Metadata"]
        assert metadata["DockerContext"] == ".", name
        assert (ROOT / metadata["Dockerfile"]).is_file(), f"{name}: {metadata['Dockerfile']} is missing"


def test_each_of_the_three_functions_has_its_own_dockerfile(template):
    functions = _functions(template)
    for name, folder in (("ApiFunction", "api"), ("WorkerFunction", "worker"), ("WebhookFunction", "webhook")):
        assert functions[name]["Metadata"]["Dockerfile"] == f"functions/{folder}/Dockerfile"


@pytest.mark.parametrize("function_name", ["ApiFunction", "WorkerFunction", "WebhookFunction", "DeadLetterFunction", "MigrateFunction",
                                           "ChecksFunction", "ChecksDeadLetterFunction", "SweeperFunction"])
def test_every_image_command_names_a_handler_that_imports(template, function_name):
    # GIVEN the command the function's image runs (ImageConfig.Command, else the Dockerfile CMD)
    dotted, where = _image_commands(template)[function_name]
    # THEN it is module.attribute, and importing the module yields a callable handler
    assert re.fullmatch(r"[a-z_][\w.]*\.[A-Za-z_]\w*", dotted), f"{where}: {dotted!r}"
    handler = _import_handler(dotted)
    assert callable(handler), f"{where}: {dotted} is not callable"


@pytest.mark.parametrize("dockerfile", ["api", "worker", "webhook"])
def test_every_dockerfile_cmd_names_a_handler_that_imports(dockerfile):
    path = ROOT / "functions" / dockerfile / "Dockerfile"
    command = _dockerfile_cmd(path)
    assert command == [f"functions.{dockerfile}.app.handler"]
    assert callable(_import_handler(command[0]))


def test_dockerfiles_use_the_lambda_python_base_image_and_copy_existing_sources(template):
    for path in _dockerfiles(template):
        instructions = _dockerfile_instructions(path)
        assert instructions[0] == ("FROM", LAMBDA_BASE_IMAGE), path
        copies = [rest for keyword, rest in instructions if keyword in ("COPY", "ADD")]
        assert copies, f"{path} copies nothing"
        for rest in copies:
            assert "--from" not in rest, f"{path}: sources must come from the repository"
            words = [w for w in shlex.split(rest) if not w.startswith("--")]
            for source in words[:-1]:
                assert (ROOT / source).exists(), f"{path}: COPY source {source} does not exist in the repository"
        copied = {w.rstrip("/") for rest in copies for w in shlex.split(rest)[:-1]}
        assert {"pyproject.toml", "shared", "functions"} <= copied, f"{path} must ship the project and its library"


# ----------------------------------------------------------------------------- queues


def test_every_consumed_queue_has_a_dead_letter_queue_or_is_one(template):
    queues = _resources(template, "AWS::SQS::Queue")
    dead_letter_queues = {
        _ref_name(q["Properties"]["RedrivePolicy"]["deadLetterTargetArn"])
        for q in queues.values()
        if "RedrivePolicy" in q.get("Properties", {})
    }
    assert {"JobsDeadLetterQueue", "WebhooksDeadLetterQueue", "ChecksDeadLetterQueue"} <= dead_letter_queues
    for name, queue in queues.items():
        if name in dead_letter_queues:
            continue
        redrive = queue["Properties"].get("RedrivePolicy")
        assert redrive, f"{name} has no redrive policy"
        assert _ref_name(redrive["deadLetterTargetArn"]) in queues
        assert int(redrive["maxReceiveCount"]) >= 2, name


def _sqs_events(template: dict):
    for name, function in _functions(template).items():
        for event_name, event in (function["Properties"].get("Events") or {}).items():
            if event["Type"] == "SQS":
                yield name, function, event_name, event["Properties"]


def test_sqs_event_sources_report_batch_item_failures_and_fit_visibility_timeouts(template):
    queues = _resources(template, "AWS::SQS::Queue")
    consumed = set()
    for name, function, event_name, props in _sqs_events(template):
        assert props.get("FunctionResponseTypes") == ["ReportBatchItemFailures"], f"{name}.{event_name}"
        assert 1 <= int(props["BatchSize"]) <= 10, f"{name}.{event_name}"
        queue_name = _ref_name(props["Queue"])
        consumed.add(queue_name)
        timeout = _number(template, _function_setting(template, function, "Timeout"))
        visibility = _number(template, queues[queue_name]["Properties"].get("VisibilityTimeout", 30))
        assert visibility >= 6 * timeout, f"{queue_name}: visibility {visibility} s < 6 x {name} timeout {timeout} s"
    assert {"JobsQueue", "WebhooksQueue", "JobsDeadLetterQueue", "ChecksQueue", "ChecksDeadLetterQueue"} <= consumed


def test_worker_concurrency_is_a_parameter(template):
    worker = template["Resources"]["WorkerFunction"]["Properties"]
    assert "WorkerReservedConcurrency" in json.dumps(worker["ReservedConcurrentExecutions"])


def test_dead_lettered_jobs_are_handled_by_the_dlq_function(template):
    dlq_function = template["Resources"]["DeadLetterFunction"]["Properties"]
    assert dlq_function["ImageConfig"]["Command"] == ["functions.worker.dlq.handler"]
    queues = [_ref_name(e["Properties"]["Queue"]) for e in dlq_function["Events"].values()]
    assert queues == ["JobsDeadLetterQueue", "SlowJobsDeadLetterQueue"]


def test_slow_versions_have_a_lane_of_their_own(template):
    # GIVEN the slow lane: its queue, taken by a worker function of its own, one job at a time,
    # with a reserved concurrency set by a parameter
    slow = template["Resources"]["SlowWorkerFunction"]["Properties"]
    assert slow["ImageConfig"]["Command"] == ["functions.worker.app.handler"]
    assert _consumed_queues(template["Resources"]["SlowWorkerFunction"]) == ["SlowJobsQueue"]
    assert "SlowLaneConcurrency" in json.dumps(slow["ReservedConcurrentExecutions"])
    # AND every function reads its address, and whoever queues jobs may queue them there
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    assert _ref_name(variables["SHEETCALC_SLOW_JOBS_QUEUE_URL"]) == "SlowJobsQueue"
    for name in ("ApiFunction", "WorkerFunction", "SweeperFunction"):
        policies = json.dumps(template["Resources"][name]["Properties"]["Policies"])
        assert "SlowJobsQueue" in policies, name


def _consumed_queues(function: dict) -> list[str]:
    return [_ref_name(e["Properties"]["Queue"]) for e in (function["Properties"].get("Events") or {}).values() if e["Type"] == "SQS"]


def _sends_to(function: dict) -> set[str]:
    return {
        _ref_name(p["SQSSendMessagePolicy"]["QueueName"])
        for p in function["Properties"].get("Policies", [])
        if isinstance(p, dict) and "SQSSendMessagePolicy" in p
    }


def test_version_checks_have_their_own_queue_and_function(template):
    from shared.config import Settings

    resources = template["Resources"]
    # GIVEN the jobs queue and the checks queue: each has one consumer, neither reads the other's
    assert _consumed_queues(resources["WorkerFunction"]) == ["JobsQueue"]
    checks = resources["ChecksFunction"]
    assert checks["Properties"]["ImageConfig"]["Command"] == ["functions.checks.app.handler"]
    assert _consumed_queues(checks) == ["ChecksQueue"]
    # THEN a check has the function's whole timeout: one message per invocation, the formulas
    # deadline inside the timeout with room for the copy to the document library
    (event,) = [e for e in checks["Properties"]["Events"].values() if e["Type"] == "SQS"]
    assert int(event["Properties"]["BatchSize"]) == 1
    deadline = Settings.model_fields["fidelity_timeout_seconds"].default
    assert _number(template, _function_setting(template, checks, "Timeout")) >= deadline + 30
    # AND the API (uploads) and the worker (messages an earlier release queued) may queue checks
    assert "ChecksQueue" in _sends_to(resources["ApiFunction"]) and "ChecksQueue" in _sends_to(resources["WorkerFunction"])
    assert template["Globals"]["Function"]["Environment"]["Variables"]["SHEETCALC_CHECKS_QUEUE_URL"] == {"Ref": "ChecksQueue"}


def test_dead_lettered_checks_are_handled_by_their_dlq_function(template):
    resources = template["Resources"]
    redrive = resources["ChecksQueue"]["Properties"]["RedrivePolicy"]
    assert _ref_name(redrive["deadLetterTargetArn"]) == "ChecksDeadLetterQueue"
    dlq_function = resources["ChecksDeadLetterFunction"]["Properties"]
    assert dlq_function["ImageConfig"]["Command"] == ["functions.checks.dlq.handler"]
    assert _consumed_queues(resources["ChecksDeadLetterFunction"]) == ["ChecksDeadLetterQueue"]


# ----------------------------------------------------------------------------- storage


def _expiring_prefixes(template: dict) -> list[str]:
    rules = template["Resources"]["WorkbookBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    prefixes = []
    for rule in rules:
        if "ExpirationInDays" not in rule:
            continue
        prefix = rule.get("Prefix", (rule.get("Filter") or {}).get("Prefix"))
        assert prefix, "an expiration rule without a prefix would expire uploaded workbooks too"
        assert _ref_name(rule["ExpirationInDays"]) == "ResultRetentionDays"
        prefixes.append(prefix)
    return prefixes


def test_bucket_is_encrypted_private_and_expires_job_results(template):
    props = template["Resources"]["WorkbookBucket"]["Properties"]
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert all(props["PublicAccessBlockConfiguration"][k] is True for k in (
        "BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"))
    assert _expiring_prefixes(template)


def test_job_results_expire_and_uploaded_workbooks_do_not(template):
    # The S3 lifecycle rule filters on a key prefix (no wildcards), so job results must live
    # under a prefix of their own: results/{tenant_id}/{job_id}.xlsx.
    from shared.adapters import storage

    tenant, engine, version, job = "t-1", "e-1", "v-1", "j-1"
    prefixes = _expiring_prefixes(template)
    result_key = storage.job_result_key(tenant, job)
    assert any(result_key.startswith(p) for p in prefixes), f"{result_key} is not under an expiring prefix {prefixes}"
    for kept in (storage.version_prefix(tenant, engine, version), storage.engine_prefix(tenant, engine)):
        assert not any(kept.startswith(p) for p in prefixes), f"{kept} would expire"


# ----------------------------------------------------------------------------- configuration


def test_environment_names_are_ones_the_code_reads(template):
    from shared.config import Settings
    from shared.secrets import SECRET_ARN_ENV

    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    fields = set(Settings.model_fields)
    for name in variables:
        if name.startswith("SHEETCALC_") and name != SECRET_ARN_ENV:
            assert name.removeprefix("SHEETCALC_").lower() in fields, f"{name} is not a setting"
    assert variables["SHEETCALC_ENV"] == "prod"
    assert variables["POWERTOOLS_SERVICE_NAME"] == "sheetcalc"
    assert "LOG_LEVEL" in variables
    assert template["Globals"]["Function"]["Tracing"] == "Active"


def test_every_function_may_read_the_secrets_it_is_told_about(template):
    secret_arns = template["Globals"]["Function"]["Environment"]["Variables"]["SHEETCALC_SECRET_ARN"]
    secrets = set(re.findall(r"\$\{(\w+)\}", secret_arns["Fn::Sub"]))
    assert secrets == set(_resources(template, "AWS::SecretsManager::Secret"))
    for name, function in _functions(template).items():
        readable = {
            _ref_name(p["AWSSecretsManagerGetSecretValuePolicy"]["SecretArn"])
            for p in function["Properties"].get("Policies", [])
            if isinstance(p, dict) and "AWSSecretsManagerGetSecretValuePolicy" in p
        }
        assert secrets <= readable, f"{name} cannot read {secrets - readable}"


def test_migrations_run_on_deploy_before_the_functions_change(template):
    migration = template["Resources"]["DatabaseMigration"]
    assert migration["Type"] == "AWS::CloudFormation::CustomResource"
    assert _ref_name(migration["Properties"]["ServiceToken"]).startswith("MigrateFunction")
    for name in ("ApiFunction", "WorkerFunction", "WebhookFunction", "DeadLetterFunction", "ChecksFunction", "ChecksDeadLetterFunction",
                 "SweeperFunction"):
        assert template["Resources"][name].get("DependsOn") == "DatabaseMigration", name


def test_alarms_watch_dead_letters_worker_errors_and_api_5xx(template):
    watched = set()
    for alarm in _resources(template, "AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        target = _ref_name(props["Dimensions"][0]["Value"])
        watched.add((props["Namespace"], props["MetricName"], target))
        assert props.get("AlarmActions"), "an alarm that notifies nobody"
    assert ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "JobsDeadLetterQueue") in watched
    assert ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "WebhooksDeadLetterQueue") in watched
    assert ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "ChecksDeadLetterQueue") in watched
    assert ("AWS/Lambda", "Errors", "ChecksFunction") in watched
    assert ("AWS/Lambda", "Errors", "WorkerFunction") in watched
    assert ("AWS/Lambda", "Errors", "SweeperFunction") in watched
    assert ("AWS/ApiGateway", "5xx", "HttpApi") in watched


def test_the_http_api_routes_everything_including_the_dashboard_to_the_api_function(template):
    events = template["Resources"]["ApiFunction"]["Properties"]["Events"]
    routes = [e["Properties"] for e in events.values() if e["Type"] == "HttpApi"]
    # No Path/Method: the $default route, which also serves /dashboard/.
    assert any("Path" not in r and "Method" not in r for r in routes)


@pytest.mark.skipif(os.environ.get("SHEETCALC_RUN_SAM_CHECK") != "1", reason="set SHEETCALC_RUN_SAM_CHECK=1 to run sam validate and cfn-lint")
def test_sam_validate_and_cfn_lint_pass():
    result = subprocess.run(
        ["bash", str(ROOT / "infra" / "check.sh")], cwd=ROOT, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=1800,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_schedule_sweeps_up_work_whose_message_was_lost(template):
    # GIVEN the sweeper function (a message can be lost after its row is committed, on AWS too)
    sweeper = template["Resources"]["SweeperFunction"]["Properties"]
    assert sweeper["ImageConfig"]["Command"] == ["functions.sweeper.app.handler"]
    # THEN an EventBridge schedule runs it, and it may send to the three queues it refills
    schedules = [e["Properties"]["Schedule"] for e in sweeper["Events"].values() if e["Type"] == "Schedule"]
    assert schedules and all(s.startswith("rate(") for s in schedules)
    assert {"JobsQueue", "WebhooksQueue", "ChecksQueue"} <= _sends_to(template["Resources"]["SweeperFunction"])
