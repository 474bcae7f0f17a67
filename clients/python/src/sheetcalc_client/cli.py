"""``sheetcalc-client``: run engines, batches and downloads as a consumer, check webhooks,
generate models, and manage engines as an administrator. ``sheetcalc-client -h`` lists it all."""

from __future__ import annotations

import argparse
import csv
import getpass
import json
import sys
from pathlib import Path
from typing import Any

from sheetcalc_client._output import print_json, print_table, progress
from sheetcalc_client.admin import AdminClient
from sheetcalc_client.client import Client
from sheetcalc_client.config import Profile, load_profile
from sheetcalc_client.errors import JobFailed, SheetcalcError
from sheetcalc_client.generate import class_prefix, generate_models, module_name
from sheetcalc_client.webhooks import DEFAULT_TOLERANCE, verify


class UsageError(Exception):
    pass


def value(text: str) -> Any:
    """A flag's or a CSV cell's value: JSON when it reads as JSON (numbers, true, lists), else text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def read_input_sets(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The input sets of ``run``/``batch``: ``--input k=v`` flags, a JSON file (an object or a
    list of them), or CSV rows (a header of input names; one set per row)."""
    sets: list[dict[str, Any]] = []
    if args.json:
        text = sys.stdin.read() if args.json == "-" else Path(args.json).read_text()
        loaded = json.loads(text)
        sets = loaded if isinstance(loaded, list) else [loaded]
    elif args.csv:
        with (sys.stdin if args.csv == "-" else open(args.csv, newline="")) as handle:
            sets = [{k: value(v) for k, v in row.items() if k and v != ""} for row in csv.DictReader(handle)]
    flags = {}
    for pair in args.input or []:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--input {pair!r}: write it as name=value")
        flags[name] = value(text)
    if flags:
        sets = [{**item, **flags} for item in sets] if sets else [flags]
    if not sets or not all(isinstance(item, dict) for item in sets):
        raise UsageError("give the inputs: --input name=value, --json FILE, or --csv FILE")
    return sets


def _consumer(profile: Profile, args: argparse.Namespace) -> Client:
    if not profile.api_key:
        raise UsageError(f"no API key: --api-key, SHEETCALC_API_KEY, or api_key in profile {profile.name!r} ({profile.source})")
    return Client(profile.url, profile.api_key, wait=args.wait if getattr(args, "wait", None) else 20.0,
                  job_timeout=getattr(args, "timeout", None) or 300.0)


def _admin(profile: Profile) -> AdminClient:
    if not profile.admin_email:
        raise UsageError("administrator commands need --admin-email, SHEETCALC_ADMIN_EMAIL or admin_email in the profile")
    password = profile.admin_password or getpass.getpass(f"Password for {profile.admin_email}: ")
    admin = AdminClient(profile.url)
    admin.login(profile.admin_email, password)
    return admin


def _engine_id(admin: AdminClient, ref: str) -> str:
    """An engine's id from its id or its slug."""
    for engine in admin.engines():
        if ref in (engine["id"], engine["slug"]):
            return engine["id"]
    raise UsageError(f"no engine {ref!r} in this tenant")


# --- consumer commands ----------------------------------------------------------------------------


def cmd_run(profile: Profile, args: argparse.Namespace) -> int:
    sets = read_input_sets(args)
    rows: list[dict[str, Any]] = []
    failed = 0
    with _consumer(profile, args) as client:
        if len(sets) == 1:
            job_ids = [None]
        else:  # one job per row: all queued first, then collected
            with progress("queueing", len(sets)) as update:
                job_ids = []
                for i, inputs in enumerate(sets):
                    job_ids.append(client.submit(args.engine, inputs, webhook_url=args.webhook_url))
                    update(i + 1)
        with progress("calculating", len(sets)) as update:
            for i, (inputs, job_id) in enumerate(zip(sets, job_ids)):
                try:
                    if job_id is None:
                        outputs = client.execute(args.engine, inputs, webhook_url=args.webhook_url)
                    else:
                        job = client.wait_for(job_id)
                        if job.status == "failed":
                            raise JobFailed(job)
                        outputs = job.outputs or {}
                    rows.append({"row": i, "status": "completed", **outputs} if args.output == "table" else
                                {"row": i, "status": "completed", "outputs": outputs})
                except JobFailed as exc:
                    failed += 1
                    rows.append({"row": i, "status": "failed", "error": exc.error_message})
                update(i + 1)
    if args.output == "table":
        print_table(rows)
    elif len(rows) == 1 and "outputs" in rows[0]:
        print_json(rows[0]["outputs"])
    else:
        print_json(rows)
    return 1 if failed else 0


