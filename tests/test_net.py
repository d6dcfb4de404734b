"""The packet I/O runtime (runtime/src/net*.c) tested from C: runtime/tests/test_net_*.c.

pcap (libpcap): captures of both byte orders and both timestamp precisions and pcapng,
oversized and cut-short records, replays repeated (FLOEM_PCAP_LOOP) and endless, the
output capture byte for byte, and files refused (not a capture, another link type). udp:
the frames synthesised around real datagrams (every header field, both checksums)
and replies to the sender, on one and on several SO_REUSEPORT queues; frames made before
a datagram leaving in order. tcp: streams framed into messages, replies in request order,
bounded memory for a slow reader, connections over several threads. dpdk (when
libdpdk is installed): a net_ring port looping frames back on one and several
queues, no hugepages, nothing left under /var/run/dpdk. Each runs optimised and
under ASan+UBSan (dpdk: optimised only); threads sharing udp queues run under TSan.
Then the elements in a program: NetAlloc/ToNet/NetFree outside a receive burst,
FromNet's parameter check, and `floem run --net pcap` replaying pcapng like its pcap
twin, repeated (--pcap-loop), paced by the capture's timestamps (--pcap-timing), and
refusing a capture of another link type. (The echo example's tests are in test_echo.py.)
"""
from __future__ import annotations

import io
import os
import shutil
import socket
import struct
import subprocess

import dpkt
import pytest

from conftest import ROOT, floem
from floem.builder import _pcap_libs
from floem.errors import FloemError
from floem.platforms import Platform

RUNTIME = os.path.join(ROOT, "runtime")
BACKEND_SOURCES = sorted(os.path.join(RUNTIME, "src", f)
                         for f in os.listdir(os.path.join(RUNTIME, "src"))
                         if f.startswith("net") and f.endswith(".c"))
# The backends, and the thread runtime they report blocked time to.
NET_SOURCES = BACKEND_SOURCES + [os.path.join(RUNTIME, "src", f)
                                 for f in ("threads.c", "shared.c", "count.c")]
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-pthread",
          "-I" + os.path.join(RUNTIME, "include")]
SANITIZERS = {"address,undefined": ["-O1", "-fsanitize=address,undefined",
                                    "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"],
              "thread": ["-O1", "-fsanitize=thread"],
              "none": ["-O2"]}
DPDK_EAL = "--no-huge --no-pci -m 256"
BUFFER_BYTES = 2048


def have_dpdk() -> bool:
    """True when libdpdk's development files and pkg-config are installed."""
    return shutil.which("pkg-config") is not None and subprocess.run(
        ["pkg-config", "--exists", "libdpdk"]).returncode == 0


def dpdk_dir_left(prefix: str) -> bool:
    """Whether a DPDK run with EAL file prefix ``prefix`` left EAL's runtime directory
    behind: its own under /var/run/dpdk, or that parent empty (the runtime removes both; a
    run of another test file may hold the parent meanwhile, with its own directory in it)."""
    parent = "/var/run/dpdk"
    return os.path.exists(os.path.join(parent, prefix)) or (os.path.isdir(parent)
                                                            and not os.listdir(parent))


def pkg_config(*args: str) -> list[str]:
    return subprocess.run(["pkg-config", *args, "libdpdk"], capture_output=True, text=True,
                          check=True).stdout.split()


def build(tmp_path, program: str, backend: str, sanitizer: str = "none") -> str:
    """Compile runtime/tests/PROGRAM.c with the network runtime for ``backend``."""
    exe = str(tmp_path / f"{program}-{sanitizer.replace(',', '-')}")
    dpdk = backend == "dpdk"
    cmd = [os.environ.get("CC", "gcc"), *CFLAGS, *SANITIZERS[sanitizer],
           f"-DFLOEM_NET_{backend.upper()}", *(pkg_config("--cflags") if dpdk else []),
           os.path.join(RUNTIME, "tests", program + ".c"), *NET_SOURCES, "-o", exe,
           *(pkg_config("--libs") if dpdk else []), *(["-lpcap"] if backend == "pcap" else [])]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return exe


