#!/usr/bin/env python3
"""Echo over DPDK: packets/s of the generated echo and forwarder vs DPDK alone.

Usage: python3 benchmarks/echo/run.py [--rounds 5] [--duration 2] [--frames 1024] [--cpu 1]
       python3 benchmarks/echo/run.py --short     # one round of 0.2 s each: builds and runs

Every program gets the same virtual port, with no hugepages and no PCI device:
`--vdev=net_pcap0,rx_pcap=CAPTURE,infinite_rx=1`, where CAPTURE holds --frames
74-byte Ethernet/IPv4/UDP frames (../codegen_overhead/capture.py). net_pcap
loads the capture into mbufs at start and replays it forever (each receive copies
a stored frame into a fresh mbuf); without a tx_pcap/tx_iface its transmit queue
counts and frees what it is given. Programs:

  testpmd io        dpdk-testpmd --forward-mode=io: forwards mbufs, never reads a frame
  testpmd macswap   swaps the Ethernet addresses of every frame
  testpmd 5tswap    swaps MAC, IPv4 addresses and UDP ports (the echo's rewrite, no checks)
  forward           floem build forward.py --net dpdk: FromNet >> ToNet, no frame read
                    (testpmd io's like for like)
  echo              floem build examples/echo/echo.py --net dpdk, run as built
  echo -flto        the echo built with FLOEM_CFLAGS=-flto
  echo, DPDK        echo_dpdk.c: the same checks and swap in a plain DPDK loop over each
                    received mbuf array, no Floem runtime (what a DPDK programmer writes)

Targets: the forwarder at least 0.95x testpmd io, the echo at least 1.0x echo_dpdk.c.

testpmd runs io/macswap/5tswap forwarding on that one port (--port-topology=loop),
one forwarding core, the echo's burst (32), descriptors (1024/1024), mbuf count
(10240) and mempool cache (256); Floem programs run with FLOEM_DPDK_EAL and
FLOEM_REPORT=1. The forwarding thread of each runs on CPU --cpu (testpmd and echo_dpdk:
-l OTHER,CPU, the loop on the worker lcore; Floem programs: taskset -c CPU).

Each round runs every program once, each for --duration seconds from when its
forwarding thread has started, the order rotating from round to round. Packets/s =
packets transmitted (each program's own counter: testpmd's TX-packets at exit, the
`floem: net dpdk: ... tx N` report of the Floem programs, echo_dpdk's tx) divided by the
CPU time of the forwarding thread (the busiest thread but the main one, from /proc, read
just before stopping it), so start-up, the capture load and time taken by other processes
on this shared machine do not count. Prints a Markdown table of medians and ratios to
testpmd io and to echo_dpdk.c. Nothing is left in /var/run/dpdk (EAL's runtime
directories of our file prefixes are removed, and the parent when this script
created it). About 90 s with the defaults.
"""
import argparse
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "codegen_overhead"))
import capture  # noqa: E402

ECHO = os.path.join(ROOT, "examples", "echo", "echo.py")
FORWARD = os.path.join(HERE, "forward.py")
START_TIMEOUT = 60      # seconds a program may take to start forwarding
MBUFS = 10240           # the echo's pool: 1 queue * (1024 + 1024 descriptors) + 8192 spare
ECHO_DPDK_TX = re.compile(r"^echo_dpdk: rx (\d+), tx (\d+), dropped (\d+), unsent (\d+)$", re.M)
FLOEM_TX = re.compile(r"^floem: net dpdk: queues \d+, rx (\d+), tx (\d+), rx dropped (\d+), "
                      r"tx dropped (\d+), alloc failed (\d+), freed (\d+)$", re.M)
TESTPMD_TOTALS = re.compile(r"Accumulated forward statistics.*?RX-packets:\s+(\d+)\s+RX-dropped:"
                            r"\s+(\d+).*?TX-packets:\s+(\d+)\s+TX-dropped:\s+(\d+)", re.S)


