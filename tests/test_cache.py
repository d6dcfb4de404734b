"""The cache construct: random gets and sets checked against a dict, for every policy,
on the CPU and with the cache on the NIC and the store on the host; pointer keys and
values; the paper's Figure 3 hazard; the compile errors."""
from __future__ import annotations

import os
import random
import shutil
import zlib

import pytest

from conftest import ROOT, floem

APPS = os.path.join(ROOT, "tests", "cache")
POLICIES = [(p, m) for p in ("write_through", "write_back")
            for m in ("write_alloc", "no_write_alloc")]
KEYS = 40


def operations(count: int, seed: int) -> tuple[str, list[str]]:
    """Random gets and sets over KEYS keys, and what a dict says every get returns."""
    rng = random.Random(seed)
    store: dict[int, int] = {}
    lines, expected = [], []
    for _ in range(count):
        key = rng.randrange(KEYS)
        if rng.random() < 0.5:
            lines.append(f"g {key}")
            expected.append(str(store.get(key, key * 7)))
        else:
            value = rng.randrange(1, 10**6)
            store[key] = value
            lines.append(f"s {key} {value}")
    return "\n".join(lines) + "\n", expected


def run_kv(tmp_path, policy: str, write_miss: str, place: str, count: int,
           nic: str = "emu", entries: str = "2") -> None:
    # The same operations on every run of a case (str's hash() changes from run to run).
    seed = zlib.crc32(f"{policy} {write_miss} {place}".encode()) & 0xffff
    ops, expected = operations(count, seed)
    path = tmp_path / "ops.txt"
    path.write_text(ops)
    env = {"CACHE_POLICY": policy, "CACHE_WRITE_MISS": write_miss, "CACHE_PLACE": place,
           "CACHE_ENTRIES": entries}
    result = floem("run", "--nic", nic, "--report", "--timeout", "240",
                   os.path.join(APPS, "kv_app.py"), "--", str(path), env=env, timeout=400)
    assert result.returncode == 0, f"operations(seed={seed}): {result.stderr}"
    assert result.stdout.split() == expected, f"operations(seed={seed})"
    stats = next(line for line in result.stderr.splitlines() if line.startswith("floem: cache kv:"))
    if entries == "unbounded":
        assert ", evictions 0," in stats          # chains grow instead
        return
    assert ", evictions 0," not in stats          # a tiny cache evicts all the time
    if policy == "write_back" and write_miss == "write_alloc":
        assert "write-backs 0" not in stats


@pytest.mark.parametrize("policy,write_miss", POLICIES)
def test_cache_on_cpu_matches_a_dict(tmp_path, policy: str, write_miss: str) -> None:
    run_kv(tmp_path, policy, write_miss, "cpu", 3000)


def test_unbounded_chains_never_evict(tmp_path) -> None:
    run_kv(tmp_path, "write_back", "write_alloc", "cpu", 2000, entries="unbounded")


GET_ONLY = r'''
from floem import *

class Q(State):
    key = Field(Int)
    val = Field(Int)

class Calls(State):
    n = Field(Int)

class Square(Element):
    """The expensive region: counts how often it runs."""
    calls = Persistent(Calls)
    def states(self, calls):
        self.calls = calls
    def configure(self):
        self.inp = Input()
        self.out = Output()
    def impl(self):
        self.run_c("calls->n++; state->val = state->key * state->key; output { out(); }")

class Start(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()
    def impl(self):
        self.run_c("state->key = inp(); output { out(); }")

class Val(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)
    def impl(self):
        self.run_c("output { out(state->val); }")

calls = Calls("calls")
memo = Cache("memo", key="key", val="val", buckets=64, entries=None)

class F(Flow):
    state = PerPacket(Q)
    def impl(self):
        class square(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)
            def impl(self):
                self.inp >> Start() >> memo.get_start >> Square(states=[calls]) >> memo.get_end >> Val() >> self.out
        square("square")
F()
main(r"""
    int total = 0;
    for (int round = 0; round < 3; round++)
        for (int k = 0; k < 10; k++)
            total += square(k);
    printf("%d %d\n", total, calls->n);
""")
'''


def test_get_only_cache_memoises_its_region(tmp_path) -> None:
    app = tmp_path / "memo.py"
    app.write_text(GET_ONLY)
    result = floem("run", "--report", str(app))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{3 * sum(k * k for k in range(10))} 10\n"
    assert "floem: cache memo: hits 20, misses 10, evictions 0, write-backs 0" in result.stderr


@pytest.mark.parametrize("policy,write_miss", POLICIES)
def test_cache_on_nic_store_on_host_matches_a_dict(tmp_path, policy: str, write_miss: str) -> None:
    run_kv(tmp_path, policy, write_miss, "nic", 600)


@pytest.mark.slow
@pytest.mark.parametrize("policy,write_miss", [("write_back", "write_alloc"),
                                               ("write_through", "no_write_alloc")])
def test_cache_on_bluefield_matches_a_dict(tmp_path, policy: str, write_miss: str) -> None:
    assert shutil.which("qemu-aarch64"), "install qemu-user (scripts/setup.sh does)"
    run_kv(tmp_path, policy, write_miss, "nic", 200, nic="bluefield")


