#!/usr/bin/env python3
"""Code generation overhead: instructions per packet of generated vs hand-written C (callgrind).

Usage: python3 benchmarks/codegen_overhead/run.py [--packets 50000] [--base 10000]
                                                  [--kvs-keys 10000] [--kvs-requests 20000]
                                                  [--kvs-base 2000] [--apps echo,hashcount,kvs]
                                                  [--annotate] [--keep DIR] [--short]

--short: every app, generated and hand-written, on small captures (2,000 and 1,000 frames;
400 and 200 requests after 200 keys): a check that the script builds, runs and compares.

Three apps, each replaying a capture through the Floem pcap backend:

  echo       examples/echo/echo.py (through echo_replay.py, which only adds a `main`
             that stops at the end of the capture) vs echo_hand.c
  hashcount  hashcount.py (CheckUDP, JenkinsHash of the payload, count per bucket,
             NetFree) vs hashcount_hand.c
  kvs        examples/kvs/kvs.py, design cpu (through kvs_replay.py, the same `main`
             plus a printout of the store's statistics and the drops) vs kvs_hand.c

echo and hashcount replay 74-byte UDP frames carrying 32-byte keys (capture.py); kvs
replays the paper's workload written by examples/kvs/load.py --pcap (a SET of each of
--kvs-keys keys, then a Zipf-0.9 mix of 90% GET and 10% SET, 64-byte values, seed 1).

Variants of each: `generated` (floem build --net pcap, default flags: with the
per-element packet counters); `generated --no-counters` (without them); `generated
--trace` (with the packet-trace code, run tracing no packet: FLOEM_TRACE unset); `hand-written`
(inlined parsing and hashing, the same floem/net.h calls and runtime files for the
I/O, the generated Makefile's CFLAGS); `hand, library calls` (the hand-written loop
calling the library's out-of-line floem_udp_parse/floem_udp_swap/floem_hashlittle,
which separates the library's C from the generated glue; not for kvs, whose hand-written
loop calls the example's proto.c and store.c out of line as the elements do); and both
main variants again with -flto (FLOEM_CFLAGS=-flto for floem build).

Each variant runs under `valgrind --tool=callgrind` on the capture of --base and of
--packets frames (kvs: --kvs-base and --kvs-requests requests after the same preload);
instructions per packet (kvs: per request) are the slope, (Ir(N) - Ir(base)) / (N -
base), so start-up, the preload and shutdown cancel. Only the packet loop's thread is counted:
--toggle-collect=<segment>_thread for generated programs, =main for hand-written ones,
and --fair-sched=yes so that the segment thread's few idle polls at the end of the
capture are the same in every run (the counts are deterministic).
"I/O" is the inclusive cost of floem_net_rx (or rx_framed)/tx/flush/free (the runtime and
the pcap backend; identical code in all variants), "rest" the remainder. Outputs are checked
equal across variants, and run.py exits with an error when they differ (echo: the frames
of the output capture; hashcount: its counts; kvs: the reply frames byte for byte and the
store's statistics and drops). Prints Markdown tables. About 40 s on 2 cores.
"""
import argparse
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import capture  # noqa: E402

KVS_DIR = os.path.join(ROOT, "examples", "kvs")
LIBRARY_C = os.path.join(ROOT, "library", "c")
# app: its Floem program, its hand-written twin, the generated segment's thread function,
# whether it writes an output capture (compared frame by frame), whether its printout is
# compared, the capture it replays ("udp": capture.py; "kvs": load.py), and the hand-written
# side's extra C sources and include directories.
APPS = {
    "echo": {"app": os.path.join(HERE, "echo_replay.py"), "hand": "echo_hand.c",
             "thread": "echo_thread", "pcap_out": True, "stdout": False, "capture": "udp",
             "sources": [], "includes": []},
    "hashcount": {"app": os.path.join(HERE, "hashcount.py"), "hand": "hashcount_hand.c",
                  "thread": "hashcount_thread", "pcap_out": False, "stdout": True,
                  "capture": "udp", "sources": [], "includes": []},
    "kvs": {"app": os.path.join(HERE, "kvs_replay.py"), "hand": "kvs_hand.c",
            "thread": "kvs_thread", "pcap_out": True, "stdout": True, "capture": "kvs",
            "sources": [os.path.join(LIBRARY_C, "headers.c"),
                        os.path.join(LIBRARY_C, "memcached.c"),
                        os.path.join(KVS_DIR, "proto.c"), os.path.join(KVS_DIR, "store.c")],
            "includes": [KVS_DIR]},
}
# (name, kind, extra CFLAGS, or floem build flags for "gen" when they start with --);
# kind "gen" or "hand"
VARIANTS = [
    ("generated", "gen", []),
    ("generated --no-counters", "gen", ["--no-counters"]),
    ("generated --trace", "gen", ["--trace"]),
    ("hand-written", "hand", []),
    ("hand, library calls", "hand", ["-DHAND_LIBRARY_CALLS"]),
    ("generated -flto", "gen", ["-flto"]),
    ("hand-written -flto", "hand", ["-flto"]),
]
# The hand-written kvs calls the library's C out of line already: no library-calls twin.
SKIP = {("kvs", "hand, library calls")}
IO_FUNCS = ("floem_net_rx", "floem_net_rx_framed", "floem_net_tx", "floem_net_flush",
            "floem_net_free")


