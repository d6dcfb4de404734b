#!/bin/bash
# Set up (idempotent), check the code with ruff and mypy (configured in pyproject.toml; a
# finding stops here), and run the test suite: every case but those marked slow, or with
# --all every case (what CI runs). Further arguments go to pytest. The cases run in three
# processes (FLOEM_TEST_JOBS), a test file's cases in one of them: most cases wait on
# programs they started, so a third process keeps two cores busy.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(bash scripts/setup.sh)"
export PATH="$bin:$PATH"
ruff check --quiet .
mypy
jobs=(-n "${FLOEM_TEST_JOBS:-3}" --dist loadfile)
if [ "${1:-}" = "--all" ]; then
    shift
    exec python -m pytest -q "${jobs[@]}" --durations=25 "$@"
fi
exec python -m pytest -q "${jobs[@]}" -m "not slow" "$@"
