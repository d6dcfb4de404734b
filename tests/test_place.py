"""floem place: the objectives it takes, the app file it writes, a search of the AES network
function from the command line (ranked, checked by running, its winner runnable), and a
broken lowering caught by the check."""
from __future__ import annotations

import ast
import io
import json
import os
import subprocess
import sys

import dpkt
import pytest

from floem.errors import FloemError
from floem.ir import Cut, Device
from floem.passes.split_auto import BREAK_ENV
from floem.place.app_file import cut_call, diff, placed_source
from floem.place.check import same_output
from floem.place.command import parse_objective
from floem.explore.measure import RunFailed, Workload
from floem.explore.model import load_platform, predict
from floem.explore.output import Progress
from floem.place import command
from floem.place.command import _count, _explain, _predict, _search
from floem.place.cuts import MAX_CUTS
from floem.place.search import measurement, placements, rank, rank_key, threads_bound

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AES = os.path.join(ROOT, "examples", "nf", "aes.py")
#: The AES segment cut as the paper's split would be: packet I/O on the NIC, AES on the host.
SPLIT = Cut("aes", ("FromNet0", "CheckUDP0"), ("ClearUDPChecksum0", "SwapUDP0", "ToNet0"))


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("place") / "aes.pcap")
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "nf", "load.py"), "aes",
                    "--size", "256", "--count", "100", "--pcap", path], check=True,
                   capture_output=True)
    return path


def test_objectives_and_rates() -> None:
    assert parse_objective("throughput") == ("throughput", None)
    assert parse_objective("host-cores-at 2Mpps") == ("host-cores-at", 2e6)
    assert parse_objective("host-cores-at 750k") == ("host-cores-at", 750e3)
    for bad in ("fastest", "host-cores-at", "host-cores-at lots", "latency 5"):
        with pytest.raises(FloemError):
            parse_objective(bad)


def test_the_placed_app_is_the_app_with_an_origin_and_a_cut(tmp_path) -> None:
    written = str(tmp_path / "placed.py")
    text = placed_source(AES, [SPLIT], {}, written, "a test")
    tree = ast.parse(text)
    assert ast.get_docstring(tree) == ast.get_docstring(ast.parse(open(AES).read()))
    assert text.rstrip().endswith(cut_call(SPLIT))
    origin = os.path.relpath(AES, str(tmp_path))
    assert f"floem.origin({origin!r})" in text
    added = [line for line in diff(AES, text, written).splitlines()
             if line.startswith("+") and not line.startswith("+++")]
    # import and origin; a blank line, the note and the cut
    assert len(added) == 4 + len(cut_call(SPLIT).splitlines())


def sent(app: str, cuts: list[Cut], define: str, capture: str, tmp_path,
         env: dict[str, str] | None = None) -> list[bytes]:
    """The frames ``app`` cut by ``cuts`` sends when ``capture`` is replayed through it, run
    at a low priority (tests of stopping within a deadline run beside it)."""
    placed = tmp_path / f"placed{len(list(tmp_path.iterdir()))}.py"
    placed.write_text(placed_source(app, cuts, {}, str(placed), "a test"))
    out = str(placed) + ".pcap"
    run = subprocess.run(["nice", "-n", "15", sys.executable, "-m", "floem.cli", "run",
                          str(placed), "-D", define, "--net", "pcap", "--pcap-in", capture,
                          "--pcap-out", out, "--duration", "6"], capture_output=True, text=True,
                         env={**os.environ, **(env or {})})
    assert run.returncode == 0, run.stderr
    with open(out, "rb") as f:
        return [bytes(buf) for _ts, buf in dpkt.pcap.Reader(f)]


def test_a_broken_lowering_changes_the_output(capture: str, tmp_path) -> None:
    reference = sent(AES, [], "device=auto", capture, tmp_path)
    assert len(reference) == 100
    assert same_output(reference, sent(AES, [SPLIT], "device=auto", capture, tmp_path)) is None
    broken = sent(AES, [SPLIT], "device=auto", capture, tmp_path, {BREAK_ENV: "1"})
    assert same_output(reference, broken) == "frame 0 differs"


