"""Packet tracing (`floem run --trace N`, `--trace-filter`): known packets take their
expected paths through three segments and two queues, on the CPU, across the emulated NIC
and across the big-endian LiquidIO NIC under qemu; the echo's frames, traced from FromNet,
take the path their validity gives them; the filter selects on port values where packets
enter and on per-packet fields once the segment has written them; its mistakes are errors
located at --trace-filter:1; a build without --trace has no trace code.
"""
from __future__ import annotations

import os
import subprocess

import pytest

from conftest import PROGRAMS, floem
from test_echo import ECHO, capture, write_capture

from floem.api import load_app
from floem.builder import run_program
from floem.errors import FloemError
from floem.trace import read_traces, trace_report

APP = os.path.join(PROGRAMS, "trace_path.py")
#: The path of requests 1 to 6 of trace_path.py ({to} and {back}: the queues' directions).
PATHS = [
    "Source0 -> Parse0 (op=1 key=10) -> Count0, Parse0 -> Classify0 -ok-> queue requests[0] "
    "({to}) -> Lookup0 (value=-70 ratio=2.5) -> queue replies[0] ({back}) -> Reply0",
    "Source0 -> Parse0 (op=2 key=20) -> Count0, Parse0 -> Classify0 -bad-> Reject0",
    "Source0 -> Parse0 (op=0 key=30) -> Count0, Parse0 -> Classify0 -ok-> queue requests[0] "
    "({to}) -> Lookup0 (value=-210 ratio=7.5) -> queue replies[0] ({back}) -> Reply0",
    "Source0 -> Parse0 (op=1 key=40) -> Count0, Parse0 -> Classify0 -ok-> queue requests[0] "
    "({to}) -> Lookup0 [sent nothing]",
    "Source0 -> Parse0 (op=2 key=50) -> Count0, Parse0 -> Classify0 -bad-> Reject0",
    "Source0 -> Parse0 (op=0 key=60) -> Count0, Parse0 -> Classify0 -ok-> queue requests[0] "
    "({to}) -> Lookup0 (value=-420 ratio=15) -> queue replies[0] ({back}) -> Reply0",
]


def expected_stdout() -> str:
    with open(os.path.join(PROGRAMS, "trace_path.expected")) as f:
        return f.read()


def traced(*options: str) -> list[str]:
    """The trace lines `floem run trace_path.py OPTIONS` prints, after checking the run."""
    result = floem("run", "--timeout", "60", APP, *options)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected_stdout()
    return [line for line in result.stderr.splitlines() if "trace" in line or
            line.startswith("packet ")]


def packets(paths: list[str], to: str = "CPU->CPU", back: str = "CPU->CPU") -> list[str]:
    return [f"packet {k}: {p.format(to=to, back=back)}" for k, p in enumerate(paths, 1)]


@pytest.mark.parametrize("where", [[], ["-D", "device=nic", "--nic", "emu"],
                                   ["-D", "device=nic", "--nic", "liquidio"]],
                         ids=["cpu", "nic-emu", "nic-liquidio"])
def test_known_packets_take_their_expected_paths(where: list[str]) -> None:
    to, back = ("CPU->NIC", "NIC->CPU") if where else ("CPU->CPU", "CPU->CPU")
    assert traced("--trace", "6", *where) == \
        ["floem: trace: 6 packets (--trace 6)"] + packets(PATHS, to, back)


def test_the_first_n_packets_are_traced() -> None:
    assert traced("--trace", "2") == ["floem: trace: 2 packets (--trace 2)"] + packets(PATHS[:2])


def test_a_filter_on_fields_the_segment_writes_after_the_entry() -> None:
    """Parse writes op and key after Source: the filter is decided there, and the packets
    it rejects leave no trace (not even their first steps)."""
    assert traced("--trace", "6", "--trace-filter", "state->op == 2") == \
        ["floem: trace: 2 packets matching --trace-filter (--trace 6)"] + \
        packets([PATHS[1], PATHS[4]])
    assert traced("--trace", "1", "--trace-filter", "state.key >= 30 && state->op != 2",
                  "-D", "device=nic") == \
        ["floem: trace: 1 packet matching --trace-filter (--trace 1)"] + \
        packets([PATHS[2]], "CPU->NIC", "NIC->CPU")


