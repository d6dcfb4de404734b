"""The packet I/O runtime (runtime/src/net*.c) tested from C: runtime/tests/test_net_*.c.

pcap: our reader on captures of both byte orders and both timestamp precisions,
oversized and cut-short records, and our writer's output byte for byte. udp: the
frames synthesised around real datagrams (every header field, both checksums)
and replies to the sender, on one and on several SO_REUSEPORT queues. dpdk (when
libdpdk is installed): a net_ring port looping frames back on one and several
queues, no hugepages, nothing left under /var/run/dpdk. Each runs optimised and
under ASan+UBSan (dpdk: optimised only); threads sharing udp queues run under TSan.
Then the elements in a program: NetAlloc/ToNet/NetFree outside a receive burst,
and FromNet's parameter check. (The echo example's tests are in test_echo.py.)
"""
from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess

import pytest

from conftest import ROOT, floem

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
           *(pkg_config("--libs") if dpdk else [])]
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
    """A classic pcap file; ``cut`` drops that many bytes from its end."""
    order = ">" if big_endian else "<"
    magic = 0xa1b23c4d if nanoseconds else 0xa1b2c3d4
    data = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 65535, linktype)
    for i, frame in enumerate(frames):
        data += struct.pack(order + "IIII", 1_700_000_000 + i, i * 10, len(frame), len(frame) + 4)
        data += frame
    with open(path, "wb") as f:
        f.write(data[:len(data) - cut] if cut else data)


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


FRAMES = [bytes((n * 7 + i) % 256 for i in range(n)) for n in (60, 14, 1514, 0, 2048, 100)]
OVERSIZED = bytes(BUFFER_BYTES + 1)


@pytest.fixture(scope="module", params=["address,undefined", "none"])
def pcap_exe(request, tmp_path_factory) -> str:
    return build(tmp_path_factory.mktemp("pcap"), "test_net_pcap", "pcap", request.param)


@pytest.mark.parametrize("big_endian,nanoseconds", [(False, False), (True, False), (False, True)])
def test_pcap_replay(pcap_exe: str, tmp_path, big_endian: bool, nanoseconds: bool) -> None:
    src, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    write_pcap(src, FRAMES[:3] + [OVERSIZED] + FRAMES[3:], big_endian, nanoseconds)
    result = run(pcap_exe, env={"FLOEM_PCAP_IN": str(src), "FLOEM_PCAP_OUT": str(out)})
    lines = result.stdout.splitlines()
    assert lines[:len(FRAMES)] == [f"frame {i} {len(f)} {f[0] if f else -1}"
                                   for i, f in enumerate(FRAMES)]
    assert lines[len(FRAMES)].startswith("ok: ")
    assert lines[-1] == f"rx {len(FRAMES)} tx {len(FRAMES)} rx_dropped 1"
    header, frames = read_pcap(out)
    assert header == struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)
    assert frames == FRAMES


def test_pcap_frame_end_is_guarded(tmp_path) -> None:
    """Under AddressSanitizer the bytes after a frame are unaddressable (buffers are larger)."""
    exe = build(tmp_path, "test_net_pcap", "pcap", "address,undefined")
    src = tmp_path / "in.pcap"
    write_pcap(src, [bytes(60)])
    result = subprocess.run([exe, "read-past-end"], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "FLOEM_PCAP_IN": str(src)})
    assert result.returncode != 0 and "AddressSanitizer" in result.stderr, result.stdout


def test_pcap_cut_short(pcap_exe: str, tmp_path) -> None:
    src, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    write_pcap(src, FRAMES[:3], cut=10)
    result = run(pcap_exe, env={"FLOEM_PCAP_IN": str(src), "FLOEM_PCAP_OUT": str(out)})
    assert result.stdout.splitlines()[-1] == "rx 2 tx 2 rx_dropped 1"
    assert "ends inside a record" in result.stderr
    assert read_pcap(out)[1] == FRAMES[:2]


def test_pcap_no_input_and_no_output(pcap_exe: str) -> None:
    result = run(pcap_exe, env={"FLOEM_PCAP_IN": "", "FLOEM_PCAP_OUT": ""})
    assert result.stdout.splitlines()[-1] == "rx 0 tx 0 rx_dropped 0"


@pytest.mark.parametrize("content,message", [
    (b"not a capture at all, no", "not a pcap file"),
    (struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 101), "link type 101, not Ethernet"),
    (b"\x0a\x0d\x0d\x0a" + bytes(20), "pcapng is not supported"),
])
def test_pcap_bad_input(pcap_exe: str, tmp_path, content: bytes, message: str) -> None:
    src = tmp_path / "bad.pcap"
    src.write_bytes(content)
    result = run(pcap_exe, env={"FLOEM_PCAP_IN": str(src)}, status=1)
    assert f"floem: net pcap: {src}: {message}" in result.stderr


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
    assert (f"floem: net udp: queues {queues}, rx 8, tx 8, rx dropped 1, tx dropped 2"
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
    assert f"floem: net udp: cannot serve UDP port {port}: Address already in use" in result.stderr


# -- dpdk -------------------------------------------------------------------

@pytest.mark.skipif(not have_dpdk(), reason="libdpdk-dev is not installed")
@pytest.mark.parametrize("queues", [1, 3])
def test_dpdk_ring_loop(tmp_path, queues: int) -> None:
    runtime_dir_existed = os.path.exists("/var/run/dpdk")
    exe = build(tmp_path, "test_net_dpdk", "dpdk")
    result = run(exe, "loop", env={"FLOEM_DPDK_EAL": f"{DPDK_EAL} --vdev=net_ring0",
                                   "FLOEM_NET_QUEUES": str(queues), "FLOEM_REPORT": "1"})
    assert result.stdout.startswith("ok: ") and result.stdout.rstrip().endswith(f"{queues} queues")
    n = 40 * queues
    assert (f"floem: net dpdk: queues {queues}, rx {n}, tx {n}, rx dropped 0, tx dropped 2"
            in result.stderr)
    assert "port 0 (net_ring0)" in result.stderr
    assert runtime_dir_existed or not os.path.exists("/var/run/dpdk")


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
    assert result.stderr.count("oom") == 1
    assert ("floem: net pcap: queues 1, rx 0, tx 5, rx dropped 0, tx dropped 0, "
            "alloc failed 1, freed 5") in result.stderr


def test_from_net_batch_is_checked(tmp_path) -> None:
    app = tmp_path / "bad.py"
    app.write_text("from floem import Segment\nfrom floem.library import FromNet, NetFree\n"
                   "class s(Segment):\n    def impl(self):\n"
                   "        FromNet(batch=0) >> NetFree()\ns('s')\n")
    result = floem("check", str(app))
    assert result.returncode == 1
    assert f"{app}:5: FromNet: batch must be an integer from 1 to 1024, not 0" in result.stderr
