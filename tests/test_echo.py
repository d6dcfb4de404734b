"""The echo example (examples/echo/echo.py) on every packet I/O backend, on the CPU and the NIC.

udp: `floem run` serves a free port in the background; real UDP datagrams from
this process (several sizes, then a burst of 200) must come back unchanged from
the echo port. pcap: a capture made with dpkt, valid frames mixed with
malformed and cut-short ones, is replayed; the output must hold exactly the
valid frames with MAC, IPv4 and UDP endpoints swapped (checksums still valid),
and the others must be counted as freed (also on the big-endian LiquidIO NIC).
dpdk (when libdpdk is installed, no hugepages): the same capture through a
net_pcap vdev, net_ring and net_null smoke runs, and net_memif between the echo
and a C client in another process.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import struct
import subprocess
import time

import dpkt
import pytest

from conftest import ROOT, floem, floem_command, wait_until
from test_net import DPDK_EAL, build, dpdk_dir_left, free_udp_port, have_dpdk

ECHO = os.path.join(ROOT, "examples", "echo", "echo.py")
DEVICES = ["cpu", "nic"]
needs_dpdk = pytest.mark.skipif(not have_dpdk(), reason="libdpdk-dev is not installed")


def report_counts(stderr: str) -> dict[str, int]:
    """The numbers of the ``floem: net BACKEND: ...`` report line."""
    line = next(ln for ln in stderr.splitlines() if ln.startswith("floem: net ") and "rx " in ln)
    fields = line.split(": ", 2)[2].split(", ")
    return {f.rsplit(" ", 1)[0]: int(f.rsplit(" ", 1)[1]) for f in fields}


REPORT = {"FLOEM_REPORT": "1"}


def on(device: str) -> list[str]:
    """The echo's command-line parameter placing its segment."""
    return ["-D", f"device={device}"]


# -- udp --------------------------------------------------------------------

def client_socket() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for option in (getattr(socket, "SO_RCVBUFFORCE", None), socket.SO_RCVBUF):
        try:
            s.setsockopt(socket.SOL_SOCKET, option, 8 << 20)
            break
        except (OSError, TypeError):
            continue
    s.bind(("127.0.0.1", 0))
    return s


def wait_until_serving(s: socket.socket, port: int, proc: subprocess.Popen) -> None:
    """Probe until the echo answers (the first run also builds it), then take the answers
    to the probes sent after the one answered first: the echo got those too."""
    deadline = time.monotonic() + 90
    s.settimeout(0.2)
    sent = 0
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        s.sendto(b"probe %d" % sent, ("127.0.0.1", port))
        sent += 1
        try:
            first, _ = s.recvfrom(4096)
            break
        except TimeoutError:
            continue
    else:
        pytest.fail("the echo never answered")
    s.settimeout(10)
    for later in range(int(first.split()[1]) + 1, sent):
        assert s.recvfrom(4096)[0] == b"probe %d" % later


def replies(s: socket.socket, count: int, timeout: float = 10) -> list[tuple[bytes, tuple]]:
    s.settimeout(timeout)
    return [s.recvfrom(4096) for _ in range(count)]


@pytest.mark.parametrize("device", DEVICES)
def test_udp_echo(device: str) -> None:
    port = free_udp_port()
    proc = subprocess.Popen(
        floem_command() + ["run", ECHO, *on(device), "--port", str(port), "--duration", "120"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **REPORT})
    try:
        with client_socket() as s:
            wait_until_serving(s, port, proc)
            for size in (0, 1, 18, 100, 512, 1400, 1472, 2006):
                request = bytes((size + i) % 256 for i in range(size))
                s.sendto(request, ("127.0.0.1", port))
                assert replies(s, 1) == [(request, ("127.0.0.1", port))]
            burst = [b"B%03d" % i + bytes((i * 7 + j) % 256 for j in range((i * 37) % 1400))
                     for i in range(200)]
            for request in burst:
                s.sendto(request, ("127.0.0.1", port))
            got = replies(s, len(burst))
            assert all(addr == ("127.0.0.1", port) for _, addr in got)
            assert sorted(data for data, _ in got) == sorted(burst)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    counts = report_counts(err)
    assert counts["rx"] == counts["tx"] >= 208
    assert counts["freed"] == counts["rx dropped"] == counts["tx dropped"] == 0


