"""memcached 1.6 against the key-value store's ``cpu`` design, side by side, over kernel UDP
and kernel TCP, and the ``cpu`` design over DPDK and over AF_XDP.

    python3 benchmarks/kvs/vs_memcached.py                 # 3 rounds, about 8 minutes
    python3 benchmarks/kvs/vs_memcached.py --rounds 1 --seconds 2 --json out.json
    python3 benchmarks/kvs/vs_memcached.py --short         # a round of 0.3 s per client
    python3 benchmarks/kvs/vs_memcached.py --servers TCP   # only the servers named "...TCP..."
    python3 benchmarks/kvs/vs_memcached.py --servers veth --servers AF_XDP   # the veth pair's

``--servers TEXT`` runs only the servers whose name (the table's first column) contains TEXT
(given several times: any of them); a store's ratio needs its memcached among them
(``--servers TCP`` runs both TCP rows).

Servers, each on a UDP port of 127.0.0.1: memcached with one worker thread (``-t 1``) and
with two, and ``floem run examples/kvs/kvs.py -D design=cpu`` with one thread and with two.
Clients, each run against every kernel-UDP server in turn, the servers' order alternating
between rounds:

* ``memcaslap -U`` (libmemcached-tools; the text protocol, 90% get, 64-byte values) for
  ``--seconds``: requests/s as it counts them;
* ``udp_blast`` (runtime/tests/udp_blast.c) in template mode, sending the paper's workload
  (examples/kvs/load.py: 100,000 keys of 32 bytes, 64-byte values, Zipf 0.9, 90% GET, in
  the binary protocol) as fast as two sockets can, the keys preloaded first: requests
  answered per second;
* ``load.py --rate`` (an open loop well below either server's saturation): the p50 and
  p99 latency of a request.

The servers keep the workload's keys: each is preloaded (every key SET) before its clients
run.

Over kernel TCP, memcached with one worker thread and the ``cpu`` design with one thread
(``--net tcp``), on their TCP ports, each against:

* ``memcaslap`` (the text protocol, 90% get, 64-byte values) over 16 connections of one
  thread, for ``--seconds``;
* ``memcaslap`` over 1,000 connections of one thread (each waiting for its answer before it
  asks again): the many-connection client;
* ``memcslap -t get`` (libmemcached's memslap: 10,000 keys of up to 4 KiB set, then each
  got once by each of 2 threads, one connection each, waiting for each answer): keys set
  and got per second of its own timing of the two.

Two more, in the same rounds, on a veth pair between two network namespaces
(floem.netns.veth_pair; needs root, else they are left out, saying why): memcached with one
worker thread serving the server end's address over kernel UDP, and ``floem run kvs.py -D
design=cpu --net xdp`` with one thread reading that end's frames from its AF_XDP socket.
Their clients, the same three as over kernel UDP, run in the other namespace and reach the
server through the kernel's network stack (udp_blast with UDP_BLAST_SERVER, load.py as a
process there). The store over AF_XDP is compared with memcached over the same veth pair.

One more server, in the same rounds: the ``cpu`` design with one thread over DPDK, ``floem
run kvs.py -D design=cpu --net dpdk`` with a net_memif vdev (memif server, no hugepages),
and dpdk_blast.c (benchmarks/kvs/, on Floem's packet I/O API) as the memif client in
another process: the kernel is on neither side's path. Its clients: dpdk_blast in
throughput mode (udp_blast's requests with up to ``--window`` outstanding, a new one sent
as each is answered, for ``--seconds``; requests/s by dpdk_blast's own clock, from its first
request to its last reply, so EAL's start-up is not counted) and in latency mode (an open
loop at ``--rate``: p50 and p99). The keys are preloaded by dpdk_blast, which is also how
the script knows the store is up.

Cores: a server of n threads runs on the first n CPUs this script may use (``taskset -c``;
the store's segment threads, each pinned by ``-D cores`` to the k-th CPU its process may
use, land on them in order) and its clients on the others (this script's thread pins
itself there while a client runs, and the client programs it starts inherit that). So on
two CPUs the one-thread servers run on CPU 0 and every client on CPU 1. The store's thread
polls its core, and a client on that core (where the scheduler puts a client woken by the
store's replies: wake-affine placement) would measure that contention, not the store. A
server with as many threads as there are CPUs leaves none free: it and its clients are not
pinned (on two CPUs, memcached -t 2 and the store with two threads, whose threads still pin
themselves to CPUs 0 and 1; the clients go where the scheduler puts them). The table says
where each server and its clients ran.

Server CPU per request: the CPU time of the server's processes (utime + stime, /proc)
during a client's run over the requests it answered; cores: that CPU time over the run's
time (DPDK: dpdk_blast's seconds). The store's threads poll (backing off to short sleeps
when idle), so they take CPU time even at a light load. Every figure is the median over
the rounds; ratios are per server core against memcached with the same number of threads,
measured in the same run (the DPDK store's: against memcached -t 1 under udp_blast, the
same requests; the TCP store's: against memcached -t 1 over TCP, the same client).
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import importlib.util
import json
import os
import re
import shutil
import signal
import socket as socketlib
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples", "kvs"))
import load  # noqa: E402
from run import free_udp_port  # noqa: E402  (benchmarks/kvs/run.py)

from floem.errors import FloemError  # noqa: E402
from floem.netns import VethPair, veth_pair  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "echo_bench", os.path.join(ROOT, "benchmarks", "echo", "run.py"))
echo_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(echo_bench)    # its runtime_parent and clean_runtime_dir

KVS = os.path.join(ROOT, "examples", "kvs", "kvs.py")
BLAST = os.path.join(ROOT, "runtime", "tests", "udp_blast.c")
DPDK_BLAST = os.path.join(HERE, "dpdk_blast.c")
#: Where a binary request's opaque field is in a datagram: the 8-byte frame header, then 12.
OPAQUE_AT = 8 + 12
TEMPLATES = 100_000
DPDK = "floem cpu over DPDK memif, 1 thread"
VETH = "memcached -t 1 over veth"
XDP = "floem cpu over AF_XDP, 1 thread"
TCP = ("memcached -t 1 over TCP", "floem cpu over TCP, 1 thread")
SERVERS = ("memcached -t 1", "memcached -t 2", "floem cpu, 1 thread", "floem cpu, 2 threads",
           DPDK, VETH, XDP) + TCP
#: Servers on a veth pair, their clients in the other namespace.
ON_VETH = (VETH, XDP)
#: A client whose ratio is against another client's figure for memcached: the same requests.
PEER_CLIENT = {"dpdk_blast": "udp_blast"}
#: A server compared with another memcached than the one of its thread count.
PEER_SERVER = {XDP: VETH}
#: The UDP port of the servers on a veth pair (the namespaces are this script's own).
VETH_PORT = 11211
#: EAL's arguments for both ends of the memif pair: no hugepages, no PCI, EAL's files apart.
EAL = "--no-huge --no-pci -m 256 --no-shconf --no-telemetry"
SERVER_PREFIX, CLIENT_PREFIX = "kvsbench", "kvsblast"


@dataclass(frozen=True)
class Pinning:
    """The CPUs a server runs on and those its clients run on; None: not pinned (wherever
    the scheduler puts them)."""

    server: tuple[int, ...] | None = None
    clients: tuple[int, ...] | None = None

    def __str__(self) -> str:
        if self.server is None or self.clients is None:
            return "not pinned"
        return f"{cpu_list(self.server)} / {cpu_list(self.clients)}"


def cpu_list(cpus: Sequence[int]) -> str:
    """CPUs as ``taskset -c`` takes them: ``0``, ``0,1``."""
    return ",".join(map(str, cpus))


def pinning(threads: int, cpus: Sequence[int]) -> Pinning:
    """A server of ``threads`` threads on the first ``threads`` of ``cpus``, its clients on
    the rest; not pinned when that would leave the clients no CPU."""
    cpus = sorted(cpus)
    if len(cpus) <= threads:
        return Pinning()
    return Pinning(tuple(cpus[:threads]), tuple(cpus[threads:]))


def taskset(cpus: Sequence[int] | None) -> list[str]:
    """The prefix that runs a command on ``cpus`` (none when None)."""
    return [] if cpus is None else ["taskset", "-c", cpu_list(cpus)]


@contextlib.contextmanager
def pinned(cpus: Sequence[int] | None) -> Iterator[None]:
    """Run the block with this thread on ``cpus``, and so every process it starts meanwhile
    (as under ``taskset -c``); None: where it was."""
    if cpus is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def server_threads(name: str) -> int:
    """The worker threads of server ``name`` (one of SERVERS)."""
    found = re.search(r"-t (\d+)|(\d+) threads?$", name.removesuffix(" over TCP"))
    return int(found.group(1) or found.group(2))


def tree_cpu_seconds(root: int) -> float:
    """The CPU time (user + system) of process ``root`` and its live descendants."""
    stats = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            stats[int(pid)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    ticks, tree = 0, {root}
    for pid in sorted(stats):               # a child's pid is usually above its parent's
        parent, used = stats[pid]
        if pid == root or parent in tree:
            tree.add(pid)
            ticks += used
    return ticks / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def server(name: str, floem: str, cpus: Sequence[int] | None = None,
           keys: int = load.DEFAULT_KEYS) -> Iterator[tuple[int, int]]:
    """Start kernel-UDP (or kernel-TCP: one of TCP) server ``name`` (one of SERVERS) in a
    session of its own, on ``cpus`` (None: not pinned); yield its port and process id once it
    answers a NOOP and holds the workload's ``keys`` keys (over TCP: once it accepts
    connections; its clients write their own keys)."""
    tcp = name in TCP
    port = free_tcp_port() if tcp else free_udp_port()
    threads = server_threads(name)
    ports = ["-p", str(port), "-U", "0"] if tcp else ["-U", str(port), "-p", "0"]
    if name.startswith("memcached"):
        command = [shutil.which("memcached") or "memcached", *ports,
                   "-t", str(threads), "-l", "127.0.0.1", "-u", "root", "-m", "1024"]
    else:
        command = [floem, "run", KVS, "-D", "design=cpu", "-D", f"cores={threads}",
                   "--port", str(port), "--net", "tcp" if tcp else "udp"]
    command = taskset(cpus) + command
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not (accepts(port) if tcp else
                   load.answers_noop(load.Server("127.0.0.1", port), 0.2)):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{name} did not start: {' '.join(command)}\n"
                                 + proc.stderr.read().decode())
            time.sleep(0.1 * tcp)
        if not tcp:
            load.run_live(load.Workload(keys=keys), [load.Server("127.0.0.1", port)],
                          requests=1)
        yield port, proc.pid
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """Stop a server started in a session of its own: SIGINT, then SIGKILL after 30 s."""
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def free_tcp_port() -> int:
    """A TCP port of 127.0.0.1 nobody uses now."""
    with socketlib.socket(socketlib.AF_INET, socketlib.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accepts(port: int) -> bool:
    """True when something accepts connections on ``port`` of 127.0.0.1."""
    try:
        socketlib.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def run_memcaslap(port: int, seconds: float, net: VethPair | None = None, tcp: bool = False,
                  connections: int = 16) -> int:
    """memcaslap's requests (gets and sets) against ``port`` over UDP or TCP (of ``net``'s
    server end, from its client end, when given), for ``seconds`` rounded to whole seconds
    (at least 1: memcaslap's unit)."""
    host = net.server_ip if net else "127.0.0.1"
    command = ["memcaslap", "-s", f"{host}:{port}", *([] if tcp else ["-U"]),
               "-t", f"{max(1, round(seconds))}s", "-T", "1", "-c", str(connections),
               "-X", "64"]
    done = subprocess.run(net.in_client(command) if net else command,
                          capture_output=True, text=True, timeout=seconds + 60)
    counts = dict(re.findall(r"^(cmd_get|cmd_set): (\d+)$", done.stdout, re.M))
    if done.returncode != 0 or len(counts) != 2:
        raise SystemExit(f"memcaslap failed:\n{done.stdout}{done.stderr}")
    return sum(map(int, counts.values()))


def run_memcslap(port: int) -> tuple[int, dict[str, float]]:
    """memcslap over TCP: its 10,000 keys set, then got: the keys set and got, and its own
    seconds for them (the server's CPU time spans both)."""
    done = subprocess.run(["memcslap", "-s", f"127.0.0.1:{port}", "-t", "get", "-e", "10000",
                           "-c", "2"], capture_output=True, text=True, timeout=300)
    timed = re.findall(r"^Time to (?:set|get)\s+(\d+) keys.*:\s+([\d.]+) seconds", done.stdout,
                       re.M)
    if done.returncode != 0 or len(timed) != 2 or "rror" in done.stdout + done.stderr:
        raise SystemExit(f"memcslap failed:\n{done.stdout}{done.stderr}")
    return sum(int(k) for k, _ in timed), {"seconds": sum(float(t) for _, t in timed)}


def write_templates(path: str, operations: Iterator[load.Operation]) -> None:
    """Requests as udp_blast's and dpdk_blast's templates (a 16-bit length, then the
    datagram)."""
    with open(path, "wb") as f:
        for op in operations:
            datagram = op.encode(0, 0)
            f.write(struct.pack("<H", len(datagram)) + datagram)


def run_blast(exe: str, templates: str, port: int, seconds: float,
              net: VethPair | None = None) -> int:
    """The requests udp_blast's two sockets had answered (from ``net``'s client end to its
    server end, when given)."""
    with tempfile.TemporaryDirectory() as replies:
        command = [exe, str(port), "2", f"{seconds:g}", str(1 << 30), templates,
                   str(OPAQUE_AT), os.path.join(replies, "r")]
        done = subprocess.run(net.in_client(command) if net else command, capture_output=True,
                              text=True, timeout=seconds + 90,
                              env={**os.environ, **({"UDP_BLAST_SERVER": net.server_ip}
                                                    if net else {})})
    answered = re.findall(r"answered (\d+)", done.stdout)
    if done.returncode != 0 or len(answered) != 2:
        raise SystemExit(f"udp_blast failed:\n{done.stdout}{done.stderr}")
    return sum(map(int, answered))


def run_latency(port: int, seconds: float, rate: float) -> tuple[int, dict[str, float]]:
    """load.py's open loop at ``rate``: requests answered and the p50/p99 latency (µs)."""
    summary = load.run_live(load.Workload(keys=10_000), [load.Server("127.0.0.1", port)],
                            requests=None, duration=seconds, rate=rate)
    if not summary.ok:
        raise SystemExit(f"load.py failed:\n{summary.format()}")
    return summary.answered, {"p50_us": summary.latency_us["p50"],
                              "p99_us": summary.latency_us["p99"]}


def run_load(net: VethPair, port: int, *args: str) -> dict:
    """load.py ARGS in ``net``'s client namespace against its server end: its summary (as
    its --json prints it)."""
    done = subprocess.run(net.in_client([sys.executable, os.path.join(ROOT, "examples", "kvs",
                                                                       "load.py"),
                                         "--server", f"{net.server_ip}:{port}", "--json",
                                         *args]),
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"load.py {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return json.loads(done.stdout)


def run_veth_latency(net: VethPair, port: int, seconds: float,
                     rate: float) -> tuple[int, dict[str, float]]:
    """run_latency's open loop, from ``net``'s client end."""
    summary = run_load(net, port, "--keys", "10000", "--duration", f"{seconds:g}",
                       "--rate", f"{rate:g}")
    return summary["answered"], {"p50_us": summary["latency_us"]["p50"],
                                 "p99_us": summary["latency_us"]["p99"]}


@contextlib.contextmanager
def veth_server(name: str, floem: str, cpus: Sequence[int] | None = None,
                keys: int = load.DEFAULT_KEYS) -> Iterator[tuple[tuple[VethPair, int], int]]:
    """Start ``name`` (VETH or XDP) on the server end of a veth pair of its own, on ``cpus``
    (None: not pinned); yield the pair and port, and its process id, once it answers and
    holds the workload's ``keys`` keys (load.py in the client namespace preloads them)."""
    with veth_pair("kvs") as net:
        if name == VETH:
            command = [shutil.which("memcached") or "memcached", "-U", str(VETH_PORT), "-p",
                       "0", "-t", "1", "-l", net.server_ip, "-u", "root", "-m", "1024"]
        else:
            command = [floem, "run", KVS, "-D", "design=cpu", "-D", "cores=1", "--net", "xdp",
                       "--iface", net.server_if, "--port", str(VETH_PORT)]
        command = net.in_server(taskset(cpus) + command)
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            while True:
                try:
                    run_load(net, VETH_PORT, "--requests", "1", "--keys", str(keys))
                    break
                except SystemExit as failed:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit(f"{name} did not start: {' '.join(command)}\n{failed}"
                                         + proc.stderr.read().decode()) from failed
            yield (net, VETH_PORT), proc.pid
        finally:
            stop(proc)


def build_dpdk_blast(exe: str) -> None:
    """Compile dpdk_blast.c with Floem's packet I/O runtime for DPDK (as tests/test_net.py's
    build() compiles runtime/tests/test_net_dpdk.c)."""
    def pkg_config(flag: str) -> list[str]:
        return subprocess.run(["pkg-config", flag, "libdpdk"], capture_output=True, text=True,
                              check=True).stdout.split()
    src = os.path.join(ROOT, "runtime", "src")
    sources = sorted(glob.glob(os.path.join(src, "net*.c"))) + [
        os.path.join(src, f) for f in ("threads.c", "shared.c", "count.c")]
    subprocess.run([os.environ.get("CC", "gcc"), "-std=c11", "-Wall", "-Wextra", "-Werror",
                    "-O2", "-pthread", "-I" + os.path.join(ROOT, "runtime", "include"),
                    "-I" + os.path.join(ROOT, "library", "c"), "-DFLOEM_NET_DPDK",
                    *pkg_config("--cflags"), DPDK_BLAST,
                    os.path.join(ROOT, "library", "c", "headers.c"), *sources, "-o", exe,
                    *pkg_config("--libs")], check=True)


@dataclass
class DpdkStore:
    """The store over DPDK: the EAL arguments of a memif client connecting to it, the
    summary of dpdk_blast's preload, and (once stopped) what the store printed on stderr,
    its FLOEM_REPORT counters among it."""

    client_eal: str
    preload: dict[str, float] = field(default_factory=dict)
    stderr: str = ""


def run_dpdk_blast(exe: str, store: DpdkStore, *args: str) -> dict[str, float]:
    """dpdk_blast MODE TEMPLATES OPAQUE_AT SECONDS [N] (``args``) against ``store``: its
    summary's figures (sent, answered, lost, late, wrong, misses, seconds, p50_us, p99_us)."""
    done = subprocess.run([exe, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "FLOEM_DPDK_EAL": store.client_eal})
    summary = {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", done.stdout)}
    if done.returncode != 0 or "answered" not in summary:
        raise SystemExit(f"dpdk_blast {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return summary


@contextlib.contextmanager
def dpdk_server(floem: list[str], exe: str, preload: str, tmp: str,
                cpus: Sequence[int] | None = None) -> Iterator[tuple[DpdkStore, int]]:
    """Start the store over DPDK (``floem run kvs.py -D design=cpu --net dpdk``, the memif
    server) in a session of its own, on ``cpus`` (None: not pinned); yield it and its
    process id once dpdk_blast, run as the memif client, has preloaded it with the requests
    of template file ``preload``. EAL's runtime directories are removed afterwards."""
    socket = os.path.join(tmp, "memif.sock")    # memif's default: an abstract socket by name
    store = DpdkStore(f"{EAL} --file-prefix={CLIENT_PREFIX} "
                      f"--vdev=net_memif0,role=client,socket={socket}")
    command = [*taskset(cpus), *floem, "run", KVS, "-D", "design=cpu", "-D", "cores=1",
               "--net", "dpdk", "--eal", f"{EAL} --file-prefix={SERVER_PREFIX} "
                        f"--vdev=net_memif0,role=server,socket={socket}"]
    parent_existed = os.path.exists(echo_bench.runtime_parent())
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, text=True,
                                start_new_session=True, env={**os.environ, "FLOEM_REPORT": "1"})
        try:
            deadline = time.monotonic() + 300
            while True:     # until the store (built on its first run) serves the memif socket
                try:
                    store.preload = run_dpdk_blast(exe, store, "preload", preload,
                                                   str(OPAQUE_AT), "60")
                    break
                except SystemExit as failed:
                    # only the store not serving yet is worth a retry: no memif server, or
                    # one whose threads (a loaded machine) did not answer the first NOOP
                    if (proc.poll() is not None or time.monotonic() > deadline
                            or not any(m in str(failed) for m in (
                                "floem: net dpdk:", "did not answer a NOOP"))):
                        err.seek(0)
                        raise SystemExit(
                            f"{failed}\n{' '.join(command)}:\n{err.read()}") from failed
                    time.sleep(0.3)
            yield store, proc.pid
        finally:
            stop(proc)
            err.seek(0)
            store.stderr = err.read()
            for prefix in (SERVER_PREFIX, CLIENT_PREFIX):
                echo_bench.clean_runtime_dir(prefix, parent_existed)


def run_dpdk_throughput(exe: str, templates: str, store: DpdkStore, seconds: float,
                        window: int) -> tuple[int, dict[str, float]]:
    """dpdk_blast's throughput mode: the requests answered, and its seconds."""
    s = run_dpdk_blast(exe, store, "throughput", templates, str(OPAQUE_AT), f"{seconds:g}",
                       str(window))
    return int(s["answered"]), {"seconds": s["seconds"]}


def run_dpdk_latency(exe: str, templates: str, store: DpdkStore, seconds: float,
                     rate: float) -> tuple[int, dict[str, float]]:
    """dpdk_blast's open loop at ``rate``: the requests answered, its seconds, the p50/p99
    latency (µs)."""
    s = run_dpdk_blast(exe, store, "latency", templates, str(OPAQUE_AT), f"{seconds:g}",
                       f"{rate:g}")
    return int(s["answered"]), {"seconds": s["seconds"], "p50_us": s["p50_us"],
                                "p99_us": s["p99_us"]}


def measure(serving: contextlib.AbstractContextManager, clients: dict[str, Callable],
            client_cpus: Sequence[int] | None) -> dict[str, dict[str, float]]:
    """Every client, on ``client_cpus`` (None: not pinned), against the server that
    ``serving`` starts (it yields what the clients take and the server's process id):
    requests/s, CPU µs per request, cores. A client returns the requests it had answered and
    more figures; its ``seconds`` among them, when there, are the run's time instead of the
    wall time around it. A client that fails runs once more (memcaslap over UDP sometimes
    stops on its own assertion about a reply's request id), saying so on stderr; a second
    failure ends the script."""
    results = {}
    with serving as (endpoint, pid):
        for client, run in clients.items():
            for attempt in (1, 2):
                cpu, start = tree_cpu_seconds(pid), time.monotonic()
                try:
                    with pinned(client_cpus):
                        answered, extra = run(endpoint)
                    break
                except SystemExit as failed:
                    if attempt == 2:
                        raise
                    print(f"vs_memcached.py: {client} failed; running it once more:\n{failed}",
                          file=sys.stderr)
            wall, cpu = time.monotonic() - start, tree_cpu_seconds(pid) - cpu
            seconds = extra.pop("seconds", wall)
            results[client] = {"requests_per_s": answered / seconds,
                               "cpu_us_per_request": 1e6 * cpu / max(answered, 1),
                               "cores": cpu / seconds, **extra}
    return results


def medians(rounds: list[dict[str, dict[str, dict[str, float]]]]) -> dict:
    """Each figure's median over the rounds, by server and client."""
    return {s: {c: {k: statistics.median(r[s][c][k] for r in rounds) for k in rounds[0][s][c]}
                for c in rounds[0][s]} for s in rounds[0]}


def table(result: dict, cpus: Sequence[int]) -> str:
    """The medians as markdown, with each floem figure's ratio to memcached's (PEER_SERVER's
    for the store over AF_XDP), under a line saying where servers and clients ran on
    ``cpus`` (the CPUs this script may use)."""
    rows = [f"CPUs {cpu_list(cpus)}: a server of n threads pinned to the first n "
            "(taskset -c), its clients to the others; not pinned when no CPU would be left to "
            "the clients (as many threads as CPUs).", "",
            "| server | CPUs: server / clients | client | requests/s | server cores | "
            "per server core | vs memcached | server CPU µs/request | p50 / p99 µs |",
            "| --- " * 9 + "|"]
    for name in (n for n in SERVERS if n in result):
        cores = pinning(server_threads(name), cpus)
        peer = PEER_SERVER.get(name) or (None if not name.startswith("floem") else
                                         TCP[0] if name in TCP else
                                         f"memcached -t {server_threads(name)}")
        for client, r in result[name].items():
            per_core = r["requests_per_s"] / max(r["cores"], 1e-9)
            if client == "latency":         # an offered load, not a capacity
                rows.append(f"| {name} | {cores} | {client} at {r['requests_per_s']:,.0f}/s | "
                            f"| {r['cores']:.2f} | | | {r['cpu_us_per_request']:.2f} | "
                            f"{r['p50_us']:.0f} / {r['p99_us']:.0f} |")
                continue
            ratio = ""
            if peer in result:
                p = result[peer][PEER_CLIENT.get(client, client)]
                ratio = f"{per_core / (p['requests_per_s'] / max(p['cores'], 1e-9)):.2f}x"
            rows.append(f"| {name} | {cores} | {client} | {r['requests_per_s']:,.0f} | "
                        f"{r['cores']:.2f} | {per_core:,.0f} | {ratio} | "
                        f"{r['cpu_us_per_request']:.2f} | |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=4.0, help="each client's run")
    ap.add_argument("--rate", type=float, default=5000,
                    help="the latency run's offered load, requests/s")
    ap.add_argument("--window", type=int, default=256,
                    help="dpdk_blast's requests outstanding at most (up to 1024)")
    ap.add_argument("--json", help="write the medians here")
    ap.add_argument("--keys", type=int, default=load.DEFAULT_KEYS,
                    help="the workload's keys (every server is preloaded with all of them)")
    ap.add_argument("--servers", metavar="TEXT", action="append",
                    help="run only the servers whose name contains TEXT (e.g. TCP: the TCP rows, "
                         "whose ratios are against memcached over TCP, run with them); "
                         "several --servers: those whose name contains any of them")
    ap.add_argument("--short", action="store_true",
                    help="one round of 0.3 s per client over 1,000 keys: checks that everything "
                         "builds and runs")
    args = ap.parse_args()
    if args.short:
        args.rounds, args.seconds, args.keys = 1, 0.3, 1000
    floem = shutil.which("floem") or sys.exit("floem is not on PATH (scripts/setup.sh)")
    shutil.which("memcaslap") or sys.exit("memcaslap is missing (libmemcached-tools)")
    shutil.which("memcslap") or sys.exit("memcslap is missing (libmemcached-tools)")
    shutil.which("taskset") or sys.exit("taskset is missing (util-linux)")
    if subprocess.run(["pkg-config", "--exists", "libdpdk"]).returncode != 0:
        sys.exit("DPDK is missing (libdpdk-dev and pkg-config)")
    cpus = sorted(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as tmp:
        exe, templates = os.path.join(tmp, "udp_blast"), os.path.join(tmp, "templates")
        dpdk_exe, preload = os.path.join(tmp, "dpdk_blast"), os.path.join(tmp, "preload")
        subprocess.run([os.environ.get("CC", "gcc"), "-std=c11", "-O2", "-pthread", BLAST,
                        "-o", exe], check=True)
        build_dpdk_blast(dpdk_exe)
        workload = load.Workload(keys=args.keys)
        write_templates(templates, workload.operations(TEMPLATES))
        write_templates(preload, workload.preload_operations())
        clients = {"memcaslap": lambda port: (run_memcaslap(port, args.seconds), {}),
                   "udp_blast": lambda port: (run_blast(exe, templates, port, args.seconds), {}),
                   "latency": lambda port: run_latency(port, args.seconds, args.rate)}
        veth_clients = {
            "memcaslap": lambda at: (run_memcaslap(at[1], args.seconds, at[0]), {}),
            "udp_blast": lambda at: (run_blast(exe, templates, at[1], args.seconds, at[0]), {}),
            "latency": lambda at: run_veth_latency(at[0], at[1], args.seconds, args.rate)}
        tcp_clients = {
            "memcaslap": lambda port: (run_memcaslap(port, args.seconds, tcp=True), {}),
            "memcaslap, 1000 connections": lambda port: (
                run_memcaslap(port, args.seconds, tcp=True, connections=1000), {}),
            "memcslap": run_memcslap}
        servers = tuple(n for n in SERVERS
                        if args.servers is None or any(text in n for text in args.servers))
        if not servers:
            sys.exit(f"no server's name contains any of {args.servers}: {', '.join(SERVERS)}")
        try:
            if any(n in ON_VETH for n in servers):
                with veth_pair("probe"):
                    pass
        except FloemError as refused:
            print(f"vs_memcached.py: no veth pair, so no AF_XDP rows: {refused}", file=sys.stderr)
            servers = tuple(n for n in servers if n not in ON_VETH)
        dpdk_clients = {
            "dpdk_blast": lambda store: run_dpdk_throughput(dpdk_exe, templates, store,
                                                            args.seconds, args.window),
            "latency": lambda store: run_dpdk_latency(dpdk_exe, templates, store, args.seconds,
                                                      args.rate)}
        rounds = []
        for r in range(args.rounds):
            order = servers if r % 2 == 0 else servers[::-1]
            measured = {}
            for name in order:
                cores = pinning(server_threads(name), cpus)
                if name == DPDK:
                    serving, its_clients = (dpdk_server([floem], dpdk_exe, preload, tmp,
                                                        cores.server), dpdk_clients)
                elif name in ON_VETH:
                    serving, its_clients = (veth_server(name, floem, cores.server, args.keys),
                                            veth_clients)
                else:
                    serving, its_clients = (server(name, floem, cores.server, args.keys),
                                            tcp_clients if name in TCP else clients)
                measured[name] = measure(serving, its_clients, cores.clients)
            rounds.append(measured)
            print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)
    result = medians(rounds)
    print(table(result, cpus))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
