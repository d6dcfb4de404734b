"""Placement never changes meaning: random programs print the same with every segment on
the CPU as with segments placed on the NIC at random, with and without --send-all-fields
and --no-sync-layer (and packet tracing, and slicing's settings for frames), and the
all-CPU output is what the generator's model says.

Each hypothesis example is a batch of programs rendered into one app file (one build per
placement keeps the gcc time down); see docs/testing.md for what is covered, the fast and
slow modes and how to reproduce a failure.
"""
from __future__ import annotations

import dataclasses
import os
import random
import re
import shlex
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from floem.api import load_app
from floem.builder import build_program, check_program, network_environment, run_built
from floem.errors import FloemError
from floem.explore.counters import THREAD
from floem.ir import BuildOptions, Cut
from floem.launcher import TIMEOUT_STATUS
from floem.place.app_file import cut_call
from floem.place.cuts import candidates, segment_order
from floem.passes.build_graph import NIC_PROCESS

from generate import Program, batches, expected_output, render_app

#: Programs per app file (one build per placement).
BATCH = 24
#: Programs per app file whose segments are cut (every cut of each is enumerated).
AUTO_BATCH = 8
#: NIC cores the platforms leave to segment threads (one manager core).
NIC_THREADS = {"emu": 63, "liquidio": 11}
#: Movable groups on the NIC under --no-sync-layer, where each NIC thread does its own DMA.
#: With many NIC threads a result entry is lost now and then (docs/testing.md, Findings),
#: so by default one group; FLOEM_DIFF_NO_SYNC_GROUPS=0 places them all at random.
NO_SYNC_GROUPS = int(os.environ.get("FLOEM_DIFF_NO_SYNC_GROUPS", "1")) or None
RUN_TIMEOUT = {"emu": 60, "liquidio": 240}
#: Every run prints its processes' counters (queues, NIC sync shadows, DMA) on stderr, so that
#: a run that hangs shows where the missing entry stopped.
REPORT = {"FLOEM_REPORT": "1"}
#: Frames kept by their port wait this long for their way back (--slice-timeout, ms): longer
#: than any run, since main collects the programs' rows one program after the other.
SLICE_TIMEOUT_MS = 600_000


@dataclasses.dataclass(frozen=True)
class Variant:
    """One way to build a batch: the NIC platform, the segments on the NIC, the flags."""

    platform: str
    nic: tuple[str, ...]
    send_all_fields: bool = False
    sync_layer: bool = True
    nic_managers: int = 1
    trace: int = 0                  # --trace N (0: a build without tracing)
    auto: tuple[str, ...] = ()      # segments declared target.AUTO (-D auto=...)
    cuts: tuple[Cut, ...] = ()      # and how each is cut (floem.cut)
    #: Frame programs' options: the packet I/O backend (their NetAlloc) and slicing's.
    net: str | None = None
    slicing: bool = True
    slice_threshold: int | None = None
    slice_pool: int | None = None
    slice_timeout_ms: int | None = None

    def command(self, app: str) -> str:
        """The `floem run` command line that builds and runs ``app`` this way."""
        flags = ["--nic", self.platform] + (["--trace", str(self.trace)] if self.trace else [])
        flags += ["--send-all-fields"] if self.send_all_fields else []
        flags += [] if self.sync_layer else ["--no-sync-layer"]
        flags += [] if self.nic_managers == 1 else ["--nic-managers", str(self.nic_managers)]
        flags += ["--net", self.net] if self.net else []
        flags += [] if self.slicing else ["--no-slicing"]
        for flag, value in (("--slice-threshold", self.slice_threshold),
                            ("--slice-pool", self.slice_pool),
                            ("--slice-timeout", self.slice_timeout_ms)):
            flags += [flag, str(value)] if value is not None else []
        define = ["-D", "nic=" + ",".join(self.nic)] if self.nic else []
        define += ["-D", "auto=" + ",".join(self.auto)] if self.auto else []
        cuts = "".join(f"\n    {cut_call(c)}" for c in self.cuts)
        return shlex.join(["floem", "run", *flags, *define, app]) + \
            (f"\n  with the app file ending in:{cuts}" if cuts else "")

    def build_options(self) -> BuildOptions:
        """The build options."""
        options: dict[str, Any] = dict(
            nic=self.platform, send_all_fields=self.send_all_fields, sync_layer=self.sync_layer,
            nic_managers=self.nic_managers, trace=bool(self.trace), slicing=self.slicing)
        for name in ("net", "slice_threshold", "slice_pool", "slice_timeout_ms"):
            if getattr(self, name) is not None:
                options[name] = getattr(self, name)
        if self.cuts:
            options["cuts"] = self.cuts
        return BuildOptions(**options)


