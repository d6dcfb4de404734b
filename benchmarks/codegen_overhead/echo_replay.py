"""examples/echo/echo.py, unchanged, with a `main` that stops at the end of a replayed capture.

    floem run benchmarks/codegen_overhead/echo_replay.py --net pcap --pcap-in IN --pcap-out OUT
"""
import os
import runpy

from replay import stop_when_replayed

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                            "echo", "echo.py"))
stop_when_replayed()
