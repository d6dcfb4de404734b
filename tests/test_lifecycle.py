"""Process lifecycle (docs/internals.md, "Process lifecycle"): every process `floem run`
(or a build's `run` script) starts dies with it whatever kills it, SIGINT and SIGTERM stop
them all promptly and say so, and no shared memory object is left behind; objects of dead
launchers are removed by the next run, those of live ones kept."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest

from conftest import PROGRAMS, floem, floem_command
from floem import launcher

# Every process of a run is gone within 2 s of the signal (docs/internals.md, "Process
# lifecycle": what still runs 2 s later is killed), checked with a margin for a loaded machine.
STOP_WITHIN = 2.0 + 2.0
START_TIMEOUT = 180.0       # the first run builds the app
SHM = "/dev/shm"

# A NIC thread feeding the host forever; the host's main says "running" once a value came
# across (so every process has started and mapped the shared memory), then never returns.
FOREVER_APP = r'''
from floem import CallableSegment, Element, Input, Int, Output, Queue, Segment, main, target

class Tick(Element):
    def configure(self):
        self.out = Output()
    def impl(self):
        self.run_c("output { out(); }")

class One(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)
    def impl(self):
        self.run_c("output { out(1); }")

q = Queue("q", size=16)

class ticker(Segment):
    def impl(self):
        Tick() >> q

class pop(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)
    def impl(self):
        self.inp >> q.qid
        q >> One() >> self.out

ticker("ticker", device=target.NIC)
pop("pop", default_return="0")
main(r"""
    while (pop(0) == 0)
        usleep(1000);
    printf("running\n");
    fflush(stdout);
    for (;;)
        usleep(10000);