def frames(batch: list[Program], rng: random.Random | None = None) -> dict[str, object]:
    """The options of a batch with frame programs: the pcap backend (their `NetAlloc`s; no
    capture is read or written) and a slice timeout no run reaches; with ``rng``, one of
    slicing's settings at random: the defaults, every frame kept (--slice-threshold 0), a
    pool of one frame (the others cross whole), --no-slicing. No option without frames."""
    if not any(prog.port() for prog in batch):
        return {}
    options: dict[str, object] = {"net": "pcap", "slice_timeout_ms": SLICE_TIMEOUT_MS}
    if rng is not None:
        options.update(rng.choice([{}, {"slice_threshold": 0}, {"slice_threshold": 0},
                                   {"slice_pool": 1}, {"slicing": False}]))
    return options


def placement(batch: list[Program], rng: random.Random, platform: str,
              everything: bool = False, groups: int | None = None,
              ports: bool | None = None) -> tuple[str, ...]:
    """Segments to put on the NIC: each group that may move, with probability one half (or
    every group, with ``everything``), within the platform's NIC cores (and at most
    ``groups`` groups); the network ports (`movable_groups`) as ``ports`` says, if it
    does: on the CPU, their frames are sliced where the rest of their programs runs on the
    NIC and their rows come back to the host."""
    room = NIC_THREADS[platform]
    movable = movable_groups(batch)
    if groups is not None:
        movable = rng.sample(movable, min(groups, len(movable)))
    chosen: list[str] = []
    for threads, group in movable:
        wanted = everything or groups is not None or rng.random() < 0.5
        if ports is not None and any(prog.port() in group for prog in batch):
            wanted = ports
        if wanted and threads <= room:
            chosen += group
            room -= threads
    return tuple(chosen)


def movable_groups(batch: list[Program]) -> list[tuple[int, list[str]]]:
    """The segments that move together, with the threads they run: each program's groups,
    but those holding a network port (frame programs' `NetAlloc`) as one, last: a frame
    crossing between CPU and NIC needs every packet I/O element on one side."""
    movable, ports, port_threads = [], [], 0
    for prog in batch:
        for group in prog.groups():
            if prog.port() in group:
                ports += group
                port_threads += prog.threads(group)
            else:
                movable.append((prog.threads(group), group))
    return movable + ([(port_threads, ports)] if ports else [])


