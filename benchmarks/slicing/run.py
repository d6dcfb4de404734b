#!/usr/bin/env python3
"""Payload slicing on and off for the shallow network functions.

Usage: python3 benchmarks/slicing/run.py [--kinds forwarder,firewall,nat,lb]
           [--sizes 64,256,512,1024,1518] [--frames 2000] [--seconds 3] [--rate 20000]
           [--threshold 512] [--repeats 3] [-- EXTRA FLOEM OPTIONS, e.g. --dma-gbps 1]
       python3 benchmarks/slicing/run.py --short   # the forwarder, 64 and 1024 bytes, briefly

For each function (examples/nf, ``-D device=split``: packet I/O on the emulated NIC, the
function on the host) and frame size, a capture of ``--frames`` frames of
examples/nf/traffic.py (that one size, none malformed) runs built as is (slicing) and
with ``--no-slicing``, alternating, ``--repeats`` times each; printed are medians:

* DMA requests, bytes written to host memory and bytes read from it, per received frame,
  from the NIC's report (``floem: nic dma: ...``), over a replay looped for ``--seconds``
  as fast as the program takes frames: the PCIe traffic under load, polling included;
* host entry bytes per frame: the bytes of queue entries the host process reads and
  writes for a frame: each queue channel the frame takes (as examples/nf/shallow_model.py
  decides) with its fixed bytes and the frame's window (sliced) or whole frame, as the
  build's ``--report`` gives them;
* packets/s: frames sent over the looped replay's span (first frame received to last
  sent);
* latency p50 / p90 / p99 in microseconds: the capture replayed once, paced at ``--rate``
  frames/s: each frame's send time (the output capture's timestamp, in µs) less the time
  it was delivered (the replay's start, its last send less its span, plus the frame's
  offset in the capture), frames matched by IPv4 identification;

then the ratios of whole to sliced bytes and of sliced to whole packets/s and latency.
The same DMA cost model for both (the runtime's defaults unless extra options say
otherwise). README.md beside this file says how to read them; docs/benchmarks.md has the
results.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import dpkt

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NF = os.path.join(ROOT, "examples", "nf")
sys.path.insert(0, NF)
import shallow_model  # noqa: E402
import traffic  # noqa: E402

KINDS = ("forwarder", "firewall", "nat", "lb")
SIZES = (64, 256, 512, 1024, 1518)
MODES = {"sliced": [], "whole": ["--no-slicing"]}
# Not anchored at a line's start: the processes of a run share stderr, and one's report
# line can start in the middle of another's.
DMA = re.compile(r"floem: nic dma: requests (\d+), descriptors (\d+), bytes read (\d+), "
                 r"bytes written (\d+)")
NET = re.compile(r"floem: net pcap: queues \d+, rx (\d+), tx (\d+),")
SPAN = re.compile(r"floem: net pcap: replay span (\d+) ns")
QUEUE = re.compile(r"^  (\w+): \d+ channel\(s\)")
CHANNEL = re.compile(r"^    channel (\d+): sends .*: (\d+)(?: \+ up to (\d+) variable)? bytes")
WINDOW = re.compile(r"\(bytes (\d+)-(\d+)\)")


def floem_command():
    """The floem executable: on PATH, else the repository's venv."""
    found = shutil.which("floem")
    if found:
        return found
    venv = os.path.join(ROOT, ".venv", "bin", "floem")
    if os.path.exists(venv):
        return venv
    sys.exit("run.py: no `floem` on PATH (export PATH=/path/to/floem/.venv/bin:$PATH)")


