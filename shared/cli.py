"""The ``sheetcalc`` command: run the service locally, create tenants, migrate, check workbooks."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path


DEFAULT_DATA_DIR = ".sheetcalc"


def data_dir_of(args: argparse.Namespace) -> Path:
    """The data dir every command uses: ``--data-dir``, else ``SHEETCALC_DATA_DIR``, else .sheetcalc."""
    return Path(args.data_dir or os.environ.get("SHEETCALC_DATA_DIR") or DEFAULT_DATA_DIR).resolve()


def _use_data_dir(args: argparse.Namespace) -> None:
    # The command line wins over the environment; settings are read after this.
    os.environ["SHEETCALC_DATA_DIR"] = str(data_dir_of(args))
    from shared.config import get_settings, reset_settings

    reset_settings()
    get_settings().data_dir.mkdir(parents=True, exist_ok=True)


def _database_shown() -> str:
    """The configured database, fit to print (no password)."""
    from sqlalchemy.engine import make_url

    from shared.config import get_settings

    return make_url(get_settings().effective_database_url).render_as_string(hide_password=True)


def _dev(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from shared.config import get_settings, reset_settings
    from shared.devstack.server import run_dev

    # The process counts are settings (shared/config.py checks them); the options set them.
    for value, variable in ((args.api_workers, "SHEETCALC_DEV_API_WORKERS"),
                            (args.worker_processes, "SHEETCALC_DEV_WORKER_PROCESSES")):
        if value is not None:
            os.environ[variable] = str(value)
    reset_settings()
    try:
        get_settings()
    except ValidationError as exc:
        raise SystemExit(f"sheetcalc dev: {exc}") from None
    run_dev(host=args.host, port=args.port, data_dir=data_dir_of(args))
    return 0


def _create_tenant(args: argparse.Namespace) -> int:
    _use_data_dir(args)
    from shared.db.migrate import upgrade
    from shared.db.session import session_scope
    from shared.errors import SheetcalcError
    from shared.services.tenants import create_tenant

    upgrade()
    try:
        with session_scope() as session:
            created = create_tenant(session, slug=args.slug, name=args.name, admin_email=args.admin_email)
            out = {
                "tenant_id": str(created.tenant.id),
                "slug": created.tenant.slug,
                "admin_email": created.admin.email,
                "temporary_password": created.temporary_password,
            }
    except SheetcalcError as exc:
        print(f"sheetcalc: {exc.message}", file=sys.stderr)
        return 1
    print(json.dumps(out))
    # Where it went: the server must use the same data dir (or DATABASE_URL) to let them log in.
    print(f"sheetcalc: tenant {out['slug']} created in {_database_shown()}", file=sys.stderr)
    return 0


def _migrate(args: argparse.Namespace) -> int:
    _use_data_dir(args)
    from shared.db.migrate import upgrade

    upgrade()
    print("sheetcalc: database is up to date")
    return 0


@contextlib.contextmanager
def _stdout_to_stderr():
    """File descriptor 1 pointed at stderr while engines run: IronCalc prints warnings such as
    `Unexpected feature XmlNode {name: "vertAlign" ...}` straight to the process's stdout (from
    Rust, below Python's sys.stdout), and `check --json` must print JSON only."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _check(args: argparse.Namespace) -> int:
    """Exit 0 when every compared cell matches Excel, 1 when some differ, 2 when unreadable."""
    from shared.calc import available_engines
    from shared.calc.fidelity.choice import check_engine, choose_engine
    from shared.errors import WorkbookError

    try:
        data = Path(args.workbook).read_bytes()
    except OSError as exc:
        print(f"sheetcalc: cannot read {args.workbook}: {exc.strerror}", file=sys.stderr)
        return 2
    if args.engine is not None and args.engine not in available_engines():
        print(f"sheetcalc: unknown engine {args.engine!r}; known: {', '.join(available_engines())}", file=sys.stderr)
        return 2
    try:
        with _stdout_to_stderr():
            if args.engine is None:
                choice = choose_engine(data, timeout_s=args.timeout)
                report = choice.chosen_report()
                for name in choice.timed_out:
                    print(f"sheetcalc: {args.workbook}: {name} did not finish within {args.timeout:g} s; "
                          f"the choice was made without it (raise --timeout)", file=sys.stderr)
            else:
                report = check_engine(data, args.engine, timeout_s=args.timeout)
    except WorkbookError as exc:
        print(f"sheetcalc: {args.workbook}: {exc.message}", file=sys.stderr)
        return 2
    if report.status != "ok":
        print(f"sheetcalc: {args.workbook}: {report.engine} could not check it ({report.status}: {report.error})", file=sys.stderr)
        return 2
    out = {
        "engine": report.engine,
        "cells_compared": report.cells_compared,
        "cells_matching": report.cells_matching,
        "mismatches": [{k: m[k] for k in ("sheet", "cell", "formula", "expected", "actual")} for m in report.mismatches],
        "unsupported_functions": report.unsupported_functions,
    }
    if report.flagged:  # cells the engine is known to get wrong and nothing corrects
        out["flagged"] = report.flagged
    if args.json:
        print(json.dumps(out, default=str))
    else:
        _print_check(out, report)
    return 0 if report.cells_matching == report.cells_compared else 1