def build_and_run(app: str, variant: Variant) -> str:
    """What ``app`` prints built as ``variant``; a located `FloemError` if it is rejected.

    A run that hangs is run once more (docs/testing.md, Findings: with many NIC threads a
    run now and then hangs, its NIC threads barely scheduled); its counters are kept next to the app file as
    ``hang-N.txt`` and the test warns, so the rare loss is seen without failing CI. A second
    hang, and any other failure, fails the test."""
    program = load_app(app, {"nic": ",".join(variant.nic), "auto": ",".join(variant.auto)})
    built = build_program(program, variant.build_options())
    env = {**REPORT, **(network_environment(variant.net) if variant.net else {})}
    before = _cpu_times()
    result = run_built(built, program, timeout=RUN_TIMEOUT[variant.platform], env=env,
                       trace=variant.trace or None)
    if result.returncode == TIMEOUT_STATUS:
        spent = {k: after - before[k] for k, after in _cpu_times().items()}
        evidence = _keep_hang(app, variant, result.stdout,
                              f"machine CPU seconds during the run: {spent}\n{result.stderr}")
        warnings.warn(f"{variant.command(app)} hung; ran it again (counters in {evidence}); "
                      f"steal {spent['steal']:.1f} s, {_hang_summary(result.stderr)}", stacklevel=1)
        result = run_built(built, program, timeout=RUN_TIMEOUT[variant.platform], env=env,
                           trace=variant.trace or None)
    if result.returncode != 0:
        raise AssertionError(f"{variant.command(app)} exited with {result.returncode}:\n"
                             f"{result.stderr}\nstdout:\n{result.stdout}")
    assert not variant.trace or re.search(r"^floem: trace: \d+ packets? \(--trace",
                                          result.stderr, re.M), result.stderr
    return result.stdout


def _cpu_times() -> dict[str, float]:
    """The machine's CPU time so far by kind (/proc/stat), in seconds: a hang with much
    ``steal`` was the virtual machine not running, not the program."""
    kinds = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    with open("/proc/stat") as f:
        ticks = f.readline().split()[1:1 + len(kinds)]
    hz = os.sysconf("SC_CLK_TCK")
    return {k: int(t) / hz for k, t in zip(kinds, ticks)}


def _hang_summary(report: str) -> str:
    """What a hung run's counters say in a line, for the warning (CI shows it; the kept file
    may be gone by the time someone looks): the NIC threads' CPU time and the sync shadows
    holding entries the workers were handed but did not finish, or finished but the host
    has not been sent."""
    threads = [m for line in report.splitlines() if (m := THREAD.match(line))]
    cpu = sum(int(m.group(10)) for m in threads if m.group(3) == NIC_PROCESS)
    held = []
    for m in re.finditer(r"sync shadow (\S+): positions (to host|from host): written back (\d+), "
                         r"finished (\d+), handed out (\d+), fetched (\d+)", report):
        shadow, direction, *positions = m.groups()
        # A NIC-to-host shadow fetches free slots ahead of the workers: only the first three
        # must meet; a host-to-NIC one has fetched nothing the workers were not handed.
        must_meet = positions if direction == "from host" else positions[:3]
        if len(set(must_meet)) > 1:
            held.append(f"{shadow} {direction} {'/'.join(positions)}")
    return (f"NIC threads' CPU {cpu / 1e9:.2f} s, shadows not settled (written back/finished/"
            f"handed out/fetched): {', '.join(held) or 'none'}")


def _keep_hang(app: str, variant: Variant, stdout: str, stderr: str) -> str:
    """Save a hung run's command, output and counters next to ``app``; returns the file."""
    directory = os.path.dirname(app)
    n = sum(name.startswith("hang-") for name in os.listdir(directory))
    path = os.path.join(directory, f"hang-{n}.txt")
    with open(path, "w") as f:
        f.write(f"{variant.command(app)}\n--- stderr ---\n{stderr}\n--- stdout ---\n{stdout}")
    return path


def by_program(output: str) -> dict[str, list[str]]:
    """Output lines grouped by the program that printed them (``pN`` prefix)."""
    groups: dict[str, list[str]] = {}
    for line in output.splitlines():
        groups.setdefault(line.split(" ")[0].rstrip(":"), []).append(line)
    return groups


