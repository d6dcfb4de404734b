#!/bin/bash
# Coverage-guided fuzzing of the C that parses bytes from the network or a file, with
# libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer (docs/fuzzing.md).
#
#   scripts/fuzz.sh                build every harness (fuzz/harness/), run each for
#                                  $FUZZ_SECONDS seconds (default 60), one after another
#   scripts/fuzz.sh --ci           the same, 5 seconds each
#   scripts/fuzz.sh NAME SECONDS   build every harness, run harness NAME for SECONDS
#   scripts/fuzz.sh --replay [NAME...]  build, then run every kept regression input
#                                  (fuzz/regressions/NAME/) and seed (fuzz/corpus/NAME/)
#                                  through its harness once, without fuzzing (every
#                                  harness, or those named)
#   scripts/fuzz.sh --coverage     line and branch coverage of each harness's parser
#                                  sources by its corpora (llvm-cov), no fuzzing
#   scripts/fuzz.sh --build        build only;  scripts/fuzz.sh --list: the harnesses
#
# Exit status 1 when a harness crashes (a finding: the input is kept in
# fuzz/build/findings/NAME/, the log in fuzz/build/logs/NAME.log) or a build fails.
# Fuzzers run one at a time, under `nice -n 10`. Installs what it needs (clang and its
# fuzzer runtime, the venv) with scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
BUILD="$ROOT/fuzz/build"
HARNESSES=(udp_headers memcached kvs_request stream_framers storm_transport storm_workers
           storm_spout batch pcap_reader frame_check frame_pool nf_sequencer nf_flowclass
           nf_firewall nf_nat nf_lb)
# The Floem apps of fuzz/apps/ whose generated C harnesses link with.
APPS=(elements nf_sequencer nf_flowclass nf_firewall nf_nat nf_lb)
CFLAGS=(-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=all
        -Wall -Wextra -Werror -pthread)

# The comment above, on stderr; exit with status $1 (2: bad arguments).
usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
    exit "${1:-2}"
}

# True when $1 is missing or older than a file under the paths after it.
stale() {
    local out="$1"
    shift
    [ ! -e "$out" ] || [ -n "$(find "$@" -type f -newer "$out" -print -quit)" ]
}

# What a build is instrumented for: "fuzz" (libFuzzer with ASan and UBSan, into
# fuzz/build/bin) or "cov" (llvm-cov's source coverage, no sanitizer, into fuzz/build/cov/bin).
VARIANT=fuzz

# clang's instrumentation flags for $VARIANT: of a library ($1 = lib) or of a fuzzer (exe).
instrument() {
    case "$VARIANT:$1" in
    fuzz:lib) echo "-fsanitize=fuzzer-no-link,address,undefined" ;;
    fuzz:exe) echo "-fsanitize=fuzzer,address,undefined" ;;
    cov:lib) echo "-fprofile-instr-generate -fcoverage-mapping" ;;
    cov:exe) echo "-fsanitize=fuzzer -fprofile-instr-generate -fcoverage-mapping" ;;
    esac
}

bin_dir() {
    if [ "$VARIANT" = fuzz ]; then echo "$BUILD/bin"; else echo "$BUILD/cov/bin"; fi
}

# The C file floem generated for app $1 (named after the program, that is the app: nf_lb.c).
app_c() {
    local process
    process="$(sed -n 's/^all: lib\([A-Za-z0-9_]*\)\.a .*/\1/p' "$BUILD/$1/Makefile")"
    echo "$BUILD/$1/$process.c"
}

# The library of app $1 for $VARIANT.
app_lib() {
    echo "$BUILD/$1/lib$VARIANT-$1.a"
}