""")
'''

# No floem.main: the generated main stops the threads on SIGINT/SIGTERM and returns 0.
SERVER_APP = r'''
from floem import Element, Input, Int, Output, Segment

class Once(Element):
    def configure(self):
        self.out = Output(Int)
    def impl(self):
        self.run_c("""
            static int said;
            int first = !said;
            said = 1;
            if (!first)
                usleep(1000);
            output switch { case first: out(1); }
        """)

class Say(Element):
    def configure(self):
        self.inp = Input(Int)
    def impl(self):
        self.run_c(r'inp(); printf("running\\n"); fflush(stdout);')

class serve(Segment):
    def impl(self):
        Once() >> Say()

serve("serve")
'''


def stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the name: state, ppid, pgrp, ..., start time
    ([19]); None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def processes() -> Iterator[tuple[int, list[str]]]:
    """Every process: its pid and `stat` fields."""
    for entry in os.listdir("/proc"):
        fields = stat(int(entry)) if entry.isdigit() else None
        if fields is not None:
            yield int(entry), fields


@dataclass(frozen=True)
class Process:
    """A process seen once, by pid and start time (a pid used again is another process)."""

    pid: int
    start: str
    name: str

    def alive(self) -> bool:
        """Still running (a zombie is not)."""
        fields = stat(self.pid)
        return fields is not None and fields[19] == self.start and fields[0] not in "ZX"


def children(pid: int) -> list[Process]:
    """The processes whose parent is ``pid``, and theirs, and so on."""
    found = []
    for child, fields in processes():
        if int(fields[1]) == pid:
            try:
                with open(f"/proc/{child}/comm") as f:
                    found.append(Process(child, fields[19], f.read().strip()))
            except OSError:
                continue
    return found + [c for p in found for c in children(p.pid)]


def group(pgid: int) -> list[int]:
    """The live processes of process group ``pgid``."""
    return [pid for pid, fields in processes() if int(fields[2]) == pgid and fields[0] not in "ZX"]


def segments(launcher: int) -> list[str]:
    """The shared memory objects named after launcher ``launcher``."""
    return [n for n in os.listdir(SHM) if n.startswith(f"floem-{launcher}-")]


@dataclass
class Run:
    """A launcher started in the background, and every process it had once running."""

    proc: subprocess.Popen
    out: IO[str]
    err: IO[str]
    processes: list[Process] = field(default_factory=list)

    def stderr(self) -> str:
        """What the run wrote on stderr so far."""
        self.err.seek(0)
        return self.err.read()

    def stdout(self) -> str:
        """What the run wrote on stdout so far."""
        self.out.seek(0)
        return self.out.read()

    def remaining(self) -> list[Process]:
        """The processes of the run still alive (not counting the launcher)."""
        return [p for p in self.processes if p.alive()]


def _signals_by_default() -> None:
    """In the child, before exec: SIGINT and SIGQUIT back to their default action. A test
    suite started in the background by a non-interactive shell inherits them ignored, and a
    shell script cannot trap a signal ignored when it started (POSIX), so the run script
    would rightly ignore the SIGINT a test sends it."""
    for sig in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)


@contextlib.contextmanager
def started(argv: list[str], tmp_path: Path) -> Iterator[Run]:
    """Start ``argv`` and wait until its program prints "running"; on the way out, however
    the test went, kill whatever of it is left and remove its shared memory."""
    with open(tmp_path / "stdout", "w+") as out, open(tmp_path / "stderr", "w+") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True, preexec_fn=_signals_by_default)
        run = Run(proc, out, err)
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while "running" not in run.stdout():
                assert proc.poll() is None, f"ended early ({proc.returncode}): {run.stderr()}"
                assert time.monotonic() < deadline, f"not running: {run.stderr()}"
                time.sleep(0.05)
            run.processes = children(proc.pid)
            yield run
        finally:
            run.processes = list(dict.fromkeys(run.processes + children(proc.pid)))
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            for p in run.remaining():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGKILL)
            for name in segments(proc.pid) + [n for p in run.processes
                                               for n in segments(p.pid)]:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(SHM, name))


def wait_gone(run: Run, launchers: list[int]) -> float:
    """Seconds until no process of the run and no shared memory of ``launchers`` remain
    (at most a little over `STOP_WITHIN`)."""
    start = time.monotonic()
    while run.remaining() or any(segments(pid) for pid in launchers):
        if time.monotonic() - start > STOP_WITHIN:
            break
        time.sleep(0.02)
    return time.monotonic() - start


def check_stopped(run: Run, sig: signal.Signals, took: float, launchers: list[int]) -> None:
    """Everything gone within `STOP_WITHIN` (`took`: what `wait_gone` waited), nothing left
    in /dev/shm."""
    assert run.remaining() == [], f"still running {took:.1f} s after {sig.name}: {run.remaining()}"
    assert [s for pid in launchers for s in segments(pid)] == [], f"{took:.1f} s after {sig.name}"


def check_status(run: Run, sig: signal.Signals, status: int) -> None:
    """Exit ``status``, and for a stop signal, the one line saying so."""
    run.proc.wait(30)
    stderr = run.stderr()
    assert "Traceback" not in stderr
    if sig == signal.SIGKILL:
        assert run.proc.returncode == -signal.SIGKILL
    else:
        assert run.proc.returncode == status, stderr
        assert stderr.splitlines()[-1] == f"floem: stopped by {sig.name}", stderr


@pytest.fixture(scope="module")
def forever(tmp_path_factory: pytest.TempPathFactory) -> str:
    """FOREVER_APP in a file (one for the module: it is built once)."""
    app = tmp_path_factory.mktemp("lifecycle") / "forever.py"
    app.write_text(FOREVER_APP)
    return str(app)


SIGNALS = [pytest.param(s, id=s.name) for s in (signal.SIGKILL, signal.SIGINT, signal.SIGTERM)]


@pytest.mark.parametrize("sig", SIGNALS)
def test_floem_run_takes_every_process_and_its_shared_memory_with_it(
        sig: signal.Signals, forever: str, tmp_path: Path) -> None:
    with started(floem_command() + ["run", "--nic", "emu", "--timeout", "300", forever],
                 tmp_path) as run:
        assert sorted(p.name for p in run.processes) == ["forever", "nic"]
        launcher = run.proc.pid
        assert segments(launcher) == []     # every process mapped it: the name is gone
        os.kill(launcher, sig)
        check_stopped(run, sig, wait_gone(run, [launcher]), [launcher])
        check_status(run, sig, 128 + sig)


def voluntary_switches(pid: int) -> int:
    """How many times process ``pid``'s main thread went to sleep so far."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f
                    if line.startswith("voluntary_ctxt_switches:"))


def test_floem_run_sleeps_while_its_processes_run(forever: str, tmp_path: Path) -> None:
    """The launcher waits for its processes' end rather than polling them: it wakes about
    ten times a second (`LOOK_SECONDS`) besides, off the cores the program runs on."""
    with started(floem_command() + ["run", "--nic", "emu", "--timeout", "300", forever],
                 tmp_path) as run:
        before, start = voluntary_switches(run.proc.pid), time.monotonic()
        time.sleep(2.0)
        woke = voluntary_switches(run.proc.pid) - before
        assert woke <= 30 * (time.monotonic() - start), woke


def test_a_stop_signal_ends_the_launchers_sleep_at_once() -> None:
    """The launcher forwards SIGINT or SIGTERM when it catches it, not at its next look:
    the handler wakes the sleep, which drains the wake-up and sleeps again after."""
    caught = launcher._Caught()
    previous = signal.signal(signal.SIGUSR2, caught)
    try:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGUSR2)).start()
        start = time.monotonic()
        launcher._sleep([], caught, 60.0)
        assert caught.signum == signal.SIGUSR2 and time.monotonic() - start < 60.0
        start = time.monotonic()
        launcher._sleep([], caught, 0.3)            # the wake-up was drained
        assert time.monotonic() - start >= 0.25
    finally:
        signal.signal(signal.SIGUSR2, previous)
        caught.close()