def explain(batch: list[Program], app: str, variant: Variant, got: str, want: str,
            what: str) -> str:
    """A failure message: the differing programs, each saved alone as an app file to rerun."""
    got_by, want_by = by_program(got), by_program(want)
    lines = [f"{what} ({variant.command(app)}):"]
    for prog in batch:
        key = f"p{prog.index}"
        if got_by.get(key) == want_by.get(key):
            continue
        repro = os.path.join(os.path.dirname(app), f"program{prog.index}.py")
        with open(repro, "w") as f:
            f.write(render_app([prog]))
        nic = tuple(n for n in variant.nic if n.startswith(key + "_"))
        lines += [f"program {prog.index} (seed {prog.seed}, size {prog.size}) differs:",
                  f"  expected: {want_by.get(key)}", f"  got:      {got_by.get(key)}",
                  f"  alone: {dataclasses.replace(variant, nic=nic).command(repro)}",
                  f"--- {repro} ---", render_app([prog]), "---"]
    return "\n".join(lines)


def check_batch(batch: list[Program], variants: list[Variant], directory: str) -> None:
    """Build ``batch`` all on the CPU (checked against the model), then as each variant
    (checked against the all-CPU output)."""
    app = os.path.join(directory, "batch.py")
    with open(app, "w") as f:
        f.write(render_app(batch))
    reference = Variant("emu", (), **frames(batch))
    outputs: dict[Variant, str | FloemError] = {}
    for variant in [reference] + variants:
        try:
            outputs[variant] = build_and_run(app, variant)
        except FloemError as e:
            assert e.file == app and e.line, f"{variant.command(app)}: unlocated error: {e}"
            outputs[variant] = e
    rejected = {v: e for v, e in outputs.items() if isinstance(e, FloemError)}
    assert not rejected, "the compiler rejected a program the generator makes as valid:\n" + \
        "\n".join(f"{v.command(app)}: {e}" for v, e in rejected.items())
    want = expected_output(batch)
    assert outputs[reference] == want, explain(batch, app, reference, outputs[reference], want,
                                               "all on the CPU, not what the model says")
    for variant in variants:
        assert outputs[variant] == want, explain(batch, app, variant, outputs[variant], want,
                                                 "a placement changed what the program prints")


def emu_variants(batch: list[Program], seed: int) -> list[Variant]:
    """Every movable group on the NIC (half the time but the frame programs' network ports,
    so that their frames' windows cross and their payloads wait by the port), then random
    placements with each flag (and sometimes the sync layer's managers run inline on the
    NIC's threads); the second traces the first 50 packets for every other seed (a traced
    build must print the same). Batches with frames get slicing's options at random
    (`frames`)."""
    rng = random.Random(seed)
    slicing = random.Random(f"frames {seed}")       # its own stream: placements stay as they were
    return [Variant("emu", placement(batch, rng, "emu", everything=True,
                                     ports=slicing.random() < 0.5),
                    **frames(batch, slicing)),
            Variant("emu", placement(batch, rng, "emu"), send_all_fields=True,
                    nic_managers=int(rng.random() < 0.7), trace=50 * (seed % 2),
                    **frames(batch, slicing)),
            Variant("emu", placement(batch, rng, "emu", groups=NO_SYNC_GROUPS), sync_layer=False,
                    send_all_fields=rng.random() < 0.5, **frames(batch, slicing))]


COMMON = dict(derandomize=True, deadline=None, database=None, print_blob=True,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=int(os.environ.get("FLOEM_DIFF_BATCHES", "2")), **COMMON)
@given(batch=batches(BATCH), seed=st.integers(0, 2 ** 32 - 1))
def test_placement_never_changes_meaning(batch: list[Program], seed: int,
                                         tmp_path_factory: pytest.TempPathFactory) -> None:
    check_batch(batch, emu_variants(batch, seed), str(tmp_path_factory.mktemp("batch")))


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("FLOEM_DIFF_SLOW_BATCHES", "1")), **COMMON)
@given(batch=batches(BATCH), seed=st.integers(0, 2 ** 32 - 1))
def test_placement_never_changes_meaning_slow(batch: list[Program], seed: int,
                                              tmp_path_factory: pytest.TempPathFactory) -> None:
    check_batch(batch, emu_variants(batch, seed), str(tmp_path_factory.mktemp("batch")))


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("FLOEM_DIFF_LIQUIDIO_BATCHES", "1")), **COMMON)
@given(batch=batches(BATCH), seed=st.integers(0, 2 ** 32 - 1))
def test_placement_never_changes_meaning_on_liquidio(batch: list[Program], seed: int,
                                                     tmp_path_factory: pytest.TempPathFactory) -> None:
    rng = random.Random(seed)
    sync_layer = rng.random() < 0.5
    # Frame programs keep their ports on the host: the big-endian NIC gets their windows and
    # the references of the frames kept there.
    variants = [Variant("liquidio", placement(batch, rng, "liquidio",
                                              groups=None if sync_layer else NO_SYNC_GROUPS,
                                              ports=False),
                        send_all_fields=rng.random() < 0.5, sync_layer=sync_layer,
                        nic_managers=int(rng.random() < 0.7),
                        **frames(batch, random.Random(f"frames {seed}")))]
    check_batch(batch, variants, str(tmp_path_factory.mktemp("batch")))


