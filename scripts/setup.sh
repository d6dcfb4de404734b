#!/bin/bash
# Install what Floem needs on a Debian machine (idempotent) and print the venv's bin dir.
# System packages: a C toolchain (gcc, and clang as a second compiler for C checks, with
# its libFuzzer and sanitizer runtimes for scripts/fuzz.sh), make, Graphviz, Python venv
# support, OpenSSL (the AES reference), valgrind (benchmarks), the cross compilers and
# qemu-user for the NIC platforms (BlueField: aarch64, LiquidIO: mips64; qemu's plugin
# header, for the counting plugin: scripts/qemu_plugin_header.sh), DPDK 22.11
# (--net dpdk), libpcap (--net pcap; flex, bison and dpkg-dev build it for the NIC
# platforms' cross compilers: scripts/cross_libpcap.sh), libxdp and libbpf (--net xdp:
# AF_XDP sockets), iproute2 and ethtool (the veth pairs between network namespaces that
# --net xdp is tested on), memcached (the key-value store's oracle: the tests start their
# own), libmemcached-tools (memcaslap, memcslap, memccapable: clients) and nutcracker
# (twemproxy, a proxy in front of several stores).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(gcc clang libclang-rt-14-dev make graphviz python3-venv python3-dev libffi-dev pkg-config openssl valgrind memcached libmemcached-tools nutcracker
          gcc-aarch64-linux-gnu gcc-mips64-linux-gnuabi64 qemu-user libdpdk-dev dpdk-dev
          libpcap-dev flex bison dpkg-dev libxdp-dev libbpf-dev iproute2 ethtool)
missing=()
for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
fi
bash scripts/cross_libpcap.sh
bash scripts/qemu_plugin_header.sh

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv >&2
fi
stamp=.venv/.floem-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    # pip's and the build backend's chatter goes to a log, shown only when they fail.
    log=.venv/pip.log
    if ! { .venv/bin/python -m pip install -q --upgrade pip &&
           .venv/bin/python -m pip install -q -e '.[test]'; } > "$log" 2>&1; then
        cat "$log" >&2
        echo "setup: installing Floem into .venv failed (the log above is in $log)" >&2
        exit 1
    fi
    touch "$stamp"
fi
echo "$PWD/.venv/bin"