#: The variants --short measures.
SHORT = ("generated", "hand-written")


def variants(app, short=False):
    """The variants measured for `app` (`SHORT` with ``short``)."""
    return [v for v in VARIANTS if (app, v[0]) not in SKIP and (not short or v[0] in SHORT)]


def slug(name):
    return re.sub(r"\W+", "-", name).strip("-")


def floem_command():
    found = shutil.which("floem")
    if found:
        return found
    venv = os.path.join(ROOT, ".venv", "bin", "floem")
    if os.path.exists(venv):
        return venv
    sys.exit("run.py: no `floem` on PATH (export PATH=/path/to/floem/.venv/bin:$PATH)")


def check_run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"run.py: {' '.join(map(shlex.quote, cmd))} failed (status {p.returncode}):\n"
                 f"{p.stdout}{p.stderr}")
    return p


def makefile_cflags(build_dir):
    """The CFLAGS line of a generated Makefile (what the generated program is compiled with)."""
    text = open(os.path.join(build_dir, "Makefile")).read()
    return shlex.split(re.search(r"^CFLAGS = (.*)$", text, re.M).group(1))


def build(floem, work, app, variant):
    name, kind, extra = variant
    tag = slug(name)
    out = os.path.join(work, f"{app}-{tag}")
    spec = APPS[app]
    if kind == "gen":
        env = dict(os.environ, FLOEM_CFLAGS=" ".join(e for e in extra if not e.startswith("--")))
        check_run([floem, "build", spec["app"], "--net", "pcap", "-o", out,
                   *(e for e in extra if e.startswith("--"))], env=env)
        # the program is named after its app file (echo_replay.py: echo_replay)
        program = os.path.splitext(os.path.basename(spec["app"]))[0]
        return os.path.join(out, program), spec["thread"]
    # Hand-written: the generated program's CFLAGS (minus its app -I), the same runtime files
    # (packet I/O, and the thread, clock and counter code it uses).
    gen_dir = os.path.join(work, f"{app}-generated")
    flags = [f for f in makefile_cflags(gen_dir) if not f.startswith("-I")]
    sources = [os.path.join(HERE, spec["hand"])] + [
        os.path.join(ROOT, "runtime", "src", f) for f in ("net.c", "net_pcap.c", "threads.c", "shared.c", "count.c")
    ] + spec["sources"]
    if "-DHAND_LIBRARY_CALLS" in extra:
        sources += [os.path.join(ROOT, "library", "c", "headers.c"),
                    os.path.join(ROOT, "library", "c", "hash.c")]
    exe = out + ".exe"
    check_run([os.environ.get("CC", "cc"), *flags, *extra,
               "-I" + os.path.join(ROOT, "runtime", "include"),
               "-I" + LIBRARY_C, *("-I" + d for d in spec["includes"]), "-o", exe, *sources,
               "-lpcap"])
    return exe, "main"


def frames(path):
    """The frames of a classic little-endian pcap file (timestamps left out)."""
    data, out, i = open(path, "rb").read(), [], 24
    while i < len(data):
        n = struct.unpack_from("<I", data, i + 8)[0]
        out.append(data[i + 16:i + 16 + n])
        i += 16 + n
    return out