def floem_command():
    found = shutil.which("floem")
    if found:
        return found
    venv = os.path.join(ROOT, ".venv", "bin", "floem")
    if os.path.exists(venv):
        return venv
    sys.exit("run.py: no `floem` on PATH (export PATH=/path/to/floem/.venv/bin:$PATH)")


def runtime_parent():
    """Where EAL makes its runtime directories (<parent>/<file prefix>)."""
    if os.geteuid() == 0:
        return "/var/run/dpdk"
    return os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")


def clean_runtime_dir(prefix, parent_existed):
    parent = runtime_parent()
    path = os.path.join(parent, prefix)
    if os.path.isdir(path):
        shutil.rmtree(path)     # ours: a file prefix only this script uses
    if not parent_existed and os.path.isdir(parent) and not os.listdir(parent):
        os.rmdir(parent)


def thread_cpu_seconds(pid):
    """CPU time (user + system) of the busiest thread of `pid` other than its main thread: the
    forwarding loop (testpmd's and echo_dpdk's worker lcore, a Floem segment thread), whose
    time does not include the start-up the main thread does."""
    tick = os.sysconf("SC_CLK_TCK")
    best = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:             # it has just ended
        return 0.0
    for tid in tids:
        if int(tid) == pid:
            continue
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        best = max(best, int(fields[11]) + int(fields[12]))    # utime, stime
    return best / tick


def measure(p, duration):
    """Let `p` forward for `duration` s, counted from when its forwarding thread has run (so a
    slow start-up on a loaded machine shortens nothing): the CPU seconds of that thread, or
    None if it ended early. Kills it if anything goes wrong here."""
    try:
        started = time.monotonic() + START_TIMEOUT
        while p.poll() is None and thread_cpu_seconds(p.pid) == 0:
            if time.monotonic() > started:
                raise RuntimeError(f"no thread forwarding after {START_TIMEOUT} s")
            time.sleep(0.01)
        deadline = time.monotonic() + duration
        while time.monotonic() < deadline:
            if p.poll() is not None:
                return None
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
        return thread_cpu_seconds(p.pid)
    except BaseException:
        p.kill()
        p.wait()
        raise


def run_until_stopped(cmd, duration, env=None):
    """Run `cmd` for `duration` s, then stop it with SIGINT: its stderr and the CPU seconds of
    its forwarding thread; exits if it failed or ended early."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cpu_s = measure(p, duration)
    if cpu_s is not None:
        p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        sys.exit(f"run.py: {' '.join(cmd)} did not stop within 60 s of SIGINT:\n{out}{err}")
    if p.returncode != 0 or cpu_s is None:
        sys.exit(f"run.py: {' '.join(cmd)} failed (status {p.returncode}):\n{out}{err}")
    return err, cpu_s


def run_floem(exe, eal, cpu, duration):
    env = dict(os.environ, FLOEM_DPDK_EAL=eal, FLOEM_REPORT="1")
    env.pop("FLOEM_SHM", None)
    err, cpu_s = run_until_stopped(["taskset", "-c", str(cpu), exe], duration, env)
    m = FLOEM_TX.search(err)
    if not m:
        sys.exit(f"run.py: {exe} printed no report:\n{err}")
    rx, tx, rx_drop, tx_drop, _, freed = map(int, m.groups())
    if tx == 0 or freed != 0 or rx != tx:
        sys.exit(f"run.py: {exe} did not send back every frame it received:\n{err}")
    return tx, cpu_s


def lcores(cpu):
    """EAL's -l for a main lcore that only waits and a worker lcore on CPU `cpu`."""
    other = 1 - cpu if cpu in (0, 1) else 0
    return ["-l", f"{other},{cpu}"]


def run_echo_dpdk(exe, eal, cpu, duration):
    err, cpu_s = run_until_stopped([exe, *eal.split(), *lcores(cpu)], duration)
    m = ECHO_DPDK_TX.search(err)
    if not m:
        sys.exit(f"run.py: {exe} printed no counts:\n{err}")
    rx, tx, dropped, unsent = map(int, m.groups())
    if tx == 0 or rx != tx or dropped or unsent:
        sys.exit(f"run.py: {exe} did not send back every frame it received:\n{err}")
    return tx, cpu_s


