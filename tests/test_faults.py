"""Fault injection in the emulated NIC (FLOEM_FAULTS; docs/nic.md, "Fault injection"), and a
NIC process that dies mid-run.

Under DMA completions delayed and reordered as PCIe allows, torn reads and NIC thread stalls:
the sync layer's threaded end-to-end test (optimised, under the sanitizers, and the blocking
layer), every ``tests/programs/nic_*.py`` (exactly its expected output), ``nic_stream.py``
without the sync layer, with inline managers and on the big-endian LiquidIO (slow), and the
cache app with the cache on the NIC against a dict. Each run must also show that faults
happened. A NIC killed by SIGKILL, or one that exits with an error, is reported by name and
the run ends with a non-zero status within a bounded time, whether the host's main waits on
the NIC or for a signal.
"""
from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import time
from typing import IO

import pytest

from conftest import PROGRAMS, floem, floem_command
from test_cache import APPS, operations
from test_echo import ECHO, client_socket, wait_until_serving
from test_net import free_udp_port
from test_nic import NIC_APPS
from test_nic_runtime import build, entries, run


def faults(seed: int) -> str:
    """A FLOEM_FAULTS value with every kind of fault, often enough to matter."""
    return (f"seed={seed},dma_delay=0.3,dma_delay_ns=50000,dma_tear=0.3,"
            "stall=0.02,stall_ns=100000")


def fault_counts(stderr: str) -> dict[str, int]:
    """The counters of the NIC's ``floem: nic faults: ...`` report line."""
    line = next(ln for ln in stderr.splitlines() if ln.startswith("floem: nic faults: "))
    fields = [f.split() for f in line.split(": ", 2)[2].split(", ")]
    return {f[0]: int(f[1]) for f in fields}


# -- the runtime ------------------------------------------------------------------------

# (variant, scale): scale 1 moves 2 million entries in each of five cases.
SYNC_UNDER_FAULTS = [("plain", 0.05), ("asan", 0.02), ("tsan", 0.02), ("blocking", 0.01),
                     ("blocking-tsan", 0.002)]