def test_a_cut_with_threads_in_every_part_sends_every_frame(capture: str, tmp_path) -> None:
    reference = sent(AES, [], "device=auto", capture, tmp_path)
    threaded = Cut(SPLIT.segment, SPLIT.rx, SPLIT.tx, rx_cores=2, cpu_cores=3, tx_cores=2)
    # Several threads in a part reorder the frames, and lose or repeat none.
    assert sorted(sent(AES, [threaded], "device=auto", capture, tmp_path)) == sorted(reference)


def place(args: list[str], cwd: str,
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``floem place ARGS`` at a low priority (its runs keep both cores busy for a minute;
    tests of stopping within a deadline run beside it)."""
    return subprocess.run(["nice", "-n", "15", sys.executable, "-m", "floem.cli", "place", *args],
                          cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def explored(app: str, define: str, capture: str, host: str, cwd: str) -> tuple[float, float]:
    """``floem explore``'s predicted packets/s of ``app`` as written, on the LiquidIO beside
    ``host``, and its spread (how far two counts differ when threads interleave)."""
    result = subprocess.run(["nice", "-n", "15", sys.executable, "-m", "floem.cli", "explore",
                             app, "-D", define, "--pcap", capture, "--nic", "liquidio",
                             "--host", host, "-o", "explored"], cwd=cwd, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    (row,) = json.load(open(os.path.join(cwd, "explored.json")))["rows"]
    assert row["nic_isa"] == "mips64", row
    return row["predicted_packets_per_s"], row["spread"] or 0.0


#: A pipeline every cut of which carries every frame across (no drops, no branches).
RELAY = '''
from floem import Element, Input, Output, Segment, target
from floem.library import FRAME, FromNet, ToNet

class Touch(Element):
    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)

    def impl(self):
        self.run_c("(size_t s, uint8_t *d, void *b) = inp(); output { out(s, d, b); }")

class Relay(Segment):
    def impl(self):
        FromNet() >> Touch() >> Touch() >> ToNet()

Relay("relay", device=target.AUTO)
'''


#: A frame steered by its last byte to one of 16 branches of two elements: 3**16 ways to
#: take a part of each branch to the NIC, too many to list.
WIDE = RELAY.replace('''class Relay(Segment):
    def impl(self):
        FromNet() >> Touch() >> Touch() >> ToNet()

Relay("relay", device=target.AUTO)''', '''class Steer(Element):
    def configure(self):
        self.inp = Input(*FRAME)
        for i in range(16):
            setattr(self, f"out{i}", Output(*FRAME))

    def impl(self):
        cases = "".join(f"case d[s - 1] % 16 == {i}: out{i}(s, d, b); " for i in range(15))
        self.run_c("(size_t s, uint8_t *d, void *b) = inp(); "
                   "output switch { " + cases + "else: out15(s, d, b); }")

class Wide(Segment):
    def impl(self):
        steer, out = Steer(), ToNet()
        FromNet() >> steer
        for i in range(16):
            getattr(steer, f"out{i}") >> Touch() >> Touch() >> out

Wide("wide", device=target.AUTO)''')


def test_a_segment_too_wide_to_list_is_searched_along_packet_order(capsys, tmp_path) -> None:
    app = tmp_path / "wide.py"
    app.write_text(WIDE)
    search = _search(str(app), {}, [], [])
    assert search.along_order == ["wide"]
    _explain([search])
    # FromNet0 and Steer0, then the 16 branches in program order, then ToNet0: 35 elements
    # in a row, rx a prefix of them and tx a suffix of the rest.
    assert capsys.readouterr().out.startswith(
        f"segment wide: {len(search.found['wide'])} cuts along packet order (more than "
        f"{MAX_CUTS:,} in all), ")
    assert search.orders["wide"][:4] == ["FromNet0", "Steer0", "Touch0", "Touch1"]


@pytest.mark.slow
def test_place_searches_a_wide_segment_and_checks_its_best(capture: str, tmp_path) -> None:
    app = tmp_path / "wide.py"
    app.write_text(WIDE)
    result = place([str(app), "--pcap", capture, "--top", "2", "-o", "w"], str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert f"cuts along packet order (more than {MAX_CUTS:,} in all) of segment 'wide'" in \
        result.stdout
    placements = json.load(open(tmp_path / "w.json"))["placements"]
    assert sum(p["checked"] is True for p in placements) >= 2


@pytest.mark.slow
def test_place_catches_a_broken_lowering_as_a_compiler_bug(capture: str, tmp_path) -> None:
    app = tmp_path / "relay.py"
    app.write_text(RELAY)
    result = place([str(app), "--pcap", capture, "--top", "3", "-o", "b"], str(tmp_path),
                   {BREAK_ENV: "1"})
    assert result.returncode == 1, result.stderr
    assert "floem: compiler bug: the cut" in result.stderr
    placements = json.load(open(tmp_path / "b.json"))["placements"]
    assert any(p["checked"] is False for p in placements)
    # Only the placements with no cut queue (all on one side) can pass.
    assert all(not p["nic"] or not p["cpu"] for p in placements if p["checked"] is True)


def test_place_ranks_checks_and_writes_a_runnable_app(capture: str, tmp_path) -> None:
    result = place([AES, "-D", "device=auto", "--pcap", capture, "--nic", "liquidio",
                    "--host", "xeon-e5-2680v3", "--objective", "per-host-core", "--top", "2",
                    "-o", "aes_placed"], str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "| placement (NIC rx | CPU || NIC tx) |" in result.stdout
    placements = json.load(open(tmp_path / "aes_placed.json"))["placements"]
    best = placements[0]
    # AES on the NIC, as the paper found: no host core at all, checked with all its threads.
    assert best["cpu"] == [] and "AESEncrypt0" in best["nic"] and best["checked"] is True
    assert best["threads"]["aes"]["rx"] > 1 and best["check"].startswith("same frames")
    checked = [p for p in placements if p["checked"] is True]
    # --top 2: two placements, each run with its threads; then any that ranks first
    # uncounted once they are predicted from their own runs
    assert len(checked) >= 2
    # What it wrote is predicted from the written placement's own run: floem explore of
    # the app file it wrote predicts the same.
    assert [p for p in placements if p["written"]] == [best] and best["counted"] is True
    rate, spread = explored(str(tmp_path / "aes_placed.py"), "device=auto", capture,
                            "xeon-e5-2680v3", str(tmp_path))
    assert rate == pytest.approx(best["predicted_packets_per_s"], rel=0.05 + spread)
    assert all(p["checked"] is None for p in placements if p not in checked)
    rates = [p["per_host_core"] for p in placements if p["per_host_core"] is not None]
    assert rates == sorted(rates, reverse=True)
    for name in ("aes_placed.csv", "aes_placed.py", "aes_placed.diff"):
        assert (tmp_path / name).exists()
    elsewhere = tmp_path / "elsewhere"          # run from another directory
    elsewhere.mkdir()
    out = str(elsewhere / "out.pcap")
    run = subprocess.run([sys.executable, "-m", "floem.cli", "run",
                          str(tmp_path / "aes_placed.py"), "-D", "device=auto", "--net", "pcap",
                          "--pcap-in", capture, "--pcap-out", out, "--duration", "4"],
                         cwd=str(elsewhere), capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    with open(out, "rb") as f:
        assert len(list(dpkt.pcap.Reader(f))) == 100


@pytest.mark.slow
def test_place_refuses_a_reference_that_sends_nothing(tmp_path) -> None:
    silent = str(tmp_path / "tcp.pcap")             # AES answers UDP only
    with open(silent, "wb") as f:
        writer = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for i in range(50):
            tcp = dpkt.ip.IP(src=b"\x0a\0\0\x01", dst=b"\x0a\0\0\x02", p=6,
                             data=dpkt.tcp.TCP(sport=1000 + i, dport=80, data=bytes(64)))
            tcp.len = len(tcp)
            writer.writepkt(bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6,
                                                         data=tcp)), ts=i * 1e-6)
    result = place([AES, "-D", "device=auto", "--pcap", silent, "--top", "1", "-o", "s"],
                   str(tmp_path))
    assert result.returncode == 1
    assert "running all on the CPU (the reference): it sent no frame on this workload" in \
        result.stderr
    assert "Traceback" not in result.stderr


class _Node:
    def __init__(self, name: str, sends: bool) -> None:
        self.name, self.sends_packets = name, sends


class _IR:
    def nodes(self) -> list[_Node]:
        return [_Node("parse", False), _Node("error_reply", True), _Node("reply", True)]


def test_each_part_is_charged_only_the_frames_it_sends() -> None:
    from floem.place.search import Figures
    figures = Figures({}, {}, {}, {("parse", "error_reply"): 0.02, ("parse", "reply"): 0.98,
                                   ("reply", "x"): 1.0}, received=1.0, replies=1.5)
    assert figures.sent(_IR(), ["parse", "error_reply"]) == pytest.approx(1.5 * 0.02)
    assert figures.sent(_IR(), ["reply"]) == pytest.approx(1.5 * 0.98)
    assert figures.sent(_IR(), ["parse"]) == 0.0


def test_the_probes_charge_the_sync_layer_managers_per_queue_entry() -> None:
    from floem.place.counts import Cost, Probe
    from floem.place.search import Figures
    search = _search(AES, {"device": "auto", "engine": "false"}, [], ["device"])
    order = search.orders["aes"]
    edges = {(a, b): 1.0 for a, b in zip(order, order[1:])}
    element = Cost(100.0)
    cpu = Probe(elements={n: (Device.CPU, element) for n in order}, edges=edges,
                received=1.0, replies=1.0)
    # two probes: 3,000 and 1,000 instructions of the managers' rounds a packet, moving 2
    # and 1 queue entries a packet: 4,000 / 3 a queue entry
    split = Probe(elements={n: (Device.NIC, element) for n in order},
                  managers=Cost(3000.0, 6.0), entries=2.0)
    rx_only = Probe(managers=Cost(1000.0, 2.0), entries=1.0)
    figures = Figures.merge(cpu, [(split, {}), (rx_only, {})])
    assert figures.managers.instructions == pytest.approx(4000 / 3)
    assert figures.managers.atomics == pytest.approx(8 / 3)
    workload = Workload("capture", 1000, 256.0)
    nic, host = load_platform("liquidio", "nic"), load_platform("xeon-e5-2680v3", "host")
    m, _, _ = measurement(search.front, None, [SPLIT], figures, workload, 1)
    record = m.machines[""]
    assert record.queue_entries == pytest.approx(2.0)   # one each way a packet
    assert record.managers is not None and record.managers.on_nic
    assert record.managers.instructions == pytest.approx(2 * 4000 / 3)
    assert predict(m, nic, host).bottleneck == "NIC managers"
    # no crossing, or no manager core: nothing to charge
    whole = Cut("aes", tuple(order))
    assert measurement(search.front, None, [whole], figures, workload, 1)[0] \
        .machines[""].managers is None
    assert measurement(search.front, None, [SPLIT], figures, workload, 0)[0] \
        .machines[""].managers is None


def test_every_thread_count_is_tried_within_the_cores() -> None:
    cut = Cut("aes", ("FromNet0",), ("ToNet0",))
    found = list(placements([[cut]], {"aes": 5}, nic_free=4, host_cores=2))
    assert sorted((c.rx_cores, c.tx_cores, c.cpu_cores) for [c] in found) == sorted(
        (rx, tx, cpu) for rx in range(1, 4) for tx in range(1, 5 - rx) for cpu in (1, 2))


def test_explain_gives_the_compilers_reason_for_a_cut_only_it_rejects(capsys) -> None:
    flowclass = os.path.join(ROOT, "examples", "nf", "flowclass.py")
    search = _search(flowclass, {"device": "auto"}, [], ["device"])
    uncompiled = sum(map(len, search.valid.values()))
    _explain([search])
    lines = capsys.readouterr().out.splitlines()
    # Cuts the rules allow but liveness rejects (a pointer read across the cut) are
    # compiled to say so: fewer valid cuts than before compiling.
    assert lines[0] == "segment flowclass: 73 cuts, 13 valid" and uncompiled > 13
    assert any("a pointer into the memory of the side it leaves" in line for line in lines)


@pytest.mark.slow
def test_the_bound_leaves_out_only_placements_that_cannot_rank(capture: str) -> None:
    search = _search(AES, {"device": "auto", "engine": "false"}, [], ["device"])
    nic, host = load_platform("liquidio", "nic"), load_platform("xeon-e5-2680v3", "host")
    workload = Workload.read(capture)
    figures = _count(AES, search, [], workload, search.probes(), nic, host,
                     Progress(3, out=io.StringIO()))
    everything = len(list(placements(list(search.valid.values()),
                                     {"aes": len(search.orders["aes"])}, nic.cores - 1, 2)))
    objective = "per-host-core"     # bounded like throughput, and ranked differently
    key = rank_key(objective)
    exact = rank(_predict(search, figures, workload, nic, host, 1, 2, objective, None, None),
                 objective)
    assert len(exact) == everything and search.pruned == 0
    bounded = rank(_predict(search, figures, workload, nic, host, 1, 2, objective, None, 3),
                   objective)
    assert search.pruned > 0 and len(bounded) + search.pruned == everything
    assert [key(p) for p in bounded[:3]] == [key(p) for p in exact[:3]]
    # the all-CPU placements are predicted whatever their rank: the baseline
    assert sum(not p.cuts[0].rx and not p.cuts[0].tx for p in bounded) == \
        sum(not p.cuts[0].rx and not p.cuts[0].tx for p in exact) == 2
    # the bound of a placement never ranks it below its prediction, nor the bound of its
    # cut whatever its threads
    free = nic.cores - 1
    for p in exact:
        bound, _, _ = measurement(search.front, None, p.cuts, figures, workload, 1)
        assert predict(bound, nic, host).packets_per_s >= p.packets_per_s
        assert threads_bound(bound, {"aes", "aes_rx", "aes_tx"}, nic, host, free, 2) >= \
            predict(bound, nic, host).packets_per_s


def test_threads_stay_within_the_cores() -> None:
    cuts = [[Cut("s"), Cut("s", ("a",)), Cut("s", ("a",), ("c",)), Cut("s", ("a", "b", "c"))]]
    found = list(placements(cuts, {"s": 3}, nic_free=3, host_cores=1))
    assert all((c.rx_cores if c.rx else 0) + (c.tx_cores if c.tx else 0) <= 3
               and (c.cpu_cores or 0) <= 1 for [c] in found)
    # all on the CPU: 1 thread; rx | cpu: 1, 2 or 3 NIC threads; rx | cpu || tx: 1 + 1,
    # 1 + 2, 2 + 1; all on the NIC: 1, 2 or 3.
    assert len(found) == 1 + 3 + 3 + 3
    assert [c.rx_cores for [c] in placements(cuts, {"s": 3}, nic_free=3, host_cores=0)] == \
        [1, 2, 3]


#: The key-value store cut as the paper's split design: the NIC parses, builds SET records
#: and answers what it can; the host keeps the store; the NIC writes the replies.
KVS_SPLIT = Cut("kvs", ("FromNet0", "SplitRequests0", "ParseRequest0", "HashKey0", "Classify0",
                        "MakeRecord0", "MakeRecord1", "NetFree0", "Respond4", "ToNet4"),
                ("Respond0", "ToNet0", "Respond1", "ToNet1", "Respond2", "ToNet2", "Respond3",
                 "ToNet3"))


@pytest.mark.slow
def test_the_key_value_store_cut_as_the_paper_split_it_answers_the_same(tmp_path) -> None:
    capture = str(tmp_path / "kvs.pcap")
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "kvs", "load.py"), "--pcap",
                    capture, "--keys", "500", "--requests", "3000"], check=True,
                   capture_output=True)
    kvs = os.path.join(ROOT, "examples", "kvs", "kvs.py")
    reference = sent(kvs, [], "design=auto", capture, tmp_path)
    assert len(reference) == 3500
    assert same_output(reference, sent(kvs, [KVS_SPLIT], "design=auto", capture, tmp_path)) \
        is None


ECHO = os.path.join(ROOT, "examples", "echo", "echo.py")


def test_a_parameter_with_choices_is_sized_and_the_winner_written_as_its_default(
        capture: str, tmp_path) -> None:
    # The echo has no AUTO segment; its device parameter has choices: each is a placement,
    # counted as written. Per host core, the NIC's echo (no host core at all) wins.
    result = place([ECHO, "--pcap", capture, "--nic", "liquidio", "--host", "xeon-e5-2680v3",
                    "--objective", "per-host-core", "-o", "sized"], str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "2 configurations of device" in result.stdout
    placements = json.load(open(tmp_path / "sized.json"))["placements"]
    assert [p["parameters"] for p in placements] == [{"device": "nic"}, {"device": "cpu"}]
    assert placements[0]["nic"] == placements[1]["cpu"] != []
    assert all(p["checked"] is None and p["check"] == "nothing cut" for p in placements)
    assert "floem.defaults(device='nic')" in open(tmp_path / "sized.py").read()
    listed = subprocess.run([sys.executable, "-m", "floem.cli", "params",
                             str(tmp_path / "sized.py")], capture_output=True, text=True)
    assert listed.stdout.splitlines()[1].split()[:3] == ["device", "str", "nic"]


#: The echo with a parameter one of whose choices does not compile.
BROKEN_CHOICE = '''
from floem import Element, Segment, param
from floem.library import FRAME, FromNet, ToNet

width = param("width", 1, choices=[1, 2])


class Pass(Element):
    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)

    def impl(self):
        self.run_c("(size_t size, uint8_t *data, void *buf) = inp(); (void)%s;"
                   "output { out(size, data, buf); }" % ("0" if width == 1 else "undeclared()"))


class relay(Segment):
    def impl(self):
        FromNet() >> Pass() >> ToNet()


relay("relay")
'''.replace("from floem import Element", "from floem import Element, Input, Output")


def test_a_configuration_that_fails_as_written_is_a_failed_row(capture: str, tmp_path) -> None:
    app = tmp_path / "relay.py"
    app.write_text(BROKEN_CHOICE)
    result = place([str(app), "--pcap", capture, "--nic", "liquidio", "--host",
                    "xeon-e5-2680v3", "-o", "sized"], str(tmp_path))
    assert result.returncode == 0, result.stderr
    placements = json.load(open(tmp_path / "sized.json"))["placements"]
    assert [p["parameters"] for p in placements] == [{"width": "1"}, {"width": "2"}]
    assert placements[0]["error"] is None and placements[0]["predicted_packets_per_s"] > 0
    assert placements[1]["error"].startswith("failed: ") and "undeclared" in placements[1]["error"]
    assert placements[1]["predicted_packets_per_s"] is None
    assert "| width=2 | as written | - (failed: " in result.stdout
    assert "floem.defaults(width=1)" in open(tmp_path / "sized.py").read()


def test_nothing_to_place_is_an_error(capture: str, tmp_path) -> None:
    result = place([ECHO, "-D", "device=cpu", "--pcap", capture], str(tmp_path))
    assert result.returncode == 1
    assert "nothing to place: no target.AUTO segment" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_the_key_value_store_cache_is_sized(tmp_path) -> None:
    # 2,000 keys: 4,096 buckets of 5 entries hold them all, 16 buckets a few; more hits
    # leave the host less to do.
    result = place([os.path.join(ROOT, "examples", "kvs", "kvs.py"), "-D", "design=cache-wb",
                    "-D", "buckets=16,4096", "-D", "entries=5", "--workload",
                    f"{sys.executable} {os.path.join(ROOT, 'examples', 'kvs', 'load.py')} "
                    "--pcap {pcap} --keys 2000 --requests 3000", "--nic", "liquidio",
                    "--host", "xeon-e5-2680v3", "--objective", "per-host-core", "-o", "kvs"],
                   str(tmp_path))
    assert result.returncode == 0, result.stderr
    placements = json.load(open(tmp_path / "kvs.json"))["placements"]
    assert [p["parameters"] for p in placements] == [{"buckets": "4096"}, {"buckets": "16"}]
    text = open(tmp_path / "kvs.py").read()
    assert "floem.defaults(design='cache-wb', buckets=4096, entries=5)" in text
    check = subprocess.run([sys.executable, "-m", "floem.cli", "check", str(tmp_path / "kvs.py")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


@pytest.mark.slow
def test_place_writes_a_placement_counted_with_its_own_threads(tmp_path) -> None:
    # Flow classification on many host threads: its probes (each part on one thread) miss
    # what more threads change (contention on the sketch, each thread's own caches), so
    # the placement written is one counted with its threads, and explore agrees with it.
    capture = str(tmp_path / "flowclass.pcap")
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "nf", "load.py"),
                    "flowclass", "--size", "80", "--count", "1000", "--pcap", capture],
                   check=True, capture_output=True)
    flowclass = os.path.join(ROOT, "examples", "nf", "flowclass.py")
    result = place([flowclass, "-D", "device=auto", "--pcap", capture, "--nic", "liquidio",
                    "--host", "xeon-e5-2680v3", "--top", "1", "--max-builds", "6", "-o", "fc"],
                   str(tmp_path))
    assert result.returncode == 0, result.stderr
    placements = json.load(open(tmp_path / "fc.json"))["placements"]
    (written,) = [p for p in placements if p["written"]]
    assert written["counted"] is True
    if written is not placements[0]:
        assert "the best placement counted with its own threads" in result.stdout
    # within 5%, beyond what two counts of the same threads differ by
    rate, spread = explored(str(tmp_path / "fc.py"), "device=auto", capture, "xeon-e5-2680v3",
                            str(tmp_path))
    assert rate == pytest.approx(written["predicted_packets_per_s"], rel=0.05 + spread)


def test_a_placement_whose_counted_run_fails_is_still_checked(monkeypatch) -> None:
    # a counting failure is not the compiler's: the placement runs uncounted and is checked
    def fails(*args, **kwargs):
        raise RunFailed("the counting plugin wrote no counts for process nic")
    monkeypatch.setattr(command, "counted_run", fails)
    monkeypatch.setattr(command, "sent_frames", lambda *args: [b"a", b"b"])
    checker = command._Checker("app.py", {}, [], Workload("x.pcap", 2, 64.0),
                               load_platform("liquidio"), load_platform("this", "host"), 4,
                               None, Progress(1))
    cut = [Cut("s", ("FromNet0",), (), 1, 1, 1)]                # one thread a part
    search = type("Search", (), {"values": {}, "config": {}, "defines": []})()
    checked, note, counts = checker._checked(search, cut, [b"a", b"b"])
    assert checked is True and counts is None
    assert note == "same output; not counted: the counting plugin wrote no counts for process nic"