def cmd_batch(profile: Profile, args: argparse.Namespace) -> int:
    sets = read_input_sets(args)
    with _consumer(profile, args) as client:
        accepted = client.submit_batch(args.engine, sets, webhook_url=args.webhook_url)
        print(f"batch {accepted.batch_id}: {accepted.jobs} jobs queued, {len(accepted.invalid)} input sets refused",
              file=sys.stderr)
        with progress("batch", accepted.total) as update:
            status = client.wait_for_batch(accepted.batch_id, on_progress=lambda s: update(s.counts.finished))
        if args.xlsx:
            client.batch_workbook(accepted.batch_id, args.xlsx)
            print(f"saved {args.xlsx}", file=sys.stderr)
        results = client.batch_results(accepted.batch_id)
        if args.output == "table":
            print_table([{"index": r.index, "status": r.status, **(r.outputs or {}), **({"error": r.error} if r.error else {})}
                         for r in results])
        else:
            for result in results:
                print(json.dumps(result.model_dump(exclude_none=True), ensure_ascii=False))
    counts = status.counts
    return 1 if counts.failed or counts.invalid else 0


def cmd_download(profile: Profile, args: argparse.Namespace) -> int:
    with _consumer(profile, args) as client:
        print(client.download(args.job_id, args.path))
    return 0


def cmd_about(profile: Profile, args: argparse.Namespace) -> int:
    with _consumer(profile, args) as client:
        print_json(client.about(args.engine).model_dump(mode="json"))
    return 0


def cmd_job(profile: Profile, args: argparse.Namespace) -> int:
    with _consumer(profile, args) as client:
        print_json(client.job(args.job_id).model_dump(mode="json", exclude_none=True))
    return 0


def cmd_generate(profile: Profile, args: argparse.Namespace) -> int:
    with _consumer(profile, args) as client:
        contract = client.contract(args.engine)
    prefix = args.prefix or class_prefix(args.engine)
    output = Path(args.output or f"{module_name(args.engine)}.py")
    generate_models(contract, output, prefix=prefix)
    print(f"wrote {output}: {prefix}Inputs, {prefix}Outputs", file=sys.stderr)
    print(f"  from {output.stem} import {prefix}Inputs, {prefix}Outputs\n"
          f"  engine = client.engine({args.engine!r}, inputs={prefix}Inputs, outputs={prefix}Outputs)", file=sys.stderr)
    return 0


def cmd_verify_webhook(profile: Profile, args: argparse.Namespace) -> int:
    import os

    secrets = args.secret or ([os.environ["SHEETCALC_WEBHOOK_SECRET"]] if os.environ.get("SHEETCALC_WEBHOOK_SECRET") else [])
    if not secrets:
        raise UsageError("give the signing secret: --secret or SHEETCALC_WEBHOOK_SECRET")
    body = sys.stdin.buffer.read() if args.body == "-" else Path(args.body).read_bytes()
    ok = verify(body, args.signature, secrets, args.tolerance)
    print("valid" if ok else "invalid: the signature does not sign this body with the secret, or is too old")
    return 0 if ok else 1


# --- administrator commands -----------------------------------------------------------------------


def cmd_engines(profile: Profile, args: argparse.Namespace) -> int:
    with _admin(profile) as admin:
        if args.action == "create":
            print_json(admin.create_engine(args.name, slug=args.slug, description=args.description))
            return 0
        engines = admin.engines()
    if args.json_output:
        print_json(engines)
    else:
        print_table([{"id": e["id"], "slug": e["slug"], "name": e["name"],
                      "active version": (e.get("active_version") or {}).get("version", "")} for e in engines])
    return 0


def cmd_versions(profile: Profile, args: argparse.Namespace) -> int:
    with _admin(profile) as admin:
        engine_id = _engine_id(admin, args.engine)
        if args.action == "upload":
            made = admin.upload_version(engine_id, args.version, args.file)
            if args.activate:
                admin.activate_version(engine_id, made["id"], override_reason=args.override_reason)
            print_json(made)
        elif args.action == "activate":
            print_json(admin.activate_version(engine_id, args.version_id, override_reason=args.override_reason))
        else:
            versions = admin.engine(engine_id)["versions"]
            print_table([{"id": v["id"], "version": v["version"], "active": v.get("is_active"), "created": v.get("created_at")}
                         for v in versions])
    return 0


def cmd_export(profile: Profile, args: argparse.Namespace) -> int:
    with _admin(profile) as admin:
        print(admin.export_engine(_engine_id(admin, args.engine), args.path))
    return 0


