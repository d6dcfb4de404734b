#!/usr/bin/env python3
"""`floem build` time and peak memory, split into its stages, for the examples and for
synthetic chains and fan-outs of 100, 1,000 and 5,000 elements.

Usage: python3 benchmarks/compile_time/run.py [--sizes 100,1000,5000] [--examples-only]
                                              [--rounds N] [--short]

Each build runs in a process of its own (so peak memory is its own), into a fresh
directory (so the C compiler runs), and is timed stage by stage through the build
driver's own stages (`compile_ir`, `write_build`, `compile_build`):

  front end   the app file run (load_app) and build_graph, which makes the IR
  passes      the pass pipeline after build_graph
  codegen     flags, generated files, the build key, writing the files
  C           make -j: gcc on the generated C's translation units and the program's C
              files, and the link (the runtime archive is in the build cache)
  process     the whole process, as `floem build` takes it (Python's start and imports
              too)

The builds share a build cache of their own: its runtime archives (one per set of flags)
are made before the timed builds, which find them there, but for the last row, the
key-value store built with an empty cache, which compiles its runtime archive too.
Peak memory: the build's Python process, and the largest C compiler process. --rounds N:
each case N times, in turn, the medians shown. --short: one round of the echo and a chain
and fan-out of 100 (a check that the script runs). Prints a Markdown table
(docs/benchmarks.md, "Compile time").
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SYNTHETIC = os.path.join(HERE, "synthetic.py")
EXAMPLES = ["examples/echo/echo.py", "examples/demo/counters.py", "examples/kvs/kvs.py",
            "examples/nf/aes.py", "examples/nf/flowclass.py", "examples/nf/sequencer.py",
            "examples/legacy/simple_math.py", "examples/storm/storm.py"]


def measure(app: str, defines: dict[str, str]) -> dict[str, float]:
    """Build ``app`` once, in this process; seconds per stage and peak megabytes."""
    from floem.api import load_app
    from floem.builder import compile_build, compile_ir, write_build
    from floem.ir import BuildOptions
    from floem.passes import run_pipeline

    start = time.perf_counter()
    program = load_app(app, defines)
    loaded = time.perf_counter()
    run_pipeline(program, BuildOptions(), stop_after="build_graph")
    graph = time.perf_counter() - loaded
    seconds: dict[str, float] = {"front end": time.perf_counter() - start}
    with tempfile.TemporaryDirectory() as out:
        began = time.perf_counter()
        ir = compile_ir(program, BuildOptions(), out)
        written = time.perf_counter()
        build = write_build(program, ir, BuildOptions(), out)
        compiled = time.perf_counter()
        compile_build(build)
        seconds |= {"passes": written - began - graph,   # compile_ir runs build_graph again
                    "codegen": compiled - written, "C": time.perf_counter() - compiled}
    return {**seconds,
            "python MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "C MB": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


def run_case(app: str, defines: dict[str, str], cache: str) -> dict[str, float]:
    """`measure` in a fresh process building into build cache ``cache``."""
    args = [sys.executable, __file__, "--one", app] + [f"{k}={v}" for k, v in defines.items()]
    began = time.perf_counter()
    result = subprocess.run(args, capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "FLOEM_CACHE": cache})
    if result.returncode != 0:
        raise SystemExit(f"{app} {defines}: {result.stderr.strip()}")
    return {**json.loads(result.stdout), "process": time.perf_counter() - began}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100,1000,5000")
    ap.add_argument("--examples-only", action="store_true")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        app, *pairs = args.one
        print(json.dumps(measure(app, dict(p.split("=", 1) for p in pairs))))
        return
    examples = EXAMPLES[:1] if args.short else EXAMPLES
    sizes = ["100"] if args.short else args.sizes.split(",")
    cases = [(os.path.relpath(os.path.join(ROOT, a), ROOT), {}) for a in examples]
    if not args.examples_only:
        cases += [(os.path.relpath(SYNTHETIC, ROOT), {"shape": shape, "n": n})
                  for shape in ("chain", "fanout") for n in sizes]
    columns = ["front end", "passes", "codegen", "C", "process", "python MB", "C MB"]
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start; "
          f"{'1 round' if args.short else f'{args.rounds} round(s), medians'}\n")
    print("| app | total s | " + " | ".join(c if c.endswith("MB") else c + " s"
                                          for c in columns) + " |")
    print("| --- | ---: |" + " ---: |" * len(columns))
    with tempfile.TemporaryDirectory(prefix="floem-compile-time-") as work:
        cache = os.path.join(work, "cache")
        for app, defines in dict.fromkeys((a, tuple(d.items())) for a, d in cases):
            run_case(app, dict(defines), cache)      # the runtime archives of their flags
        rows: list[tuple[str, dict[str, float]]] = []
        for _ in range(1 if args.short else args.rounds):
            rows += [(name_of(app, defines), run_case(app, defines, cache))
                     for app, defines in cases]
        if not args.short and not args.examples_only or "examples/kvs/kvs.py" in examples:
            kvs = os.path.relpath(os.path.join(ROOT, "examples/kvs/kvs.py"), ROOT)
            for _ in range(1 if args.short else args.rounds):
                cold = os.path.join(work, "cold")
                rows.append(("examples/kvs/kvs.py, empty cache", run_case(kvs, {}, cold)))
                shutil.rmtree(cold)
    for name in dict.fromkeys(n for n, _ in rows):
        r = {c: statistics.median(row[c] for n, row in rows if n == name) for c in columns}
        total = sum(r[c] for c in columns[:4])
        cells = [f"{r[c]:.2f}" if not c.endswith("MB") else f"{r[c]:.0f}" for c in columns]
        print(f"| {name} | {total:.2f} | " + " | ".join(cells) + " |", flush=True)


def name_of(app: str, defines: dict[str, str]) -> str:
    """A case's name in the table."""
    return app if not defines else f"{defines['shape']} of {int(defines['n']):,}"


if __name__ == "__main__":
    main()
