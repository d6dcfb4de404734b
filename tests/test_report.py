"""What `--report` prints while and after a program runs: each segment thread's turns and
times, states declared ``report = True`` (also under the row of the element using them in
the element table), and the same on SIGUSR1 without stopping."""
from __future__ import annotations

import re
import signal
import subprocess
import time

from conftest import floem, floem_command
from floem.explore.measure import handles_sigusr1

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
def wait_until_it_handles_sigusr1(proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while not handles_sigusr1(proc.pid):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)


THREAD = re.compile(r"^floem: thread counting\[0\] \(process app\): runs (\d+), packets (\d+), "
                    r"busy (\d+) ns, waited (\d+) ns, idle (\d+) ns, slept (\d+) ns, cpu (\d+) ns, "
                    r"wall (\d+) ns, received (\d+), sent (\d+), dma waits (\d+), dma bytes (\d+), "
                    r"engine calls (\d+), engine bytes (\d+)$",
                    re.M)


def test_threads_and_reported_states_at_exit(tmp_path) -> None:
    app = tmp_path / "app.py"
    app.write_text(COUNTING_APP)
    result = floem("run", str(app), "--report", "--duration", "1.5")
    assert result.returncode == 0, result.stderr
    runs, packets, busy, waited, idle, slept, cpu, wall, *io = map(
        int, THREAD.search(result.stderr).groups())
    assert io == [0] * 6                         # no packet I/O, no DMA, no engine
    assert runs == packets == 250                # one per packet; idle turns are not runs
    assert busy > 0 and idle > 0 and waited == 0
    assert 0 < slept <= idle                     # an idle thread backs off by sleeping
    assert cpu < wall / 2                        # rather than spinning
    assert busy + idle <= wall and 0 < cpu
    assert 1.0e9 < wall < 5e9
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
        proc = subprocess.Popen(floem_command() + ["run", str(app), "--report", "--timeout", "120"],
                                stdout=subprocess.DEVNULL, stderr=err, text=True)
        try:
            wait_until_it_handles_sigusr1(proc)  # floem ignores it while it builds
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


def test_a_program_with_its_own_main_is_not_killed_by_sigusr1(tmp_path) -> None:
    app = tmp_path / "main.py"
    app.write_text("from floem import main\n"
                   "main(r'for (int i = 0; i < 30; i++) usleep(100000); puts(\"done\");')\n")
    proc = subprocess.Popen(floem_command() + ["run", str(app), "--timeout", "120"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until_it_handles_sigusr1(proc)
    for _ in range(20):
        time.sleep(0.25)
        proc.send_signal(signal.SIGUSR1)
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, out) == (0, "done\n"), err