def run(exe: str, *args: str, env: dict[str, str], status: int = 0) -> subprocess.CompletedProcess:
    result = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "UBSAN_OPTIONS": "halt_on_error=1", **env})
    assert result.returncode == status, result.stdout + result.stderr
    assert "Sanitizer" not in result.stderr, result.stderr
    return result


# -- pcap -------------------------------------------------------------------

def write_pcap(path, frames: list[bytes], big_endian: bool = False, nanoseconds: bool = False,
               cut: int = 0, linktype: int = 1) -> None:
    """A classic pcap file, written byte by byte (both byte orders); ``cut`` drops that
    many bytes from its end."""
    order = ">" if big_endian else "<"
    magic = 0xa1b23c4d if nanoseconds else 0xa1b2c3d4
    data = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 65535, linktype)
    for i, frame in enumerate(frames):
        data += struct.pack(order + "IIII", 1_700_000_000 + i, i * 10, len(frame), len(frame) + 4)
        data += frame
    with open(path, "wb") as f:
        f.write(data[:len(data) - cut] if cut else data)


def write_pcapng(path, frames: list[bytes], cut: int = 0, linktype: int = 1,
                 gap: float = 1.0) -> None:
    """A pcapng file written by dpkt (one interface), a record every ``gap`` seconds;
    ``cut`` drops that many bytes from its end."""
    buffer = io.BytesIO()
    writer = dpkt.pcapng.Writer(buffer, snaplen=65535, linktype=linktype)
    for i, frame in enumerate(frames):
        writer.writepkt(frame, ts=1_700_000_000 + i * gap)
    data = buffer.getvalue()
    with open(path, "wb") as f:
        f.write(data[:len(data) - cut] if cut else data)


def write_dpkt_pcap(path, frames: list[bytes], gap: float = 1.0, nano: bool = False,
                    linktype: int = 1) -> None:
    """A classic pcap file written by dpkt, a record every ``gap`` seconds."""
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=65535, linktype=linktype, nano=nano)
        for i, frame in enumerate(frames):
            writer.writepkt(frame, ts=1_700_000_000 + i * gap)


def read_pcap(path) -> tuple[bytes, list[bytes]]:
    """The raw 24-byte header and the frames of a little-endian capture (what we write)."""
    with open(path, "rb") as f:
        data = f.read()
    header, offset, frames = data[:24], 24, []
    while offset < len(data):
        _sec, _usec, caplen, origlen = struct.unpack_from("<IIII", data, offset)
        assert caplen == origlen
        frames.append(data[offset + 16:offset + 16 + caplen])
        offset += 16 + caplen
    assert offset == len(data)
    return header, frames


def read_times(path) -> list[float]:
    """The timestamps (seconds) of a capture's records, read by dpkt."""
    with open(path, "rb") as f:
        return [float(ts) for ts, _ in dpkt.pcap.Reader(f)]


FRAMES = [bytes((n * 7 + i) % 256 for i in range(n)) for n in (60, 14, 1514, 0, 2048, 100)]
OVERSIZED = bytes(BUFFER_BYTES + 1)
CAPTURES = {
    "pcap": lambda path, frames, cut=0: write_pcap(path, frames, cut=cut),
    "pcap-big-endian": lambda path, frames, cut=0: write_pcap(path, frames, True, cut=cut),
    "pcap-nanoseconds": lambda path, frames, cut=0: write_pcap(path, frames, nanoseconds=True,
                                                               cut=cut),
    "pcapng": lambda path, frames, cut=0: write_pcapng(path, frames, cut=cut),
}
PCAP_HEADER = struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)


@pytest.fixture(scope="module", params=["address,undefined", "none"])
def pcap_exe(request, tmp_path_factory) -> str:
    return build(tmp_path_factory.mktemp("pcap"), "test_net_pcap", "pcap", request.param)


@pytest.mark.parametrize("kind", CAPTURES)
def test_pcap_replay(pcap_exe: str, tmp_path, kind: str) -> None:
    src, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    CAPTURES[kind](src, FRAMES[:3] + [OVERSIZED] + FRAMES[3:])
    result = run(pcap_exe, env={"FLOEM_PCAP_IN": str(src), "FLOEM_PCAP_OUT": str(out)})
    lines = result.stdout.splitlines()
    assert lines[:len(FRAMES)] == [f"frame {i} {len(f)} {f[0] if f else -1}"
                                   for i, f in enumerate(FRAMES)]
    assert lines[len(FRAMES)].startswith("ok: ")
    assert lines[-1] == f"rx {len(FRAMES)} tx {len(FRAMES)} rx_dropped 1"
    header, frames = read_pcap(out)
    assert header == PCAP_HEADER
    assert frames == FRAMES