def run(cmd, *needed):
    """Run ``cmd``; what it printed (stdout, then stderr), or exit with it when it failed or
    a pattern of ``needed`` is not in it."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    out = p.stdout + p.stderr
    if p.returncode != 0 or not all(pattern.search(out) for pattern in needed):
        sys.exit(f"run.py: {' '.join(cmd)} failed (status {p.returncode}):\n{out}")
    return out


def throughput(floem, kind, capture, seconds, mode, extra):
    """Replay ``capture`` in a loop for ``seconds``, as fast as the program takes frames:
    packets/s and DMA per received frame."""
    cmd = [floem, "run", os.path.join(NF, f"{kind}.py"), "-D", "device=split", *MODES[mode],
           *extra, "--nic", "emu", "--net", "pcap", "--pcap-in", capture, "--pcap-loop", "0",
           "--report", "--duration", str(seconds), "--timeout", str(seconds + 120)]
    err = run(cmd, NET, DMA, SPAN)
    rx, tx = (int(x) for x in NET.search(err).groups())
    dma = [int(x) for x in DMA.search(err).groups()]
    span = int(SPAN.search(err).group(1))
    return {"pps": tx / (span / 1e9), "requests": dma[0] / rx, "to_host": dma[3] / rx,
            "from_host": dma[2] / rx}


def latency(floem, kind, capture, frames, rate, mode, extra, work):
    """One replay of ``capture`` (``frames``) paced at ``rate`` frames/s: latency
    percentiles (µs) of the frames sent."""
    out = os.path.join(work, "out.pcap")
    factor = rate / 1e6                 # the capture's frames are 1 µs apart
    duration = len(frames) / rate + 3
    err = run([floem, "run", os.path.join(NF, f"{kind}.py"), "-D", "device=split",
               *MODES[mode], *extra, "--nic", "emu", "--net", "pcap", "--pcap-in", capture,
               "--pcap-out", out, "--pcap-timing", str(factor), "--report",
               "--duration", str(duration), "--timeout", "600"], SPAN)
    span = int(SPAN.search(err).group(1))
    with open(out, "rb") as f:
        sent = [(ts, bytes(b)) for ts, b in dpkt.pcap.Reader(f)]
    start = sent[-1][0] - span / 1e9            # when the first frame was delivered
    offsets = {}                                # IPv4 identification -> offset in the capture
    for i, frame in enumerate(frames):
        offsets.setdefault(int.from_bytes(frame[18:20], "big"), []).append(i / rate)
    delays = []
    for ts, frame in sent:
        ident = int.from_bytes(frame[18:20], "big")
        delays.append((ts - start - offsets[ident].pop(0)) * 1e6)
    q = statistics.quantiles(delays, n=100, method="inclusive")
    return {"p50": q[49], "p90": q[89], "p99": q[98]}


def host_bytes(floem, kind, mode, extra, frames, threshold, work):
    """Bytes of queue entries the host reads and writes per frame: for each queue channel a
    frame takes (as the model decides), its fixed bytes plus, for the frame, the window the
    build's report gives when the frame is sliced (``threshold`` bytes or more), else the
    whole frame."""
    report = run([floem, "build", os.path.join(NF, f"{kind}.py"), "-D", "device=split",
                  *MODES[mode], *extra, "--nic", "emu", "--net", "pcap", "--report",
                  "-o", os.path.join(work, f"build-{mode}")])
    expected = shallow_model.expect(kind, frames)
    total = 0
    queue = None
    for line in report.splitlines():
        q = QUEUE.match(line)
        if q:
            queue = q.group(1)
        c = CHANNEL.match(line)
        if not (c and queue):
            continue
        if queue.endswith("_rxq"):
            fates = ("sent", "dropped")
        else:
            fates = ("sent",) if c.group(1) == "0" else ("dropped",)
        window = WINDOW.search(line)
        for frame, fate in zip(frames, expected.fates):
            if fate in fates:
                sliced = window and mode == "sliced" and len(frame) >= threshold
                total += int(c.group(2)) + (
                    (int(window.group(2)) - int(window.group(1))) if sliced
                    else len(frame) if c.group(3) else 0)
    return total / len(frames)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default=",".join(KINDS), help="functions (default: all)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="frame sizes in bytes (default 64,256,512,1024,1518)")
    parser.add_argument("--frames", type=int, default=2000,
                        help="frames of each capture (default 2000)")
    parser.add_argument("--seconds", type=float, default=3,
                        help="seconds of each looped throughput replay (default 3)")
    parser.add_argument("--rate", type=float, default=20000,
                        help="frames/s of the paced replay (default 20000)")
    parser.add_argument("--threshold", type=int, default=512,
                        help="the build's --slice-threshold (default: its default, 512)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each (default 3)")
    parser.add_argument("extra", nargs="*", help="options for every floem run (after --)")
    parser.add_argument("--short", action="store_true",
                        help="the forwarder at 64 and 1024 bytes (below and above the "
                             "threshold), one run of 200 frames and 0.3 s each: checks that "
                             "everything builds and runs")
    args = parser.parse_args()
    if args.short:
        args.kinds, args.sizes, args.frames, args.seconds, args.repeats = \
            "forwarder", "64,1024", 200, 0.3, 1
    floem = floem_command()
    extra = [*args.extra, "--slice-threshold", str(args.threshold)]
    print("| NF | bytes | mode | DMA req/frame | DMA bytes to host/frame | DMA bytes from "
          "host/frame | host entry bytes/frame | packets/s | p50 µs | p90 µs | p99 µs |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
          flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for kind in args.kinds.split(","):
            for size in (int(s) for s in args.sizes.split(",")):
                frames = traffic.frames(kind, args.frames, (size,), seed=1, malformed=0)
                capture = os.path.join(work, "in.pcap")
                traffic.write_pcap(capture, frames)
                results = {m: [] for m in MODES}
                for r in range(args.repeats):
                    for mode in (list(MODES) if r % 2 == 0 else list(MODES)[::-1]):
                        t = throughput(floem, kind, capture, args.seconds, mode, extra)
                        t.update(latency(floem, kind, capture, frames, args.rate, mode, extra,
                                         work))
                        results[mode].append(t)
                med = {m: {k: statistics.median(r[k] for r in results[m]) for k in results[m][0]}
                       for m in MODES}
                for m in MODES:
                    v = med[m]
                    v["host"] = host_bytes(floem, kind, m, extra, frames, args.threshold, work)
                    print(f"| {kind} | {size} | {m} | {v['requests']:.2f} | {v['to_host']:.0f} | "
                          f"{v['from_host']:.0f} | {v['host']:.0f} | {v['pps']:.0f} | "
                          f"{v['p50']:.0f} | {v['p90']:.0f} | {v['p99']:.0f} |", flush=True)
                rows.append((kind, size, med))
    print()
    print("| NF | bytes | DMA bytes whole/sliced | host entry bytes whole/sliced | "
          "packets/s sliced/whole | p50 sliced/whole | p90 sliced/whole |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for kind, size, med in rows:
        s, w = med["sliced"], med["whole"]
        dma_s, dma_w = s["to_host"] + s["from_host"], w["to_host"] + w["from_host"]
        print(f"| {kind} | {size} | {dma_w / dma_s:.2f} | {w['host'] / s['host']:.2f} | "
              f"{s['pps'] / w['pps']:.2f} | {s['p50'] / w['p50']:.2f} | "
              f"{s['p90'] / w['p90']:.2f} |")


if __name__ == "__main__":
    main()
