"""Run a Storm topology: one process per server on this machine, then the total ranker's
top N on stdout.

    python examples/storm/run.py --input tweets.txt                      # topology.toml, cpu
    python examples/storm/run.py my.toml --input tweets.txt -D design=bypass --top 20
    python examples/storm/run.py --input tweets.txt --net dpdk -D design=split

``--net udp`` (default): every server is a UDP endpoint on 127.0.0.1 (its ``port``, or a
port free when the run starts for a server without one; STORM_PORTS tells every server).
``--net dpdk``: every server runs in a network namespace of its own, made for the run and
removed after it, with a veth joined to the others' through a bridge in one more namespace;
DPDK's ``af_packet`` driver sends and receives on it (needs root).

Each server is ``floem run storm.py -D server=NAME ...`` (the app parameters ``-D`` are
passed on: design, shared_out, drop options...). The run ends when the total ranker has
printed its ranking; the other servers are then stopped. Their stderr is shown with
``[server]`` in front. Exit status: 0 when every server ended well, else 1.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from topology import Server, Topology, TopologyError, load  # noqa: E402
import netns  # noqa: E402

FLOEM = os.path.join(os.path.dirname(sys.executable), "floem")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="example: python examples/storm/run.py --input tweets.txt "
                                       "-D design=split --top 10")
    p.add_argument("topology", nargs="?", default=os.path.join(HERE, "topology.toml"),
                   help="the topology file (default: topology.toml beside run.py)")
    p.add_argument("--input", required=True, help="tweets: one user name per line")
    p.add_argument("--top", type=int, default=10, help="how many users to rank (default 10)")
    p.add_argument("--window-s", type=int, default=0,
                   help="counters' sliding window in seconds (0, default: the whole stream)")
    p.add_argument("--emit-ms", type=int, default=100,
                   help="how often counters and rankers emit (default 100 ms)")
    p.add_argument("--net", choices=("udp", "dpdk"), default="udp")
    p.add_argument("--nic", default="emu", help="NIC platform of the split and bypass designs")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help="an app parameter of storm.py (floem params examples/storm/storm.py)")
    p.add_argument("--timeout", type=float, default=600,
                   help="stop everything after this many seconds (default 600)")
    p.add_argument("--report", action="store_true", help="servers print their counters at exit")
    p.add_argument("--count", metavar="BASE",
                   help="count what each server's threads execute (floem run "
                        "--count-instructions BASE.SERVER; floem explore)")
    p.add_argument("--floem-option", action="append", default=[], metavar="OPT",
                   help="one more option for every `floem run`, "
                        "e.g. --floem-option=--nic-managers=0")
    return p.parse_args(argv)


def server_command(args: argparse.Namespace, topology: Topology, server: Server) -> list[str]:
    """The `floem run` of one server."""
    defines = [f"topology={os.path.abspath(topology.path)}", f"server={server.name}",
               f"loopback={'true' if args.net == 'udp' else 'false'}"] + args.defines
    command = [FLOEM, "run", os.path.join(HERE, "storm.py")]
    for d in defines:
        command += ["-D", d]
    design = next((d.split("=", 1)[1] for d in reversed(args.defines) if d.startswith("design=")),
                  "cpu")
    if design != "cpu":
        command += ["--nic", args.nic]
    command += ["--net", args.net, "--timeout", str(args.timeout)] + args.floem_option
    if args.net == "udp":
        command += ["--port", str(server.port)]
    else:
        command += ["--eal", netns.eal_arguments(server)]
    if args.report:
        command.append("--report")
    if args.count:
        command += ["--count-instructions", f"{args.count}.{server.name}"]
    command += ["--"] + topology.worker_arguments(server) + [
        "--input", os.path.abspath(args.input), "--top", str(args.top),
        "--window-s", str(args.window_s), "--emit-ms", str(args.emit_ms)]
    return command


def relay(name: str, stream, out) -> threading.Thread:
    """Copy a server's stream line by line with ``[name]`` in front."""
    def copy() -> None:
        for line in stream:
            out.write(f"[{name}] {line}")
            out.flush()
    thread = threading.Thread(target=copy, daemon=True)
    thread.start()
    return thread


def run(args: argparse.Namespace) -> int:
    """Start every server, wait for the total ranker's, stop the others; the exit status."""
    topology = load(args.topology).with_free_ports()
    if not os.path.isfile(args.input):
        raise TopologyError(f"--input {args.input}: no such file")
    total = topology.total_server()
    with ExitStack() as stack:
        wrap = (lambda s, c: c) if args.net == "udp" else \
            stack.enter_context(netns.Network(topology)).wrap
        processes: dict[str, subprocess.Popen] = {}
        relays = []
        # Each `floem run` (and so its processes) stops when run.py ends, even by SIGKILL.
        server_environment = {**os.environ, "FLOEM_PARENT": str(os.getpid()),
                              "STORM_PORTS": topology.ports()}
        for server in topology.servers:
            command = wrap(server, server_command(args, topology, server))
            p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, start_new_session=True, env=server_environment)
            processes[server.name] = p
            relays.append(relay(server.name, p.stderr, sys.stderr))
        result = processes[total.name]
        ranking = []
        relays.append(threading.Thread(target=lambda: ranking.extend(result.stdout), daemon=True))
        relays[-1].start()
        deadline = time.monotonic() + args.timeout + 60
        status = 0
        try:
            while result.poll() is None:
                failed = [n for n, p in processes.items()
                          if p.poll() is not None and p is not result]
                if failed or time.monotonic() > deadline:
                    for n in failed:
                        print(f"storm: server {n!r} ended early (status {processes[n].returncode})",
                              file=sys.stderr)
                    if not failed:
                        print("storm: timed out", file=sys.stderr)
                    status = 1
                    break
                time.sleep(0.05)
        finally:
            for p in processes.values():
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for name, p in processes.items():
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
                    status = 1
                    print(f"storm: server {name!r} did not stop; killed it", file=sys.stderr)
            for r in relays:
                r.join(timeout=5)
        for name, p in processes.items():
            if p.returncode != 0:
                print(f"storm: server {name!r} exited with status {p.returncode}", file=sys.stderr)
                status = 1
        sys.stdout.write("".join(ranking))
        return status


def _stopped(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)          # through run()'s finally: the servers stop too


def main(argv: list[str] | None = None) -> int:
    """The command line."""
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _stopped)
    try:
        return run(args)
    except (TopologyError, netns.NetworkError) as e:
        print(f"storm: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
