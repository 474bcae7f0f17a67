#!/usr/bin/env bash
# Set up (a virtualenv with the project) and run the whole service on this machine:
# SQLite, a local S3 and SQS (moto), the API, the worker and the webhook sender, each part in
# its own processes; the documentation site is built into site/ and served at /guide/.
# Usage: scripts/dev.sh [--host 127.0.0.1] [--port 8000] [--data-dir .sheetcalc]
#                       [--api-workers 2] [--worker-processes 2]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SHEETCALC_VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[dev,docs]'
# The guide at /guide/ (docs/, mkdocs.yml); the service runs without it, so a failed build only warns.
if [ -x "$VENV/bin/mkdocs" ]; then
  NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --quiet --site-dir site \
    || echo "warning: the guide (/guide/) could not be built" >&2
fi
exec "$VENV/bin/sheetcalc" dev "$@"
