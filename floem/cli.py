"""The floem command: build, run, check, graph, explore and place an app file, list its
parameters, watch a running program's counters."""
from __future__ import annotations

import signal

# SIGUSR1 asks the processes of `floem run` for their counters: floem never dies of it. It
# is ignored from here on, before the imports below load the compiler, the long part of the
# command's start (before this line, only Python's own start and floem/__init__.py's
# language modules run); the launcher forwards it to the processes while they run.
signal.signal(signal.SIGUSR1, signal.SIG_IGN)

import argparse
import importlib.metadata
import ipaddress
import os
import sys
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import Field, fields
from typing import Any

from floem.api import load_app
from floem.builder import Counting, build_program, check_program, network_environment, run_built
from floem.errors import FloemError, warning_line
from floem.explore.model import model_platforms
from floem.graph import GRAPH_FORMATS, to_dot, write_graph
from floem.ir.options import BuildOptions, Flag, flags
from floem.lang import params
from floem.launcher import STOP_SIGNALS, TIMEOUT_STATUS, follow_parent, stopped_note
from floem.passes import pass_names
from floem.paths import path_problem
from floem.stats import load_counts, save_counts, stats
from floem.trace import MAX_PACKETS as TRACE_MAX_PACKETS

#: What the command's exit status means (``floem --help``, docs/cli.md).
EXIT_STATUSES = [
    ("0", "success; `floem run`: the program exited with 0, as one without `floem.main` "
          "code does when SIGINT or SIGTERM stops `floem run` (which forwards it)"),
    ("1", "an error, printed as `FILE:LINE: error: ...` (or `floem: error: ...` when it has "
          "no place in a file): a mistake in the app, a failed build, a missing tool, a file "
          "or directory floem cannot read or write; `floem explore`: every configuration "
          "failed"),
    ("2", "a wrong command line (unknown option, missing argument, bad value)"),
    ("N", "`floem run`: the program's own exit status (the main process's; when another "
          "process of the program fails while it runs, that process's)"),
    (str(TIMEOUT_STATUS), "`floem run --timeout S`: the program was still running after S "
                          "seconds and was killed"),
    ("128 + N", "the program's main process was killed by signal N (`floem run`), or "
                "`floem` itself was stopped by SIGINT (130) or SIGTERM (143): while it loads "
                "or builds the app, or when the program does not end by itself on the "
                "signal it forwards"),
]

#: An example for each subcommand's ``--help`` (and docs/cli.md).
EXAMPLES = {
    "build": "floem build examples/echo/echo.py -D device=nic --nic liquidio -o build/echo",
    "run": "floem run examples/echo/echo.py --duration 10\n"
           "floem run examples/echo/echo.py --net pcap --pcap-in in.pcap --duration 1 \\\n"
           "    --trace 3 --trace-filter 'v0 > 23 && v1[23] == 17'\n"
           "floem run examples/echo/echo.py --net pcap --pcap-in in.pcapng --pcap-out out.pcap \\\n"
           "    --pcap-timing 2 --pcap-loop 3 --duration 5\n"
           "floem run examples/kvs/kvs.py --net xdp --iface eth1 --port 11211\n"
           "floem run app.py --timeout 60 -- ARG1 ARG2",
    "check": "floem check examples/kvs/kvs.py -D design=split",
    "graph": "floem graph examples/echo/echo.py -D device=nic -o echo.svg\n"
             "floem run examples/echo/echo.py --net pcap --pcap-in in.pcap --stats echo.json\n"
             "floem graph examples/echo/echo.py --stats echo.json -o echo.svg",
    "params": "floem params examples/kvs/kvs.py",
    "stats": "floem stats                  # every running program, refreshed each second\n"
             "floem stats 4242 --once      # the run of floem run (or a process) 4242, once",
    "explore": "floem explore examples/nf/aes.py -D device=cpu,nic \\\n"
               "    --workload 'python examples/nf/load.py aes --count 20000 --pcap {pcap}' \\\n"
               "    --nic liquidio --host xeon-e5-2680v3",
    "place": "floem place examples/nf/aes.py -D device=auto \\\n"
             "    --workload 'python examples/nf/load.py aes --count 2000 --pcap {pcap}' \\\n"
             "    --nic liquidio --host xeon-e5-2680v3 -o aes_placed\n"
             "floem run aes_placed.py -D device=auto --port 9000",
}