@pytest.mark.parametrize("variant,scale", SYNC_UNDER_FAULTS, ids=[v for v, _ in SYNC_UNDER_FAULTS])
def test_sync_end_to_end_under_faults(variant: str, scale: float, tmp_path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """FIFO order, contents and channels of every entry, both directions, under every fault
    (the layer that trusted a read's payload with its status word fails here)."""
    monkeypatch.setenv("FLOEM_FAULTS", faults(len(variant)))
    out = run(build(tmp_path, "test_sync", variant), "e2e", str(scale))
    assert entries(out) >= 5 * max(1000, int(2_000_000 * scale) // 2 * 2)


# -- programs ---------------------------------------------------------------------------

def run_under_faults(app: str, seed: int, *options: str) -> subprocess.CompletedProcess:
    """``floem run --report`` of tests/programs/APP.py under faults; checks its output."""
    result = floem("run", "--report", "--timeout", "120", *options,
                   os.path.join(PROGRAMS, app + ".py"), env={"FLOEM_FAULTS": faults(seed)},
                   timeout=300)
    assert result.returncode == 0, result.stderr
    with open(os.path.join(PROGRAMS, app + ".expected")) as f:
        assert result.stdout == f.read()
    counts = fault_counts(result.stderr)
    assert counts["delayed"] > 0 and counts["torn"] > 0, counts
    return result


@pytest.mark.parametrize("app", NIC_APPS)
def test_nic_program_under_faults(app: str) -> None:
    run_under_faults(app, NIC_APPS.index(app) + 1)


@pytest.mark.parametrize("options", [
    pytest.param(["--no-sync-layer"], id="no-sync-layer"),
    pytest.param(["--nic-managers", "0"], id="inline-managers"),
    pytest.param(["--nic", "liquidio"], id="liquidio", marks=pytest.mark.slow),
])
def test_stream_under_faults(options: list[str]) -> None:
    assert fault_counts(run_under_faults("nic_stream", 7, *options).stderr)["stalls"] > 0


@pytest.mark.parametrize("policy,write_miss", [("write_back", "write_alloc"),
                                               ("write_through", "no_write_alloc")])
def test_nic_cache_returns_no_stale_value_under_faults(tmp_path, policy: str,
                                                       write_miss: str) -> None:
    """Random gets and sets against a dict, the cache on the NIC and the store on the host."""
    ops, expected = operations(600, seed=len(policy) + len(write_miss))
    path = tmp_path / "ops.txt"
    path.write_text(ops)
    env = {"CACHE_POLICY": policy, "CACHE_WRITE_MISS": write_miss, "CACHE_PLACE": "nic",
           "CACHE_ENTRIES": "2", "FLOEM_FAULTS": faults(len(policy))}
    result = floem("run", "--report", "--timeout", "240", os.path.join(APPS, "kv_app.py"),
                   "--", str(path), env=env, timeout=400)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == expected
    counts = fault_counts(result.stderr)
    assert counts["delayed"] > 0 and counts["torn"] > 0 and counts["stalls"] > 0, counts


def test_malformed_faults_stop_the_nic_with_a_message() -> None:
    """The host's main waits for the NIC forever: it must be stopped, not time out."""
    result = floem("run", "--timeout", "60", os.path.join(PROGRAMS, "nic_roundtrip.py"),
                   env={"FLOEM_FAULTS": "seed=1,dma_delay=often"})
    assert "timed out" not in result.stderr
    assert ("floem: FLOEM_FAULTS=seed=1,dma_delay=often: dma_delay=often: need a probability "
            "from 0 to 1") in result.stderr
    assert "floem: process 'nic' was killed by SIGABRT" in result.stderr
    assert result.returncode != 0


# -- a NIC that dies --------------------------------------------------------------------

COUNTER_APP = r'''
from floem import Element, Field, Persistent, Segment, State, Uint, main, target


class Ticks(State):
    n = Field(Uint(32))


class Tick(Element):
    """On the NIC: add one to the host's counter by DMA, about every 100 us."""

    ticks = Persistent(Ticks)

    def states(self, ticks):
        self.ticks = ticks

    def impl(self):
        self.run_c("""
            Ticks local;
            dma_read(ticks, sizeof local, &local);
            local.n = floem_wire32(floem_wire32(local.n) + 1);
            dma_write(ticks, sizeof local, &local);
            usleep(100);
        """)


ticks = Ticks("ticks")


class count(Segment):
    def impl(self):
        Tick(states=[ticks])


count("count", device=target.NIC)
main(r"""
    while (__atomic_load_n(&ticks->n, __ATOMIC_ACQUIRE) < 100)
        usleep(1000);
    printf("counting\n");
    fflush(stdout);
    while (__atomic_load_n(&ticks->n, __ATOMIC_ACQUIRE) < 4000000000u)
        usleep(1000);
    printf("not reached\n");
""")
'''


def child_named(parent: int, name: str) -> int | None:
    """The pid of a child of process ``parent`` whose command is ``name``, if there is one."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if ppid == parent and comm == name:
            return int(entry)
    return None


def kill_nic(proc: subprocess.Popen) -> None:
    """SIGKILL the ``nic`` process that ``floem run`` (``proc``) started."""
    deadline = time.monotonic() + 30
    while (pid := child_named(proc.pid, "nic")) is None:
        assert time.monotonic() < deadline and proc.poll() is None, "no nic process"
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


def read_line(pipe: IO[bytes], timeout: float) -> bytes:
    """The next line from ``pipe`` (a child's stdout or stderr), waiting at most ``timeout``
    seconds for it."""
    line = b""
    deadline = time.monotonic() + timeout
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([pipe], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no line within {timeout} s (so far {line!r})"
        byte = os.read(pipe.fileno(), 1)
        assert byte, f"the pipe closed (so far {line!r})"
        line += byte
    return line


def assert_reported(proc: subprocess.Popen, how: str) -> None:
    """``floem run`` ends within a bounded time (a build included), non-zero, naming the NIC
    and how it died."""
    out, err = proc.communicate(timeout=180)
    assert f"floem: process 'nic' {how}" in err.decode(), err.decode()
    assert proc.returncode != 0
    assert b"not reached" not in out


def test_killed_nic_stops_a_main_waiting_on_it(tmp_path) -> None:
    app = tmp_path / "counter.py"
    app.write_text(COUNTER_APP)
    proc = subprocess.Popen(floem_command() + ["run", str(app)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert read_line(proc.stdout, 120) == b"counting\n"
        kill_nic(proc)
        assert_reported(proc, "was killed by SIGKILL")
    finally:
        proc.kill()
        proc.wait()


def test_killed_nic_fails_a_server_whose_main_waits_for_a_signal() -> None:
    """The echo on the NIC: the host's generated main stops cleanly on the launcher's SIGTERM,
    and the run still fails."""
    port = free_udp_port()
    proc = subprocess.Popen(floem_command() + ["run", ECHO, "-D", "device=nic", "--port",
                                               str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        with client_socket() as s:
            wait_until_serving(s, port, proc)
        kill_nic(proc)
        assert_reported(proc, "was killed by SIGKILL")
        assert proc.returncode == 128 + signal.SIGKILL
    finally:
        proc.kill()
        proc.wait()


def test_nic_exiting_with_an_error_ends_the_run() -> None:
    """The NIC cannot serve a port that is taken: it exits with status 1 at start."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("0.0.0.0", 0))
        proc = subprocess.Popen(floem_command() + ["run", ECHO, "-D", "device=nic", "--port",
                                                   str(taken.getsockname()[1])],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert_reported(proc, "exited with status 1")
            assert proc.returncode == 1
        finally:
            proc.kill()
            proc.wait()
