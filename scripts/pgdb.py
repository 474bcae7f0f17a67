"""Create or drop a scratch PostgreSQL database (used by scripts/test.sh): pgdb.py create|drop ADMIN_URL NAME."""

import sys
import urllib.parse

import pg8000.native

action, admin_url, name = sys.argv[1:4]
url = urllib.parse.urlparse(admin_url)
con = pg8000.native.Connection(
    user=url.username or "postgres", password=url.password, host=url.hostname or "127.0.0.1",
    port=url.port or 5432, database=url.path.lstrip("/") or "postgres",
)
quoted = '"' + name.replace('"', '""') + '"'
con.run(f"CREATE DATABASE {quoted}" if action == "create" else f"DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")
con.close()
