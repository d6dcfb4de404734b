#!/usr/bin/env python3
"""The C front end's time on many element bodies: `floem.csrc.analyze` of N bodies at once
(each a short body with a branch, a per-packet field, a persistent state and an output
block, as an app's elements are), the best of three runs.

Usage: python3 benchmarks/compile_time/bodies.py [--bodies 1000]

Prints one Markdown table row (docs/benchmarks.md, "Compile time").
"""
from __future__ import annotations

import argparse
import time

from floem.csrc import Body, Port, analyze

CODE = ("int x = inp();\nif (x > 3) {\n  state->n = x * 2;\n} else {\n"
        "  tracker->total += x;  /* { */\n}\nprintf(\"%d\\n\", x);\noutput { out(x); }\n")
PRELUDE = "typedef struct Tracker { int total; } Tracker;"


def bodies(count: int) -> list[Body]:
    """``count`` copies of `CODE`, each an element of its own."""
    return [Body(element=f"e{k}", code=CODE, app_file="app.py", app_line=1,
                 inputs=[Port("inp", ["int"])], outputs=[Port("out", ["int"])],
                 state_fields={"n": "int"}, persistent={"tracker": "Tracker"})
            for k in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", type=int, default=1000)
    count = parser.parse_args().bodies
    made = bodies(count)
    seconds = []
    for _ in range(3):
        start = time.perf_counter()
        analyze(made, prelude=PRELUDE)
        seconds.append(time.perf_counter() - start)
    print(f"| {count:,} bodies | {min(seconds):.2f} |")


if __name__ == "__main__":
    main()
