#!/bin/bash
# Instructions per entry of the Floem host queue's fast path (instructions.c under callgrind).
#
# Usage: [QUEUE_REVS="REV ..."] bash benchmarks/queue/instructions.sh [--short]
# --short: 20,000 entries a run instead of 1,000,000 (a check that the script works).
# Builds instructions.c (gcc -O2) against the working tree's queue and each revision's in
# QUEUE_REVS (queue.h and queue.c from git; revisions from a08ae77 on), runs each under
# valgrind --tool=callgrind one entry at a time and in bursts of 32, without and with
# release tracking, and prints a Markdown table: instructions the whole program executed,
# divided by the 1,000,000 entries it moves (setup included: well under 1 per entry).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=revisions.sh
. "$here/revisions.sh"
entries=1000000
if [ "${1:-}" = "--short" ]; then
    entries=20000
fi

if ! command -v valgrind >/dev/null; then
    echo "instructions.sh: valgrind is missing (apt-get install valgrind)" >&2
    exit 1
fi
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT

# Build one variant: NAME, its include directory, its queue.c.
compile() {
    "${CC:-gcc}" -O2 -std=gnu11 -Wall -Wextra -Werror -DENTRIES="$entries" -I"$2" \
        "$here/instructions.c" "$3" -o "$build/$1"
}

# Instructions per entry of one run: NAME BURST TRACK.
per_entry() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$build/$1" "$2" "$3" \
        2> "$build/log" > /dev/null
    awk -v n="$entries" '/Collected :/ {printf "%.1f", $NF / n}' "$build/log"
}

names=("Floem queue")
compile v0 "$root/runtime/include" "$root/runtime/src/queue.c"
n=0
for rev in ${QUEUE_REVS:-}; do
    n=$((n + 1))
    checkout_queue "$rev" "$build/rev_$n"
    compile "v$n" "$build/rev_$n" "$build/rev_$n/queue.c"
    names+=("Floem $rev")
done

echo "| queue | one at a time | bursts of 32 | one at a time, tracked | bursts of 32, tracked |"
echo "| --- | --- | --- | --- | --- |"
for i in "${!names[@]}"; do
    echo "| ${names[$i]} | $(per_entry "v$i" 1 0) | $(per_entry "v$i" 32 0) |" \
         "$(per_entry "v$i" 1 1) | $(per_entry "v$i" 32 1) |"
done
