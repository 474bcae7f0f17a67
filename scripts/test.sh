#!/usr/bin/env bash
# Set up and run every test: a fresh virtualenv with the project, then the whole suite on SQLite
# and again on PostgreSQL (a new database on the local server), then the template checks.
# Usage: scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${SHEETCALC_VENV:-.venv}"
PG_ADMIN_URL="${SHEETCALC_PG_ADMIN:-postgresql://postgres@127.0.0.1:5432/test}"

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[test]'

# Headless Chromium for the dashboard tests comes from Debian, never from `playwright install`.
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "warning: chromium not installed"
fi

PY="$VENV/bin/python"
echo "== tests on SQLite"
env -u DATABASE_URL -u SHEETCALC_TEST_DATABASE_URL "$PY" -m pytest -q "$@"

echo "== tests on PostgreSQL"
DB="sheetcalc_test_$(date +%s)_$$"
"$PY" scripts/pgdb.py create "$PG_ADMIN_URL" "$DB"
trap '"$PY" scripts/pgdb.py drop "$PG_ADMIN_URL" "$DB" || true' EXIT
PG_URL="postgresql+pg8000://postgres@127.0.0.1:5432/$DB"
SHEETCALC_TEST_DATABASE_URL="$PG_URL" "$PY" -m pytest -q "$@"

if [ -f infra/check.sh ]; then
  echo "== template checks"
  bash infra/check.sh
fi
