#!/bin/bash
# libpcap for the NIC platforms' cross compilers (idempotent; scripts/setup.sh runs it).
#
# The pcap packet I/O backend (--net pcap) links libpcap, and a NIC process built for
# --nic bluefield (aarch64-linux-gnu) or --nic liquidio (mips64-linux-gnuabi64, big-endian:
# no Debian architecture) links it statically. Debian ships libpcap for neither, so this
# builds the Debian source package of the host's libpcap (scripts/debian_source.sh) for
# each cross compiler that is installed, reading and writing capture files only (no capture
# module that needs another library), and installs
# libpcap.a and its headers where that compiler looks: /usr/TRIPLET/lib and
# /usr/TRIPLET/include.
set -euo pipefail

triplets=()
for t in aarch64-linux-gnu mips64-linux-gnuabi64; do
    command -v "$t-gcc" >/dev/null && [ ! -f "/usr/$t/lib/libpcap.a" ] && triplets+=("$t")
done
[ ${#triplets[@]} -gt 0 ] || exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/debian_source.sh"
echo "cross_libpcap: fetching the libpcap source package" >&2
src="$(debian_source "$work" libpcap "$(dpkg-query -W -f='${source:Version}' libpcap0.8-dev)")"

for t in "${triplets[@]}"; do
    echo "cross_libpcap: building libpcap for $t" >&2
    flags="-O2"
    [ "$t" = mips64-linux-gnuabi64 ] && flags="-O2 -march=mips64r2"
    rm -rf "$work/build" && cp -r "$src" "$work/build"
    if ! (cd "$work/build" &&
        ./configure --host="$t" --disable-shared --with-pcap=linux --without-libnl \
            --disable-dbus --disable-rdma --disable-bluetooth --disable-usb --disable-netmap \
            --without-dpdk --without-dag --without-septel --without-snf --without-turbocap \
            --disable-remote CFLAGS="$flags" && make -j2 libpcap.a) >"$work/log" 2>&1; then
        tail -20 "$work/log" >&2
        echo "cross_libpcap: building libpcap for $t failed" >&2
        exit 1
    fi
    $sudo install -d "/usr/$t/include/pcap" "/usr/$t/lib"
    $sudo install -m 644 "$work"/build/pcap/*.h "/usr/$t/include/pcap/"
    $sudo install -m 644 "$work/build/pcap.h" "$work/build/pcap-bpf.h" "$work/build/pcap-namedb.h" \
        "/usr/$t/include/"
    $sudo install -m 644 "$work/build/libpcap.a" "/usr/$t/lib/libpcap.a"
done
