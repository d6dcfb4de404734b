#!/bin/bash
# qemu's plugin API header, for the instruction-counting plugin of `floem run
# --count-instructions` (floem/explore/count_plugin.c); idempotent, scripts/setup.sh runs it.
#
# Debian's qemu packages leave out include/qemu-plugin.h (qemu-user accepts -plugin all the
# same), so this takes it from the source package of the installed qemu-user (patched as
# Debian builds it) and installs only that header as /usr/local/include/qemu-plugin.h,
# where qemu's own `make install` puts it under its prefix.
set -euo pipefail
cd "$(dirname "$0")"
header=/usr/local/include/qemu-plugin.h
[ -f "$header" ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
. ./debian_source.sh
echo "qemu_plugin_header: fetching qemu's source package for its plugin header" >&2
src="$(debian_source "$work" qemu "$(dpkg-query -W -f='${source:Version}' qemu-user)")"
$sudo install -D -m 644 "$src/include/qemu/qemu-plugin.h" "$header"
