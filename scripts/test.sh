#!/bin/bash
# Set up (idempotent) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(bash scripts/setup.sh)"
export PATH="$bin:$PATH"
exec python -m pytest -q "$@"