def wake_ups(pid: int) -> int:
    """Times the threads of process ``pid`` gave up their CPU to wait (voluntary context
    switches): each is a wake-up later."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/status") as f:
            total += next(int(line.split()[1]) for line in f
                          if line.startswith("voluntary_ctxt_switches:"))
    return total


def test_udp_echo_idle_sleeps_until_a_datagram() -> None:
    """An idle server waits in the kernel for its next datagram, as memcached does, rather
    than waking thousands of times a second to look (a wait lasts up to 20 ms: about 50
    wake-ups a second), and answers the datagram that ends the wait."""
    port = free_udp_port()
    proc = subprocess.Popen(floem_command() + ["run", ECHO, "--port", str(port),
                                               "--duration", "120"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        with client_socket() as s:
            wait_until_serving(s, port, proc)
            with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
                server = int(f.read().split()[0])
            time.sleep(0.5)
            before = wake_ups(server)
            time.sleep(2)
            assert wake_ups(server) - before < 500
            s.sendto(b"after a while", ("127.0.0.1", port))
            assert replies(s, 1, timeout=2) == [(b"after a while", ("127.0.0.1", port))]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


def bound_addresses(port: int) -> set[str]:
    """The local IPv4 addresses of this host's UDP sockets bound to ``port`` (/proc/net/udp,
    which prints each address as a hexadecimal number in the host's byte order)."""
    with open("/proc/net/udp") as f:
        local = [line.split()[1].split(":") for line in f.readlines()[1:]]
    return {socket.inet_ntoa(struct.pack("=I", int(address, 16)))
            for address, bound in local if int(bound, 16) == port}


@pytest.mark.parametrize("listen, address", [([], "127.0.0.1"),
                                             (["--listen", "0.0.0.0"], "0.0.0.0")])