def run_testpmd(mode, eal, cpu, duration):
    cmd = ["dpdk-testpmd", *eal.split(), *lcores(cpu), "--",
           f"--forward-mode={mode}", "--port-topology=loop", "--nb-cores=1", "--burst=32",
           "--rxd=1024", "--txd=1024", f"--total-num-mbufs={MBUFS}", "--mbcache=256"]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    cpu_s = measure(p, duration)
    out, err = p.communicate(input="\n", timeout=60)     # "Press enter to exit"
    m = TESTPMD_TOTALS.search(out)
    if p.returncode != 0 or not m or cpu_s is None:
        sys.exit(f"run.py: testpmd failed (status {p.returncode}):\n{out}{err}")
    rx, _, tx, _ = map(int, m.groups())
    if tx == 0:
        sys.exit(f"run.py: testpmd forwarded nothing:\n{out}{err}")
    return tx, cpu_s


def compile_like(gen_dir, exe, sources, includes):
    """Compile `sources` into `exe` with the flags of the generated Makefile in `gen_dir`
    (its DPDK flags and libraries included), warnings as errors, and the runtime's headers."""
    text = open(os.path.join(gen_dir, "Makefile")).read()
    cflags = shlex.split(re.search(r"^CFLAGS = (.*)$", text, re.M).group(1))
    ldlibs = shlex.split(re.search(r"^LDLIBS = (.*)$", text, re.M).group(1))
    check_run([os.environ.get("CC", "cc"), *cflags, "-Werror",
               "-I" + os.path.join(ROOT, "runtime", "include"),
               *("-I" + d for d in includes), "-o", exe, *sources, *ldlibs])
    return exe


def make_echo_dpdk(work, gen_dir):
    """echo_dpdk.c on DPDK alone, compiled like the generated echo."""
    return compile_like(gen_dir, os.path.join(work, "echo_dpdk"),
                        [os.path.join(HERE, "echo_dpdk.c")],
                        [os.path.join(ROOT, "benchmarks", "codegen_overhead")])


def check_run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"run.py: {' '.join(map(shlex.quote, cmd))} failed (status {p.returncode}):\n"
                 f"{p.stdout}{p.stderr}")
    return p


PROGRAMS = [
    ("testpmd io", "dpdk-testpmd --forward-mode=io (no frame is read)"),
    ("testpmd macswap", "dpdk-testpmd --forward-mode=macswap (swaps MACs)"),
    ("testpmd 5tswap", "dpdk-testpmd --forward-mode=5tswap (swaps MAC, IP, ports)"),
    ("forward", "**generated forwarder** (FromNet >> ToNet, no frame read)"),
    ("echo", "**generated echo** (CheckUDP + SwapUDP)"),
    ("echo -flto", "generated echo, FLOEM_CFLAGS=-flto"),
    ("echo, DPDK", "hand-written echo, DPDK alone (echo_dpdk.c)"),
]