# fuzz/apps/$1.py compiled by floem, its C (runtime, the C sources its elements depend on,
# and fuzz/harness/$1_hooks.c when there is one) by clang, into a library.
build_app() {
    local app="$1" dir="$BUILD/$1" lib
    lib="$(app_lib "$app")"
    "$BIN/floem" build "fuzz/apps/$app.py" -o "$dir" >/dev/null
    local c s sources=()
    c="$(app_c "$app")"
    for s in $(sed -n 's/^DEPENDS = //p' "$dir/Makefile"); do
        case "$s" in
        /*) sources+=("$s") ;;              # the program's own, where they are
        *) sources+=("$dir/$s") ;;          # Floem's, copied into the build directory
        esac
    done
    [ -e "fuzz/harness/${app}_hooks.c" ] && sources+=("$ROOT/fuzz/harness/${app}_hooks.c")
    if stale "$lib" "$c" "${c%.c}.h" "$dir/runtime" "${sources[@]}"; then
        rm -rf "$dir/$VARIANT-objs" && mkdir -p "$dir/$VARIANT-objs"
        # shellcheck disable=SC2046  # the flags are words
        (cd "$dir/$VARIANT-objs" &&
            clang "${CFLAGS[@]}" $(instrument lib) -DFLOEM_LIBRARY \
                -I"$dir/runtime/include" -I"$dir" -c "$c" "$dir"/runtime/src/*.c "${sources[@]}")
        rm -f "$lib" && ar rcs "$lib" "$dir/$VARIANT-objs"/*.o
    fi
}

# The app of fuzz/apps/ whose library harness $1 links with, if any.
harness_app() {
    case "$1" in
    udp_headers | memcached | batch | frame_check) echo elements ;;
    nf_*) echo "$1" ;;
    esac
}

# The sources and flags of harness $1 besides fuzz/harness/$1.c.
harness_inputs() {
    case "$1" in
    udp_headers | memcached | batch | frame_check | nf_*)
        echo "-I$BUILD/$(harness_app "$1") -Ilibrary/c -Iruntime/include
              $(app_lib "$(harness_app "$1")")" ;;
    frame_pool)
        echo "-Iruntime/include -DFLOEM_NET_PCAP runtime/src/frames.c" ;;
    kvs_request)
        echo "-Iexamples/kvs -Ilibrary/c -Iruntime/include examples/kvs/proto.c
              library/c/headers.c library/c/memcached.c" ;;
    stream_framers)
        echo "-Ilibrary/c -Iruntime/include library/c/memcached.c library/c/stream.c" ;;
    storm_transport)
        echo "-Iexamples/storm -Ilibrary/c -Iruntime/include library/c/headers.c" ;;
    storm_workers)
        echo "-Itests/storm/fake -Iexamples/storm/workers examples/storm/workers/counter.c
              examples/storm/workers/ranker.c examples/storm/workers/table.c" ;;
    storm_spout)
        echo "-Itests/storm/fake -Iexamples/storm/workers examples/storm/workers/spout.c" ;;
    pcap_reader)
        echo "-Iruntime/include -DFLOEM_NET_PCAP -Wl,--wrap=floem_net_fail runtime/src/net.c
              runtime/src/net_pcap.c runtime/src/count.c -lpcap" ;;
    *)
        echo "fuzz: no harness '$1' (scripts/fuzz.sh --list)" >&2
        exit 2 ;;
    esac
}

# The parser sources harness $1 is about (what --coverage reports on).
parser_sources() {
    case "$1" in
    udp_headers) echo "library/c/headers.c" ;;
    memcached) echo "library/c/memcached.c" ;;
    kvs_request) echo "examples/kvs/proto.c" ;;
    stream_framers) echo "library/c/memcached.c library/c/stream.c" ;;
    storm_transport) echo "examples/storm/transport.c" ;;
    storm_workers) echo "examples/storm/workers/counter.c examples/storm/workers/ranker.c
                         examples/storm/workers/table.c" ;;
    storm_spout) echo "examples/storm/workers/spout.c" ;;
    batch) ;;
    pcap_reader) echo "runtime/src/net_pcap.c" ;;
    frame_check) ;;
    frame_pool) echo "runtime/src/frames.c" ;;
    nf_*) ;;
    esac
}

# Every harness, for $VARIANT.
build() {
    local bin
    bin="$(bin_dir)"
    mkdir -p "$bin"
    local app name
    for app in "${APPS[@]}"; do
        build_app "$app"
    done
    for name in "${HARNESSES[@]}"; do
        app="$(harness_app "$name")"
        if stale "$bin/$name" fuzz/harness library/c examples/kvs/proto.c examples/kvs/proto.h \
            examples/storm/transport.c examples/storm/transport.h examples/storm/workers \
            tests/storm/fake runtime/src runtime/include ${app:+"$(app_lib "$app")"}; then
            # shellcheck disable=SC2046  # the flags and sources are words
            clang "${CFLAGS[@]}" $(instrument exe) -Ifuzz/harness \
                -o "$bin/$name" "fuzz/harness/$name.c" $(harness_inputs "$name")
        fi
    done
}

# The generated functions of the elements harness $1 runs (its app in fuzz/apps/).
element_functions() {
    case "$1" in
    udp_headers) echo "CheckUDP|SwapUDP|SetUDPLength|FillUDP" ;;
    memcached) echo "ParseMemcached|MemcachedReply" ;;
    batch) echo "Batcher|Debatcher|batches_" ;;
    frame_check) echo "CheckFrame|RewriteSource|StoreFrame|LoadFrame" ;;
    nf_sequencer) echo "CheckUDP|Stamp|ClearUDPChecksum|SwapUDP" ;;
    nf_flowclass) echo "CheckUDP|FlowKey|CountMin|Stamp|ClearUDPChecksum|SwapUDP" ;;
    nf_firewall) echo "StoreFrame|CheckFrame|Filter|LoadFrame" ;;
    nf_nat) echo "StoreFrame|CheckFrame|Translate|LoadFrame" ;;
    nf_lb) echo "StoreFrame|CheckFrame|Balance|LoadFrame" ;;
    esac
}

# Line and branch coverage of each harness's parser sources by its corpora (seeds,
# regressions and what earlier fuzzing found), from llvm-cov.
coverage() {
    local name dir="$BUILD/cov"
    for name in "${HARNESSES[@]}"; do
        local dirs=()
        for d in "$BUILD/corpus/$name" "fuzz/corpus/$name" "fuzz/regressions/$name"; do
            [ -d "$d" ] && dirs+=("$d")
        done
        rm -f "$dir/$name.profraw"
        LLVM_PROFILE_FILE="$dir/$name.profraw" "$dir/bin/$name" -runs=0 -close_fd_mask=1 \
            "${dirs[@]}" >"$dir/$name.log" 2>&1
        llvm-profdata merge -o "$dir/$name.profdata" "$dir/$name.profraw"
        echo "== $name"
        local sources functions
        sources="$(parser_sources "$name")"
        functions="$(element_functions "$name")"
        # shellcheck disable=SC2086  # the sources are words
        [ -z "$sources" ] || llvm-cov report "$dir/bin/$name" -instr-profile="$dir/$name.profdata" \
            $sources | sed "s|$ROOT/||"
        local c
        c="$(app_c "$(harness_app "$name")")"
        [ -z "$functions" ] || llvm-cov report -show-functions "$dir/bin/$name" \
            -instr-profile="$dir/$name.profdata" "$c" |
            grep -E "^Name|^(\w+\.c:)?($functions)"
    done
}

corpus() {
    "$BIN/python" fuzz/make_corpus.py
}

# Fuzz harness $1 for $2 seconds; its summary on stdout; false on a finding.
run_one() {
    local name="$1" seconds="$2"
    local work="$BUILD/corpus/$name" findings="$BUILD/findings/$name" log="$BUILD/logs/$name.log"
    mkdir -p "$work" "$findings" "$BUILD/logs"
    local dirs=("$work" "fuzz/corpus/$name")
    [ -d "fuzz/regressions/$name" ] && dirs+=("fuzz/regressions/$name")
    local status=0
    nice -n 10 "$BUILD/bin/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -close_fd_mask=1 -print_final_stats=1 -artifact_prefix="$findings/" "${dirs[@]}" \
        >"$log" 2>&1 || status=$?
    local runs cov
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
    cov="$(grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*/[0-9a-zA-Z]*' "$log" | tail -1)"
    if [ "$status" -eq 0 ]; then
        echo "fuzz: $name: no finding in ${seconds} s, ${runs:-?} runs, ${cov:-no coverage line}"
        return 0
    fi
    echo "fuzz: $name: FINDING (exit $status), ${runs:-?} runs; input in $findings/, log $log"
    grep -E 'ERROR|SUMMARY|check failed|runtime error' "$log" | head -5 | sed 's/^/    /'
    return 1
}

