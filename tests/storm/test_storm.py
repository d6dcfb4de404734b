"""The Storm top-N topology end to end: three server processes (examples/storm/run.py), each
a Floem data plane around the C workers, give exactly the top N of a Counter over the same
stream, in every design, with datagrams lost on purpose, with receivers falling behind,
and over DPDK between network namespaces."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STORM = os.path.join(REPO, "examples", "storm")
sys.path.insert(0, STORM)

from conftest import left_in_shm  # noqa: E402
from topology import load  # noqa: E402
from tweets import top_users, write_tweets  # noqa: E402


@pytest.fixture(scope="module")
def stream(tmp_path_factory) -> str:
    """100,000 tweets by 10,000 users, Zipf."""
    path = str(tmp_path_factory.mktemp("storm") / "tweets.txt")
    write_tweets(path, tweets=100_000, users=10_000, zipf=1.1, seed=11)
    return path


def run_topology(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, os.path.join(STORM, "run.py"), *args],
                          capture_output=True, text=True, timeout=timeout)


def check_top(stream: str, *args: str, top: int = 10) -> str:
    """Run the default topology over the stream; its output must be the exact top N."""
    shm_before = set(os.listdir("/dev/shm"))
    result = run_topology("--input", stream, "--top", str(top), "--report", *args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == top_users(stream, top), result.stderr[-3000:]
    assert left_in_shm(shm_before) == set()
    return result.stderr


def test_cpu_design_ranks_exactly(stream) -> None:
    stderr = check_top(stream, "-D", "design=cpu")
    for server in "abc":                    # tuples crossed every connection
        assert f"[{server}] storm: server" in stderr


@pytest.mark.slow
@pytest.mark.parametrize("design", ["split", "bypass"])
def test_nic_designs_rank_exactly(stream, design) -> None:
    check_top(stream, "-D", f"design={design}", top=20)


@pytest.mark.slow
def test_separate_output_queues_rank_exactly(stream) -> None:
    check_top(stream, "-D", "design=bypass", "-D", "shared_out=false")


@pytest.mark.slow
@pytest.mark.parametrize("design", ["cpu", "split"])
def test_lost_datagrams_are_sent_again(stream, design) -> None:
    stderr = check_top(stream, "-D", f"design={design}", "-D", "drop_permille=30",
                       "-D", "drop_seed=3")
    lost = [int(line.rsplit(" ", 1)[1]) for line in stderr.splitlines()
            if "lost on purpose" in line]
    assert len(lost) == 3 and all(n > 0 for n in lost)


@pytest.mark.slow
def test_receivers_falling_behind_lose_nothing(stream) -> None:
    """Input queues of 4 entries: the demultiplexer refuses tuples, senders wait, resend."""
    stderr = check_top(stream, "-D", "queue_size=4")
    refused = [line for line in stderr.splitlines() if "->" in line and "refused 0," not in line]
    assert refused, "no receiver ever refused a tuple: the case was not exercised"


@pytest.mark.slow
def test_a_users_own_topology(stream, tmp_path) -> None:
    """Two servers, other counts and placement, top 5, and ports of its own (free ones, so
    that runs do not collide), which the servers take."""
    topology = tmp_path / "two.toml"
    text = '''
spouts = 2
counters = 3
rankers = 2

[[server]]
name = "left"
executors = ["spout0", "counter0", "counter1", "ranker1"]

[[server]]
name = "right"
executors = ["total", "ranker0", "counter2", "spout1"]
'''
    topology.write_text(text)
    ports = [s.port for s in load(str(topology)).with_free_ports().servers]
    for name, port in zip(("left", "right"), ports):
        text = text.replace(f'name = "{name}"\n', f'name = "{name}"\nport = {port}\n')
    topology.write_text(text)
    result = run_topology(str(topology), "--input", stream, "--top", "5")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == top_users(stream, 5)
    for name, port in zip(("left", "right"), ports):
        assert f"[{name}] floem: net udp: ready on UDP port {port} of 127.0.0.1\n" in result.stderr


@pytest.mark.parametrize("text, message", [
    ("spouts = 1\ncounters = 1\n", "rankers' must be a number of executors"),
    ("spouts = 1\ncounters = 1\nrankers = 1\n[[server]]\nname = 'a'\nport = 7301\n"
     "executors = ['spout0', 'counter0', 'ranker0']\n", "no server runs total"),
    ("spouts = 1\ncounters = 1\nrankers = 1\n[[server]]\nname = 'a'\nport = 7301\n"
     "executors = ['spout0', 'counter0', 'ranker0', 'total', 'spout7']\n",
     "runs 'spout7', which is not an executor"),
    ("spouts = 1\ncounters = 1\nrankers = 1\n[[server]]\nname = 'a'\nport = 7301\n"
     "executors = ['spout0', 'counter0']\n[[server]]\nname = 'b'\nport = 7301\n"
     "executors = ['ranker0', 'total']\n", "two servers share a port"),
    ("spouts = [", "Invalid value"),
])
def test_bad_topologies_are_explained(tmp_path, text, message) -> None:
    topology = tmp_path / "bad.toml"
    topology.write_text(text)
    (tmp_path / "in.txt").write_text("someone\n")
    result = run_topology(str(topology), "--input", str(tmp_path / "in.txt"), timeout=60)
    assert result.returncode == 2
    assert result.stderr.startswith(f"storm: {topology}: ")
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def have_dpdk_netns() -> bool:
    """Root, iproute2 and libdpdk (pkg-config) are here."""
    return (os.geteuid() == 0 and shutil.which("ip") is not None
            and shutil.which("pkg-config") is not None
            and subprocess.run(["pkg-config", "--exists", "libdpdk"]).returncode == 0)


@pytest.mark.slow
@pytest.mark.skipif(not have_dpdk_netns(), reason="needs root, iproute2 and libdpdk-dev")
def test_dpdk_between_namespaces(stream) -> None:
    before = set(subprocess.run(["ip", "netns", "list"], capture_output=True,
                                text=True).stdout.split())
    check_top(stream, "--net", "dpdk", "-D", "design=split")
    after = set(subprocess.run(["ip", "netns", "list"], capture_output=True,
                               text=True).stdout.split())
    assert after <= before                  # the run's namespaces are gone