def test_pointer_keys_and_values_of_varying_lengths(tmp_path) -> None:
    rng = random.Random(7)
    store: dict[str, str] = {}
    lines, expected = [], []
    for _ in range(1500):
        slot = rng.randrange(24)
        key = "k" + "x" * (slot % 5) + str(slot)      # one spelling per key, lengths vary
        if rng.random() < 0.5:
            lines.append(f"g {key}")
            expected.append(f"{key}={store.get(str(slot), '-')}")
        else:
            value = "".join(rng.choice("abcdefghij") for _ in range(rng.randrange(1, 41)))
            store[str(slot)] = value
            lines.append(f"s {key} {value}")
    path = tmp_path / "ops.txt"
    path.write_text("\n".join(lines) + "\n")
    result = floem("run", "--timeout", "120", os.path.join(APPS, "kv_bytes_app.py"), "--", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == expected


def test_figure3_miss_waits_for_the_eviction_of_the_same_key() -> None:
    result = floem("run", "--timeout", "120", os.path.join(APPS, "figure3_app.py"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "111\n"


def test_figure3_goes_wrong_when_misses_and_evictions_take_different_queues(tmp_path) -> None:
    """The same program with the compiler's steering turned off returns the stale value:
    the test above would catch a compiler that let misses and evictions part ways."""
    from floem.builder import run_program
    from floem.api import load_app

    program = load_app(os.path.join(APPS, "figure3_app.py"))
    result = run_program(program, timeout=120, cache_steering=False,
                         out_dir=str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "35\n"


ERROR_APP = '''
from floem import *

class R(State):
    key = Field(Int)
    val = Field(Int)
    qid = Field(Int)

class Step(Element):
    def configure(self, code="output { out(); }"):
        self.inp = Input()
        self.out = Output()
        self.code = code
    def impl(self):
        self.run_c(self.code)

class Src(Element):
    def configure(self):
        self.out = Output()
    def impl(self):
        self.run_c("output { out(); }")

class Sink(Element):
    def configure(self):
        self.inp = Input()

class Split(Element):
    def configure(self):
        self.a = Output()
        self.b = Output()
    def impl(self):
        self.run_c("output switch { case rand() & 1: a(); else: b(); }")

c = Cache("c", key="key", val="val")
CASE
'''

ERROR_CASES = {
    "points_on_two_devices": ('''
q = Queue("q")
class F(Flow):
    state = PerPacket(R)
    def impl(self):
        class A(Segment):
            def impl(self):
                Src() >> c.get_start >> q
        class B(Segment):
            def impl(self):
                q >> c.get_end >> Sink()
        A("a", device=target.NIC)
        B("b")
F()
''', "its points are on different devices", 'c = Cache('),
    "get_and_set_cross_different_queues": ('''
q1 = Queue("q1", size=8)
r1 = Queue("r1", size=8)
q2 = Queue("q2", size=8)
r2 = Queue("r2", size=8)
class F(Flow):
    state = PerPacket(R)
    def impl(self):
        class A(Segment):
            def impl(self):
                Src() >> c.get_start >> q1
        class A2(Segment):
            def impl(self):
                Src() >> c.set_start >> q2
        class H(Segment):
            def impl(self):
                q1 >> Step() >> r1
        class H2(Segment):
            def impl(self):
                q2 >> Step() >> r2
        class B(Segment):
            def impl(self):
                r1 >> c.get_end >> Sink()
        class B2(Segment):
            def impl(self):
                r2 >> c.set_end >> Sink()
        A("a"); A2("a2"); H("h"); H2("h2"); B("b"); B2("b2")
F()
''', "misses and evictions of a key must travel one queue", 'c = Cache('),
    "callable_inside_region": ('''
q = Queue("q", size=8)
class F(Flow):
    state = PerPacket(R)
    def impl(self):
        class A(Segment):
            def impl(self):
                Src() >> c.get_start >> q
        class pull(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
            def impl(self):
                self.inp >> q.qid
                q >> c.get_end >> Sink()
        A("a")
        pull("pull")   # <-- error
F()
''', "is inside the region cached by 'c'", '<-- error'),
    "overlapping_regions": ('''
d = Cache("d", key="key", val="val")
class F(Flow):
    state = PerPacket(R)
    def impl(self):
        class A(Segment):
            def impl(self):
                shared, split = Step(), Split()
                split.a >> c.get_start >> shared >> c.get_end >> Sink()
                split.b >> d.get_start >> shared
                shared >> d.get_end >> Sink()
        A("a")
F()
''', "overlap", 'd = Cache('),
    "qid_written_in_region": ('''
q = Queue("q", channel=2, inst=2, size=8)
r = Queue("r", channel=2, inst=2, size=8)
class F(Flow):
    state = PerPacket(R)
    def impl(self):
        class A(Segment):
            def impl(self):
                split = Split()
                split.a >> c.get_start >> q.enq[0]
                split.b >> c.set_start >> q.enq[1]
        class H(Segment):
            def impl(self):
                q.deq[0] >> Step(code="state->qid = 1; output { out(); }") >> r.enq[0]   # <-- error
                q.deq[1] >> Step() >> r.enq[1]
        class B(Segment):
            def impl(self):
                r.deq[0] >> c.get_end >> Sink()
                r.deq[1] >> c.set_end >> Sink()
        A("a"); H("h"); B("b")
F()
''', "could then take different queue instances", '<-- error'),
    "get_start_without_get_end": ('''
class F(Flow):
    state = PerPacket(R)
    def impl(self):
        class A(Segment):
            def impl(self):
                Src() >> c.get_start >> Sink()
        A("a")
F()
''', "get_end is not connected", 'c = Cache('),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_cache_compile_errors(tmp_path, case: str) -> None:
    body, message, marker = ERROR_CASES[case]
    text = ERROR_APP.replace("CASE", body)
    app = tmp_path / "app.py"
    app.write_text(text)
    line = next(i for i, text_line in enumerate(text.splitlines(), 1) if marker in text_line)
    result = floem("check", str(app))
    assert result.returncode == 1, result.stdout
    assert f"{app}:{line}: error: " in result.stderr, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
