"""The xdp packet I/O backend (runtime/src/net_xdp.c): AF_XDP sockets on one end of a veth
pair between two network namespaces the tests create (floem.netns), clients in the other
namespace reaching the program through the kernel's network stack.

The runtime from C (runtime/tests/test_net_xdp.c, optimised and under ASan+UBSan); the
echo example and the key-value store run with ``floem run --net xdp``, answering a client
while the kernel keeps answering everything else (ARP, another UDP port); an interface with
an XDP program already is refused, and ``--net xdp`` without ``--iface`` is an error. The
tests are skipped, with the reason, where the machine cannot make the veth pair (not root)
or the kernel refuses AF_XDP (the error the backend printed).
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from conftest import ROOT, floem, floem_command, wait_until
from floem.errors import FloemError
from floem.netns import VethPair, veth_pair

RUNTIME = os.path.join(ROOT, "runtime")
SOURCES = [os.path.join(RUNTIME, "src", f) for f in os.listdir(os.path.join(RUNTIME, "src"))
           if f.startswith("net") and f.endswith(".c")] + [
    os.path.join(RUNTIME, "src", f) for f in ("threads.c", "shared.c", "count.c")]
SANITIZERS = {"address,undefined": ["-O1", "-fsanitize=address,undefined",
                                    "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"],
              "none": ["-O2"]}
ECHO = os.path.join(ROOT, "examples", "echo", "echo.py")
KVS = os.path.join(ROOT, "examples", "kvs", "kvs.py")
LOAD = os.path.join(ROOT, "examples", "kvs", "load.py")
PORT = 9100
#: What the kernel says when it refuses AF_XDP (the backend's messages).
REFUSALS = ("cannot create an XSKMAP", "cannot load the XDP program",
            "cannot attach the XDP program", "cannot open an AF_XDP socket",
            "cannot register the frame buffers")

#: A client in the other namespace: datagrams of several sizes to the program's port, each
#: echoed back with the same payload; one to another port, which the kernel refuses.
ECHO_CLIENT = r'''
import socket, sys
server, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
for size in (1, 17, 100, 1000, 1472):
    payload = bytes((size + i) % 251 for i in range(size))
    for attempt in range(10):           # the first may wait for ARP
        s.sendto(payload, (server, port))
        try:
            reply, peer = s.recvfrom(2048)
            break
        except socket.timeout:
            continue
    else:
        sys.exit(f"no echo of {size} bytes")
    assert reply == payload and peer == (server, port), (size, peer)
other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
other.settimeout(2)
other.connect((server, port + 1))
other.send(b"x")
try:
    other.recv(100)
    sys.exit("port + 1 answered")
except ConnectionRefusedError:          # the kernel's ICMP port unreachable
    pass
print("echoed")
'''


@pytest.fixture
def net() -> Iterator[VethPair]:
    """A veth pair between two namespaces of this test; skipped where the machine refuses."""
    try:
        with veth_pair("xdp") as pair:
            yield pair
    except FloemError as refused:
        pytest.skip(str(refused))


def skip_if_refused(stderr: str) -> None:
    """Skip with the backend's own message when the kernel refused what AF_XDP needs."""
    for line in stderr.splitlines():
        if any(r in line for r in REFUSALS):
            pytest.skip(f"the kernel refuses AF_XDP: {line}")


def build(tmp_path, sanitizer: str) -> str:
    exe = str(tmp_path / f"test_net_xdp-{sanitizer.replace(',', '-')}")
    subprocess.run([os.environ.get("CC", "gcc"), "-std=c11", "-Wall", "-Wextra", "-Werror",
                    "-g", "-pthread", *SANITIZERS[sanitizer], "-I" + os.path.join(RUNTIME,
                                                                                  "include"),
                    "-DFLOEM_NET_XDP", os.path.join(RUNTIME, "tests", "test_net_xdp.c"),
                    *SOURCES, "-o", exe, "-lxdp", "-lbpf"], check=True, timeout=120)
    return exe


def run_in(net: VethPair, exe: str) -> subprocess.CompletedProcess:
    """The C test on the server end (the kernel's refusal: skipped)."""
    result = run_c_test(net, exe)
    skip_if_refused(result.stderr)
    return result


