"""Running a built program: start its processes, forward signals, stop them all."""
from __future__ import annotations

import itertools
import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import IO

GRACE_SECONDS = 5.0
STOP_SECONDS = 2.0
_runs = itertools.count()
TIMEOUT_STATUS = 124


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

    def signal(self, sig: int) -> None:
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, sig)
            except ProcessLookupError:
                pass


def launch(main: str, others: dict[str, list[str]], args: list[str], timeout: float | None = None,
           duration: float | None = None, capture: bool = True,
           env: dict[str, str] | None = None) -> RunResult:
    """Run ``main`` (with ``args``) beside ``others`` (name -> command); stop all when main ends.

    All processes share one POSIX shared memory object (named in ``FLOEM_SHM``),
    removed when they have stopped.

    ``duration``: send SIGINT to every process after that many seconds (a normal
    stop). ``timeout``: if main is still running after that many seconds, kill
    everything and report it (exit status 124). A process killed by a signal is
    reported by name and signal (exit status 128 + signal).
    """
    out = tempfile.TemporaryFile("w+") if capture else None
    err = tempfile.TemporaryFile("w+") if capture else None
    notes: list[str] = []
    shm = f"/floem-{os.getpid()}-{next(_runs)}"
    child_env = {**os.environ, **(env or {}), "FLOEM_SHM": shm}
    procs = [_Proc(name, argv, out, err, child_env) for name, argv in others.items()]
    main_proc = _Proc(os.path.basename(main), [main] + args, out, err, child_env)
    procs.append(main_proc)
    forwarded = _forward_signals(procs)
    start = time.monotonic()
    stopping_at: float | None = None
    timed_out = False
    try:
        while main_proc.popen.poll() is None:
            now = time.monotonic() - start
            crashed = [p for p in procs if p is not main_proc and (p.popen.poll() or 0) < 0]
            if crashed:
                notes.append(_death(crashed[0]))
                stopping_at = stopping_at or now
                main_proc.signal(signal.SIGTERM)
            if duration is not None and now >= duration and stopping_at is None:
                stopping_at = now
                for p in procs:
                    p.signal(signal.SIGINT)
            if timeout is not None and now >= timeout:
                timed_out = True
                notes.append(f"floem: '{main_proc.name}' timed out after {timeout:g} s; stopped it")
                break
            if stopping_at is not None and now - stopping_at > GRACE_SECONDS:
                notes.append(f"floem: '{main_proc.name}' did not stop within {GRACE_SECONDS:g} s "
                             "of SIGINT; killed it")
                break
            time.sleep(0.01)
    finally:
        _stop(procs)
        for s, handler in forwarded.items():
            signal.signal(s, handler)
        _unlink_shared(shm)
    code = main_proc.popen.returncode
    if timed_out:
        code = TIMEOUT_STATUS
    elif code < 0:
        notes.append(_death(main_proc))
        code = 128 - code
    return _result(out, err, code, timed_out, notes)


def _stop(procs: list[_Proc]) -> None:
    """SIGTERM whatever still runs, give it a moment to stop cleanly, then SIGKILL."""
    for p in procs:
        p.signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    for p in procs:
        try:
            p.popen.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.signal(signal.SIGKILL)
            p.popen.wait()


def _unlink_shared(name: str) -> None:
    try:
        os.unlink("/dev/shm" + name)
    except FileNotFoundError:
        pass


def _forward_signals(procs: list[_Proc]) -> dict[int, object]:
    """Pass SIGINT/SIGTERM (stop) and SIGUSR1 (report now) on to the children (only
    possible on the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)}
    for s in previous:
        signal.signal(s, lambda sig, _frame: [p.signal(sig) for p in procs])
    return previous


def _death(p: _Proc) -> str:
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
    out.seek(0)
    err.seek(0)
    return RunResult(out.read(), err.read() + message, code, timed_out)
