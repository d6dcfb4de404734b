"""A build directory is self-contained: copied elsewhere, with Floem's source tree and the
app gone, ``make`` there builds the program again and it runs (on the host, and for a NIC
platform the way a user makes it on the card)."""
from __future__ import annotations

import os
import shutil
import subprocess
import textwrap

import pytest

from conftest import ROOT, floem, floem_command

#: A host -> NIC -> host program whose NIC element uses a runtime header (frames.h) and the
#: element library's C (headers.h, and headers.c linked in): it prints the IPv4 header
#: checksum of a header of total length 20 + i for each i pushed.
APP = textwrap.dedent(r'''
    from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket,
                       Queue, Segment, State, Uint, main, param, target)
    from floem.library import headers, net

    class Packet(State):
        x = Field(Int)
        sum = Field(Uint(16))

    class Take(Element):
        def configure(self):
            self.inp = Input(Int)
            self.out = Output()

        def impl(self):
            self.run_c("state->x = inp(); output { out(); }")

    class Checksum(Element):
        c_headers = headers.HEADERS + net.FRAME_HEADERS
        c_sources = headers.SOURCES

        def configure(self):
            self.inp = Input()
            self.out = Output()

        def impl(self):
            self.run_c(r"""
                struct floem_ipv4_hdr ip;
                memset(&ip, 0, sizeof ip);
                ip.version_ihl = 0x45;
                ip.ttl = 64;
                ip.protocol = 17;
                floem_put16(&ip.total_len, (uint16_t)(20 + state->x));
                floem_put16(&ip.checksum, floem_ipv4_checksum(&ip));
                state->sum = floem_ntoh16(ip.checksum);
                output { out(); }
            """)

    class Show(Element):
        def configure(self):
            self.inp = Input()
            self.out = Output(Int)

        def impl(self):
            self.run_c(r"""
                printf("%d %u\n", state->x, state->sum);
                output { out(1); }
            """)

    to_work = Queue("to_work", size=16)
    back = Queue("back", size=16)
    device = param("device", "cpu", choices=["cpu", "nic"])

    class Sums(Flow):
        state = PerPacket(Packet)

        def impl(self):
            class push(CallableSegment):
                def configure(self):
                    self.inp = Input(Int)

                def impl(self):
                    self.inp >> Take() >> to_work

            class work(Segment):
                def impl(self):
                    to_work >> Checksum() >> back

            class pop(CallableSegment):
                def configure(self):
                    self.inp = Input(Int)
                    self.out = Output(Int)

                def impl(self):
                    self.inp >> back.qid
                    back >> Show() >> self.out

            push("push")
            work("work", device=target.NIC if device == "nic" else target.CPU)
            pop("pop", default_return="0")

    Sums()

    main(r"""
        for (int i = 1; i <= 5; i++)
            push(i);
        for (int shown = 0; shown < 5; )
            shown += pop(0);
    """)
''')

#: Each build's floem options and the tools it needs.
BUILDS = {
    "host": ([], []),
    "bluefield": (["-D", "device=nic", "--nic", "bluefield"],
                  ["aarch64-linux-gnu-gcc", "qemu-aarch64"]),
}