def test_pcap_loop_replays_the_capture_again(pcap_exe: str, tmp_path) -> None:
    """FLOEM_PCAP_LOOP=3: every frame three times, in file order, each drop three times."""
    src, out = tmp_path / "in.pcapng", tmp_path / "out.pcap"
    write_pcapng(src, FRAMES[:2] + [OVERSIZED] + FRAMES[2:])
    result = run(pcap_exe, env={"FLOEM_PCAP_IN": str(src), "FLOEM_PCAP_OUT": str(out),
                                "FLOEM_PCAP_LOOP": "3"})
    n = 3 * len(FRAMES)
    assert result.stdout.splitlines()[-1] == f"rx {n} tx {n} rx_dropped 3"
    assert read_pcap(out)[1] == FRAMES * 3


def test_pcap_loop_zero_is_endless(pcap_exe: str, tmp_path) -> None:
    src, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    write_pcap(src, FRAMES[:3])
    result = run(pcap_exe, "take", "10", env={"FLOEM_PCAP_IN": str(src),
                                              "FLOEM_PCAP_OUT": str(out), "FLOEM_PCAP_LOOP": "0"})
    assert result.stdout.splitlines()[-1] == "rx 10 tx 10 rx_dropped 0"
    assert read_pcap(out)[1] == (FRAMES[:3] * 4)[:10]


def test_pcap_endless_replay_of_nothing_ends(pcap_exe: str, tmp_path) -> None:
    """A capture with no record does not make an endless replay spin: it ends."""
    src = tmp_path / "in.pcap"
    write_pcap(src, [])
    result = run(pcap_exe, env={"FLOEM_PCAP_IN": str(src), "FLOEM_PCAP_LOOP": "0"})
    assert result.stdout.splitlines()[-1] == "rx 0 tx 0 rx_dropped 0"


def test_pcap_frame_end_is_guarded(tmp_path) -> None:
    """Under AddressSanitizer the bytes after a frame are unaddressable (buffers are larger)."""
    exe = build(tmp_path, "test_net_pcap", "pcap", "address,undefined")
    src = tmp_path / "in.pcap"
    write_pcap(src, [bytes(60)])
    result = subprocess.run([exe, "read-past-end"], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "FLOEM_PCAP_IN": str(src)})
    assert result.returncode != 0 and "AddressSanitizer" in result.stderr, result.stdout


@pytest.mark.parametrize("kind", ["pcap", "pcapng"])
def test_pcap_cut_short(pcap_exe: str, tmp_path, kind: str) -> None:
    """A record cut short by the end of the file is told, counted as a drop, and ends the
    replay; the records before it are delivered."""
    src, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    CAPTURES[kind](src, FRAMES[:3], cut=10)
    result = run(pcap_exe, env={"FLOEM_PCAP_IN": str(src), "FLOEM_PCAP_OUT": str(out)})
    assert result.stdout.splitlines()[-1] == "rx 2 tx 2 rx_dropped 1"
    assert f"floem: net pcap: {src}: truncated" in result.stderr
    assert read_pcap(out)[1] == FRAMES[:2]


def test_pcap_no_input_and_no_output(pcap_exe: str) -> None:
    result = run(pcap_exe, env={"FLOEM_PCAP_IN": "", "FLOEM_PCAP_OUT": ""})
    assert result.stdout.splitlines()[-1] == "rx 0 tx 0 rx_dropped 0"


def raw_pcapng(path) -> None:
    write_pcapng(path, [bytes(20)], linktype=101)


