#!/usr/bin/env bash
# Set up and run every test: a fresh virtualenv with the project, then, side by side, the whole
# suite on SQLite, the whole suite on PostgreSQL (a new database on the local server, or on a
# throwaway server it starts when none answers) and the template checks. Every part runs to its
# end whatever the others do and writes its own log. While they run it prints, every minute, one
# line per part (tests done, passed and failed so far); at the end the verdicts, each failed
# part's first failure, the slowest tests, then every part's full log and one summary line per
# part. Exits non-zero when any part failed. Reads no standard input.
#
# Usage: scripts/test.sh [pytest args...]        e.g. scripts/test.sh tests/test_migrations.py
# Environment:
#   SHEETCALC_VENV                  the virtualenv (.venv)
#   SHEETCALC_PG_ADMIN              a PostgreSQL server's admin URL, where the run creates and drops
#                                   its databases (postgresql://postgres@127.0.0.1:5432/test); when
#                                   nothing answers there, a throwaway server is started instead
#   SHEETCALC_PG_THROWAWAY=1        start the throwaway server even when one answers
#   SHEETCALC_TEST_PROGRESS_SECONDS seconds between progress lines (60)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${SHEETCALC_VENV:-.venv}"
PG_ADMIN_URL="${SHEETCALC_PG_ADMIN:-postgresql://postgres@127.0.0.1:5432/test}"
EVERY="${SHEETCALC_TEST_PROGRESS_SECONDS:-60}"
STARTED=$SECONDS

LOGS="$(mktemp -d "${TMPDIR:-/tmp}/sheetcalc-test.XXXXXX")"
trap 'rm -rf "$LOGS"' EXIT

# The virtualenv with the project and its test extras; pip's output is shown only if it fails.
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
PY="$VENV/bin/python"
if ! { "$PY" -m pip install --quiet --disable-pip-version-check --upgrade pip \
       && "$PY" -m pip install --quiet --disable-pip-version-check -e '.[test]' -e 'clients/python[cli]'; } >"$LOGS/pip.log" 2>&1 </dev/null; then
  cat "$LOGS/pip.log"
  echo "== set-up failed: pip could not install the project into $VENV"
  exit 1
fi

# Debian packages the tests use, installed with apt-get when missing and we are root: chromium
# for the console's browser tests (never `playwright install`), nodejs for the guide's JavaScript
# webhook verifier, and postgresql's binaries when no server answers and a throwaway one is needed.
PG_THROWAWAY=0
if [ "${SHEETCALC_PG_THROWAWAY:-0}" = 1 ] || ! "$PY" scripts/pgserver.py answers "$PG_ADMIN_URL"; then
  PG_THROWAWAY=1