def test_a_filter_on_the_values_a_source_sends() -> None:
    assert traced("--trace", "6", "--trace-filter", "v0 % 2 == 0 && v0 != 2") == \
        ["floem: trace: 2 packets matching --trace-filter (--trace 6)"] + \
        packets([PATHS[3], PATHS[5]])


def test_a_filter_selecting_nothing() -> None:
    assert traced("--trace", "3", "--trace-filter", "state->key > 1000") == \
        ["floem: trace: no packet matching --trace-filter entered the program"]


def test_frames_traced_from_fromnet_on_the_cpu_and_the_nic(tmp_path) -> None:
    """The echo's replay: every frame's path, in capture order, with the valid ones sent
    back and the malformed ones freed; a filter on the frame's bytes (IPv4 protocol 17)."""
    frames, valid = capture()
    src = str(tmp_path / "in.pcap")
    write_capture(src, frames)
    sent = "FromNet0 -> CheckUDP0 -out-> SwapUDP0 -> ToNet0"
    freed = "FromNet0 -> CheckUDP0 -drop-> NetFree0"
    expected = [sent if f in valid else freed for f in frames]
    for device in ("cpu", "nic"):
        result = floem("run", ECHO, "-D", f"device={device}", "--net", "pcap", "--pcap-in", src,
                       "--pcap-out", os.devnull, "--duration", "1", "--trace", "100")
        assert result.returncode == 0, result.stderr
        lines = result.stderr.splitlines()
        start = lines.index(f"floem: trace: {len(frames)} packets (--trace 100)")
        assert lines[start + 1:start + 1 + len(frames)] == \
            [f"packet {k}: {path}" for k, path in enumerate(expected, 1)]
    udp = [path for f, path in zip(frames, expected) if len(f) > 23 and f[23] == 17]
    assert 0 < len(udp) < len(frames)
    result = floem("run", ECHO, "--net", "pcap", "--pcap-in", src, "--pcap-out", os.devnull,
                   "--duration", "1", "--trace", "100", "--trace-filter", "v0 > 23 && v1[23] == 17")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    start = lines.index(f"floem: trace: {len(udp)} packets matching --trace-filter (--trace 100)")
    assert lines[start + 1:start + 1 + len(udp)] == \
        [f"packet {k}: {path}" for k, path in enumerate(udp, 1)]


def test_a_full_queue_and_its_full_port_on_the_path() -> None:
    """queue_lossy: a size-4 lossy queue takes 4 of 10 pushes (the others never come out);
    queue_full_port: the 5th and 6th push find it full and go on through its full port."""
    def paths(app: str) -> list[str]:
        result = floem("run", "--timeout", "60", os.path.join(PROGRAMS, app), "--trace", "10")
        assert result.returncode == 0, result.stderr
        return [line for line in result.stderr.splitlines() if line.startswith("packet ")]

    hop = "queue small[0] (CPU->CPU)"
    assert paths("queue_lossy.py") == \
        [f"packet {v}: push_args -> Save0 (value={v}) -> {hop} -> Load0 -> pop_return"
         for v in range(1, 5)] + \
        [f"packet {v}: push_args -> Save0 (value={v}) -> {hop} [not dequeued]"
         for v in range(5, 11)]
    assert paths("queue_full_port.py") == \
        [f"packet {v}: push_args -> Save0 (value={v} attempt={v}00) -> {hop} -> Load0 -> "
         "pop_return" for v in range(1, 5)] + \
        [f"packet {v}: push_args -> Save0 (value={v} attempt={v}00) -> {hop} -full-> Refused0 "
         "-> push_return" for v in (5, 6)]