@pytest.mark.parametrize("write,message", [
    (lambda p: p.write_bytes(b"not a capture at all, no"),
     "cannot read {src}: unknown file format"),
    (lambda p: p.write_bytes(b""), "cannot read {src}: truncated dump file"),
    (lambda p: p.write_bytes(b"\x0a\x0d\x0d\x0a" + bytes(20)),
     "cannot read {src}: unknown file format"),
    (lambda p: write_pcap(p, [bytes(20)], linktype=101),
     "{src}: link type RAW (Raw IP), not Ethernet"),
    (raw_pcapng, "{src}: link type RAW (Raw IP), not Ethernet"),
    (lambda p: write_pcap(p, [bytes(20)], linktype=147),
     "{src}: link type 147, not Ethernet"),
    (lambda p: None, "cannot read {src}: No such file or directory"),
], ids=["not-a-capture", "empty", "bad-pcapng", "raw", "raw-pcapng", "unnamed-link-type",
        "missing"])
def test_pcap_bad_input(pcap_exe: str, tmp_path, write, message: str) -> None:
    src = tmp_path / "bad.pcap"
    write(src)
    result = run(pcap_exe, env={"FLOEM_PCAP_IN": str(src)}, status=1)
    assert f"floem: net pcap: {message.format(src=src)}" in result.stderr


@pytest.mark.parametrize("name,value", [("FLOEM_PCAP_LOOP", "x"), ("FLOEM_PCAP_LOOP", "-1"),
                                        ("FLOEM_PCAP_TIMING", "0"), ("FLOEM_PCAP_TIMING", "nan"),
                                        ("FLOEM_PCAP_TIMING", "2x")])
def test_pcap_bad_settings(pcap_exe: str, tmp_path, name: str, value: str) -> None:
    src = tmp_path / "in.pcap"
    write_pcap(src, FRAMES[:1])
    result = run(pcap_exe, env={"FLOEM_PCAP_IN": str(src), name: value}, status=1)
    assert f"floem: net pcap: {name}={value}: need " in result.stderr


# -- udp --------------------------------------------------------------------

def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("sanitizer", ["address,undefined", "none"])
@pytest.mark.parametrize("queues", [1, 3])
def test_udp_frames(tmp_path, sanitizer: str, queues: int) -> None:
    exe = build(tmp_path, "test_net_udp", "udp", sanitizer)
    result = run(exe, env={"FLOEM_NET_PORT": str(free_udp_port()),
                           "FLOEM_NET_QUEUES": str(queues), "FLOEM_REPORT": "1"})
    assert result.stdout.startswith("ok: ") and result.stdout.rstrip().endswith(f"{queues} queues")
    assert (f"floem: net udp: queues {queues}, rx 9, tx 8, rx dropped 0, tx dropped 3"
            in result.stderr)


@pytest.mark.parametrize("queues", [1, 2])
def test_udp_threads_share_queues(tmp_path, queues: int) -> None:
    exe = build(tmp_path, "test_net_udp", "udp", "thread")
    result = run(exe, "threads", env={"FLOEM_NET_PORT": str(free_udp_port()),
                                      "FLOEM_NET_QUEUES": str(queues),
                                      "TSAN_OPTIONS": "halt_on_error=1"})
    assert result.stdout.startswith("ok: ") and f"{queues} queues, 4 threads" in result.stdout


def test_udp_port_in_use(tmp_path) -> None:
    exe = build(tmp_path, "test_net_udp", "udp")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("0.0.0.0", 0))
        port = s.getsockname()[1]
        result = run(exe, env={"FLOEM_NET_PORT": str(port)}, status=1)
    assert (f"floem: net udp: cannot serve UDP port {port} of 127.0.0.1: Address already in use"
            in result.stderr)


@pytest.mark.parametrize("sanitizer", ["address,undefined", "thread"])
def test_udp_frames_made_before_a_datagram_leave_in_order(tmp_path, sanitizer: str) -> None:
    exe = build(tmp_path, "test_net_udp", "udp", sanitizer)
    result = run(exe, "order", env={"FLOEM_NET_PORT": str(free_udp_port()),
                                    "TSAN_OPTIONS": "halt_on_error=1"})
    assert result.stdout.startswith("ok: ") and "50 datagrams answered in order" in result.stdout


# -- tcp --------------------------------------------------------------------

