"""The ``floem explore`` command: studies from the command line or a sweep file, then output."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
from collections.abc import Callable

from floem.explore import output
from floem.explore.sweep import (Study, configurations, load_sweep_file, make_workload,
                                 parse_sweep, platforms_named, run_study)

DEFAULT_NICS = ["liquidio", "bluefield2"]
DEFAULT_HOSTS = ["this"]


def explore(args: argparse.Namespace) -> int:
    """Run the studies ``args`` name; print one table per study and write the outputs.

    SIGTERM and SIGINT stop the run under way and end the exploration (`stoppable`).
    """
    return stoppable("explore", lambda: _explore(args))


def stoppable(command: str, body: Callable[[], int]) -> int:
    """``body()``, which starts runs each in a session of its own; SIGTERM and SIGINT stop
    the run under way and end ``command`` with status 143 or 130."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        return body()
    except KeyboardInterrupt:
        print(f"floem: {command} interrupted", file=sys.stderr)
        return 128 + signal.SIGINT


def _explore(args: argparse.Namespace) -> int:
    nics = platforms_named(args.nic.split(","), "nic") if args.nic else None
    hosts = platforms_named(args.host.split(","), "host") if args.host else None
    with tempfile.TemporaryDirectory(prefix="floem-explore-") as workdir:
        if args.app.endswith(".toml"):
            title, nic_names, host_names, studies = load_sweep_file(args.app, workdir)
        else:
            name = os.path.splitext(os.path.basename(args.app))[0]
            title, nic_names, host_names = name, [], []
            baseline = make_workload(args.baseline, None, workdir, "baseline") \
                if args.baseline else None
            studies = [Study(name, os.path.abspath(args.app), parse_sweep(args.define),
                             make_workload(args.workload, args.pcap, workdir), baseline=baseline)]
        for n, s in enumerate(studies):
            if args.packets and s.workload is not None:
                before = s.baseline.frames if s.baseline else 0
                s.workload = s.workload.first(before + args.packets,
                                              os.path.join(workdir, f"first{n}.pcap"))
            s.options += args.option
            s.best_threads = s.best_threads or args.best_threads
            s.host_cores = args.host_cores or s.host_cores
            s.per_core = s.per_core or args.per_core
        nics = nics or platforms_named(nic_names or DEFAULT_NICS, "nic")
        hosts = hosts or platforms_named(host_names or DEFAULT_HOSTS, "host")
        targets = len({nic.target for nic in nics})
        progress = output.Progress(targets * sum(len(configurations(s.app, s.sweep))
                                                 for s in studies))
        rows = []
        for s in studies:
            rows += run_study(s, nics, hosts, args.load, progress)
        progress.done()
    stem = os.path.splitext(os.path.basename(args.app))[0]
    base = args.out or os.path.join("explore", stem)
    for study in dict.fromkeys(r.study for r in rows):
        print(f"\n{study}\n")
        print(output.table(output.ranked([r for r in rows if r.study == study], args.per_core)))
    written = output.write(rows, nics + hosts, base, title)
    print(f"\nfloem: wrote {', '.join(written)}")
    return 1 if all(r.failed for r in rows) else 0
