"""What `--report` prints while and after a program runs: each segment thread's turns and
times, states declared ``report = True`` (also under the row of the element using them in
the element table), and the same on SIGUSR1 without stopping."""
from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time
from pathlib import Path

from conftest import floem, floem_command

COUNTING_APP = '''
from floem import Element, Field, Output, Input, Persistent, Segment, State, Uint

class Tally(State):
    packets = Field(Uint(64))
    last = Field(Uint(32))
    label = Field("char *")
    packed = False
    report = True

class Source(Element):
    """Emits exactly 250 packets, then runs without handing anything on: idle turns."""
    def configure(self):
        self.out = Output(Uint(32))
    def impl(self):
        self.run_c(r\'\'\'
            static uint32_t sent = 0;
            bool more = sent < 250;
            if (more)
                sent++;
            output switch { case more: out(sent); }
        \'\'\')

class Count(Element):
    tally = Persistent(Tally)
    def configure(self):
        self.inp = Input(Uint(32))
    def impl(self):
        self.run_c("uint32_t n = inp(); tally->packets++; tally->last = n;")

tally = Tally("tally")

class counting(Segment):
    def impl(self):
        Source() >> Count(states=[tally])

counting("counting")
'''
#: Python runs it (as sitecustomize) before the command's code: it writes a byte to the file
#: descriptor $READY_FD when the command starts loading the compiler (floem.api), the long
#: part of its start, before which only Python's start and floem/__init__.py run.
LOADING_HOOK = """
import os, sys

def _loading(event, args):
    if event == "import" and args[0] == "floem.api" and "READY_FD" in os.environ:
        fd = int(os.environ.pop("READY_FD"))
        os.write(fd, b"!")
        os.close(fd)

sys.addaudithook(_loading)
"""


def start_floem(args: list[str], tmp_path: Path, **popen) -> subprocess.Popen:
    """``floem ARGS`` started, once it loads the compiler."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(LOADING_HOOK)
    path = [str(hook)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    ready, ready_w = os.pipe()
    try:
        proc = subprocess.Popen(floem_command() + args, pass_fds=[ready_w], **popen,
                                env={**os.environ, "READY_FD": str(ready_w),
                                     "PYTHONPATH": os.pathsep.join(path)})
        os.close(ready_w)
        assert select.select([ready], [], [], 120)[0], "floem did not start"
        assert os.read(ready, 1) == b"!", "floem ended before loading the compiler"
    finally:
        os.close(ready)
    return proc


THREAD = re.compile(r"^floem: thread counting\[0\] \(process app\): runs (\d+), packets (\d+), "
                    r"busy (\d+) ns, waited (\d+) ns, idle (\d+) ns, slept (\d+) ns, cpu (\d+) ns, "
                    r"wall (\d+) ns, received (\d+), sent (\d+), dma waits (\d+), dma bytes (\d+), "
                    r"engine calls (\d+), engine bytes (\d+)$",
                    re.M)


def test_threads_and_reported_states_at_exit(tmp_path) -> None:
    app = tmp_path / "app.py"
    app.write_text(COUNTING_APP)
    started = time.monotonic_ns()
    result = floem("run", str(app), "--report", "--duration", "1.5")
    lived = time.monotonic_ns() - started        # the thread's life is within it
    assert result.returncode == 0, result.stderr
    runs, packets, busy, waited, idle, slept, cpu, wall, *io = map(
        int, THREAD.search(result.stderr).groups())
    assert io == [0] * 6                         # no packet I/O, no DMA, no engine
    assert runs == packets == 250                # one per packet; idle turns are not runs
    assert busy > 0 and idle > 0 and waited == 0
    assert 0 < slept <= idle                     # an idle thread backs off by sleeping
    assert cpu < wall / 2                        # rather than spinning
    assert busy + idle <= wall <= lived and 0 < cpu     # nanoseconds, all of them
    # the numeric fields of the state, not the pointer
    assert "floem: state tally (Tally): packets 250, last 250\n" in result.stderr
    # and again in the element table, under the row of the element that uses it
    table = result.stderr[result.stderr.index("floem: elements of process app"):].splitlines()
    row = next(i for i, line in enumerate(table) if line.startswith("floem:   Count0 "))
    assert table[row + 1] == "floem:     state tally (Tally): packets 250, last 250"


def test_sigusr1_prints_the_counters_and_the_program_goes_on(tmp_path) -> None:
    app = tmp_path / "app.py"
    app.write_text(COUNTING_APP)
    with open(tmp_path / "stderr", "w+") as err:
        proc = start_floem(["run", str(app), "--report", "--timeout", "120"], tmp_path,
                           stdout=subprocess.DEVNULL, stderr=err, text=True)
        try:
            deadline = time.monotonic() + 60
            snapshot = ""
            while "floem: state tally (Tally): packets 250" not in snapshot:
                assert time.monotonic() < deadline and proc.poll() is None, snapshot
                proc.send_signal(signal.SIGUSR1)  # ignored while it builds
                time.sleep(0.5)
                err.seek(0)
                snapshot = err.read()
            assert THREAD.search(snapshot)
            assert proc.poll() is None           # still running
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(60)
        err.seek(0)
        final = err.read()[len(snapshot):]
    assert proc.returncode == 0, final
    assert THREAD.search(final)                  # and the report at exit


def test_sigusr1_from_the_start_on_neither_kills_floem_run_nor_its_program(tmp_path) -> None:
    """Sent all the time from when the command starts loading the compiler (its imports,
    the build, the run), SIGUSR1 kills neither floem nor a program with its own main."""
    app = tmp_path / "main.py"
    app.write_text("from floem import main\n"
                   "main(r'for (int i = 0; i < 30; i++) usleep(100000); puts(\"done\");')\n")
    proc = start_floem(["run", str(app), "--timeout", "120"], tmp_path,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while proc.poll() is None:
        assert time.monotonic() < deadline, "floem run did not end"
        proc.send_signal(signal.SIGUSR1)
        time.sleep(0.02)
    out, err = proc.communicate()
    assert (proc.returncode, out) == (0, "done\n"), err