def free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("sanitizer", ["address,undefined", "none"])
def test_tcp_messages(tmp_path, sanitizer: str) -> None:
    """Messages of every size (cut beyond a frame), byte by byte and pipelined, their
    synthesised headers, replies in request order answered out of order, closing, refusing,
    resets (runtime/tests/test_net_tcp.c)."""
    exe = build(tmp_path, "test_net_tcp", "tcp", sanitizer)
    result = run(exe, env={"FLOEM_NET_PORT": str(free_tcp_port())})
    assert result.stdout.startswith("ok: ")
    assert "accepted 6, closed 5," in result.stderr and "closed by the framer 1" in result.stderr


def test_tcp_client_reading_slowly(tmp_path) -> None:
    """A client that does not read its replies: the transport stops reading it (bounded
    memory) and drops nothing."""
    exe = build(tmp_path, "test_net_tcp", "tcp", "address,undefined")
    result = run(exe, "slow", env={"FLOEM_NET_PORT": str(free_tcp_port())})
    read_early = int(result.stdout.split(", ")[1].split(" of ")[0])
    assert read_early < 200, result.stdout        # of 800: the rest waited for the client
    assert "replies dropped 0" in result.stderr and "tx 800," in result.stderr


@pytest.mark.parametrize("queues", [1, 2])
def test_tcp_threads_share_connections(tmp_path, queues: int) -> None:
    exe = build(tmp_path, "test_net_tcp", "tcp", "thread")
    result = run(exe, "threads", env={"FLOEM_NET_PORT": str(free_tcp_port()),
                                      "FLOEM_NET_QUEUES": str(queues),
                                      "TSAN_OPTIONS": "halt_on_error=1"})
    assert result.stdout.startswith("ok: ") and f"{queues} queues, 4 threads" in result.stdout


def test_tcp_port_in_use(tmp_path) -> None:
    exe = build(tmp_path, "test_net_tcp", "tcp")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        result = run(exe, env={"FLOEM_NET_PORT": str(port)}, status=1)
    assert (f"floem: net tcp: cannot serve TCP port {port} of 127.0.0.1: Address already in use"
            in result.stderr)


# -- dpdk -------------------------------------------------------------------

@pytest.mark.skipif(not have_dpdk(), reason="libdpdk-dev is not installed")
@pytest.mark.parametrize("queues", [1, 3])
def test_dpdk_ring_loop(tmp_path, queues: int) -> None:
    prefix = f"net-test-{os.getpid()}"
    exe = build(tmp_path, "test_net_dpdk", "dpdk")
    result = run(exe, "loop", env={"FLOEM_DPDK_EAL": f"{DPDK_EAL} --file-prefix={prefix} "
                                                     "--vdev=net_ring0",
                                   "FLOEM_NET_QUEUES": str(queues), "FLOEM_REPORT": "1"})
    assert result.stdout.startswith("ok: ") and result.stdout.rstrip().endswith(f"{queues} queues")
    # per queue: 40 frames, 8 sent and sent back within a burst, 12 sent and 12 sent back in
    # the order sent (two given back, two more allocated)
    n = (40 + 16 + 24) * queues
    assert (f"floem: net dpdk: queues {queues}, rx {n}, tx {n + 1}, rx dropped 1, "
            f"tx dropped 2" in result.stderr)      # the chained mbuf: sent, dropped received
    assert "port 0 (net_ring0)" in result.stderr
    assert not dpdk_dir_left(prefix)


@pytest.mark.skipif(not have_dpdk(), reason="libdpdk-dev is not installed")
def test_dpdk_bad_arguments(tmp_path) -> None:
    exe = build(tmp_path, "test_net_dpdk", "dpdk")
    result = run(exe, "loop", env={"FLOEM_DPDK_EAL": f"{DPDK_EAL} --no-such-option"}, status=1)
    assert "floem: net dpdk: rte_eal_init failed" in result.stderr
    assert result.stdout == ""      # EAL's usage text goes to stderr, not the program's stdout
    result = run(exe, "loop", env={"FLOEM_DPDK_EAL": DPDK_EAL}, status=1)
    assert "floem: net dpdk: no DPDK port" in result.stderr


def test_no_backend_compiles_to_nothing(tmp_path) -> None:
    """Without FLOEM_NET_*, the network sources define no symbol (every program compiles them)."""
    for source in BACKEND_SOURCES:
        obj = str(tmp_path / (os.path.basename(source) + ".o"))
        subprocess.run([os.environ.get("CC", "gcc"), *CFLAGS, "-c", source, "-o", obj], check=True)
        symbols = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
        assert symbols.strip() == "", (source, symbols)