@pytest.mark.parametrize("expression, message", [
    ("state->op ==", "C syntax error: invalid expression"),
    ("state->opcode == 1", "the per-packet state has no field 'opcode' (fields: key, op, "
                           "ratio, value)"),
    ("1; 2", "one C expression, e.g. 'state->opcode == 1', not ';'"),
    ("({ int x = 1; x; })", "one C expression, e.g. 'state->opcode == 1', not '{'"),
    ("state->op.x == 1", "C compiler: request for member 'x' in something not a structure or "
                         "union"),
])
def test_filter_mistakes_are_located_errors(expression: str, message: str) -> None:
    result = floem("run", "--timeout", "60", APP, "--trace", "1", "--trace-filter", expression)
    assert result.returncode == 1
    assert result.stderr.replace("‘", "'").replace("’", "'") == \
        f"--trace-filter:1: error: {message}\n"


def test_a_filter_that_cannot_apply_warns_and_traces_nothing() -> None:
    result = floem("run", "--timeout", "60", APP, "--trace", "3", "--trace-filter", "v1 > 0")
    assert result.returncode == 0, result.stderr
    assert f"{APP}:135: warning: --trace-filter reads v1 (port out sends 1 values), which " \
           "packets entering at 'Source0' do not have: none of the packets entering there " \
           "is traced" in result.stderr.splitlines()
    assert "floem: trace: no packet matching --trace-filter entered the program" in result.stderr


def test_the_filter_needs_trace() -> None:
    result = floem("run", APP, "--trace-filter", "v0 == 1")
    assert result.returncode == 1
    assert result.stderr == "floem: error: --trace-filter selects the packets --trace traces: " \
                            "give --trace too\n"


def test_zero_cost_when_off(tmp_path) -> None:
    """Without --trace no trace code is generated (tests/test_generated_c.py checks the
    C byte for byte against the golden files); with it the plan shows what is traced."""
    plain, traced_dir = tmp_path / "plain", tmp_path / "traced"
    assert floem("build", APP, "-o", str(plain)).returncode == 0
    result = floem("build", APP, "--trace", "-o", str(traced_dir), "--dump-after", "plan_code")
    assert result.returncode == 0, result.stderr
    for name in ("trace_path.c", "trace_path.h"):
        assert "floem_trace" not in (plain / name).read_text()
        assert "floem_trace" in (traced_dir / name).read_text()
    dump = next(f for f in os.listdir(traced_dir) if f.endswith("plan_code.txt"))
    text = (traced_dir / dump).read_text()
    assert "  channel 0 carries op, key, _floem_trace" in text
    assert "  channel 0 carries key, value, ratio, _floem_trace" in text
    assert "plan: body 7 lines; counters: runs 4, out 3; trace: enter 10, end 11, out send 12 " \
           "(op, value, ratio)" in text
    assert "plan: trace: out restore 9" in text


def test_a_traced_build_run_by_its_run_script(tmp_path) -> None:
    """FLOEM_TRACE and FLOEM_TRACE_DIR, as floem run sets them, make the processes of a
    traced build started by its own `run` script write the trace floem.trace reads."""
    out, kept = tmp_path / "out", tmp_path / "kept"
    kept.mkdir()
    assert floem("build", APP, "--trace", "-o", str(out)).returncode == 0
    run = subprocess.run([str(out / "run")], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "FLOEM_TRACE": "2", "FLOEM_TRACE_DIR": str(kept)})
    assert run.returncode == 0, run.stderr
    assert run.stdout == expected_stdout()
    assert os.listdir(kept) == ["trace_path.trace"]
    assert trace_report(read_traces(str(kept)), 2, False).splitlines() == \
        ["floem: trace: 2 packets (--trace 2)"] + packets(PATHS[:2])


