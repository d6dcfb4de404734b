"""Running a built program: start its processes, forward signals, stop them all, leave
nothing behind (docs/internals.md, "Process lifecycle")."""
from __future__ import annotations

import ctypes
import itertools
import os
import re
import select
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from floem.errors import FloemError

GRACE_SECONDS = 5.0
STOP_SECONDS = 2.0
#: How often the launcher looks at a run when none of its processes ends (a signal caught,
#: a deadline passed); it sleeps in between, off the cores the program runs on.
LOOK_SECONDS = 0.1
TIMEOUT_STATUS = 124
#: The signals that stop a run (`floem run` forwards them, then stops every process).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: The environment variable naming the process a child must die with (its launcher).
PARENT_VARIABLE = "FLOEM_PARENT"
SHM_DIR = "/dev/shm"
#: A run's shared memory object: /floem-<launcher pid>-<its start time>-<run number>
#: (earlier versions: /floem-<launcher pid>-<run number>).
_SEGMENT = re.compile(r"floem-(?P<pid>\d+)-(?:(?P<start>\d+)-)?\d+")
_PR_SET_PDEATHSIG = 1
_runs = itertools.count()


@dataclass
class RunResult:
    """Outcome of `launch`: the main process's output and exit status."""

    stdout: str
    stderr: str
    returncode: int
    timed_out: bool = False


class _Proc:
    def __init__(self, name: str, argv: list[str], out: IO | None, err: IO | None,
                 env: dict[str, str]) -> None:
        self.name = name
        self.popen = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                      start_new_session=True, env=env)
        try:                    # readable once the process ends
            self.ended: int | None = os.pidfd_open(self.popen.pid)
        except OSError:
            self.ended = None

    def close(self) -> None:
        if self.ended is not None:
            os.close(self.ended)
            self.ended = None

    def signal(self, sig: int) -> None:
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, sig)
            except ProcessLookupError:
                pass