def run_c_test(net: VethPair, exe: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        net.in_server([exe, net.client_ns, net.server_ip]), capture_output=True, text=True,
        timeout=60, env={**os.environ, "FLOEM_XDP_IFACE": net.server_if,
                         "FLOEM_NET_PORT": str(PORT), "FLOEM_REPORT": "1",
                         "UBSAN_OPTIONS": "halt_on_error=1"})


@pytest.mark.parametrize("sanitizer", ["none", "address,undefined"])
def test_xdp_backend(net: VethPair, tmp_path, sanitizer: str) -> None:
    result = run_in(net, build(tmp_path, sanitizer))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ok: ")
    assert (f"floem: net xdp: ready on UDP port {PORT} of any address, interface "
            f"{net.server_if}") in result.stderr
    # six frames answered (three from allocated copies), one dropped: outside its buffer
    assert ("floem: net xdp: queues 1, rx 6, tx 6, rx dropped 0, tx dropped 1, alloc failed 1"
            in result.stderr)
    assert (f"floem: net xdp: interface {net.server_if}, copy mode: kernel rx dropped 0"
            in result.stderr)


def start(net: VethPair, app: str, tmp_path, *options: str) -> subprocess.Popen:
    """``floem run APP --net xdp`` on the server end, once it reads frames."""
    err = open(tmp_path / "stderr", "w+")
    proc = subprocess.Popen(net.in_server([*floem_command(), "run", app, "--net", "xdp",
                                           "--iface", net.server_if, "--port", str(PORT),
                                           *options]),
                            stdout=subprocess.DEVNULL, stderr=err, text=True)
    try:
        wait_until(lambda: "ready on UDP port" in (tmp_path / "stderr").read_text(),
                   "the program to read its AF_XDP sockets", proc, timeout=180)
    except BaseException:
        proc.kill()
        proc.wait()
        skip_if_refused((tmp_path / "stderr").read_text())
        raise
    return proc


def stop(proc: subprocess.Popen, tmp_path) -> str:
    proc.send_signal(2)
    proc.wait(timeout=60)
    return (tmp_path / "stderr").read_text()


def test_echo_over_xdp(net: VethPair, tmp_path) -> None:
    proc = start(net, ECHO, tmp_path, "--report")
    try:
        client = subprocess.run(net.in_client([sys.executable, "-c", ECHO_CLIENT,
                                               net.server_ip, str(PORT)]),
                                capture_output=True, text=True, timeout=120)
        assert client.returncode == 0 and client.stdout == "echoed\n", client.stderr
        # another program on the interface is refused while the echo holds it
        refused = run_c_test(net, build(tmp_path, "none"))
        assert refused.returncode == 1
        assert "the interface has an XDP program already" in refused.stderr
    finally:
        stderr = stop(proc, tmp_path)
    assert proc.returncode == 0, stderr
    assert "floem: net xdp: queues 1, rx " in stderr and ", rx dropped 0, tx dropped 0" in stderr


@pytest.mark.slow
def test_kvs_over_xdp(net: VethPair, tmp_path) -> None:
    """The store's cpu design, the workload generator in the other namespace checking every
    GET against the SETs it sent."""
    proc = start(net, KVS, tmp_path)
    try:
        load = subprocess.run(net.in_client([sys.executable, LOAD, "--server",
                                             f"{net.server_ip}:{PORT}", "--requests", "5000",
                                             "--keys", "500"]),
                              capture_output=True, text=True, timeout=300)
        assert load.returncode == 0, load.stdout + load.stderr
        assert "errors     0" in load.stdout and "timeouts   0" in load.stdout
    finally:
        stderr = stop(proc, tmp_path)
    assert proc.returncode == 0, stderr


def test_xdp_needs_an_interface() -> None:
    result = floem("run", ECHO, "--net", "xdp", "--duration", "1")
    assert result.returncode == 1
    assert result.stderr.endswith("echo.py: error: --net xdp reads the program's FromNet frames "
                                  "from a network interface: give it with --iface NAME\n")