def test_udp_serves_this_host_only_unless_told(listen: list[str], address: str) -> None:
    port = free_udp_port()
    proc = subprocess.Popen(floem_command() + ["run", ECHO, "--port", str(port), *listen,
                                               "--duration", "120"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        ready = f"floem: net udp: ready on UDP port {port} of {address}\n"
        assert any(line == ready for line in proc.stderr), "no ready line"
        assert bound_addresses(port) == {address}
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


# -- pcap -------------------------------------------------------------------

MAC_A, MAC_B = b"\x02\x00\x00\x00\x00\x0a", b"\x02\x00\x00\x00\x00\x0b"
IP_A, IP_B = socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2")


def udp_frame(payload: bytes, sport: int = 12345, opts: bytes = b"", **ip_fields) -> bytes:
    """An Ethernet/IPv4/UDP frame with correct lengths and checksums (dpkt fills in the IPv4
    length and both checksums, not the UDP length)."""
    udp = dpkt.udp.UDP(sport=sport, dport=9000, ulen=dpkt.udp.UDP_HDR_LEN + len(payload),
                       data=payload)
    ip = dpkt.ip.IP(src=IP_A, dst=IP_B, p=dpkt.ip.IP_PROTO_UDP, ttl=64, opts=opts, data=udp,
                    **ip_fields)
    if opts:
        ip.hl = 5 + len(opts) // 4
    return bytes(dpkt.ethernet.Ethernet(src=MAC_A, dst=MAC_B, type=dpkt.ethernet.ETH_TYPE_IP,
                                        data=ip))


def capture() -> tuple[list[bytes], list[bytes]]:
    """Frames to replay (valid and malformed interleaved) and the valid ones, in order."""
    valid = [udp_frame(bytes(i % 251 for i in range(n))) for n in (0, 1, 100, 1000, 1472)]
    valid.append(udp_frame(b"short") + bytes(13))                   # Ethernet padding to 60 bytes
    valid.append(udp_frame(b"with options", opts=b"\x01\x01\x01\x00"))
    tcp = dpkt.ip.IP(src=IP_A, dst=IP_B, p=dpkt.ip.IP_PROTO_TCP, data=dpkt.tcp.TCP(data=b"x" * 20))
    bad_udp_len = bytearray(udp_frame(b"y" * 100))
    bad_udp_len[38:40] = struct.pack(">H", 500)
    bad_ihl = bytearray(udp_frame(b"z" * 30))
    bad_ihl[14] = 0x44
    fragment = bytearray(udp_frame(b"a fragment"))
    fragment[20] |= 0x20                                            # more fragments
    malformed = [
        bytes(dpkt.ethernet.Ethernet(src=MAC_A, dst=MAC_B, type=dpkt.ethernet.ETH_TYPE_ARP,
                                     data=bytes(28))),
        bytes(dpkt.ethernet.Ethernet(src=MAC_A, dst=MAC_B, type=dpkt.ethernet.ETH_TYPE_IP,
                                     data=tcp)),
        udp_frame(b"cut in the UDP header")[:14 + 20 + 4],
        udp_frame(b"cut in the payload" * 10)[:-10],
        bytes(10),
        b"",
        bytes(fragment),
        bytes(dpkt.ethernet.Ethernet(src=MAC_A, dst=MAC_B, type=dpkt.ethernet.ETH_TYPE_IP6,
                                     data=bytes(48))),
        bytes(bad_udp_len),
        bytes(bad_ihl),
    ]
    frames = []
    for i in range(max(len(valid), len(malformed))):
        frames += valid[i:i + 1] + malformed[i:i + 1]
    return frames, valid


def swapped(frame: bytes) -> bytes:
    """What the echo answers: MACs, IPv4 addresses and UDP ports swapped."""
    udp = 14 + (frame[14] & 0x0f) * 4
    return (frame[6:12] + frame[0:6] + frame[12:26] + frame[30:34] + frame[26:30]
            + frame[34:udp] + frame[udp + 2:udp + 4] + frame[udp:udp + 2] + frame[udp + 4:])


def ones_sum(data: bytes) -> int:
    data += b"\0" * (len(data) % 2)
    total = sum(struct.unpack(f">{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return total


def checksums_valid(frame: bytes) -> bool:
    ihl = (frame[14] & 0x0f) * 4
    ip_len = struct.unpack_from(">H", frame, 16)[0]
    udp = frame[14 + ihl:14 + ip_len]
    pseudo = frame[26:34] + struct.pack(">HH", 17, len(udp))
    return ones_sum(frame[14:14 + ihl]) == 0xffff and ones_sum(pseudo + udp) == 0xffff


def write_capture(path: str, frames: list[bytes]) -> None:
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=65535)
        for i, frame in enumerate(frames):
            writer.writepkt(frame, ts=1_700_000_000 + i / 1000)


def read_capture(path: str) -> list[bytes]:
    with open(path, "rb") as f:
        return [bytes(frame) for _, frame in dpkt.pcap.Reader(f)]


def check_replay(result: subprocess.CompletedProcess, out: str, frames: list[bytes],
                 valid: list[bytes]) -> None:
    assert result.returncode == 0, result.stderr
    echoed = read_capture(out)
    assert echoed == [swapped(f) for f in valid]
    assert all(checksums_valid(f) for f in echoed)
    counts = report_counts(result.stderr)
    assert counts["rx"] == len(frames)
    assert counts["tx"] == len(valid)
    assert counts["freed"] == len(frames) - len(valid)


@pytest.mark.parametrize("device,nic", [
    ("cpu", "emu"), ("nic", "emu"),
    pytest.param("nic", "liquidio", marks=pytest.mark.skipif(
        shutil.which("mips64-linux-gnuabi64-gcc") is None, reason="no mips64 cross compiler")),
])
def test_pcap_replay(device: str, nic: str, tmp_path) -> None:
    """On the big-endian LiquidIO NIC too: the capture's byte order is not the host's."""
    frames, valid = capture()
    src, out = str(tmp_path / "in.pcap"), str(tmp_path / "out.pcap")
    write_capture(src, frames)
    result = floem("run", ECHO, *on(device), "--nic", nic, "--net", "pcap", "--pcap-in", src,
                   "--pcap-out", out, "--duration", "1", env=REPORT)
    check_replay(result, out, frames, valid)


def test_echo_element_never_reads_past_the_frame(tmp_path) -> None:
    """Every prefix of a valid frame, replayed under ASan: only whole frames are echoed."""
    frame = udp_frame(b"0123456789" * 3, opts=b"\x01\x01\x01\x00")
    src, out = str(tmp_path / "in.pcap"), str(tmp_path / "out.pcap")
    write_capture(src, [frame[:n] for n in range(len(frame) + 1)])
    cflags = (os.environ.get("FLOEM_CFLAGS", "")
              + " -fsanitize=address,undefined -fno-sanitize-recover=all")
    result = floem("run", ECHO, "--net", "pcap", "--pcap-in", src, "--pcap-out", out,
                   "--duration", "1", env={**REPORT, "FLOEM_CFLAGS": cflags})
    assert result.returncode == 0, result.stderr
    assert read_capture(out) == [swapped(frame)]
    assert "Sanitizer" not in result.stderr


# -- dpdk -------------------------------------------------------------------

def dpdk_run(eal: str, device: str = "cpu") -> subprocess.CompletedProcess:
    """The echo over DPDK for a second, leaving nothing under /var/run/dpdk."""
    prefix = f"echo-test-{os.getpid()}"
    result = floem("run", ECHO, *on(device), "--net", "dpdk", "--eal",
                   f"{DPDK_EAL} --file-prefix={prefix} {eal}", "--duration", "1", env=REPORT)
    assert result.returncode == 0, result.stderr
    assert not dpdk_dir_left(prefix)
    return result


@needs_dpdk
@pytest.mark.parametrize("device", DEVICES)
def test_dpdk_pcap_vdev(device: str, tmp_path) -> None:
    frames, valid = capture()
    src, out = str(tmp_path / "in.pcap"), str(tmp_path / "out.pcap")
    write_capture(src, [f for f in frames if f])        # libpcap skips empty records
    result = dpdk_run(f"--vdev=net_pcap0,rx_pcap={src},tx_pcap={out}", device)
    check_replay(result, out, [f for f in frames if f], valid)


@needs_dpdk
def test_dpdk_ring_and_null_smoke() -> None:
    counts = report_counts(dpdk_run("--vdev=net_ring0").stderr)
    assert counts["rx"] == counts["tx"] == counts["freed"] == 0
    counts = report_counts(dpdk_run("--vdev=net_null0").stderr)    # endless zeroed 64-byte frames
    assert counts["rx"] > 1000 and counts["freed"] == counts["rx"] and counts["tx"] == 0


@needs_dpdk
def test_dpdk_alone_benchmark_peer_echoes_like_the_example(tmp_path) -> None:
    """benchmarks/echo/echo_dpdk.c, the echo written on DPDK alone that the echo benchmark
    measures as the ceiling, does the example's work: from the same capture, the same
    frames back, the malformed ones dropped."""
    spec = importlib.util.spec_from_file_location(
        "echo_bench", os.path.join(ROOT, "benchmarks", "echo", "run.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    gen = str(tmp_path / "echo")
    assert floem("build", ECHO, "--net", "dpdk", "-o", gen).returncode == 0
    exe = bench.make_echo_dpdk(str(tmp_path), gen)
    frames, valid = capture()
    frames = [f for f in frames if f]                   # libpcap skips empty records
    src, out = str(tmp_path / "in.pcap"), str(tmp_path / "out.pcap")
    write_capture(src, frames)
    runtime_dir_existed = os.path.exists("/var/run/dpdk")
    p = subprocess.Popen([exe, *DPDK_EAL.split(), "--no-shconf", "--no-telemetry",
                          "--file-prefix=echo-dpdk-peer",
                          f"--vdev=net_pcap0,rx_pcap={src},tx_pcap={out}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in p.stderr:            # EAL's notices, then the program's start
            lines.append(line)
            if line.startswith("echo_dpdk: port 0 started"):
                break
        # the valid frames echoed (the capture is written through after every burst)
        echoed = dpkt.pcap.FileHdr.__hdr_len__ + sum(dpkt.pcap.PktHdr.__hdr_len__ + len(f)
                                                     for f in valid)
        wait_until(lambda: os.path.exists(out) and os.path.getsize(out) >= echoed,
                   "every valid frame echoed", p)
        p.send_signal(signal.SIGINT)
        err = "".join(lines) + p.stderr.read()
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        bench.clean_runtime_dir("echo-dpdk-peer", runtime_dir_existed)
    assert p.returncode == 0, err
    assert (f"echo_dpdk: rx {len(frames)}, tx {len(valid)}, "
            f"dropped {len(frames) - len(valid)}, unsent 0") in err
    assert read_capture(out) == [swapped(f) for f in valid]


@needs_dpdk
def test_dpdk_memif_between_processes(tmp_path) -> None:
    client = build(tmp_path, "test_net_dpdk", "dpdk")
    sock = str(tmp_path / "memif.sock")
    memif = f"--vdev=net_memif0,role=server,socket={sock}"
    server = subprocess.Popen(
        floem_command() + ["run", ECHO, "--net", "dpdk", "--duration", "120", "--eal",
                           f"{DPDK_EAL} --file-prefix=echo {memif}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **REPORT})
    try:
        env = {**os.environ, "FLOEM_DPDK_EAL":
               f"{DPDK_EAL} --file-prefix=client --vdev=net_memif0,role=client,socket={sock}"}
        deadline = time.monotonic() + 90
        while True:         # the client's port starts once the server listens
            assert server.poll() is None, server.communicate()
            result = subprocess.run([client, "client", "300"], capture_output=True, text=True,
                                    timeout=60, env=env)
            if result.returncode == 0 or time.monotonic() > deadline:
                break
            # not yet: the port did not start, or (seen once on a loaded machine) the memif
            # driver's probe failed; anything else is a failure
            assert "rte_eth_dev_start" in result.stderr or "rte_pmd_memif_probe" in result.stderr, \
                result.stderr
            time.sleep(0.3)
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
    assert result.returncode == 0, result.stderr + err
    assert result.stdout.startswith("ok: ")
    assert server.returncode == 0, err
    assert report_counts(err)["tx"] >= 300
    assert not os.path.exists("/var/run/dpdk/echo") and not os.path.exists("/var/run/dpdk/client")