class _Caught:
    """The stop signals floem received during a run: the first, when, and how many; each
    makes ``woken`` readable, so that the launcher's sleep ends at once (`_sleep`)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.at = 0.0
        self.count = 0
        self.woken, self._wake = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def __call__(self, signum: int, _frame: object) -> None:
        if self.signum is None:
            self.signum, self.at = signum, time.monotonic()
        self.count += 1
        try:
            os.write(self._wake, b"!")
        except BlockingIOError:         # woken already
            pass

    def close(self) -> None:
        os.close(self.woken)
        os.close(self._wake)


def launch(main: str, others: dict[str, list[str]], args: list[str], timeout: float | None = None,
           duration: float | None = None, capture: bool = True,
           env: dict[str, str] | None = None,
           prefixes: dict[str, list[str]] | None = None) -> RunResult:
    """Run ``main`` (with ``args``) beside ``others`` (name -> command); stop all when main ends.
    ``prefixes``: a command to run a process under (by name; main's is its file name), e.g.
    valgrind's.

    All processes share one POSIX shared memory object (named in ``FLOEM_SHM``); the
    last of them to map it removes its name (``FLOEM_SHM_USERS``), and so does the
    launcher at the end; objects of earlier runs whose launcher is gone are removed
    first. Each process dies with the launcher, even by SIGKILL (``FLOEM_PARENT``).

    ``duration``: send SIGINT to every process after that many seconds (a normal
    stop). ``timeout``: if main is still running after that many seconds, kill
    everything and report it (exit status 124). A process killed by a signal is
    reported by name and signal (exit status 128 + signal); another process that dies
    (killed, or exiting with a non-zero status) while main runs is reported too and main
    is stopped with SIGTERM, and the run fails even if main then ends cleanly (the
    main's status if not 0, else that process's). SIGINT or SIGTERM received
    (on the main thread) is forwarded to every process, which all have `STOP_SECONDS`
    to end before SIGKILL (a second one: SIGKILL at once); the run is reported as
    ``floem: stopped by SIG...``, with the main process's status if it ended by
    itself, else 128 + the signal.
    """
    remove_stale_segments()
    out = tempfile.TemporaryFile("w+") if capture else None
    err = tempfile.TemporaryFile("w+") if capture else None
    shm = f"/floem-{os.getpid()}-{_start_time(os.getpid())}-{next(_runs)}"
    commands = [(name, (prefixes or {}).get(name, []) + argv) for name, argv in
                list(others.items()) + [(os.path.basename(main), [main] + args)]]
    child_env = {**os.environ, **(env or {}), "FLOEM_SHM": shm,
                 "FLOEM_SHM_USERS": str(len(commands)), PARENT_VARIABLE: str(os.getpid())}
    procs: list[_Proc] = []
    caught = _Caught()
    deadline: float | None = None
    # Stop signals are caught before the processes start (so they start with the default
    # action even when floem's was to ignore them); SIGUSR1 after (until their runtime
    # handles it, they keep floem's SIG_IGN).
    previous = _handle(STOP_SIGNALS, caught)
    try:
        for name, argv in commands:
            procs.append(_Proc(name, argv, out, err, child_env))

        def forward(sig: int, _frame: object) -> None:
            for p in procs:
                p.signal(sig)
        previous.update(_handle([signal.SIGUSR1], forward))
        deadline, timed_out, notes, crashed = _supervise(procs, caught, timeout, duration)
    finally:
        _stop(procs, time.monotonic() if deadline is None else deadline)
        for p in procs:
            p.close()
        for s, handler in previous.items():
            signal.signal(s, handler)
        caught.close()
        _unlink_shared(shm)
    return _result(out, err, _status(procs[-1], caught, timed_out, notes, crashed), timed_out,
                   notes)


def _supervise(procs: list[_Proc], caught: _Caught, timeout: float | None,
               duration: float | None) -> tuple[float, bool, list[str], list[_Proc]]:
    """Wait for the main process (the last) to end, or until the run must be stopped;
    returns the time by which every process must be gone, whether ``timeout`` expired,
    the notes to print, and the other processes that died while main ran (killed, or
    exiting with a non-zero status)."""
    main_proc = procs[-1]
    notes: list[str] = []
    crashed: list[_Proc] = []
    start = time.monotonic()
    stopping_at: float | None = None
    forwarded = False
    while main_proc.popen.poll() is None:
        now = time.monotonic()
        if caught.signum is not None:
            if not forwarded:
                forwarded = True
                for p in procs:
                    p.signal(caught.signum)
            if caught.count > 1 or now >= caught.at + STOP_SECONDS:
                break
        else:
            for p in procs:
                if p is not main_proc and p not in crashed and (p.popen.poll() or 0) != 0:
                    crashed.append(p)
                    notes.append(_death(p))
                    stopping_at = stopping_at or now
                    main_proc.signal(signal.SIGTERM)
            if duration is not None and now - start >= duration and stopping_at is None:
                stopping_at = now
                for p in procs:
                    p.signal(signal.SIGINT)
            if timeout is not None and now - start >= timeout:
                notes.append(f"floem: '{main_proc.name}' timed out after {timeout:g} s; stopped it")
                return time.monotonic() + STOP_SECONDS, True, notes, crashed
            if stopping_at is not None and now - stopping_at > GRACE_SECONDS:
                notes.append(f"floem: '{main_proc.name}' did not stop within {GRACE_SECONDS:g} s "
                             "of SIGINT; killed it")
                break
        _sleep(procs, caught, LOOK_SECONDS)
    if caught.signum is not None:
        return ((time.monotonic() if caught.count > 1 else caught.at + STOP_SECONDS), False, notes,
                crashed)
    return time.monotonic() + STOP_SECONDS, False, notes, crashed


def _sleep(procs: list[_Proc], caught: _Caught, seconds: float) -> None:
    """Sleep ``seconds``, or until one of ``procs`` still running ends or a stop signal is
    caught."""
    running = [p.ended for p in procs if p.ended is not None and p.popen.poll() is None]
    ready, _, _ = select.select(running + [caught.woken], [], [], seconds)
    if caught.woken in ready:
        os.read(caught.woken, 64)


def _status(main_proc: _Proc, caught: _Caught, timed_out: bool, notes: list[str],
            crashed: list[_Proc]) -> int:
    """The run's exit status (noting a stop signal, or how the main process died); a main
    that ended cleanly, or by the SIGTERM sent to it, after another process died gets that
    process's status."""
    code = main_proc.popen.returncode
    if caught.signum is not None:
        notes.append(stopped_note(caught.signum))
        return code if code >= 0 else 128 + caught.signum
    if timed_out:
        return TIMEOUT_STATUS
    if crashed and code in (0, -signal.SIGTERM):
        first = crashed[0].popen.returncode
        return 128 - first if first < 0 else first
    if code < 0:
        notes.append(_death(main_proc))
        return 128 - code
    return code


def stopped_note(signum: int) -> str:
    """The line `floem` prints when SIGINT or SIGTERM stopped it."""
    return f"floem: stopped by {signal.Signals(signum).name}"


def _stop(procs: list[_Proc], deadline: float) -> None:
    """SIGTERM whatever still runs, let it stop cleanly until ``deadline``, then SIGKILL."""
    for p in procs:
        p.signal(signal.SIGTERM)
    for p in procs:
        try:
            p.popen.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.signal(signal.SIGKILL)
            p.popen.wait()


def _unlink_shared(name: str) -> None:
    try:
        os.unlink(SHM_DIR + name)
    except FileNotFoundError:
        pass


def remove_stale_segments() -> None:
    """Remove the shared memory objects of earlier runs whose launcher is gone.

    The name holds the launcher's pid and start time, so a pid used again by another
    process does not keep an object alive; an object named the older way (no start
    time) is removed when its pid is unused. Removing a name never disturbs processes
    that still map the object."""
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return
    for name in names:
        m = _SEGMENT.fullmatch(name)
        if m is None:
            continue
        started = _start_time(int(m["pid"]))
        if started is not None and m["start"] in (None, started):
            continue
        try:
            os.unlink(os.path.join(SHM_DIR, name))
        except OSError:         # removed by another run meanwhile, or another user's
            pass


def launcher_of(shm: str) -> int | None:
    """The pid of the `floem run` that named shared memory object ``shm`` (None if floem
    did not name it)."""
    m = _SEGMENT.fullmatch(shm.lstrip("/"))
    return int(m["pid"]) if m else None


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks after boot, field 22 of /proc/PID/stat),
    or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def follow_parent(sig: int = signal.SIGTERM) -> None:
    """Started with ``FLOEM_PARENT=<its pid>`` by its parent (e.g. examples/storm/run.py),
    get ``sig`` when the parent dies, however it dies, and at once if it already has.

    The variable is taken out of the environment: the processes `launch` starts get
    the launcher's own pid there."""
    value = os.environ.pop(PARENT_VARIABLE, None)
    if value is None:
        return
    if not value.isdigit() or int(value) == 0:
        raise FloemError(f"{PARENT_VARIABLE}={value}: not a process id")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
        raise FloemError(f"cannot ask to die with process {value}: prctl: "
                         f"{os.strerror(ctypes.get_errno())}")
    if os.getppid() != int(value):
        os.kill(os.getpid(), sig)


def _handle(signals: Sequence[int], handler: Callable[[int, Any], Any]) -> dict[int, Any]:
    """Install ``handler`` for ``signals``; the handlers it replaced. Nothing off Python's
    main thread, where signals cannot be handled."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {s: signal.getsignal(s) for s in signals}
    for s in signals:
        signal.signal(s, handler)
    return previous


def _death(p: _Proc) -> str:
    """How process ``p`` ended: killed by a signal, or a non-zero exit status."""
    if p.popen.returncode > 0:
        return f"floem: process '{p.name}' exited with status {p.popen.returncode}"
    sig = -p.popen.returncode
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    return f"floem: process '{p.name}' was killed by {name}"


def _result(out: IO | None, err: IO | None, code: int, timed_out: bool, notes: list[str]) -> RunResult:
    message = "".join(n + "\n" for n in notes)
    if out is None or err is None:
        if message:
            os.write(2, message.encode())
        return RunResult("", message, code, timed_out)
    with out, err:
        out.seek(0)
        err.seek(0)
        return RunResult(out.read(), err.read() + message, code, timed_out)
