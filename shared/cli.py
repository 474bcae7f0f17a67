"""The ``sheetcalc`` command: run the service locally, create tenants, migrate, check workbooks."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def _use_data_dir(data_dir: str | None) -> None:
    # The command line wins over the environment; settings are read after this.
    if data_dir:
        os.environ["SHEETCALC_DATA_DIR"] = str(Path(data_dir).resolve())
    from shared.config import get_settings, reset_settings

    reset_settings()
    get_settings().data_dir.mkdir(parents=True, exist_ok=True)


def _dev(args: argparse.Namespace) -> int:
    from shared.devstack.server import run_dev

    run_dev(host=args.host, port=args.port, data_dir=Path(args.data_dir or os.environ.get("SHEETCALC_DATA_DIR", ".sheetcalc")))
    return 0


def _create_tenant(args: argparse.Namespace) -> int:
    _use_data_dir(args.data_dir)
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
    return 0


def _migrate(args: argparse.Namespace) -> int:
    _use_data_dir(args.data_dir)
    from shared.db.migrate import upgrade

    upgrade()
    print("sheetcalc: database is up to date")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sheetcalc", description="Excel workbooks as calculation engines.")
    sub = parser.add_subparsers(dest="command", required=True)

    dev = sub.add_parser("dev", help="run the whole service on this machine (SQLite, local S3 and SQS)")
    dev.add_argument("--host", default="127.0.0.1")
    dev.add_argument("--port", type=int, default=8000)
    dev.add_argument("--data-dir", default=None, help="where SQLite and local secrets live (default .sheetcalc)")
    dev.set_defaults(func=_dev)

    tenant = sub.add_parser("create-tenant", help="create a tenant and its first administrator")
    tenant.add_argument("--slug", required=True)
    tenant.add_argument("--name", required=True)
    tenant.add_argument("--admin-email", required=True)
    tenant.add_argument("--data-dir", default=None)
    tenant.set_defaults(func=_create_tenant)

    migrate = sub.add_parser("migrate", help="bring the database schema up to date")
    migrate.add_argument("--data-dir", default=None)
    migrate.set_defaults(func=_migrate)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
