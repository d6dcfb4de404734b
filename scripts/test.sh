#!/bin/bash
# Set up (idempotent) and run the test suite: every case but those marked slow, or with
# --all every case (what CI runs). Further arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(bash scripts/setup.sh)"
export PATH="$bin:$PATH"
if [ "${1:-}" = "--all" ]; then
    shift
    exec python -m pytest -q "$@"
fi
exec python -m pytest -q -m "not slow" "$@"
