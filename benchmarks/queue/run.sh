#!/bin/bash
# Floem host queue vs DPDK rte_ring, two threads, 64-byte entries (see queue_bench.c).
#
# Usage: [QUEUE_REVS="REV ..."] bash benchmarks/queue/run.sh [ENTRIES [REPEATS [SIZES [PAUSES]]]]
#        bash benchmarks/queue/run.sh --short     (one round of 100,000 entries: a check)
# SIZES: queue sizes, comma-separated (default 256,1024,4096), all timed in one run.
# Installs libdpdk-dev with apt-get when it is missing (as root), builds queue_bench in
# a temporary directory and prints a Markdown table. DPDK's EAL runs without hugepages
# or PCI; as root it runs in its own mount namespace with a private tmpfs on /run, so
# no /run/dpdk (/var/run/dpdk) is left behind.
# QUEUE_REVS: git revisions whose runtime/include/floem/queue.h and runtime/src/queue.c
# run too, in the same program, each as "Floem ring REV" and "Floem turns REV" (before the
# ring layout: "Floem REV") beside the working tree's two layouts (revisions from a08ae77
# on: commit with a byte count). floem_side.c is compiled
# once per queue; the global names of each revision's queue.c are renamed (objcopy).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=revisions.sh
. "$here/revisions.sh"

if ! command -v pkg-config >/dev/null || ! pkg-config --exists libdpdk; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "run.sh: DPDK is missing: apt-get install libdpdk-dev pkg-config (as root)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    install_dpdk() { apt-get install -y -q --no-install-recommends libdpdk-dev pkg-config >&2; }
    install_dpdk || { apt-get update -q >&2 && install_dpdk; }
fi

if [ "${1:-}" = "--short" ]; then
    set -- 100000 1
fi

build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
read -r -a dpdk_cflags <<< "$(pkg-config --cflags libdpdk)"
read -r -a dpdk_libs <<< "$(pkg-config --libs libdpdk)"
cc=("${CC:-gcc}" -O2 -std=gnu11 -Wall -Wextra -Werror "${dpdk_cflags[@]}" -I"$here")

# One Floem side per queue implementation: N, its include directory, its queue.c ("" when
# side 0's), its label, and any -D flags (FLOEM_SIDE_RING: the ring layout).
objects=()
declarations=()
add_side() {
    local n="$1" include="$2" queue_c="$3" label="$4"
    shift 4
    "${cc[@]}" -I"$include" -DFLOEM_SIDE="floem_side_$n" -DFLOEM_SIDE_LABEL="\"$label\"" "$@" \
        -c "$here/floem_side.c" -o "$build/side_$n.o"
    objects+=("$build/side_$n.o")
    declarations+=("floem_side_$n")
    [ -n "$queue_c" ] || return 0
    "${cc[@]}" -I"$include" -c "$queue_c" -o "$build/queue_$n.o"
    if [ "$n" -gt 1 ]; then
        nm -g --defined-only "$build/queue_$n.o" | awk -v p="rev${n}_" '{print $3, p $3}' \
            > "$build/names_$n"
        objcopy --redefine-syms="$build/names_$n" "$build/side_$n.o"
        objcopy --redefine-syms="$build/names_$n" "$build/queue_$n.o"
    fi
    objects+=("$build/queue_$n.o")
}
add_side 0 "$root/runtime/include" "" "Floem ring" -DFLOEM_SIDE_RING
add_side 1 "$root/runtime/include" "$root/runtime/src/queue.c" "Floem turns"
n=1
for rev in ${QUEUE_REVS:-}; do
    n=$((n + 1))
    dir="$build/rev_$n"
    checkout_queue "$rev" "$dir"
    if grep -q floem_ring_init "$dir/floem/queue.h"; then
        add_side "$n" "$dir" "$dir/queue.c" "Floem ring $rev" -DFLOEM_SIDE_RING
        n=$((n + 1))
        add_side "$n" "$dir" "$dir/queue.c" "Floem turns $rev"
    else
        add_side "$n" "$dir" "$dir/queue.c" "Floem $rev"
    fi
done
{
    echo '#include <stddef.h>'
    echo '#include "bench.h"'
    echo "extern const struct floem_side $(IFS=,; echo "${declarations[*]}");"
    printf 'const struct floem_side *const floem_sides[] = {'
    printf '&%s, ' "${declarations[@]}"
    echo 'NULL};'
} > "$build/sides.c"
"${cc[@]}" "$here/queue_bench.c" "$build/sides.c" "${objects[@]}" "${dpdk_libs[@]}" -pthread \
    -o "$build/queue_bench"

cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "DPDK $(pkg-config --modversion libdpdk), $(nproc) CPUs: $cpu"
if [ "$(id -u)" -ne 0 ]; then
    # Unprivileged EAL keeps its runtime files under $XDG_RUNTIME_DIR/dpdk.
    XDG_RUNTIME_DIR="$build" "$build/queue_bench" "$@"
elif unshare -m true 2>/dev/null; then
    unshare -m sh -c 'mount -t tmpfs floem-queue-bench /run && exec "$0" "$@"' \
        "$build/queue_bench" "$@"
else
    had_dir=$([ -e /var/run/dpdk ] && echo yes || echo no)
    status=0
    "$build/queue_bench" "$@" || status=$?
    if [ "$had_dir" = no ]; then
        rm -rf /var/run/dpdk
    fi
    exit "$status"
fi