# Run harness $1 once over its regression inputs and seeds; false on a crash.
replay_one() {
    local name="$1" inputs=()
    local d
    for d in "fuzz/regressions/$name" "fuzz/corpus/$name"; do
        [ -d "$d" ] && while IFS= read -r f; do inputs+=("$f"); done < <(find "$d" -type f | sort)
    done
    if [ ${#inputs[@]} -eq 0 ]; then
        echo "fuzz: $name: nothing to replay"
        return 0
    fi
    mkdir -p "$BUILD/logs"
    local log="$BUILD/logs/$name.replay.log"
    if "$BUILD/bin/$name" -close_fd_mask=1 "${inputs[@]}" >"$log" 2>&1; then
        echo "fuzz: $name: replayed ${#inputs[@]} inputs"
        return 0
    fi
    echo "fuzz: $name: CRASH replaying; log $log"
    grep -E 'Running:|ERROR|SUMMARY|check failed|runtime error' "$log" | tail -5 | sed 's/^/    /'
    return 1
}

mode="${1:-all}"
case "$mode" in
--list)
    printf '%s\n' "${HARNESSES[@]}"
    exit 0 ;;
-h | --help)
    usage 0 ;;
esac

BIN="$(bash scripts/setup.sh)"
if [ "$mode" = "--coverage" ]; then
    VARIANT=cov
    build
    corpus
    coverage
    exit 0
fi
build
[ "$mode" = "--build" ] && exit 0
corpus

failed=0
case "$mode" in
--replay)
    shift
    [ $# -gt 0 ] || set -- "${HARNESSES[@]}"
    for name in "$@"; do
        harness_inputs "$name" >/dev/null
        replay_one "$name" || failed=1
    done ;;
--ci | all)
    seconds="${FUZZ_SECONDS:-60}"
    [ "$mode" = "--ci" ] && seconds=5
    for name in "${HARNESSES[@]}"; do
        run_one "$name" "$seconds" || failed=1
    done ;;
-*)
    usage ;;
*)
    [ $# -eq 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || usage
    harness_inputs "$1" >/dev/null
    run_one "$1" "$2" || failed=1 ;;
esac
exit "$failed"
