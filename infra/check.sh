#!/usr/bin/env bash
# Validate template.yaml offline: `sam validate --lint` and `cfn-lint`.
#
# The SAM CLI pins its own boto3/pydantic, so it lives in a virtualenv of its own, outside
# the project's: ${SHEETCALC_TOOLS_DIR:-$HOME/.cache/sheetcalc-tools}/sam-venv. The first run
# creates it from PyPI; later runs reuse it. Reads no standard input; exits non-zero on failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${SHEETCALC_TOOLS_DIR:-$HOME/.cache/sheetcalc-tools}"
VENV="$TOOLS_DIR/sam-venv"
PYTHON="${PYTHON:-python3}"
TEMPLATE="${TEMPLATE:-$ROOT/template.yaml}"

if [ ! -x "$VENV/bin/sam" ] || [ ! -x "$VENV/bin/cfn-lint" ]; then
    echo "check.sh: installing aws-sam-cli and cfn-lint into $VENV" >&2
    mkdir -p "$TOOLS_DIR"
    [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
    LOG="$TOOLS_DIR/sam-venv-install.log"
    if ! { "$VENV/bin/python" -m pip install --disable-pip-version-check --upgrade pip && "$VENV/bin/python" -m pip install --disable-pip-version-check aws-sam-cli cfn-lint; } </dev/null >"$LOG" 2>&1; then
        tail -n 40 "$LOG" >&2
        echo "check.sh: installing the tools failed (log: $LOG)" >&2
        exit 1
    fi
fi

# Offline: no credentials are needed to validate, only a region; no telemetry, no prompts.
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_REGION="${AWS_REGION:-$AWS_DEFAULT_REGION}"
export SAM_CLI_TELEMETRY=0

cd "$ROOT"
echo "check.sh: sam validate --lint" >&2
"$VENV/bin/sam" validate --lint --template "$TEMPLATE" --region "$AWS_DEFAULT_REGION" </dev/null
echo "check.sh: cfn-lint" >&2
"$VENV/bin/cfn-lint" "$TEMPLATE" </dev/null
echo "check.sh: template OK" >&2
