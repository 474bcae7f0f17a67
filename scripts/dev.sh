#!/usr/bin/env bash
# Set up (a virtualenv with the project) and run the whole service on this machine:
# SQLite, a local S3 and SQS (moto), the API, the worker and the webhook sender, each part in
# its own processes (README, Run it).
# Usage: scripts/dev.sh [--host 127.0.0.1] [--port 8000] [--data-dir .sheetcalc]
#                       [--api-workers 2] [--worker-processes 2]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SHEETCALC_VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[dev]'
exec "$VENV/bin/sheetcalc" dev "$@"
