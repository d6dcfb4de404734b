#!/usr/bin/env python3
"""Code generation overhead: instructions per packet of generated vs hand-written C (callgrind).

Usage: python3 benchmarks/codegen_overhead/run.py [--packets 50000] [--base 10000]
                                                  [--annotate] [--keep DIR]

Two apps, each replaying the same capture of 74-byte UDP frames (32-byte keys)
through the Floem pcap backend:

  echo       examples/echo/echo.py (through echo_replay.py, which only adds a `main`
             that stops at the end of the capture) vs echo_hand.c
  hashcount  hashcount.py (CheckUDP, JenkinsHash of the payload, count per bucket,
             NetFree) vs hashcount_hand.c

Variants of each: `generated` (floem build --net pcap, default flags: with the
per-element packet counters); `generated --no-counters` (without them); `generated
--trace` (with the packet-trace code, run tracing no packet: FLOEM_TRACE unset); `hand-written`
(inlined parsing and hashing, the same floem/net.h calls and runtime files for the
I/O, the generated Makefile's CFLAGS); `hand, library calls` (the hand-written loop
calling the library's out-of-line floem_udp_parse/floem_udp_swap/floem_hashlittle,
which separates the library's C from the generated glue); and both main variants
again with -flto (FLOEM_CFLAGS=-flto for floem build).

Each variant runs under `valgrind --tool=callgrind` on the capture of --base and of
--packets frames; instructions per packet are the slope, (Ir(N) - Ir(base)) / (N -
base), so start-up and shutdown cancel. Only the packet loop's thread is counted:
--toggle-collect=<segment>_thread for generated programs, =main for hand-written ones,
and --fair-sched=yes so that the segment thread's few idle polls at the end of the
capture are the same in every run (the counts are deterministic).
"I/O" is the inclusive cost of floem_net_rx/tx/flush/free (the runtime and the pcap
backend; identical code in all variants), "rest" the remainder. Outputs are checked
equal across variants (echo: the frames of the output capture; hashcount: its counts).
Prints Markdown tables. About 20 s on 2 cores.
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

APPS = {
    "echo": {"app": os.path.join(HERE, "echo_replay.py"), "hand": "echo_hand.c",
             "thread": "echo_thread", "pcap_out": True},
    "hashcount": {"app": os.path.join(HERE, "hashcount.py"), "hand": "hashcount_hand.c",
                  "thread": "hashcount_thread", "pcap_out": False},
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
IO_FUNCS = ("floem_net_rx", "floem_net_tx", "floem_net_flush", "floem_net_free")


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
        return os.path.join(out, app), spec["thread"]
    # Hand-written: the generated program's CFLAGS (minus its app -I), the same runtime files
    # (packet I/O, and the thread, clock and counter code it uses).
    gen_dir = os.path.join(work, f"{app}-generated")
    flags = [f for f in makefile_cflags(gen_dir) if not f.startswith("-I")]
    sources = [os.path.join(HERE, spec["hand"])] + [
        os.path.join(ROOT, "runtime", "src", f) for f in ("net.c", "net_pcap.c", "threads.c", "shared.c", "count.c")]
    if "-DHAND_LIBRARY_CALLS" in extra:
        sources += [os.path.join(ROOT, "library", "c", "headers.c"),
                    os.path.join(ROOT, "library", "c", "hash.c")]
    exe = out + ".exe"
    check_run([os.environ.get("CC", "cc"), *flags, *extra,
               "-I" + os.path.join(ROOT, "runtime", "include"),
               "-I" + os.path.join(ROOT, "library", "c"), "-o", exe, *sources, "-lpcap"])
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
    ap.add_argument("--annotate", action="store_true",
                    help="also print callgrind_annotate's top functions (large capture)")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (builds, captures, "
                                                  "callgrind.* files)")
    args = ap.parse_args()
    if args.packets <= args.base:
        sys.exit("run.py: --packets must be larger than --base")
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            sys.exit(f"run.py: {tool} is not installed")
    floem = floem_command()
    start = time.monotonic()
    work = args.keep or tempfile.mkdtemp(prefix="floem-codegen-")
    os.makedirs(work, exist_ok=True)
    try:
        caps = {}
        for n in (args.base, args.packets):
            caps[n] = os.path.join(work, f"in-{n}.pcap")
            capture.write(caps[n], n)
        results = {}
        for app, spec in APPS.items():
            for variant in VARIANTS:
                exe, toggle = build(floem, work, app, variant)
                runs = {}
                for n in (args.base, args.packets):
                    tag = f"{app}-{slug(variant[0])}-{n}"
                    out = os.path.join(work, f"out-{tag}.pcap") if spec["pcap_out"] else None
                    runs[n] = callgrind(work, exe, toggle, caps[n], out, tag, "-flto" in variant[2])
                    runs[n]["out"] = out
                results[(app, variant[0])] = runs
            # Same results from every variant.
            for n in (args.base, args.packets):
                ref = results[(app, "hand-written")][n]
                for variant in VARIANTS:
                    r = results[(app, variant[0])][n]
                    same = (frames(r["out"]) == frames(ref["out"]) if spec["pcap_out"]
                            else r["stdout"] == ref["stdout"])
                    if not same:
                        sys.exit(f"run.py: {app} {variant[0]} ({n} packets) does not give the "
                                 f"hand-written program's result:\n{r['stdout']}\n{ref['stdout']}")
            if spec["pcap_out"] and len(frames(results[(app, "generated")][args.packets]["out"])) \
                    != args.packets:
                sys.exit(f"run.py: {app} did not echo every frame")
        span = args.packets - args.base
        per = {}
        for key, runs in results.items():
            lo, hi = runs[args.base], runs[args.packets]
            ir = (hi["ir"] - lo["ir"]) / span
            io = (hi["io"] - lo["io"]) / span if hi["io"] is not None and lo["io"] is not None \
                else None
            per[key] = (ir, io)

        print(f"Instructions per packet (callgrind Ir, slope between {args.base} and "
              f"{args.packets} packets of 74 bytes; pcap backend; packet loop thread only)\n")
        print("| app | variant | Ir/packet | I/O (runtime + pcap) | rest | vs hand-written "
              "(total) | vs hand-written (rest) |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
        for app in APPS:
            for name, _, extra in VARIANTS:
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
            for app in APPS) + "; with -flto: " + ", ".join(
            f"{app} {pct(per[(app, 'generated -flto')][0], per[(app, 'hand-written -flto')][0])}"
            for app in APPS) + " (paper: 9%, target: at most 3%)")
        print("Per-element counters cost (generated vs generated --no-counters): " + ", ".join(
            f"{app} {pct(per[(app, 'generated')][0], per[(app, 'generated --no-counters')][0])}"
            for app in APPS))
        print("A traced build tracing no packet (generated --trace vs generated): " + ", ".join(
            f"{app} {per[(app, 'generated --trace')][0] - per[(app, 'generated')][0]:+.1f} "
            f"instructions ({pct(per[(app, 'generated --trace')][0], per[(app, 'generated')][0])})"
            for app in APPS))
        if args.annotate:
            for app in APPS:
                for name in ("generated", "hand-written"):
                    f = results[(app, name)][args.packets]["file"]
                    text = check_run(["callgrind_annotate", "--auto=no", "--threshold=99", f]).stdout
                    body = text.split("file:function", 1)[-1].strip("-\n")
                    body = body.replace(work.rstrip("/") + "/", "").replace(ROOT + "/", "")
                    print(f"\n### {app}, {name}: self cost by function ({args.packets} packets)\n")
                    print("```\n" + "\n".join(body.splitlines()[:30]) + "\n```")
        print(f"\n({time.monotonic() - start:.0f} s; valgrind "
              f"{check_run(['valgrind', '--version']).stdout.strip()}, "
              f"{check_run([os.environ.get('CC', 'cc'), '--version']).stdout.splitlines()[0]})")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