def auto_variant(batch: list[Program], app: str, seed: int, platform: str = "emu") -> Variant:
    """Every movable segment declared target.AUTO, each cut at random among its valid cuts
    that move something to the NIC (`floem.place.cuts`), within the platform's NIC cores; a
    cut that conflicts with those chosen before it (two segments feeding one queue) is left
    out."""
    rng = random.Random(f"auto {seed}")
    auto = tuple(name for _, group in movable_groups(batch) for name in group)
    program = load_app(app, {"auto": ",".join(auto)})
    front = check_program(program, stop_after="parse_bodies")
    chosen: list[Cut] = []
    room = NIC_THREADS[platform]
    for name in auto:
        seg = front.segments[name]
        order = segment_order(front, seg)
        moving = [c for c in candidates(front, seg).cuts if c.problem is None and (c.rx or c.tx)]
        if not moving or rng.random() < 0.25:
            continue
        pick = rng.choice(moving)
        threads = len(seg.cores)
        cut = Cut(name, tuple(e for e in order if e in pick.rx),
                  tuple(e for e in order if e in pick.tx), rx_cores=threads, tx_cores=threads)
        if threads * (bool(cut.rx) + bool(cut.tx)) > room:
            continue
        try:
            check_program(program, BuildOptions(nic=platform, cuts=tuple(chosen + [cut])))
        except FloemError:
            continue
        chosen.append(cut)
        room -= threads * (bool(cut.rx) + bool(cut.tx))
    return Variant(platform, (), auto=auto, cuts=tuple(chosen), **frames(batch))


def check_auto(batch: list[Program], seed: int, directory: str, platform: str = "emu") -> None:
    """The batch with every movable segment target.AUTO, cut at random: it prints what the
    model says, as all on the CPU does."""
    app = os.path.join(directory, "batch.py")
    with open(app, "w") as f:
        f.write(render_app(batch))
    variant = auto_variant(batch, app, seed, platform)
    assert variant.cuts, "no segment of the batch could be cut"
    check_batch(batch, [variant], directory)


@settings(max_examples=int(os.environ.get("FLOEM_DIFF_AUTO_BATCHES", "1")), **COMMON)
@given(batch=batches(AUTO_BATCH), seed=st.integers(0, 2 ** 32 - 1))
def test_cutting_auto_segments_never_changes_meaning(batch: list[Program], seed: int,
                                                     tmp_path_factory: pytest.TempPathFactory) -> None:
    check_auto(batch, seed, str(tmp_path_factory.mktemp("auto")))


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("FLOEM_DIFF_AUTO_LIQUIDIO_BATCHES", "1")), **COMMON)
@given(batch=batches(AUTO_BATCH), seed=st.integers(0, 2 ** 32 - 1))
def test_cutting_auto_segments_never_changes_meaning_on_liquidio(
        batch: list[Program], seed: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    check_auto(batch, seed, str(tmp_path_factory.mktemp("auto")), "liquidio")