# -- the elements -----------------------------------------------------------

GENERATOR_APP = r'''
from floem import Element, Input, Output, SizeT, Segment
from floem.library import FRAME, NetAlloc, NetFree, ToNet

class Sizes(Element):
    """Source: frame sizes 60, 61, ... for 10 frames, one huge size, then nothing."""
    def configure(self):
        self.out = Output(SizeT)
    def impl(self):
        self.run_c(r"""
            static int next;
            int k = next < 11 ? next++ : -1;
            if (k < 0)
                floem_idle = 1;
            output switch { case k == 10: out(100000); case k >= 0: out(60 + k); }
        """)

class Fill(Element):
    """Number the frame: every byte is its size modulo 256; frames of 65+ bytes are freed."""
    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)
        self.free = Output(*FRAME)
    def impl(self):
        self.run_c(r"""
            (size_t size, uint8_t *data, void *buffer) = inp();
            memset(data, (int)(size % 256), size);
            output switch { case size < 65: out(size, data, buffer); else: free(size, data, buffer); }
        """)

class Oom(Element):
    def configure(self):
        self.inp = Input()
    def impl(self):
        self.run_c('fprintf(stderr, "oom\\n");')

class gen(Segment):
    def impl(self):
        alloc = NetAlloc()
        fill = Fill()
        Sizes() >> alloc
        alloc.out >> fill
        alloc.oom >> Oom()
        fill.out >> ToNet()
        fill.free >> NetFree()

gen("gen")
'''


def test_alloc_to_net_outside_a_receive_burst(tmp_path) -> None:
    """NetAlloc frames sent by ToNet in a segment with no FromNet go out at once."""
    app, out = tmp_path / "gen.py", tmp_path / "out.pcap"
    app.write_text(GENERATOR_APP)
    result = floem("run", str(app), "--net", "pcap", "--pcap-out", str(out), "--duration", "0.5",
                   env={"FLOEM_REPORT": "1"})
    assert result.returncode == 0, result.stderr
    assert read_pcap(out)[1] == [bytes([n]) * n for n in range(60, 65)]
    assert result.stderr.splitlines().count("oom") == 1
    assert ("floem: net pcap: queues 1, rx 0, tx 5, rx dropped 0, tx dropped 0, "
            "alloc failed 1, freed 5") in result.stderr


def test_from_net_batch_is_checked(tmp_path) -> None:
    app = tmp_path / "bad.py"
    app.write_text("from floem import Segment\nfrom floem.library import FromNet, NetFree\n"
                   "class s(Segment):\n    def impl(self):\n"
                   "        FromNet(batch=0) >> NetFree()\ns('s')\n")
    result = floem("check", str(app))
    assert result.returncode == 1
    assert (f"{app}:5: error: FromNet: batch must be an integer from 1 to 1024, not 0"
            in result.stderr)


# -- floem run --net pcap ---------------------------------------------------

FORWARD_APP = r'''
from floem import Segment, include, main
from floem.library import FromNet, ToNet

class forward(Segment):
    def impl(self):
        FromNet() >> ToNet()

forward("forward")
include("#include <sched.h>")
main(r"""
    while (!floem_net_rx_done())
        sched_yield();
    floem_kill_threads();     /* returns when the thread has sent its last burst */
""")
'''
#: Frames a replay sends unchanged (the forward app sends every frame it receives).
REPLAYED = [bytes((n + i) % 256 for i in range(n)) for n in (60, 64, 1514, 98, 2048, 14)]


def forward(tmp_path, src, *options: str) -> tuple[subprocess.CompletedProcess, str]:
    """Replay ``src`` through the forward app (which stops once the capture is read);
    the run and its output capture."""
    app, out = tmp_path / "forward.py", str(tmp_path / f"{os.path.basename(src)}.out.pcap")
    app.write_text(FORWARD_APP)
    result = floem("run", str(app), "--net", "pcap", "--pcap-in", str(src), "--pcap-out", out,
                   "--timeout", "60", *options, env={"FLOEM_REPORT": "1"})
    assert result.returncode == 0, result.stderr
    return result, out


