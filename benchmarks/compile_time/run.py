#!/usr/bin/env python3
"""`floem build` time and peak memory, split into its stages, for the examples and for
synthetic chains and fan-outs of 100, 1,000 and 5,000 elements.

Usage: python3 benchmarks/compile_time/run.py [--sizes 100,1000,5000] [--examples-only]

Each build runs in a process of its own (so peak memory is its own), into a fresh
directory (so the C compiler runs), and is timed stage by stage through the build
driver's own stages (`compile_ir`, `write_build`, `compile_build`):

  front end   the app file run (load_app) and build_graph, which makes the IR
  passes      the pass pipeline after build_graph
  codegen     flags, generated files, the build key, writing the files
  C           make: gcc on the generated C and the runtime (an executable and a
              library: the generated C is compiled twice, two jobs at a time)

Peak memory: the build's Python process, and the largest C compiler process.
Prints a Markdown table (docs/benchmarks.md, "Compile time").
"""
from __future__ import annotations

import argparse
import json
import os
import resource
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


def run_case(app: str, defines: dict[str, str]) -> dict[str, float]:
    """`measure` in a fresh process."""
    args = [sys.executable, __file__, "--one", app] + [f"{k}={v}" for k, v in defines.items()]
    result = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    if result.returncode != 0:
        raise SystemExit(f"{app} {defines}: {result.stderr.strip()}")
    return json.loads(result.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100,1000,5000")
    ap.add_argument("--examples-only", action="store_true")
    ap.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        app, *pairs = args.one
        print(json.dumps(measure(app, dict(p.split("=", 1) for p in pairs))))
        return
    cases = [(os.path.relpath(os.path.join(ROOT, a), ROOT), {}) for a in EXAMPLES]
    if not args.examples_only:
        cases += [(os.path.relpath(SYNTHETIC, ROOT), {"shape": shape, "n": n})
                  for shape in ("chain", "fanout") for n in args.sizes.split(",")]
    columns = ["front end", "passes", "codegen", "C", "python MB", "C MB"]
    print("| app | total s | " + " | ".join(c if c.endswith("MB") else c + " s"
                                          for c in columns) + " |")
    print("| --- | ---: |" + " ---: |" * len(columns))
    for app, defines in cases:
        r = run_case(app, defines)
        name = app if not defines else f"{defines['shape']} of {int(defines['n']):,}"
        total = sum(r[c] for c in columns[:4])
        cells = [f"{r[c]:.2f}" if not c.endswith("MB") else f"{r[c]:.0f}" for c in columns]
        print(f"| {name} | {total:.2f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