def inclusive(cg_file, names):
    """Inclusive Ir of each function in `names` (None when it was inlined away)."""
    text = check_run(["callgrind_annotate", "--inclusive=yes", "--auto=no", "--threshold=100",
                      cg_file]).stdout
    found = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+\S*:(\w+) \[", line)
        if m and m.group(2) in names and m.group(2) not in found:
            found[m.group(2)] = int(m.group(1).replace(",", ""))
    return found


def kvs_capture(path, keys, requests):
    """The paper's KVS workload as a capture (examples/kvs/load.py --pcap, seed 1): a SET of
    every key, then `requests` requests; the first n requests do not depend on `requests`."""
    check_run([sys.executable, os.path.join(KVS_DIR, "load.py"), "--pcap", path,
               "--keys", str(keys), "--requests", str(requests), "--seed", "1"])


def callgrind(work, exe, toggle, pcap_in, pcap_out, tag, lto):
    out_file = os.path.join(work, f"callgrind.{tag}")
    env = dict(os.environ, FLOEM_PCAP_IN=pcap_in)
    env.pop("FLOEM_REPORT", None)
    env.pop("FLOEM_SHM", None)
    if pcap_out:
        env["FLOEM_PCAP_OUT"] = pcap_out
    else:
        env.pop("FLOEM_PCAP_OUT", None)
    p = check_run(["valgrind", "--tool=callgrind", "--fair-sched=yes", f"--callgrind-out-file={out_file}",
                   f"--toggle-collect={toggle}", exe], env=env)
    total = int(re.search(r"^totals: (\d+)", open(out_file).read(), re.M).group(1))
    # With -flto the runtime's functions may be inlined into the loop: no I/O split then.
    io = None if lto else sum(inclusive(out_file, IO_FUNCS).values())
    return {"ir": total, "io": io, "stdout": p.stdout, "file": out_file}


def pct(a, b):
    return f"{100.0 * (a - b) / b:+.1f}%"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=50000, help="frames in the large capture")
    ap.add_argument("--base", type=int, default=10000, help="frames in the small capture")
    ap.add_argument("--kvs-keys", type=int, default=10000,
                    help="kvs: keys (each SET once before the requests)")
    ap.add_argument("--kvs-requests", type=int, default=20000,
                    help="kvs: requests after the preload in the large capture")
    ap.add_argument("--kvs-base", type=int, default=2000,
                    help="kvs: requests after the preload in the small capture")
    ap.add_argument("--apps", default=",".join(APPS),
                    help="comma-separated apps to measure (default: %(default)s)")
    ap.add_argument("--annotate", action="store_true",
                    help="also print callgrind_annotate's top functions (large capture)")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (builds, captures, "
                                                  "callgrind.* files)")
    ap.add_argument("--short", action="store_true", help="small captures: a check")
    args = ap.parse_args()
    if args.short:
        args.packets, args.base = 2000, 1000
        args.kvs_keys, args.kvs_requests, args.kvs_base = 200, 400, 200
    if args.packets <= args.base:
        sys.exit("run.py: --packets must be larger than --base")
    if args.kvs_requests <= args.kvs_base or args.kvs_keys < 1:
        sys.exit("run.py: --kvs-requests must be larger than --kvs-base, --kvs-keys at least 1")
    apps = [a for a in args.apps.split(",") if a]
    unknown = [a for a in apps if a not in APPS]
    if unknown or not apps:
        sys.exit(f"run.py: --apps takes some of {', '.join(APPS)}, not {args.apps!r}")
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            sys.exit(f"run.py: {tool} is not installed")
    floem = floem_command()
    start = time.monotonic()
    work = args.keep or tempfile.mkdtemp(prefix="floem-codegen-")
    os.makedirs(work, exist_ok=True)
    # Per capture kind: the two sizes (what the slope is per) and the frames in each capture.
    sizes = {"udp": (args.base, args.packets), "kvs": (args.kvs_base, args.kvs_requests)}
    try:
        caps = {}
        for kind in sorted({APPS[a]["capture"] for a in apps}):
            for n in sizes[kind]:
                caps[(kind, n)] = os.path.join(work, f"in-{kind}-{n}.pcap")
                if kind == "udp":
                    capture.write(caps[(kind, n)], n)
                else:
                    kvs_capture(caps[(kind, n)], args.kvs_keys, n)
        results = {}
        for app in apps:
            spec = APPS[app]
            kind = spec["capture"]
            for variant in variants(app, args.short):
                exe, toggle = build(floem, work, app, variant)
                runs = {}
                for n in sizes[kind]:
                    tag = f"{app}-{slug(variant[0])}-{n}"
                    out = os.path.join(work, f"out-{tag}.pcap") if spec["pcap_out"] else None
                    runs[n] = callgrind(work, exe, toggle, caps[(kind, n)], out, tag,
                                        "-flto" in variant[2])
                    runs[n]["out"] = out
                results[(app, variant[0])] = runs
            # Same results from every variant: the output frames byte for byte, the printout.
            for n in sizes[kind]:
                ref = results[(app, "hand-written")][n]
                for variant in variants(app, args.short):
                    r = results[(app, variant[0])][n]
                    if spec["pcap_out"] and frames(r["out"]) != frames(ref["out"]):
                        sys.exit(f"run.py: {app} {variant[0]} ({n}) sends other frames than the "
                                 f"hand-written program: compare {r['out']} and {ref['out']} "
                                 f"(--keep DIR keeps them)")
                    if spec["stdout"] and r["stdout"] != ref["stdout"]:
                        sys.exit(f"run.py: {app} {variant[0]} ({n}) does not give the "
                                 f"hand-written program's result:\n{r['stdout']}\n{ref['stdout']}")
                if spec["pcap_out"]:
                    sent, received = len(frames(ref["out"])), len(frames(caps[(kind, n)]))
                    if sent != received:
                        sys.exit(f"run.py: {app} sent {sent} frames for {received} received "
                                 f"({n})")
        per = {}
        for key, runs in results.items():
            lo, hi = sizes[APPS[key[0]]["capture"]]
            lo, hi, span = runs[lo], runs[hi], hi - lo
            ir = (hi["ir"] - lo["ir"]) / span
            io = (hi["io"] - lo["io"]) / span if hi["io"] is not None and lo["io"] is not None \
                else None
            per[key] = (ir, io)

        print(f"Instructions per packet (callgrind Ir, slope between {args.base} and "
              f"{args.packets} packets of 74 bytes; pcap backend; packet loop thread only)"
              + (f"; kvs: per request, slope between {args.kvs_base} and {args.kvs_requests} "
                 f"requests of the paper's workload after a SET of each of {args.kvs_keys} keys"
                 if "kvs" in apps else "") + "\n")
        print("| app | variant | Ir/packet | I/O (runtime + pcap) | rest | vs hand-written "
              "(total) | vs hand-written (rest) |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
        for app in apps:
            for name, _, extra in variants(app, args.short):
                ir, io = per[(app, name)]
                ref_name = "hand-written -flto" if "-flto" in extra else "hand-written"
                ref_ir, ref_io = per[(app, ref_name)]
                rest = ir - io if io is not None else None
                ref_rest = ref_ir - ref_io if ref_io is not None else None
                vs = "—" if name == ref_name else pct(ir, ref_ir)
                vs_rest = ("—" if name == ref_name or rest is None or ref_rest is None
                           else pct(rest, ref_rest))
                print(f"| {app} | {name} | {ir:.1f} | "
                      f"{'%.1f' % io if io is not None else 'n/a'} | "
                      f"{'%.1f' % rest if rest is not None else '—'} | {vs} | {vs_rest} |")
        print()
        print("Codegen overhead (generated vs hand-written, default flags): " + ", ".join(
            f"{app} {pct(per[(app, 'generated')][0], per[(app, 'hand-written')][0])}"
            for app in apps) + " (paper: 9%, target: at most 1%)")
        if not args.short:
            print("With -flto: " + ", ".join(
                f"{app} {pct(per[(app, 'generated -flto')][0], per[(app, 'hand-written -flto')][0])}"
                for app in apps))
            print("Per-element counters cost (generated vs generated --no-counters): " + ", ".join(
                f"{app} {pct(per[(app, 'generated')][0], per[(app, 'generated --no-counters')][0])}"
                for app in apps))
            print("A traced build tracing no packet (generated --trace vs generated): " + ", ".join(
                f"{app} {per[(app, 'generated --trace')][0] - per[(app, 'generated')][0]:+.1f} "
                f"instructions ({pct(per[(app, 'generated --trace')][0], per[(app, 'generated')][0])})"
                for app in apps))
        if args.annotate:
            for app in apps:
                for name in ("generated", "hand-written"):
                    f = results[(app, name)][sizes[APPS[app]["capture"]][1]]["file"]
                    text = check_run(["callgrind_annotate", "--auto=no", "--threshold=99",
                                      f]).stdout
                    body = text.split("file:function", 1)[-1].strip("-\n")
                    body = body.replace(work.rstrip("/") + "/", "").replace(ROOT + "/", "")
                    print(f"\n### {app}, {name}: self cost by function (large capture)\n")
                    print("```\n" + "\n".join(body.splitlines()[:30]) + "\n```")
        print(f"\n({time.monotonic() - start:.0f} s; valgrind "
              f"{check_run(['valgrind', '--version']).stdout.strip()}, "
              f"{check_run([os.environ.get('CC', 'cc'), '--version']).stdout.splitlines()[0]})")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