def ipv4_checksum(total_len: int) -> int:
    """The checksum of the header the app's NIC element builds (RFC 1071)."""
    header = bytes([0x45, 0, total_len >> 8, total_len & 0xFF, 0, 0, 0, 0, 64, 17]) + bytes(10)
    total = sum(int.from_bytes(header[i:i + 2], "big") for i in range(0, len(header), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def installed_copy(where: str) -> str:
    """A copy of the floem package laid out as installed (``floem``, ``floem.library``,
    ``floem.runtime``) under ``where``; what PYTHONPATH names to use it."""
    ignore = shutil.ignore_patterns("__pycache__", "tests")
    shutil.copytree(os.path.join(ROOT, "floem"), os.path.join(where, "floem"), ignore=ignore)
    for part in ("library", "runtime"):
        shutil.copytree(os.path.join(ROOT, part), os.path.join(where, "floem", part),
                        ignore=ignore)
    return where


def text_files(directory: str) -> dict[str, str]:
    """Every text file under ``directory`` (the executables are not), by path."""
    texts = {}
    for parent, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(parent, name)
            try:
                with open(path) as f:
                    texts[path] = f.read()
            except UnicodeDecodeError:
                continue
    return texts


@pytest.mark.parametrize("build", [pytest.param(b, marks=[pytest.mark.slow] if BUILDS[b][1]
                                                else [], id=b) for b in BUILDS])
def test_a_copied_build_directory_makes_and_runs_without_the_source_tree(build: str,
                                                                        tmp_path) -> None:
    options, tools = BUILDS[build]
    missing = [t for t in tools if shutil.which(t) is None]
    assert not missing, f"install {missing} (scripts/setup.sh does)"
    source = tmp_path / "source"
    package = installed_copy(str(source / "package"))
    app = source / "app" / "sums.py"
    app.parent.mkdir()
    app.write_text(APP)
    out = tmp_path / "out"
    result = floem("build", str(app), "-o", str(out), *options, env={"PYTHONPATH": package},
                   timeout=300)
    assert result.returncode == 0, result.stderr

    card = tmp_path / "card"
    shutil.copytree(out, card)
    shutil.rmtree(source)
    for path, text in text_files(str(card)).items():
        named = [line for line in text.splitlines()
                 if package in line and not line.startswith("#line ")]
        assert not named, f"{path} names the source tree: {named}"
    made = subprocess.run(["make", "clean", "all"], cwd=card, capture_output=True, text=True,
                          timeout=300)
    assert made.returncode == 0, made.stderr
    ran = subprocess.run(["./run"], cwd=card, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "".join(f"{i} {ipv4_checksum(20 + i)}\n" for i in range(1, 6))


def archive_of(build: str) -> str:
    """The runtime archive a build directory's Makefile links (its RUNTIME)."""
    with open(os.path.join(build, "Makefile")) as f:
        return next(line.split(" = ", 1)[1].strip() for line in f
                    if line.startswith("RUNTIME = "))


def archive_members(build: str) -> set[str]:
    """The object files of the runtime archive a build directory's Makefile links."""
    listed = subprocess.run(["ar", "t", archive_of(build)], capture_output=True, text=True,
                            check=True)
    return set(listed.stdout.split())


def test_a_build_compiles_only_the_runtime_files_it_links(tmp_path) -> None:
    """A program without a NIC process, a cache or tracing links no DMA engine, sync
    layer, cache or tracer, no packet I/O backend but its own, nor element library C it
    does not depend on, and so compiles none; a program with a NIC process has the first two, and the files both link are
    compiled once."""
    env = {"FLOEM_CACHE": str(tmp_path / "cache")}
    host, nic = tmp_path / "host", tmp_path / "nic"
    assert floem("build", os.path.join(ROOT, "tests", "programs", "persistent_state.py"),
                 "-o", str(host), env=env).returncode == 0
    members = archive_members(str(host))
    assert "net.o" in members and "threads.o" in members
    assert not members & {"dma.o", "sync.o", "cache.o", "trace.o", "aes.o", "sketch.o",
                           "net_dpdk.o", "net_tcp.o"}
    objects = os.path.join(os.path.dirname(archive_of(str(host))), "obj", "src")
    made = os.stat(os.path.join(objects, "net.o")).st_mtime_ns
    assert sorted(os.listdir(objects)) == sorted(members)
    assert floem("build", os.path.join(ROOT, "tests", "programs", "nic_roundtrip.py"),
                 "-o", str(nic), env=env).returncode == 0
    assert {"dma.o", "sync.o"} <= archive_members(str(nic))
    assert os.path.dirname(archive_of(str(nic))) == os.path.dirname(archive_of(str(host)))
    assert os.stat(os.path.join(objects, "net.o")).st_mtime_ns == made


def test_the_runtime_is_compiled_once_per_toolchain_and_made_again_when_gone(tmp_path) -> None:
    """Builds with the same compiler and flags link one runtime archive in the build cache,
    compiled by the first (two at once on an empty cache both succeed); other flags, another
    archive; a build directory's `make` makes its archive again where it was when it is
    gone."""
    app = os.path.join(ROOT, "tests", "programs", "persistent_state.py")
    env = {"FLOEM_CACHE": str(tmp_path / "cache")}
    first, second = tmp_path / "first", tmp_path / "second"
    builds = [subprocess.Popen(floem_command() + ["build", app, "-o", str(out)], env={
        **os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for out in (first, second)]
    for build in builds:
        _, err = build.communicate(timeout=300)
        assert build.returncode == 0, err
    archive = archive_of(str(first))
    assert archive == archive_of(str(second)) and archive.startswith(env["FLOEM_CACHE"])
    made = os.stat(archive).st_mtime_ns
    third = tmp_path / "third"
    assert floem("build", app, "-o", str(third), env=env).returncode == 0
    assert archive_of(str(third)) == archive and os.stat(archive).st_mtime_ns == made
    assert not [f for f in os.listdir(third / "persistent_state.objs") if "queue" in f]
    other = floem("build", app, "-o", str(tmp_path / "other"),
                  env={**env, "FLOEM_CFLAGS": os.environ.get("FLOEM_CFLAGS", "") + " -DOTHER"})
    assert other.returncode == 0 and archive_of(str(tmp_path / "other")) != archive

    shutil.rmtree(os.path.dirname(archive))
    made = subprocess.run(["make", "clean", "all"], cwd=first, capture_output=True, text=True,
                          timeout=300)
    assert made.returncode == 0, made.stderr
    assert os.path.exists(archive)
    ran = subprocess.run(["./run"], cwd=first, capture_output=True, text=True, timeout=60)
    with open(os.path.join(ROOT, "tests", "programs", "persistent_state.expected")) as f:
        assert ran.returncode == 0 and ran.stdout == f.read(), ran.stderr