#: The targets: (program, peer, at least this many times the peer's packets/s).
TARGETS = (("forward", "testpmd io", 0.95), ("echo", "echo, DPDK", 1.0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=float, default=2.0, help="seconds per run")
    ap.add_argument("--frames", type=int, default=1024, help="frames in the replayed capture")
    ap.add_argument("--cpu", type=int, default=1, help="CPU of the forwarding threads")
    ap.add_argument("--short", action="store_true",
                    help="one round of 0.2 s per program: checks that everything builds and runs")
    args = ap.parse_args()
    if args.short:
        args.rounds, args.duration = 1, 0.2
    for tool in ("dpdk-testpmd", "taskset", "pkg-config", "make"):
        if shutil.which(tool) is None:
            sys.exit(f"run.py: {tool} is not installed (DPDK: Debian dpdk and dpdk-dev)")
    floem = floem_command()
    start = time.monotonic()
    parent_existed = os.path.isdir(runtime_parent())
    work = tempfile.mkdtemp(prefix="floem-echo-bench-")
    try:
        cap = os.path.join(work, "frames.pcap")
        capture.write(cap, args.frames)
        gen_dir = os.path.join(work, "echo")
        check_run([floem, "build", ECHO, "--net", "dpdk", "-o", gen_dir])
        check_run([floem, "build", ECHO, "--net", "dpdk", "-o", os.path.join(work, "echo-lto")],
                  env=dict(os.environ, FLOEM_CFLAGS="-flto"))
        check_run([floem, "build", FORWARD, "--net", "dpdk", "-o", os.path.join(work, "forward")])
        exes = {"echo": os.path.join(gen_dir, "echo"),
                "echo -flto": os.path.join(work, "echo-lto", "echo"),
                "forward": os.path.join(work, "forward", "forward"),
                "echo, DPDK": make_echo_dpdk(work, gen_dir)}
        programs = PROGRAMS
        vdev = f"--vdev=net_pcap0,rx_pcap={cap},infinite_rx=1"
        rates = {name: [] for name, _ in programs}
        for r in range(args.rounds):
            order = programs[r % len(programs):] + programs[:r % len(programs)]
            for name, _ in order:
                prefix = f"floem-bench-{re.sub(r'[^a-z0-9]+', '-', name)}-{os.getpid()}"
                eal = f"--no-huge --no-pci -m 256 --file-prefix={prefix} {vdev}"
                try:
                    if name.startswith("testpmd"):
                        packets, cpu_s = run_testpmd(
                            name.split()[1], eal + " --no-shconf --no-telemetry --log-level=notice",
                            args.cpu, args.duration)
                    elif name == "echo, DPDK":
                        packets, cpu_s = run_echo_dpdk(
                            exes[name], eal + " --no-shconf --no-telemetry --log-level=notice",
                            args.cpu, args.duration)
                    else:
                        packets, cpu_s = run_floem(exes[name], eal, args.cpu, args.duration)
                finally:
                    clean_runtime_dir(prefix, parent_existed)
                rates[name].append(packets / cpu_s / 1e6)
        print(f"Echo over DPDK: net_pcap vdev replaying {args.frames} x 74-byte UDP frames "
              f"(infinite_rx=1), transmit counted and freed; {args.rounds} rounds of "
              f"{args.duration:g} s per program, rotating order; Mpps = packets sent / CPU s of "
              f"the forwarding thread (CPU {args.cpu})\n")
        io = statistics.median(rates["testpmd io"])
        alone = statistics.median(rates["echo, DPDK"])
        print("| program | Mpps (median) | per round | vs testpmd io | vs echo on DPDK alone |")
        print("| --- | ---: | --- | ---: | ---: |")
        for name, label in programs:
            med = statistics.median(rates[name])
            print(f"| {label} | {med:.2f} | {', '.join('%.2f' % x for x in rates[name])} | "
                  f"{med / io:.2f}x | {med / alone:.2f}x |")
        for name, peer, target in TARGETS:
            ratios = [e / t for e, t in zip(rates[name], rates[peer])]
            print(f"\ngenerated {name} / {peer}: "
                  f"{statistics.median(rates[name]) / statistics.median(rates[peer]):.2f}x "
                  f"(per round: {', '.join('%.2f' % x for x in ratios)}; target at least "
                  f"{target}x)")
        print("\ntestpmd's io mode, like the forwarder, forwards mbufs without reading them; "
              "the echo checks every frame's Ethernet/IPv4/UDP headers and swaps its "
              "addresses, as echo_dpdk.c does in a plain DPDK loop.")
        dpdk = check_run(["pkg-config", "--modversion", "libdpdk"]).stdout.strip()
        print(f"({time.monotonic() - start:.0f} s; DPDK {dpdk}; load average "
              f"{os.getloadavg()[0]:.2f})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if not parent_existed and os.path.isdir(runtime_parent()) \
                and not os.listdir(runtime_parent()):
            os.rmdir(runtime_parent())


if __name__ == "__main__":
    main()
