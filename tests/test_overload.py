"""Overload: the echo (examples/echo, ``--net udp`` on loopback, on the CPU and on the NIC)
driven above its capacity for a bounded time, then used normally.

A C load generator (``runtime/tests/udp_blast.c``) blasts numbered datagrams from several
sockets for a few seconds, each socket checking every reply it gets, again (at most
`BLASTS` times) until the kernel has dropped requests at the echo's socket: on a machine
busy with other work one blast may not outrun it. Asserted:

* every reply is exactly a request its socket sent, and none is answered twice;
* the server was above capacity: the kernel dropped requests at its socket;
* every datagram is accounted for at the socket or counter that dropped it: the requests
  sent equal those the echo received plus those dropped at its socket (its report) and on
  receipt; the echo's receipts equal its replies plus those it freed or failed to send; its
  replies equal the replies received plus those dropped at the clients' sockets. The only
  other place a loopback datagram can be lost is a CPU's input backlog, counted for the whole
  machine (``/proc/net/softnet_stat``): each balance may be short by at most that count;
* the server's resident memory stays within a bound while it is overloaded;
* afterwards, requests sent one at a time are all answered (it recovered).

The echo cases are marked slow. ``runtime/tests/test_net_udp.c overflow`` checks the udp
backend's count of socket drops alone.
"""
from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import time

import pytest

from conftest import ROOT, floem_command
from test_echo import ECHO, REPORT, client_socket, on, report_counts
from test_faults import child_named, read_line
from test_net import build, free_udp_port, run

BLAST = os.path.join(ROOT, "runtime", "tests", "udp_blast.c")
SOCKETS, SECONDS, LIMIT, BLASTS = 4, 3, 5_000_000, 3
#: How long `blast` stops a server process that must fall behind.
STALL_SECONDS = 0.5
#: Resident memory the server may gain while overloaded: its frame pool (8 MiB) and as much
#: again; a leak of 100 bytes a datagram would pass it within the 300,000 or so it receives.
RSS_BOUND_KIB = 32 * 1024
#: getsockopt(SOL_SOCKET, SO_MEMINFO): 9 counters, the 9th (SK_MEMINFO_DROPS) the socket's drops.
SO_MEMINFO, SK_MEMINFO_DROPS = 55, 8


def socket_drops(s: socket.socket) -> int:
    """The kernel's count of datagrams dropped at socket ``s`` (receive buffer full)."""
    return struct.unpack("9I", s.getsockopt(socket.SOL_SOCKET, SO_MEMINFO, 36))[SK_MEMINFO_DROPS]


def port_drops(port: int) -> int:
    """Datagrams the kernel dropped at the UDP sockets bound to ``port`` (/proc/net/udp)."""
    with open("/proc/net/udp") as f:
        next(f)
        return sum(int(fields[-1]) for fields in map(str.split, f)
                   if int(fields[1].split(":")[1], 16) == port)


def backlog_drops() -> int:
    """Packets dropped at the CPUs' input backlogs, machine-wide (/proc/net/softnet_stat)."""
    with open("/proc/net/softnet_stat") as f:
        return sum(int(line.split()[1], 16) for line in f)


