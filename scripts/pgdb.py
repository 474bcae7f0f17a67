"""Create or drop a scratch PostgreSQL database (scripts/test.sh, the e2e tests, the benches):
pgdb.py create|ensure|drop ADMIN_URL NAME ("ensure" creates it unless it exists)."""

import sys
import urllib.parse

import pg8000.native

action, admin_url, name = sys.argv[1:4]
if action not in ("create", "ensure", "drop"):
    sys.exit(__doc__)
url = urllib.parse.urlparse(admin_url)
con = pg8000.native.Connection(
    user=url.username or "postgres", password=url.password, host=url.hostname or "127.0.0.1",
    port=url.port or 5432, database=url.path.lstrip("/") or "postgres",
    timeout=60,  # something that answers on the port but is not PostgreSQL must not hang the caller
)
quoted = '"' + name.replace('"', '""') + '"'
if action == "drop":
    con.run(f"DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")
elif action == "create" or not con.run("SELECT 1 FROM pg_database WHERE datname = :name", name=name):
    con.run(f"CREATE DATABASE {quoted}")
con.close()
