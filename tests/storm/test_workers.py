"""The Storm workers (examples/storm/workers) without Floem, and the tweet generator.

The workers are built with gcc against the fake data plane of fake_dataplane.c (every
executor in one process, queues in memory) and run on streams from examples/storm/tweets.py
and on hand-made files; the total ranker's output must be the exact top N of a Counter over
the same lines. Also: the command line's errors, a process that does not host the total
ranker (it runs until a signal), a signal in the middle of a run, idle threads that do not
spin, the bypass design, and one run each under ASan+UBSan and TSan.
"""
from __future__ import annotations

import collections
import contextlib
import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from conftest import ROOT, wait_until
from test_runtime_c import SANITIZER_ENV, SANITIZERS

STORM = os.path.join(ROOT, "examples", "storm")
WORKERS = os.path.join(STORM, "workers")
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = [os.path.join(WORKERS, f) for f in ("main.c", "spout.c", "counter.c", "ranker.c",
                                              "table.c")]
CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-g", "-Wall", "-Wextra", "-Werror", "-pthread",
          "-I" + os.path.join(HERE, "fake"), "-I" + WORKERS]
USER_MAX = 31                           # tuple.h's STORM_USER_MAX
SUMMARY = re.compile(r"^storm: (\w+): in (\d+), out (\d+)$", re.M)
FAKE_LINE = re.compile(r"^fake data plane: put (\d+), got (\d+), left (\d+), remote (\d+)$", re.M)


