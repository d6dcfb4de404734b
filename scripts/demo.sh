#!/bin/bash
# Set up (idempotent) and run the main demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(bash scripts/setup.sh)"
export PATH="$bin:$PATH"
exec floem run --timeout 60 examples/demo/counters.py
