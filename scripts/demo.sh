#!/bin/bash
# Set up (idempotent) and run the main demo: the Floem paper's key-value store in three
# designs (CPU only, split CPU-NIC, NIC cache), each serving the paper's workload over UDP.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(bash scripts/setup.sh)"
export PATH="$bin:$PATH"
exec python benchmarks/kvs/run.py --demo
