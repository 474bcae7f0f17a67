#!/usr/bin/env bash
# Set up and run every test: a fresh virtualenv with the project, then, side by side, the whole
# suite on SQLite, the whole suite on PostgreSQL (a new database on the local server) and the
# template checks. Every part runs to its end whatever the others do; each writes its own log,
# printed when all are done, followed by one summary line per part with its time. Exits non-zero
# when any part failed.
# Usage: scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${SHEETCALC_VENV:-.venv}"
PG_ADMIN_URL="${SHEETCALC_PG_ADMIN:-postgresql://postgres@127.0.0.1:5432/test}"
STARTED=$SECONDS

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[test]'

# Headless Chromium for the dashboard tests comes from Debian, never from `playwright install`.
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "warning: chromium not installed"
fi
echo "== set-up done in $((SECONDS - STARTED)) s"

PY="$VENV/bin/python"
LOGS="$(mktemp -d "${TMPDIR:-/tmp}/sheetcalc-test.XXXXXX")"
DB="sheetcalc_test_$(date +%s)_$$"
PG_CREATED=0
cleanup() {
  if [ "$PG_CREATED" = 1 ]; then
    # and the one the e2e tests' dev stacks share (tests/e2e/conftest.py), if they made it
    for name in "$DB" "${DB}_devstacks"; do "$PY" scripts/pgdb.py drop "$PG_ADMIN_URL" "$name" >/dev/null || true; done
  fi
}
trap cleanup EXIT

# part NAME COMMAND...: runs COMMAND in the background, its output in $LOGS/NAME.log, and
# records its exit status and seconds in $LOGS/NAME.status.
part() {
  local name=$1
  shift
  (
    start=$SECONDS
    set +e
    "$@" >"$LOGS/$name.log" 2>&1 </dev/null
    rc=$?
    echo "$rc $((SECONDS - start))" >"$LOGS/$name.status"
  ) &
}

PARTS=(sqlite postgres)
part sqlite env -u DATABASE_URL -u SHEETCALC_TEST_DATABASE_URL "$PY" -m pytest -q -p no:cacheprovider "$@"
if "$PY" scripts/pgdb.py create "$PG_ADMIN_URL" "$DB" >"$LOGS/postgres-create.log" 2>&1; then
  PG_CREATED=1
  part postgres env -u DATABASE_URL SHEETCALC_TEST_DATABASE_URL="postgresql+pg8000://postgres@127.0.0.1:5432/$DB" \
    "$PY" -m pytest -q -p no:cacheprovider "$@"
else
  cp "$LOGS/postgres-create.log" "$LOGS/postgres.log"
  echo "1 0" >"$LOGS/postgres.status"
fi
if [ -f infra/check.sh ]; then
  PARTS+=(template)
  part template bash infra/check.sh
fi
wait

declare -A TITLES=([sqlite]="tests on SQLite" [postgres]="tests on PostgreSQL" [template]="template checks")
for name in "${PARTS[@]}"; do
  echo "== ${TITLES[$name]}"
  cat "$LOGS/$name.log"
done

failed=0
echo "== summary (total $((SECONDS - STARTED)) s)"
for name in "${PARTS[@]}"; do
  read -r rc seconds <"$LOGS/$name.status"
  if [ "$rc" = 0 ]; then verdict=passed; else verdict="FAILED (exit $rc)"; failed=1; fi
  echo "${TITLES[$name]}: $verdict in $seconds s"
done
rm -rf "$LOGS"
exit "$failed"
