#!/bin/bash
# libpcap for the NIC platforms' cross compilers (idempotent; scripts/setup.sh runs it).
#
# The pcap packet I/O backend (--net pcap) links libpcap, and a NIC process built for
# --nic bluefield (aarch64-linux-gnu) or --nic liquidio (mips64-linux-gnuabi64, big-endian:
# no Debian architecture) links it statically. Debian ships libpcap for neither, so this
# builds the Debian source package of the host's libpcap (apt-get source, from the
# machine's own Debian sources turned into deb-src ones in a private list: the machine's
# apt configuration is left alone) for each cross compiler that is installed, reading and
# writing capture files only (no capture module that needs another library), and installs
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
cd "$work"
mkdir -p lists/partial cache parts
# The machine's sources, as deb-src.
if [ -f /etc/apt/sources.list ]; then
    sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >sources.list
else
    : >sources.list
fi
for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && sed 's/^Types: deb$/Types: deb-src/' "$f" >"parts/$(basename "$f")"
done
for f in /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] && sed -n 's/^deb /deb-src /p' "$f" >"parts/$(basename "$f")"
done
apt_options=(-o "Dir::Etc::sourcelist=$work/sources.list" -o "Dir::Etc::sourceparts=$work/parts"
             -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o Debug::NoLocking=1
             -o APT::Sandbox::User=root)
echo "cross_libpcap: fetching the libpcap source package" >&2
apt-get "${apt_options[@]}" -qq update >&2
version="$(dpkg-query -W -f='${source:Version}' libpcap0.8-dev)"
apt-get "${apt_options[@]}" -qq source "libpcap=$version" >/dev/null 2>&1 ||
    apt-get "${apt_options[@]}" -qq source libpcap >/dev/null
src="$(find "$work" -maxdepth 1 -type d -name 'libpcap-*' | head -1)"

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