def version() -> str:
    """The installed package's version (``floem --version``)."""
    try:
        return importlib.metadata.version("floem")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _positive(text: str) -> float:
    """An argparse type: a number above 0."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"need a number above 0, not {text!r}")
    return value


def _count(text: str) -> int:
    """An argparse type: a whole number, 0 or more."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"need a whole number, 0 or more, not {text!r}")
    return int(text)


def _definition(text: str) -> str:
    """An argparse type: ``NAME=VALUE``, NAME an identifier."""
    try:
        params.parse_definitions([text])
    except FloemError:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, not {text!r}") from None
    return text


def _ipv4(text: str) -> str:
    """An argparse type: an IPv4 address in dotted form."""
    try:
        return str(ipaddress.IPv4Address(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"need an IPv4 address, not {text!r}") from None


def _port(text: str) -> int:
    """An argparse type: a UDP port, 1 to 65535."""
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"need a UDP port, 1 to 65535, not {text!r}")
    return int(text)


def _pass_name(text: str) -> str:
    """An argparse type: the name of a compiler pass, or ``all``."""
    if text != "all" and text not in pass_names():
        raise argparse.ArgumentTypeError(f"no pass named {text!r} (passes: "
                                         f"{', '.join(pass_names())}, all)")
    return text


def _graph_file(text: str) -> str:
    """An argparse type: a file name ending in .dot, .gv, .svg, .png or .pdf."""
    if "." in text and text.rsplit(".", 1)[1].lower() not in GRAPH_FORMATS:
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: use .dot, .svg, .png or "
                                         f".pdf")
    return text


def _platforms(kind: str, several: bool) -> Callable[[str], str]:
    """An argparse type: the name of a modelled ``kind`` platform (``several``: a comma
    separated list of them)."""
    def platforms(text: str) -> str:
        known = model_platforms(kind)
        wrong = [n for n in (text.split(",") if several else [text]) if n not in known]
        if wrong:
            raise argparse.ArgumentTypeError(f"no {kind} platform {wrong[0]!r} (the {kind} "
                                             f"platforms: {', '.join(known)})")
        return text
    return platforms


def _count_cache(text: str) -> tuple[str, str]:
    """An argparse type: PROCESS=I1:D1:LL or PROCESS=I1:D1:L2:LL, each cache
    BYTES,WAYS,LINE (whole numbers)."""
    process, _, geometry = text.partition("=")
    caches = geometry.split(":")
    if not process or len(caches) not in (3, 4) or not all(
            len(c.split(",")) == 3 and all(n.isdigit() for n in c.split(",")) for c in caches):
        raise argparse.ArgumentTypeError(f"need PROCESS=I1:D1:LL or PROCESS=I1:D1:L2:LL, each "
                                         f"cache BYTES,WAYS,LINE (e.g. nic=32768,4,128:32768,"
                                         f"32,128:4194304,16,128), not {text!r}")
    return process, geometry


def _counting(args: argparse.Namespace) -> Counting | None:
    """What ``--count-instructions`` and ``--count-cache`` ask for, if anything."""
    if args.count_cache and not args.count_instructions:
        raise FloemError("--count-cache simulates caches while counting: give "
                         "--count-instructions too")
    if not args.count_instructions:
        return None
    return Counting(args.count_instructions, dict(args.count_cache))


def _packets(text: str) -> int:
    """An argparse type: a number of packets to trace, from 1 to 16777215."""
    if not text.isdigit() or not 1 <= int(text) <= TRACE_MAX_PACKETS:
        raise argparse.ArgumentTypeError(f"need a whole number from 1 to {TRACE_MAX_PACKETS}, "
                                         f"not {text!r}")
    return int(text)


def _exit_statuses() -> str:
    """The exit statuses as ``floem --help`` ends with them."""
    width = max(len(status) for status, _ in EXIT_STATUSES)
    lines = ["exit status:"]
    for status, meaning in EXIT_STATUSES:
        lines += textwrap.wrap(meaning.replace("`", ""), 78,
                               initial_indent=f"  {status:<{width}}  ",
                               subsequent_indent=" " * (width + 4))
    return "\n".join(lines)


def _epilog(name: str) -> str:
    """Subcommand ``name``'s example(s), as its ``--help`` ends with them."""
    lines = EXAMPLES[name].split("\n")
    heading = "examples:" if sum(not line.startswith(" ") for line in lines) > 1 else "example:"
    return heading + "".join(f"\n  {line}" for line in lines)