def rss_kib(pid: int) -> int:
    """Resident memory of process ``pid`` (VmRSS), 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0


class Client:
    """A socket talking to the echo one request at a time, counting what it sends and gets."""

    def __init__(self, port: int) -> None:
        self.socket = client_socket()
        self.server = ("127.0.0.1", port)
        self.sent = self.received = 0

    def ask(self, request: bytes, timeout: float) -> bytes | None:
        """Send ``request``; the next reply, or None if none comes within ``timeout`` s."""
        self.socket.settimeout(timeout)
        self.socket.sendto(request, self.server)
        self.sent += 1
        try:
            reply, addr = self.socket.recvfrom(4096)
        except TimeoutError:
            return None
        assert addr == self.server
        self.received += 1
        return reply


def blast(port: int, server: list[int], tmp_path, *templates: str,
          sockets: int = SOCKETS, stall: int | None = None) -> tuple[list[dict[str, int]], int]:
    """Run the load generator against ``port`` (``templates``: its template mode's
    TEMPLATES OPAQUE_AT REPLIES); its per-socket counts and the most resident memory the
    ``server`` processes had together meanwhile (sampled every 0.1 s). With ``stall``, that
    process (the one reading the socket) is stopped for STALL_SECONDS from a second into
    the blast, as a host that falls behind: its socket then overflows however fast the
    machine lets the generator send."""
    exe = str(tmp_path / "udp_blast")
    compiled = subprocess.run([os.environ.get("CC", "gcc"), "-std=c11", "-Wall", "-Wextra",
                               "-Werror", "-O2", "-pthread", BLAST, "-o", exe],
                              capture_output=True, text=True, timeout=120)
    assert compiled.returncode == 0, compiled.stderr
    proc = subprocess.Popen([exe, str(port), str(sockets), str(SECONDS), str(LIMIT), *templates],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    start = time.monotonic()
    deadline = start + SECONDS + 60      # it gives up 30 s after sending
    stopped = None          # the stalled process while it is stopped
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            peak = max(peak, sum(rss_kib(pid) for pid in server))
            since = time.monotonic() - start
            if stall is not None and 1.0 <= since < 1.0 + STALL_SECONDS:
                os.kill(stall, signal.SIGSTOP)
                stopped, stall = stall, None
            elif stopped is not None and since >= 1.0 + STALL_SECONDS:
                os.kill(stopped, signal.SIGCONT)
                stopped = None
            time.sleep(0.1)
        out, err = proc.communicate(timeout=10)
    finally:
        if stopped is not None:
            os.kill(stopped, signal.SIGCONT)
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, err
    counts = []
    for line in out.splitlines():
        fields = line.split(": ", 1)[1].split(", ")
        counts.append({f.split()[0]: int(f.split()[1]) for f in fields})
    assert len(counts) == sockets, out
    return counts, peak


@pytest.mark.slow
@pytest.mark.parametrize("device", ["cpu", "nic"])
def test_echo_above_capacity_drops_only_where_counted_and_recovers(device: str, tmp_path) -> None:
    port = free_udp_port()
    proc = subprocess.Popen(floem_command() + ["run", ECHO, *on(device), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **REPORT})
    client = Client(port)
    early = b""
    try:
        # From the "ready" line on, every datagram sent to the port is counted by the echo.
        while b"floem: net udp: ready on UDP port" not in early:
            early += read_line(proc.stderr, 300)  # the first run also builds the echo
        assert client.ask(b"probe", 10) == b"probe"
        names = ["echo", "nic"] if device == "nic" else ["echo"]
        server = [child_named(proc.pid, name) for name in names]
        assert None not in server
        before_rss = sum(rss_kib(pid) for pid in server)
        before_backlog = backlog_drops()

        counts: list[dict[str, int]] = []
        peak_rss = 0
        for _ in range(BLASTS):
            more, peak = blast(port, server, tmp_path)
            counts, peak_rss = counts + more, max(peak_rss, peak)
            if port_drops(port):
                break

        for request in (b"after %d " % i + bytes(i % 200) for i in range(100)):
            assert client.ask(request, 10) == request
        client_drops = socket_drops(client.socket)
    finally:
        client.socket.close()
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=60)
    err = (early + rest).decode()
    assert proc.returncode == 0, err
    backlog = backlog_drops() - before_backlog
    net = report_counts(err)
    server_drops = int(next(line for line in err.splitlines()
                            if line.startswith("floem: net udp: socket drops ")).split()[5])
    total = {key: sum(c[key] for c in counts) for key in counts[0]}

    assert total["wrong"] == total["repeated"] == 0, counts
    assert server_drops > 0, "the echo kept up: not overloaded"
    requests = total["sent"] + client.sent
    assert 0 <= requests - (net["rx"] + net["rx dropped"] + server_drops) <= backlog
    assert net["rx"] == net["tx"] + net["tx dropped"] + net["freed"]
    replies_counted = total["answered"] + client.received + total["dropped"] + client_drops
    assert 0 <= net["tx"] - replies_counted <= backlog
    assert peak_rss - before_rss < RSS_BOUND_KIB, (before_rss, peak_rss)


def test_udp_port_counts_what_its_socket_drops(tmp_path) -> None:
    """The udp backend's report: received + the socket's drops = every datagram sent."""
    before = backlog_drops()
    result = run(build(tmp_path, "test_net_udp", "udp"), "overflow",
                 env={"FLOEM_NET_PORT": str(free_udp_port()), "FLOEM_REPORT": "1"})
    backlog = backlog_drops() - before
    sent, received = (int(w) for w in result.stdout.split()[1:4:2])
    drops = int(next(line for line in result.stderr.splitlines()
                     if line.startswith("floem: net udp: socket drops ")).split()[5])
    assert drops > 0
    assert 0 <= sent - (received + drops) <= backlog