def test_the_python_api_traces_into_the_run_result(tmp_path) -> None:
    program = load_app(APP, {"device": "nic"})
    result = run_program(program, timeout=60, trace=3, trace_filter="state->op != 2",
                         out_dir=str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected_stdout()
    assert result.stderr.splitlines()[-4:] == \
        ["floem: trace: 3 packets matching --trace-filter (--trace 3)"] + \
        packets([PATHS[0], PATHS[2], PATHS[3]], "CPU->NIC", "NIC->CPU")


@pytest.mark.slow
@pytest.mark.parametrize("device", ["cpu", "nic"])
@pytest.mark.parametrize("sanitizer", ["-fsanitize=address,undefined -fno-sanitize-recover=all",
                                       "-fsanitize=thread -O1"], ids=["asan-ubsan", "tsan"])
def test_traced_runs_under_sanitizers(sanitizer: str, device: str, tmp_path) -> None:
    """The threads of three segments (and the NIC's, natively) record events at once;
    packets pending their filter keep theirs aside."""
    env = {"FLOEM_CFLAGS": os.environ["FLOEM_CFLAGS"] + " " + sanitizer,
           "FLOEM_CACHE": str(tmp_path / "cache"), "TSAN_OPTIONS": "halt_on_error=1",
           "UBSAN_OPTIONS": "halt_on_error=1"}
    result = floem("run", "--timeout", "120", APP, "-D", f"device={device}", "--trace", "6",
                   "--trace-filter", "state->op != 2", env=env)
    assert result.returncode == 0, result.stderr
    assert "Sanitizer" not in result.stderr
    hops = ("CPU->NIC", "NIC->CPU") if device == "nic" else ("CPU->CPU", "CPU->CPU")
    assert [line for line in result.stderr.splitlines() if line.startswith("packet ")] == \
        packets([PATHS[0], PATHS[2], PATHS[3], PATHS[5]], *hops)


def test_the_processes_traces_merge_by_time_and_say_what_they_lost(tmp_path) -> None:
    """Two processes' files, as the runtime writes them: a packet entering the host, going
    through the NIC and back; the first events of the earliest packet come from the NIC's
    file; the NIC lost events; only the first N packets to enter are printed."""
    host = ("floem-trace 1\nprocess app\nnumber 1\nlimit 2\nadmitted 2\nlost 0\nsites 4\n"
            "admit Src port=out ports=1 to=Fill fields=-\n"
            "send Fill port=out ports=1 to=q_enq0 fields=n:signed,r:real\n"
            "enq q_enq0 queue=q channel=0 route=CPU->NIC fields=qid:unsigned\n"
            "enter Fill\n"
            "event 16777217 0 100\nevent 16777217 3 110\n"
            "event 16777217 1 120 18446744073709551615 4609434218613702656\n"
            "event 16777217 2 130 1\n"
            "event 16777218 0 900\nevent 16777218 3 910\n"
            "event 16777218 1 920 18446744073709551615 4609434218613702656\n")
    nic = ("floem-trace 1\nprocess nic\nnumber 2\nlimit 2\nadmitted 1\nlost 7\nsites 3\n"
           "restore q_save0 port=out ports=1 to=Show queue=q channel=0 route=CPU->NIC\n"
           "enter Show\n"
           "admit Rx port=out ports=2 to=Show fields=-\n"
           "event 16777217 0 200\nevent 16777217 1 210\n"
           "event 33554433 2 50\nevent 33554433 1 60\n")
    (tmp_path / "app.trace").write_text(host)
    (tmp_path / "nic.trace").write_text(nic)
    report = trace_report(read_traces(str(tmp_path)), 2, False).splitlines()
    assert report == [
        "floem: trace: 2 packets (--trace 2)",
        "packet 1: Rx -out-> Show",
        "packet 2: Src -> Fill (n=-1 r=1.5) -> queue q[0] (CPU->NIC, instance 1) -> Show",
        "floem: trace: process nic lost 7 events (its trace buffer was full): the paths above "
        "may end early"]


@pytest.mark.parametrize("site", ["leave Fill", "send Fill port=out ports=1 to=- fields=n:complex"])
def test_a_site_line_this_floem_does_not_know_is_an_error(tmp_path, site: str) -> None:
    (tmp_path / "app.trace").write_text(
        "floem-trace 1\nprocess app\nnumber 1\nlimit 2\nadmitted 0\nlost 0\nsites 1\n"
        f"{site}\n")
    with pytest.raises(FloemError, match="app.trace: a site line this floem does not know"):
        read_traces(str(tmp_path))