def default_note(action: argparse.Action) -> str:
    """`` (default: X)`` for an option that takes a value and has a default its help does not
    already give; else nothing (``--help`` and docs/cli.md both say it so)."""
    if (action.option_strings and action.nargs != 0 and action.default not in (None, [], "")
            and action.default is not argparse.SUPPRESS and "default" not in (action.help or "")):
        return f" (default: {action.default})"
    return ""


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written; each option's help ends with its default (`default_note`)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        return (action.help or "") + default_note(action).replace("%", "%%")


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser (its subcommands, options and examples)."""
    formatter = _HelpFormatter
    parser = argparse.ArgumentParser(prog="floem", description=__doc__, epilog=_exit_statuses(),
                                     formatter_class=formatter)
    parser.add_argument("--version", action="version", version=f"floem {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str,
                description: str | None = None) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=description or help_text,
                           epilog=_epilog(name), formatter_class=formatter)
        p.set_defaults(parser=p)        # whose usage a wrong option of the command shows
        return p

    def app_argument(p: argparse.ArgumentParser, app_help: str = "the app file (Python)",
                     values: str = "NAME=VALUE", define_help: str = "set app parameter NAME "
                     "(floem.param); see `floem params APP`") -> None:
        p.add_argument("app", help=app_help)
        p.add_argument("-D", dest="define", action="append", default=[], type=_definition,
                       metavar=values, help=define_help)

    def target_options(p: argparse.ArgumentParser, name: str) -> None:
        app_argument(p)
        build_option_arguments(p, name)
        p.add_argument("--dump-after", type=_pass_name, metavar="PASS",
                       help="write the IR after PASS (or 'all')")
        p.add_argument("--report", action="store_true", help="write report.txt and print it")

    build = command("build", "compile an app into C and executables")
    target_options(build, "build")
    build.add_argument("-o", "--out", metavar="DIR", help="output directory (default: ./build/<app>)")

    run = command("run", "build (cached) and run an app")
    target_options(run, "run")
    run.add_argument("-o", "--out", metavar="DIR", help="build directory (default: the cache)")
    run.add_argument("--trace", type=_packets, metavar="N",
                     help="print the path of the first N packets to enter the program through "
                          "its elements and queues, with the per-packet fields each changed")
    run.add_argument("--timeout", type=_positive, metavar="S",
                     help="kill and report the app after S seconds")
    run.add_argument("--duration", type=_positive, metavar="S",
                     help="stop the app with SIGINT after S seconds")
    run.add_argument("--port", type=_port, metavar="P",
                     help="--net udp, tcp, xdp: the UDP or TCP port to serve (default 9000)")
    run.add_argument("--listen", type=_ipv4, metavar="ADDR",
                     help="--net udp, tcp: the IPv4 address to serve the port on (default "
                          "127.0.0.1: this host only; 0.0.0.0: every address, the network); "
                          "--net xdp: the only destination address served (default: any)")
    run.add_argument("--iface", metavar="NAME",
                     help="--net xdp: the network interface whose frames to the UDP port the "
                          "program reads from its AF_XDP sockets (all others stay the kernel's)")
    run.add_argument("--pcap-in", metavar="FILE",
                     help="--net pcap: packets to replay (pcap or pcapng, Ethernet)")
    run.add_argument("--pcap-out", metavar="FILE",
                     help="--net pcap: where sent packets go (classic pcap)")
    run.add_argument("--pcap-timing", type=_positive, nargs="?", const=1.0, metavar="FACTOR",
                     help="--net pcap: replay at the capture's timestamps, FACTOR times faster "
                          "(default 1: its own pace); without it, as fast as the app takes them")
    run.add_argument("--pcap-loop", type=_count, metavar="N",
                     help="--net pcap: replay the capture N times (0: until stopped; default 1)")
    run.add_argument("--eal", metavar="ARGS", help="--net dpdk: EAL arguments, e.g. "
                     "'--no-huge --no-pci -m 256 --vdev=net_ring0'")
    run.add_argument("--stats", metavar="FILE",
                     help="write the element counters as JSON when the program ends (for "
                          "floem graph --stats)")
    run.add_argument("--count-instructions", metavar="BASE",
                     help="run every process under qemu-user of its ISA with Floem's "
                          "counting plugin, counting what its segment threads execute on "
                          "packets into BASE.PROCESS (floem explore; of a --count-elements "
                          "build, each element function's share too: floem place)")
    run.add_argument("--count-cache", action="append", default=[], type=_count_cache,
                     metavar="PROCESS=I1:D1[:L2]:LL",
                     help="--count-instructions: simulate PROCESS's caches with this geometry "
                          "(each BYTES,WAYS,LINE) and count their misses too")
    run.add_argument("args", nargs="*", default=[],
                     help="arguments for the host main (after --)")

    check = command("check", "front end and all passes, no C compiler")
    app_argument(check)
    build_option_arguments(check, "check")

    graph = command("graph", "draw the program (DOT; SVG/PNG with Graphviz)")
    app_argument(graph)
    graph.add_argument("-o", "--out", type=_graph_file, metavar="FILE",
                       help=".dot, .svg, .png or .pdf (default: stdout)")
    graph.add_argument("--after", type=_pass_name, metavar="PASS",
                       help="draw the IR after PASS (default: all passes)")
    graph.add_argument("--stats", metavar="FILE", help="counters to draw on the graph: packets on "
                       "edges, drops on elements (from floem run --stats or floem stats --json)")

    listing = command("params", "list the app's parameters (-D NAME=VALUE)")
    app_argument(listing)

    live = command("stats", "show running programs' per-element packet counters, live",
                   "Show the per-element packet counters of running programs (yours, every "
                   "user's with --all, or the run PID belongs to), refreshed like top until "
                   "they end: packets "
                   "in, runs that sent nothing on (drops and ends of paths), packets out per "
                   "port, and packets in per second; a process serving TCP, its connections "
                   "(open, accepted, closed) and their bytes.")
    live.add_argument("pid", nargs="?", type=int, metavar="PID",
                      help="a process of the program, or the floem run that started it")
    live.add_argument("--once", action="store_true", help="print the counters once and exit")
    live.add_argument("--interval", type=_positive, default=1.0, metavar="S",
                      help="seconds between refreshes (default 1)")
    live.add_argument("--json", action="store_true", help="print the counters once, as JSON")
    live.add_argument("--all", action="store_true",
                      help="every user's programs, not only yours")

    explore = command(
        "explore", "count an app's configurations on a workload; predict them on a NIC and a "
        "host", "Build and run every configuration of APP on a workload capture, count what "
        "each segment executes per packet, and predict packets/s, latency and the bottleneck "
        "on models of NIC and host platforms; print the table best first and write it as "
        "CSV, JSON and a plot.")
    app_argument(explore, "the app file, or a sweep file (.toml) of several studies",
                 "NAME=V1,V2", "values of parameter NAME to sweep (a parameter with choices "
                 "and no -D sweeps all its choices)")
    explore.add_argument("--nic", type=_platforms("nic", True), metavar="P1,P2",
                         help="NIC platforms (default: the sweep file's, else "
                              "liquidio,bluefield2); the models: floem/platforms/*.toml")
    explore.add_argument("--host", type=_platforms("host", True), metavar="P1,P2",
                         help="host platforms (default: the sweep file's, else this, this "
                              "machine as measured)")
    explore.add_argument("--load", type=_positive, metavar="PPS",
                         help="offered load for the latency prediction, packets/s (default: "
                              "four fifths of each prediction)")
    explore.add_argument("--workload", metavar="CMD",
                         help="a command that writes the workload capture to {pcap}")
    explore.add_argument("--pcap", metavar="FILE", help="the workload capture")
    explore.add_argument("--packets", type=_count, metavar="N",
                         help="use only the workload's first N packets (after its "
                              "baseline's): a quicker, rougher count")
    explore.add_argument("--baseline", metavar="CMD",
                         help="a command writing a capture that begins the workload (its "
                              "warm-up) to {pcap}: its counts are subtracted")
    explore.add_argument("--option", action="append", default=[], metavar="OPTION",
                         help="an option for every `floem run`, e.g. --option=--nic-managers=0")
    explore.add_argument("-o", "--out", metavar="BASE",
                         help="write BASE.csv, .json, .svg and .png (default: explore/APP)")
    explore.add_argument("--per-core", action="store_true",
                         help="rank by predicted packets/s per host core, not in all (and "
                              "with --best-threads, choose the threads by it)")
    explore.add_argument("--best-threads", action="store_true",
                         help="predict every assignment of the NIC cores (to its "
                              "segments and sync-layer managers) and of --host-cores to "
                              "the segments of each configuration, and report each at the "
                              "best, counted with its own threads")
    explore.add_argument("--host-cores", type=_count, metavar="N",
                         help="--best-threads: host cores the segments may use (default: "
                              "the host platform's)")
    placing = command(
        "place", "search the CPU/NIC cuts of an app's target.AUTO segments; rank them on the "
        "model, check the best by running them", "Enumerate every valid cut of each "
        "target.AUTO segment of APP (of one too wide to list them all, those along packet "
        "order) with threads for each part, count each element once on each side on the "
        "workload, predict on a NIC and a host platform every placement the model's bounds "
        "do not rule out, rank them, run the best on the emulated NIC to check that each sends exactly what "
        "the all-CPU build sends, and write BASE.csv, BASE.json and the winner as an app file "
        "BASE.py (with BASE.diff against APP). Parameters given several values, or declared "
        "with choices, are searched too: each configuration is placed, and one with no "
        "target.AUTO segment is a placement as written (a NIC cache sized by its parameters).")
    app_argument(placing, values="NAME=V1,V2", define_help="values of parameter NAME to "
                 "search (a parameter with choices and no -D: all its choices); the winner's "
                 "become the placed app file's defaults")
    placing.add_argument("--workload", metavar="CMD",
                         help="a command that writes the workload capture to {pcap}")
    placing.add_argument("--pcap", metavar="FILE", help="the workload capture")
    placing.add_argument("--nic", type=_platforms("nic", False), default="liquidio",
                         metavar="PLATFORM",
                         help="the NIC platform modelled (default liquidio; floem/platforms)")
    placing.add_argument("--host", type=_platforms("host", False), default="this",
                         metavar="PLATFORM",
                         help="the host platform modelled (default this: this machine)")
    placing.add_argument("--objective", nargs="+", default=["throughput"], metavar="OBJ",
                         help="throughput (default), per-host-core, latency (p50), or "
                              "host-cores-at RATE (fewest host cores reaching RATE, e.g. 2Mpps)")
    placing.add_argument("--host-cores", type=_count, metavar="N",
                         help="host threads the app may use at most (default: the host "
                              "platform's cores), e.g. 1 to compare one core with the NIC")
    placing.add_argument("--top", type=int, default=3, metavar="K",
                         help="run the best K placements to check their output (default 3)")
    placing.add_argument("--max-builds", type=int, default=12, metavar="N",
                         help="programs built and run at most, counting and checking "
                              "(default 12)")
    placing.add_argument("--timeout", type=_positive, metavar="S",
                         help="start no check after S seconds")
    build_option_arguments(placing, "place")
    placing.add_argument("--option", action="append", default=[], metavar="OPTION",
                         help="an option for every `floem run`, e.g. --option=--no-slicing")
    placing.add_argument("--explain", action="store_true",
                         help="list every cut of each segment, and why each invalid one is")
    placing.add_argument("--predict-all", action="store_true",
                         help="predict every placement, leaving none out by the model's "
                              "bound (BASE.csv and BASE.json then rank them all)")
    placing.add_argument("-o", "--out", metavar="BASE",
                         help="write BASE.csv, .json, .py and .diff (default: the app's name, "
                              "here)")
    return parser


def _dest(option: Field[Any], flag: Flag) -> str:
    """Where argparse keeps a build option's flag: the field's name (and the flag's key)."""
    return f"{option.name}_{flag.key}" if flag.key else option.name


def build_option_arguments(p: argparse.ArgumentParser, command: str) -> None:
    """The flags of the build options ``command`` takes, in `BuildOptions`'s order."""
    for option in fields(BuildOptions):
        for flag in flags(option):
            if command not in flag.commands:
                continue
            if isinstance(option.default, bool):
                p.add_argument(flag.name, dest=option.name, help=flag.help,
                               action="store_false" if option.default else "store_true")
            elif flag.repeat:
                p.add_argument(flag.name, dest=option.name, type=_argument(flag.type),
                               action="append",
                               default=[], metavar=flag.metavar, help=flag.help)
            else:
                p.add_argument(flag.name, dest=_dest(option, flag), type=flag.type,
                               default=None if flag.key else option.default,
                               metavar=flag.metavar, choices=flag.choices, help=flag.help)


def _argument(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` as an argparse type: its `FloemError` a usage error of the flag."""
    def parsed(text: str) -> Any:
        try:
            return parse(text)
        except FloemError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    parsed.__name__ = parse.__name__
    return parsed


def _build_options(args: argparse.Namespace) -> BuildOptions:
    """The `BuildOptions` the command's flags give; ``floem run --trace N`` and
    ``--count-instructions BASE`` build with the packet-trace and counting code."""
    values: dict[str, Any] = {}
    for option in fields(BuildOptions):
        taken = [flag for flag in flags(option) if args.command in flag.commands]
        if any(flag.key for flag in taken):
            values[option.name] = {flag.key: value for flag in taken
                                   if (value := getattr(args, _dest(option, flag))) is not None}
        elif taken:
            value = getattr(args, option.name)
            values[option.name] = tuple(value) if isinstance(value, list) else value
    if args.command == "run":
        values |= {"trace": bool(args.trace), "count_instructions": bool(args.count_instructions)}
    return BuildOptions(**values)


def _count_of(n: int, noun: str) -> str:
    """``1 segment``, ``2 segments``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _warn(warnings: list[str]) -> None:
    for w in warnings:
        print(warning_line(w), file=sys.stderr)


def _command(args: argparse.Namespace) -> int:
    if args.command == "explore":
        from floem.explore.command import explore
        return explore(args)
    if args.command == "place":
        if not args.pcap and not args.workload:
            raise FloemError("floem place needs a workload: --pcap FILE or --workload CMD")
        from floem.place.command import place
        return place(args)
    if args.command == "stats":
        return stats(args.pid, args.once, args.interval, args.json, args.all)
    program = load_app(args.app, params.parse_definitions(args.define))
    if args.command == "params":
        sys.stdout.write(params.describe(params.declared()))
        return 0
    if args.command == "check":
        ir = check_program(program, _build_options(args))
        _warn(ir.warnings)
        print(f"{args.app}: ok ({_count_of(len(ir.segments), 'segment')}, "
              f"{_count_of(len(ir.nodes()), 'element')})")
        return 0
    if args.command == "graph":
        ir = check_program(program, stop_after=args.after)
        counts = load_counts(args.stats) if args.stats else None
        if args.out:
            write_graph(ir, args.out, counts)
        else:
            sys.stdout.write(to_dot(ir, counts))
        return 0
    if args.command == "build":
        out = args.out or os.path.join("build", program.display_name)
        result = build_program(program, _build_options(args), out, args.dump_after, args.report)
        _warn(result.warnings)
        if result.report:
            with open(result.report) as f:
                sys.stdout.write(f.read())
        state = "compiled" if result.compiled else "up to date"
        names = ", ".join(os.path.relpath(p, result.out_dir) for p in result.files
                          if not os.path.relpath(p, result.out_dir).startswith("runtime"))
        print(f"floem: {state} {result.out_dir}: {names}")
        return 0
    built = build_program(program, _build_options(args), args.out, args.dump_after, args.report)
    _warn(built.warnings)
    if built.report:
        with open(built.report) as f:
            sys.stderr.write(f.read())
    sys.stdout.flush()
    env = network_environment(args.net, port=args.port, listen=args.listen,
                              pcap_in=args.pcap_in, pcap_out=args.pcap_out, eal=args.eal,
                              pcap_timing=args.pcap_timing, pcap_loop=args.pcap_loop,
                              iface=args.iface)
    with tempfile.TemporaryDirectory(prefix="floem-counters-") as kept:
        if args.stats:
            env["FLOEM_COUNTERS_DIR"] = kept
        ran = run_built(built, program, timeout=args.timeout, duration=args.duration,
                        args=args.args, capture=False, env=env,
                        count=_counting(args), trace=args.trace)
        if args.stats:
            save_counts(kept, args.stats)
    return ran.returncode


class _Stopped(BaseException):
    """SIGINT or SIGTERM while no program runs (the launcher handles them while one does);
    not an Exception, so that nothing on the way (an app file run by load_app) takes it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, _frame: object) -> None:
    raise _Stopped(signum)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``floem`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    args, unknown = build_parser().parse_known_args(argv[:split])
    if unknown:
        args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if split < len(argv):               # after `--`, wherever the options were: the program's
        args.args = argv[split + 1:]
    if args.command not in ("explore", "place"):    # they stop their runs their own way
        for s in STOP_SIGNALS:
            signal.signal(s, _stop)
    try:
        follow_parent()
        return _command(args)
    except FloemError as e:
        print(e.diagnostic(), file=sys.stderr)
        return 1
    except OSError as e:        # a file or directory floem cannot read or write
        print(FloemError(path_problem(e)).diagnostic(), file=sys.stderr)
        return 1
    except _Stopped as e:
        print(stopped_note(e.signum), file=sys.stderr)
        return 128 + e.signum


if __name__ == "__main__":
    sys.exit(main())