def cmd_import(profile: Profile, args: argparse.Namespace) -> int:
    with _admin(profile) as admin:
        print_json(admin.import_engine(args.file, slug=args.slug, name=args.name))
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="sheetcalc-client", description=(
        "Run sheetcalc engines, batches and downloads as a consumer, check webhook signatures, generate "
        "models, and manage engines as an administrator."))
    top.add_argument("--profile", help="a profile of the config file (SHEETCALC_PROFILE)")
    top.add_argument("--url", help="the service's base URL (SHEETCALC_URL)")
    top.add_argument("--api-key", help="the consumer's API key (SHEETCALC_API_KEY)")
    top.add_argument("--admin-email", help="an administrator's e-mail, for engines, versions, export, import (SHEETCALC_ADMIN_EMAIL; "
                                           "the password from SHEETCALC_ADMIN_PASSWORD or asked)")
    sub = top.add_subparsers(dest="command", required=True)

    def inputs(p: argparse.ArgumentParser) -> None:
        p.add_argument("engine", help="TENANT/ENGINE (or ENGINE: the tenant from the key)")
        p.add_argument("--input", "-i", action="append", metavar="NAME=VALUE", help="an input (repeat); VALUE is JSON or text")
        p.add_argument("--json", metavar="FILE", help="inputs as JSON: an object, or a list of them (- for stdin)")
        p.add_argument("--csv", metavar="FILE", help="CSV with a header of input names: one job per row (- for stdin)")
        p.add_argument("--webhook-url")
        p.add_argument("--output", "-o", choices=("json", "table"), default="json")
        p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the results (300)")

    p = sub.add_parser("run", help="execute an engine: one job, or one per CSV row / JSON list item")
    inputs(p)
    p.add_argument("--wait", type=float, default=20.0, help="seconds the service holds the answer (at most 25)")
    p.set_defaults(handler=cmd_run)
    p = sub.add_parser("batch", help="run many input sets as one batch; results as JSON lines or a table")
    inputs(p)
    p.add_argument("--xlsx", metavar="PATH", help="also save the results as a workbook")
    p.set_defaults(handler=cmd_batch)
    p = sub.add_parser("download", help="save a completed job's filled workbook")
    p.add_argument("job_id")
    p.add_argument("path", nargs="?", default=".", help="a file, or a folder for the suggested name (.)")
    p.set_defaults(handler=cmd_download)
    p = sub.add_parser("about", help="an engine's active version and schemas")
    p.add_argument("engine")
    p.set_defaults(handler=cmd_about)
    p = sub.add_parser("job", help="a job's status and results")
    p.add_argument("job_id")
    p.set_defaults(handler=cmd_job)
    p = sub.add_parser("generate", help="pydantic models of an engine's inputs and outputs (needs the [cli] extra)")
    p.add_argument("engine", help="TENANT/ENGINE")
    p.add_argument("--output", "-o", help="the module to write (ENGINE_models.py)")
    p.add_argument("--prefix", help="the classes' prefix (from the engine's slug: LoanQuote)")
    p.set_defaults(handler=cmd_generate)
    p = sub.add_parser("verify-webhook", help="check a webhook's Sheetcalc-Signature against its raw body")
    p.add_argument("--secret", action="append", help="the signing secret (repeat during a rotation; SHEETCALC_WEBHOOK_SECRET)")
    p.add_argument("--signature", required=True, help="the Sheetcalc-Signature header's value")
    p.add_argument("--body", default="-", help="a file with the raw body (- for stdin)")
    p.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE, help="seconds t may be from now (300)")
    p.set_defaults(handler=cmd_verify_webhook)

    p = sub.add_parser("engines", help="administrators: list engines, or create one")
    p.add_argument("action", nargs="?", choices=("list", "create"), default="list")
    p.add_argument("--name")
    p.add_argument("--slug")
    p.add_argument("--description")
    p.add_argument("--json", dest="json_output", action="store_true", help="print JSON, not a table")
    p.set_defaults(handler=cmd_engines)
    p = sub.add_parser("versions", help="administrators: an engine's versions: list, upload, activate")
    p.add_argument("action", choices=("list", "upload", "activate"))
    p.add_argument("engine", help="the engine's id or slug")
    p.add_argument("file", nargs="?", help="upload: the workbook")
    p.add_argument("--version", help="upload: the version string")
    p.add_argument("--version-id", help="activate: the version's id")
    p.add_argument("--activate", action="store_true", help="upload: activate it too")
    p.add_argument("--override-reason", help="activate despite failing test cases, saying why")
    p.set_defaults(handler=cmd_versions)
    p = sub.add_parser("export", help="administrators: save an engine as a zip")
    p.add_argument("engine", help="the engine's id or slug")
    p.add_argument("path")
    p.set_defaults(handler=cmd_export)
    p = sub.add_parser("import", help="administrators: make an engine from an exported zip")
    p.add_argument("file")
    p.add_argument("--slug", help="the new engine's slug (the archive's, with a suffix when taken)")
    p.add_argument("--name", help="the new engine's name (the archive's)")
    p.set_defaults(handler=cmd_import)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "engines" and args.action == "create" and not args.name:
            raise UsageError("engines create needs --name")
        if args.command == "versions" and args.action == "upload" and not (args.file and args.version):
            raise UsageError("versions upload needs FILE and --version")
        if args.command == "versions" and args.action == "activate" and not args.version_id:
            raise UsageError("versions activate needs --version-id")
        profile = load_profile(args.profile, url=args.url, api_key=args.api_key, admin_email=args.admin_email)
        return args.handler(profile, args)
    except UsageError as exc:
        print(f"sheetcalc-client: {exc}", file=sys.stderr)
        return 2
    except (SheetcalcError, ValueError, OSError) as exc:
        print(f"sheetcalc-client: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