def test_run_replays_pcapng_as_its_pcap_twin(tmp_path) -> None:
    """The same frames in pcapng (dpkt) and in pcap come out of the app byte for byte the
    same, as they went in."""
    ng, classic = tmp_path / "in.pcapng", tmp_path / "in.pcap"
    write_pcapng(ng, REPLAYED)
    write_dpkt_pcap(classic, REPLAYED, nano=True)
    outputs = [read_pcap(forward(tmp_path, src)[1]) for src in (ng, classic)]
    assert outputs[0] == outputs[1] == (PCAP_HEADER, REPLAYED)


def test_run_pcap_loop(tmp_path) -> None:
    src = tmp_path / "in.pcapng"
    write_pcapng(src, REPLAYED)
    result, out = forward(tmp_path, src, "--pcap-loop", "3")
    assert read_pcap(out)[1] == REPLAYED * 3
    assert f"floem: net pcap: queues 1, rx {3 * len(REPLAYED)}, tx {3 * len(REPLAYED)}, " \
           "rx dropped 0" in result.stderr


@pytest.mark.parametrize("factor,gap", [(None, 0.25), ("2", 0.5)])
def test_run_pcap_timing_keeps_the_gaps(tmp_path, factor: str | None, gap: float) -> None:
    """Paced, no frame is sent before its time: the output capture's timestamps are at
    least the input's gaps apart (divided by the factor), less a slack for the first
    frame's own delay. Unpaced, the frames would follow each other at once."""
    src = tmp_path / "in.pcap"
    write_dpkt_pcap(src, REPLAYED[:4], gap=gap, nano=True)
    _, out = forward(tmp_path, src, *(["--pcap-timing", factor] if factor else ["--pcap-timing"]))
    paced = gap / float(factor or 1)
    times = read_times(out)
    assert len(times) == 4
    slack = paced / 2
    for i, t in enumerate(times):
        assert t - times[0] >= i * paced - slack, (i, times)


def test_run_pcap_timing_fast_delivers_everything(tmp_path) -> None:
    """Records a minute apart, replayed a million times faster, repeated: all delivered."""
    src = tmp_path / "in.pcapng"
    write_pcapng(src, REPLAYED, gap=60.0)
    _, out = forward(tmp_path, src, "--pcap-timing", "1e6", "--pcap-loop", "2")
    assert read_pcap(out)[1] == REPLAYED * 2


def test_run_refuses_another_link_type(tmp_path) -> None:
    src = tmp_path / "raw.pcap"
    write_dpkt_pcap(src, [bytes(20)], linktype=101)
    app = tmp_path / "forward.py"
    app.write_text(FORWARD_APP)
    result = floem("run", str(app), "--net", "pcap", "--pcap-in", str(src), "--timeout", "60")
    assert result.returncode == 1
    assert f"floem: net pcap: {src}: link type RAW (Raw IP), not Ethernet" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("option", [["--pcap-timing", "0"], ["--pcap-timing", "fast"],
                                    ["--pcap-loop", "-1"], ["--pcap-loop", "2.5"]])
def test_run_pcap_options_are_checked(tmp_path, option: list[str]) -> None:
    result = floem("run", str(tmp_path / "app.py"), "--net", "pcap", *option)
    assert result.returncode == 2
    assert f"argument {option[0]}: need " in result.stderr


def test_pcap_on_a_nic_platform_needs_its_libpcap() -> None:
    """Without libpcap built for the NIC's cross compiler, the build says how to get it."""
    nic = Platform("fake", "nowhere-linux-gnu-gcc", (), (), 1, "")
    with pytest.raises(FloemError, match=r"--net pcap with --nic fake needs libpcap built for "
                                         r"nowhere-linux-gnu \(bash scripts/cross_libpcap.sh\)"):
        _pcap_libs(nic)
    assert _pcap_libs(None) == ["-lpcap"]


def test_pcap_without_a_capture_for_a_receiving_program_is_refused() -> None:
    result = floem("run", "--net", "pcap", "--duration", "5",
                   os.path.join(ROOT, "examples", "echo", "echo.py"))
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.endswith("echo.py: error: --net pcap replays a capture into the "
                                  "program's FromNet: give it with --pcap-in FILE\n")