def _print_check(out: dict, report) -> None:
    compared, matching = out["cells_compared"], out["cells_matching"]
    rate = f" ({100 * matching / compared:.2f}%)" if compared else ""
    print(f"engine: {out['engine']}")
    print(f"cells compared: {compared}, matching: {matching}{rate}")
    if report.skipped:
        print("left out: " + ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in report.skipped.items()))
    if out["unsupported_functions"]:
        print("unsupported functions: " + ", ".join(out["unsupported_functions"]))
    for flag in out.get("flagged", []):
        print(f"flagged: {flag['sheet']}!{flag['cell']}  {flag['formula']}  {flag['reason']}")
    if out["mismatches"]:
        shown = len(out["mismatches"])
        more = f" (first {shown} of {report.mismatches_total})" if report.mismatches_total > shown else ""
        print(f"mismatches{more}:")
        for m in out["mismatches"]:
            print(f"  {m['sheet']}!{m['cell']}  {m['formula']}  Excel: {m['expected']!r}  {out['engine']}: {m['actual']!r}")


DATA_DIR_HELP = "where SQLite and local secrets live (default: $SHEETCALC_DATA_DIR, else .sheetcalc)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sheetcalc", description="Excel workbooks as calculation engines.")
    sub = parser.add_subparsers(dest="command", required=True)

    dev = sub.add_parser("dev", help="run the whole service on this machine (SQLite, local S3 and SQS)")
    dev.add_argument("--host", default="127.0.0.1")
    dev.add_argument("--port", type=int, default=8000)
    dev.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    dev.add_argument("--api-workers", type=int, default=None,
                     help="API processes (default: SHEETCALC_DEV_API_WORKERS, else 2)")
    dev.add_argument("--worker-processes", type=int, default=None,
                     help="processes polling the jobs queue (default: SHEETCALC_DEV_WORKER_PROCESSES, else 2)")
    dev.set_defaults(func=_dev)

    tenant = sub.add_parser("create-tenant", help="create a tenant and its first administrator")
    tenant.add_argument("--slug", required=True)
    tenant.add_argument("--name", required=True)
    tenant.add_argument("--admin-email", required=True)
    tenant.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    tenant.set_defaults(func=_create_tenant)

    migrate = sub.add_parser("migrate", help="bring the database schema up to date")
    migrate.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    migrate.set_defaults(func=_migrate)

    check = sub.add_parser("check", help="recalculate a workbook and compare with the values Excel saved in it")
    check.add_argument("workbook", metavar="WORKBOOK.xlsx")
    check.add_argument("--engine", default=None, help="ironcalc or formulas (default: the engine the service would choose)")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.add_argument("--timeout", type=float, default=120.0, help="seconds allowed to the formulas engine (default 120)")
    check.set_defaults(func=_check)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