@pytest.fixture(scope="module")
def forever_build(forever: str) -> str:
    """``floem build`` of FOREVER_APP: its directory."""
    out = os.path.join(os.path.dirname(forever), "out")
    built = floem("build", "--nic", "emu", forever, "-o", out)
    assert built.returncode == 0, built.stderr
    return out


@pytest.mark.parametrize("sig", SIGNALS)
def test_the_run_script_of_a_build_does_the_same(sig: signal.Signals, forever_build: str,
                                                 tmp_path: Path) -> None:
    with started([os.path.join(forever_build, "run")], tmp_path) as run:
        # (and, now and then, what the script's poll runs: `sleep 0.1`, and its $(sed | cut)
        # in a subshell of the script, itself named `run`)
        helpers = {"sleep", "run", "sed", "cut"}
        assert sorted(p.name for p in run.processes if p.name not in helpers) == ["forever", "nic"]
        os.kill(run.proc.pid, sig)
        check_stopped(run, sig, wait_gone(run, [run.proc.pid]), [run.proc.pid])
        check_status(run, sig, 128 + sig)


def test_the_run_script_stops_main_when_another_process_dies(forever_build: str,
                                                             tmp_path: Path) -> None:
    """The NIC killed under a main that waits on it forever: the script reports it by name,
    stops main and exits with the NIC's status, as `floem run` does."""
    with started([os.path.join(forever_build, "run")], tmp_path) as run:
        nic = next(p for p in run.processes if p.name == "nic")
        os.kill(nic.pid, signal.SIGKILL)
        run.proc.wait(30)
        assert run.proc.returncode == 128 + signal.SIGKILL
        assert "floem: process 'nic' was killed by SIGKILL" in run.stderr()
        check_stopped(run, signal.SIGKILL, wait_gone(run, [run.proc.pid]), [run.proc.pid])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_program_that_stops_cleanly_on_the_signal_keeps_its_status(
        sig: signal.Signals, tmp_path: Path) -> None:
    """A program without floem.main ends with 0 on SIGINT or SIGTERM, and so does floem run."""
    app = tmp_path / "server.py"
    app.write_text(SERVER_APP)
    with started(floem_command() + ["run", "--timeout", "300", str(app)], tmp_path) as run:
        os.kill(run.proc.pid, sig)
        check_stopped(run, sig, wait_gone(run, [run.proc.pid]), [run.proc.pid])
        check_status(run, sig, 0)


def test_floem_dies_with_the_process_named_in_floem_parent(forever: str, tmp_path: Path) -> None:
    """As examples/storm/run.py starts its servers: when that parent is killed, floem gets
    SIGTERM and stops its processes."""
    script = 'FLOEM_PARENT=$$ "$@" & wait'
    with started(["sh", "-c", script, "sh"] + floem_command() + ["run", forever], tmp_path) as run:
        launcher = next(p for p in run.processes if p.name not in ("forever", "nic"))
        os.kill(run.proc.pid, signal.SIGKILL)
        check_stopped(run, signal.SIGKILL, wait_gone(run, [launcher.pid]), [launcher.pid])


def test_a_signal_while_building_stops_floem_and_the_compiler_without_a_traceback(
        forever: str, tmp_path: Path) -> None:
    proc = subprocess.Popen(floem_command() + ["run", forever], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "FLOEM_CACHE": str(tmp_path / "cache")})
    make = None
    try:
        deadline = time.monotonic() + 60
        while make is None:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            make = next((p for p in children(proc.pid) if p.name == "make"), None)
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert group(make.pid) == []                    # make and the compilers it started
    finally:
        for pgid in [proc.pid] + ([make.pid] if make else []):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
        proc.wait()
    assert (proc.returncode, err) == (128 + signal.SIGINT, "floem: stopped by SIGINT\n")


def test_a_run_removes_the_shared_memory_of_dead_launchers_only() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    me, my_start = os.getpid(), stat(os.getpid())[19]
    planted = {
        f"floem-{dead.pid}-12345-0": False,             # launcher gone
        f"floem-{dead.pid}-3": False,                   # named the older way, launcher gone
        f"floem-{me}-{int(my_start) + 1}-0": False,     # the pid now names another process
        f"floem-{me}-{my_start}-0": True,               # launcher alive
        f"floem-{me}-4": True,                          # the older way, pid in use
    }
    try:
        for name in planted:
            os.close(os.open(os.path.join(SHM, name), os.O_CREAT | os.O_WRONLY, 0o600))
        result = floem("run", "--timeout", "120", os.path.join(PROGRAMS, "callable_inc2.py"))
        assert result.returncode == 0, result.stderr
        kept = {n: os.path.exists(os.path.join(SHM, n)) for n in planted}
        assert kept == planted
    finally:
        for name in planted:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(SHM, name))