def load_tweets() -> ModuleType:
    """examples/storm/tweets.py as a module."""
    spec = importlib.util.spec_from_file_location("storm_tweets", os.path.join(STORM, "tweets.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tweets = load_tweets()
Build = Callable[..., str]


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    """build(sanitizer="none", bypass=False) -> the workers on the fake data plane (cached)."""
    out = tmp_path_factory.mktemp("storm-workers")
    built: dict[tuple[str, bool], str] = {}

    def make(sanitizer: str = "none", bypass: bool = False) -> str:
        if (sanitizer, bypass) not in built:
            exe = str(out / f"workers-{sanitizer.replace(',', '-')}{'-bypass' if bypass else ''}")
            cmd = ["gcc", *CFLAGS, *SANITIZERS[sanitizer], *(["-DSTORM_BYPASS"] if bypass else []),
                   *SOURCES, os.path.join(HERE, "fake_dataplane.c"), "-o", exe]
            result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            assert result.returncode == 0, result.stderr
            built[sanitizer, bypass] = exe
        return built[sanitizer, bypass]

    return make


def executor_names(spouts: int, counters: int, rankers: int) -> list[str]:
    """Every executor of the topology, in global-id order."""
    return ([f"spout{i}" for i in range(spouts)] + [f"counter{i}" for i in range(counters)]
            + [f"ranker{i}" for i in range(rankers)] + ["total"])


@dataclass
class Run:
    """What a run of the workers printed."""
    ranking: list[tuple[str, int]]      # (user, count), best first
    summary: dict[str, tuple[int, int]]  # executor -> (in, out)
    fake: tuple[int, int, int, int]     # the fake data plane's put, got, left, remote
    stderr: str


def parse_run(result: subprocess.CompletedProcess) -> Run:
    """A finished run: status 0, no sanitizer report, its output read."""
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Sanitizer" not in result.stderr, result.stderr
    ranking = []
    for rank, line in enumerate(result.stdout.splitlines(), 1):
        number, user, count = line.split(" ")
        assert int(number) == rank
        ranking.append((user, int(count)))
    fake = FAKE_LINE.search(result.stderr)
    assert fake, result.stderr
    return Run(ranking, {m[1]: (int(m[2]), int(m[3])) for m in SUMMARY.finditer(result.stderr)},
               tuple(int(x) for x in fake.groups()), result.stderr)


def command(exe: str, executors: list[str], spouts: int, counters: int, rankers: int,
            *args: str, env: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The workers' command line for this process's executors, and the fake's environment."""
    ids = {name: i for i, name in enumerate(executor_names(spouts, counters, rankers))}
    env = {**os.environ, **SANITIZER_ENV, **(env or {}),
           "STORM_FAKE_IDS": ",".join(str(ids[name]) for name in executors)}
    return ([exe, "--executors", ",".join(executors), "--spouts", str(spouts), "--counters",
             str(counters), "--rankers", str(rankers), *args], env)


def run_all(exe: str, path: str, spouts: int, counters: int, rankers: int, top: int,
            *args: str, env: dict[str, str] | None = None) -> Run:
    """Every executor in this process, on the tweets of `path`."""
    argv, env = command(exe, executor_names(spouts, counters, rankers), spouts, counters,
                        rankers, "--input", path, "--top", str(top), *args, env=env)
    return parse_run(subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env))


@contextlib.contextmanager
def started(argv: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen]:
    """The workers running in the background (killed if the test leaves them running)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def stop(proc: subprocess.Popen, sig: int) -> Run:
    """Stop running workers with `sig`; what they printed."""
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return parse_run(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))


def user_of(line: bytes) -> bytes:
    """The user a spout reads from a line (without its newline): cut at '\\r', NUL, 31 bytes."""
    return line.removesuffix(b"\r")[:USER_MAX].split(b"\0")[0]


def expected_top(path: str, top: int, lines: Callable[[int], bool] = lambda j: True
                 ) -> list[tuple[str, int]]:
    """The exact top N of the file's lines j with lines(j): by count descending, then name
    ascending (bytes)."""
    with open(path, "rb") as f:
        counts = collections.Counter(user_of(line) for j, line in enumerate(f.read().split(b"\n"))
                                     if lines(j))
    counts.pop(b"", None)
    ranked = sorted(counts.items(), key=lambda uc: (-uc[1], uc[0]))[:top]
    return [(user.decode(), count) for user, count in ranked]


def check_run(run: Run, path: str, top: int, spouts: int, counters: int) -> None:
    """The exact ranking, and every tuple sent was taken by its executor."""
    assert run.ranking == expected_top(path, top)
    lines = sum(c for _, c in expected_top(path, 10 ** 9))
    ins = sum(i for i, _ in run.summary.values())
    outs = sum(o for _, o in run.summary.values())
    assert outs == ins, run.summary
    assert sum(o for name, (_, o) in run.summary.items() if name.startswith("spout")) \
        == lines + spouts * counters
    assert run.fake == (outs, ins, 0, 0), run.stderr
    assert "ignored" not in run.stderr, run.stderr


# -- rankings ------------------------------------------------------------------------------

STREAMS = {                             # name: tweets, users, zipf, seed
    "zipf": (20_000, 2_000, 1.1, 1),
    "uniform": (5_000, 400, 0.0, 2),    # many ties
    "long-tail": (30_000, 50_000, 0.5, 3),  # more users than tweets: most counts are 1
    "few-users": (3_000, 5, 1.2, 4),
    "small": (4_000, 300, 1.1, 6),      # for the sanitizers
}
TOPOLOGIES = [  # stream, spouts, counters, rankers, top
    ("zipf", 1, 1, 1, 10),
    ("zipf", 2, 3, 2, 10),
    ("zipf", 3, 2, 4, 1),
    ("uniform", 2, 2, 2, 100),
    ("uniform", 1, 3, 3, 1000),         # N above the users: every user ranked
    ("long-tail", 2, 4, 3, 50),
    ("few-users", 2, 2, 2, 10),         # fewer users than N
    ("few-users", 1, 5, 6, 3),          # a counter and two rankers get no users
]


@pytest.fixture(scope="module")
def streams(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The generated tweet files of STREAMS."""
    out = tmp_path_factory.mktemp("storm-tweets")
    paths = {}
    for name, (n, users, zipf, seed) in STREAMS.items():
        paths[name] = str(out / f"{name}.txt")
        tweets.write_tweets(paths[name], n, users, zipf, seed)
    return paths


@pytest.mark.parametrize("stream,spouts,counters,rankers,top", TOPOLOGIES)
def test_top_n(build: Build, streams: dict[str, str], stream: str, spouts: int, counters: int,
               rankers: int, top: int) -> None:
    run = run_all(build(), streams[stream], spouts, counters, rankers, top)
    check_run(run, streams[stream], top, spouts, counters)
    assert set(run.summary) == set(executor_names(spouts, counters, rankers))


def test_frequent_emissions(build: Build, streams: dict[str, str]) -> None:
    """Counters and rankers emitting every millisecond: rankings replace each other."""
    run = run_all(build(), streams["long-tail"], 2, 2, 2, 20, "--emit-ms", "1")
    check_run(run, streams["long-tail"], 20, 2, 2)


def test_window_longer_than_the_run(build: Build, streams: dict[str, str]) -> None:
    """A 10-minute window holds the whole stream of a short run."""
    run = run_all(build(), streams["zipf"], 2, 2, 2, 25, "--window-s", "600", "--emit-ms", "5")
    check_run(run, streams["zipf"], 25, 2, 2)


def test_window_drops_old_tweets(build: Build, streams: dict[str, str]) -> None:
    """The fake makes spout 0's tweets an hour old: a 10-minute window counts spout 1's."""
    run = run_all(build(), streams["zipf"], 2, 3, 2, 30, "--window-s", "600",
                  env={"STORM_FAKE_AGE_S": "3600"})
    assert run.ranking == expected_top(streams["zipf"], 30, lambda j: j % 2 == 1)
    whole = run_all(build(), streams["zipf"], 2, 3, 2, 30, env={"STORM_FAKE_AGE_S": "3600"})
    check_run(whole, streams["zipf"], 30, 2, 3)


def test_window_counts_fall_to_zero(build: Build, tmp_path: Path) -> None:
    """With a 2-second window, counts go down to 0 as the tweets age, and are sent again.

    (Not 1 second: the spout reads its file in a few milliseconds, and tweets made at the end
    of a second would leave a 1-second window before the first emission, their counts falling
    to 0 unsent: nothing to send, and the assertion below would fail on a correct counter.)
    """
    path = tmp_path / "small.txt"
    tweets.write_tweets(str(path), 400, 20, 0.5, 9)
    users = {u for j, u in enumerate(path.read_text().splitlines()) if j % 2 == 0}
    argv, env = command(build(), ["spout0"] + executor_names(2, 2, 2)[2:], 2, 2, 2,
                        "--input", str(path), "--window-s", "2", "--emit-ms", "20")
    with started(argv, env) as proc:
        time.sleep(6.0)                 # spout1 (elsewhere) never ends: the tweets age
                                        # (out of the window within 3 s; slack for load)
        run = stop(proc, signal.SIGTERM)
    counts_sent = run.summary["counter0"][1] + run.summary["counter1"][1]
    assert counts_sent >= 2 * len(users), run.summary     # a count, later a 0, for each


def test_bypass(build: Build, streams: dict[str, str]) -> None:
    """-DSTORM_BYPASS: the tuples of even-numbered senders come through bypass_get."""
    run = run_all(build(bypass=True), streams["zipf"], 2, 3, 2, 10)
    check_run(run, streams["zipf"], 10, 2, 3)


def test_empty_input(build: Build, tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    run = run_all(build(), str(path), 2, 2, 2, 10)
    assert run.ranking == []
    check_run(run, str(path), 10, 2, 2)


def test_names_of_31_bytes(build: Build, tmp_path: Path) -> None:
    """Names of the longest length, differing only in their last byte."""
    path = tmp_path / "long.txt"
    names = ["u" * 28 + f"{i:03d}" for i in range(40)]
    assert all(len(n) == USER_MAX for n in names)
    lines = [names[(i * i) % 40] for i in range(2_000)]
    path.write_text("\n".join(lines) + "\n")
    run = run_all(build(), str(path), 2, 3, 2, 15)
    check_run(run, str(path), 15, 2, 3)
    assert all(len(user) == USER_MAX for user, _ in run.ranking)


def test_long_names_blank_lines_and_crlf(build: Build, tmp_path: Path) -> None:
    """Names over 31 bytes count by their first 31; empty lines are skipped; CRLF is a newline."""
    path = tmp_path / "odd.txt"
    lines = []
    for i in range(3_000):
        lines.append(["a" * 31 + f"tail{i % 7}", "", "bob\r", f"user{i % 13}", "x" * 40][i % 5])
    path.write_bytes(("\n".join(lines)).encode())      # no newline after the last line
    run = run_all(build(), str(path), 3, 2, 2, 10)
    check_run(run, str(path), 10, 3, 2)
    assert ("a" * 31, 600) in run.ranking and ("bob", 600) in run.ranking


# -- the command line ----------------------------------------------------------------------

@pytest.mark.parametrize("args,message", [
    ([], "are required"),
    (["--executors", "spout0", "--spouts", "1", "--counters", "1"], "are required"),
    (["--executors", "spout1", "--spouts", "1", "--counters", "1", "--rankers", "1",
      "--input", "/dev/null"], "no executor 'spout1' in this topology"),
    (["--executors", "spout0,,total", "--spouts", "1", "--counters", "1", "--rankers", "1",
      "--input", "/dev/null"], "empty name"),
    (["--executors", "counter0,counter0", "--spouts", "1", "--counters", "1", "--rankers", "1"],
     "names 'counter0' twice"),
    (["--executors", "bolt0", "--spouts", "1", "--counters", "1", "--rankers", "1"],
     "no executor 'bolt0'"),
    (["--executors", "counter-1", "--spouts", "1", "--counters", "1", "--rankers", "1"],
     "in this topology"),
    (["--executors", "spout0", "--spouts", "1", "--counters", "1", "--rankers", "1"],
     "spout0 needs --input"),
    (["--executors", "spout0", "--spouts", "1", "--counters", "1", "--rankers", "1",
      "--input", "/no/such/file"], "cannot open --input /no/such/file"),
    (["--executors", "total", "--spouts", "0", "--counters", "1", "--rankers", "1"],
     "--spouts wants a number from 1"),
    (["--executors", "total", "--spouts", "1x", "--counters", "1", "--rankers", "1"],
     "not '1x'"),
    (["--executors", "total", "--spouts", "1", "--counters", "1", "--rankers", "1",
      "--top", "0"], "--top wants a number"),
    (["--executors", "total", "--spouts", "1", "--counters", "1", "--rankers", "1",
      "--window-s", "-1"], "--window-s wants a number"),
    (["--executors", "total", "--spouts", "1", "--counters", "1", "--rankers", "1",
      "--emit-ms", "0"], "--emit-ms wants a number"),
    (["--executors", "total", "--spouts", "1", "--counters", "1", "--rankers", "1", "--top"],
     "--top needs a value"),
    (["--executors", "total", "--spouts", "1", "--counters", "1", "--rankers", "1", "--frob"],
     "no option '--frob'"),
    (["--executors", "total", "--spouts", "1", "--counters", "1", "--rankers", "1", "extra"],
     "unexpected argument 'extra'"),
])
def test_bad_arguments(build: Build, args: list[str], message: str) -> None:
    result = subprocess.run([build(), *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "usage: workers" in result.stderr
    assert result.stdout == ""


def test_makefile_fake(tmp_path: Path) -> None:
    """`make fake` (both designs) builds the workers warning-free; they run."""
    path = tmp_path / "t.txt"
    tweets.write_tweets(str(path), 2_000, 100, 1.1, 1)
    for design in ("cpu", "bypass"):
        result = subprocess.run(["make", "-C", WORKERS, "fake", f"DESIGN={design}",
                                 f"OUT={tmp_path}"], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        run = run_all(str(tmp_path / f"fake-{design}" / "workers"), str(path), 1, 2, 2, 5)
        check_run(run, str(path), 5, 1, 2)


def test_help(build: Build) -> None:
    result = subprocess.run([build(), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("usage: workers")


# -- the lifecycle -------------------------------------------------------------------------

def executor_threads(pid: int) -> list[int]:
    """The thread ids of a running process's executors: every thread but the main one (an
    executor's thread ends when the executor is done)."""
    return [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]


def executors_started(pid: int) -> bool:
    """The main thread has started every executor: it sleeps, waiting for a stop signal (it
    never blocks before)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "S"


def sleeps(pid: int, tid: int) -> int:
    """How often a thread has blocked in the kernel so far (Linux's voluntary context
    switches: a thread that spins, even through sched_yield, makes none)."""
    with open(f"/proc/{pid}/task/{tid}/status") as f:
        return int(next(line for line in f if line.startswith("voluntary_ctxt_switches:"))
                   .split()[1])


def test_without_total_runs_until_a_signal(build: Build, tmp_path: Path) -> None:
    """Spout and counter done, the process stays (quietly) until SIGTERM, then exits 0."""
    path = tmp_path / "small.txt"
    tweets.write_tweets(str(path), 300, 30, 1.0, 5)
    argv, env = command(build(), ["spout0", "counter0"], 1, 1, 1, "--input", str(path))
    with started(argv, env) as proc:
        wait_until(lambda: executors_started(proc.pid) and executor_threads(proc.pid) == [],
                   "spout0 and counter0 done", proc)
        run = stop(proc, signal.SIGTERM)
    assert run.ranking == []
    assert run.summary["spout0"] == (0, 301)
    counted, sent = run.summary["counter0"]
    assert counted == 301 and 2 <= sent <= 301      # counts of its 30 users, and one END
    assert run.fake == (301, 301, 0, sent)          # the counts went to another server


def test_signal_while_running(build: Build, streams: dict[str, str]) -> None:
    """A process whose executors wait for a spout elsewhere idles without spinning, and
    stops on SIGINT."""
    argv, env = command(build(), ["spout0"] + executor_names(2, 2, 2)[2:], 2, 2, 2,
                        "--input", streams["zipf"])
    with started(argv, env) as proc:
        # spout0 is done (its thread ended); the rest waits for spout1's END
        wait_until(lambda: executors_started(proc.pid) and len(executor_threads(proc.pid)) == 5,
                   "spout0 done", proc)
        waiting = {tid: sleeps(proc.pid, tid) for tid in executor_threads(proc.pid)}
        wait_until(lambda: all(sleeps(proc.pid, tid) >= n + 100 for tid, n in waiting.items()),
                   "every waiting executor's thread going to sleep 100 times", proc)
        run = stop(proc, signal.SIGINT)
    assert run.ranking == []
    assert set(run.summary) == {"spout0", "counter0", "counter1", "ranker0", "ranker1", "total"}
    assert run.fake[2] == 0


# -- sanitizers ----------------------------------------------------------------------------

@pytest.mark.parametrize("sanitizer", ["address,undefined", "thread"])
def test_sanitizer(build: Build, streams: dict[str, str], sanitizer: str) -> None:
    run = run_all(build(sanitizer), streams["small"], 2, 2, 2, 10, "--window-s", "600",
                  "--emit-ms", "2")
    check_run(run, streams["small"], 10, 2, 2)


# -- the tweet generator -------------------------------------------------------------------

def test_tweets_deterministic_and_skewed(tmp_path: Path) -> None:
    a, b, c = (str(tmp_path / n) for n in ("a", "b", "c"))
    tweets.write_tweets(a, 5_000, 100, 1.1, 7)
    tweets.write_tweets(b, 5_000, 100, 1.1, 7)
    tweets.write_tweets(c, 5_000, 100, 1.1, 8)
    text = Path(a).read_text()
    assert text == Path(b).read_text() and text != Path(c).read_text()
    lines = text.splitlines()
    assert len(lines) == 5_000 and all(re.fullmatch(r"user\d{1,2}", u) for u in lines)
    counts = collections.Counter(lines)
    assert counts.most_common(1)[0][0] == "user0" and counts["user0"] > 5 * counts["user50"]


def test_tweets_command_line(tmp_path: Path) -> None:
    out = tmp_path / "t.txt"
    script = os.path.join(STORM, "tweets.py")
    result = subprocess.run([sys.executable, script, "--tweets", "1000", "--users", "3",
                             "--zipf", "0", "--seed", "2", "-o", str(out)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert set(out.read_text().splitlines()) == {"user0", "user1", "user2"}
    result = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and "--zipf" in result.stdout
    result = subprocess.run([sys.executable, script, "--users", "0", "-o", str(out)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "--users" in result.stderr
