#!/bin/bash
# Sourced by scripts that need a Debian source package (cross_libpcap.sh, qemu_plugin_header.sh).
#
# debian_source WORK PACKAGE VERSION: unpack the source package PACKAGE (its VERSION, else
# whatever version the sources hold) under the directory WORK, with apt-get source from the
# machine's own Debian sources turned into deb-src ones in a private list (the machine's
# apt configuration is left alone); prints the unpacked tree's directory.
debian_source() {
    local work="$1" package="$2" version="$3"
    mkdir -p "$work/apt/lists/partial" "$work/apt/cache" "$work/apt/parts"
    # The machine's sources, as deb-src.
    if [ -f /etc/apt/sources.list ]; then
        sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >"$work/apt/sources.list"
    else
        : >"$work/apt/sources.list"
    fi
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && sed 's/^Types: deb$/Types: deb-src/' "$f" >"$work/apt/parts/$(basename "$f")"
    done
    for f in /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] && sed -n 's/^deb /deb-src /p' "$f" >"$work/apt/parts/$(basename "$f")"
    done
    local apt_options=(-o "Dir::Etc::sourcelist=$work/apt/sources.list"
                       -o "Dir::Etc::sourceparts=$work/apt/parts"
                       -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache"
                       -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
    apt-get "${apt_options[@]}" -qq update >&2
    mkdir -p "$work/source"
    (cd "$work/source" &&
        { apt-get "${apt_options[@]}" -qq source "$package=$version" >/dev/null 2>&1 ||
          apt-get "${apt_options[@]}" -qq source "$package" >/dev/null; })
    find "$work/source" -mindepth 1 -maxdepth 1 -type d | head -1
}