fi
MISSING=()
[ -x /usr/bin/chromium ] || MISSING+=(chromium)
command -v node >/dev/null 2>&1 || MISSING+=(nodejs)
if [ "$PG_THROWAWAY" = 1 ] && ! "$PY" scripts/pgserver.py bindir >/dev/null; then MISSING+=(postgresql); fi
if [ ${#MISSING[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "== installing Debian's ${MISSING[*]}"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${MISSING[@]}" >/dev/null) </dev/null \
      || echo "warning: apt-get could not install ${MISSING[*]}"
  else
    echo "warning: ${MISSING[*]} missing, and only root with apt-get installs them: the tests that need them fail or skip"
  fi
fi

DB="sheetcalc_test_$(date +%s)_$$"
PG_DIR=""
PG_CREATED=0
WATCHER=""
cleanup() {
  if [ -n "$WATCHER" ]; then kill "$WATCHER" 2>/dev/null || true; fi
  if [ -n "$PG_DIR" ]; then
    "$PY" scripts/pgserver.py stop "$PG_DIR" || true
  elif [ "$PG_CREATED" = 1 ]; then
    # and the one the e2e tests' dev stacks share (tests/e2e/conftest.py), if they made it
    for name in "$DB" "${DB}_devstacks" "${DB}_elsewhere"; do "$PY" scripts/pgdb.py drop "$PG_ADMIN_URL" "$name" >/dev/null || true; done
  fi
  rm -rf "$LOGS"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A throwaway PostgreSQL server (scripts/pgserver.py): this machine's binaries, a free port,
# deleted at exit. If it cannot start, the PostgreSQL part fails with the reason; the rest runs.
PG_READY=1
if [ "$PG_THROWAWAY" = 1 ]; then
  PG_DIR="$(mktemp -d /tmp/sheetcalc-pg.XXXXXX)"
  if url="$("$PY" scripts/pgserver.py start "$PG_DIR" 2>"$LOGS/postgres-setup.log")"; then
    PG_ADMIN_URL="$url"
    echo "== no PostgreSQL server at SHEETCALC_PG_ADMIN (or SHEETCALC_PG_THROWAWAY=1): started a throwaway one at $PG_ADMIN_URL"
  else
    echo "scripts/pgserver.py could not start a throwaway PostgreSQL server" >>"$LOGS/postgres-setup.log"
    PG_READY=0
  fi
fi
if [ "$PG_READY" = 1 ]; then
  if "$PY" scripts/pgdb.py create "$PG_ADMIN_URL" "$DB" >"$LOGS/postgres-setup.log" 2>&1; then
    PG_CREATED=1
  else
    echo "scripts/pgdb.py could not create the tests' database on the PostgreSQL server (SHEETCALC_PG_ADMIN)" >>"$LOGS/postgres-setup.log"
    PG_READY=0
  fi
fi
echo "== set-up done in $((SECONDS - STARTED)) s; progress every $EVERY s"

# part NAME COMMAND...: runs COMMAND in the background, its output in $LOGS/NAME.log, and
# records its exit status and seconds in $LOGS/NAME.status.
PIDS=()
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
  PIDS+=("$!")
}
# pytest with tests/progress_plugin.py writing the part's progress to $LOGS/NAME.progress
pytest_part() {
  local name=$1
  shift
  part "$name" "$@" "$PY" -m pytest -q -p no:cacheprovider -p tests.progress_plugin --progress-file "$LOGS/$name.progress" "${ARGS[@]}"
}

ARGS=("$@")
PARTS=(sqlite postgres)
pytest_part sqlite env -u DATABASE_URL -u SHEETCALC_TEST_DATABASE_URL
if [ "$PG_READY" = 1 ]; then
  pytest_part postgres env -u DATABASE_URL \
    SHEETCALC_TEST_DATABASE_URL="$("$PY" scripts/pgserver.py url "$PG_ADMIN_URL" "$DB")"
else
  cp "$LOGS/postgres-setup.log" "$LOGS/postgres.log"
  echo "1 0" >"$LOGS/postgres.status"
fi
if [ -f infra/check.sh ]; then
  PARTS+=(template)
  part template bash infra/check.sh
fi

"$PY" scripts/progress.py watch "$LOGS" "$EVERY" "${PARTS[@]}" </dev/null &
WATCHER=$!
if [ ${#PIDS[@]} -gt 0 ]; then wait "${PIDS[@]}" || true; fi
wait "$WATCHER" 2>/dev/null || true
WATCHER=""

"$PY" scripts/progress.py report "$LOGS" "${PARTS[@]}" || echo "warning: the end report failed"
for name in "${PARTS[@]}"; do
  echo "== full log: $name"
  cat "$LOGS/$name.log"
done
"$PY" scripts/progress.py summary "$LOGS" "$((SECONDS - STARTED))" "${PARTS[@]}" || echo "warning: the summary failed"

failed=0
for name in "${PARTS[@]}"; do
  rc=1
  if [ -f "$LOGS/$name.status" ]; then read -r rc _ <"$LOGS/$name.status"; fi
  if [ "$rc" != 0 ]; then failed=1; fi
done
exit "$failed"
