#!/bin/bash
# Floem host queue vs DPDK rte_ring, two threads, 64-byte entries (see queue_bench.c).
#
# Usage: bash benchmarks/queue/run.sh [ENTRIES [REPEATS [SIZE [PAUSES]]]]
# Installs libdpdk-dev with apt-get when it is missing (as root), builds queue_bench in
# a temporary directory and prints a Markdown table. DPDK's EAL runs without hugepages
# or PCI; as root it runs in its own mount namespace with a private tmpfs on /run, so
# no /run/dpdk (/var/run/dpdk) is left behind.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

if ! command -v pkg-config >/dev/null || ! pkg-config --exists libdpdk; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "run.sh: DPDK is missing: apt-get install libdpdk-dev pkg-config (as root)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    install_dpdk() { apt-get install -y -q --no-install-recommends libdpdk-dev pkg-config >&2; }
    install_dpdk || { apt-get update -q >&2 && install_dpdk; }
fi

build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
# shellcheck disable=SC2046  # pkg-config prints several words on purpose
"${CC:-gcc}" -O2 -std=gnu11 -Wall -Wextra -Werror $(pkg-config --cflags libdpdk) \
    -I"$root/runtime/include" "$here/queue_bench.c" "$root/runtime/src/queue.c" \
    $(pkg-config --libs libdpdk) -pthread -o "$build/queue_bench"

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
