"""Building and running a program: passes, code generation, make, and the launcher."""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from floem.codegen.emit import Archive, CompileSettings, GeneratedFile, generate, launcher
from floem.codegen.report import report
from floem.errors import FloemError
from floem.explore.plugin import plugin_arguments
from floem.ir import BuildOptions, Device, ProgramIR
from floem.ir.plan import TRACE_FILTER_FILE
from floem.launcher import RunResult, launch
from floem.passes import run_pipeline
from floem.paths import RUNTIME_MAKEFILE, build_copies, in_build, make_directory, runtime_dir
from floem.platforms import PLATFORMS, Platform
from floem.templates import keep_compiled
from floem.trace import read_traces, trace_report

DEFAULT_CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-O2", "-g", "-Wall", "-Wextra",
                  "-Werror=implicit-function-declaration", "-pthread"]
#: What a build's directory is called in the error when it cannot be created.
BUILD_DIRECTORY = "the build directory"
#: The file of a ``count_elements`` build naming its element functions, one a line.
ELEMENT_LIST = "elements.txt"


@dataclass
class BuildResult:
    """What a build wrote: every generated file, executables, libraries, headers."""

    out_dir: str
    files: list[str]
    executables: dict[str, str]
    commands: dict[str, list[str]]
    libraries: list[str]
    headers: list[str]
    main_executable: str | None
    warnings: list[str] = field(default_factory=list)
    compiled: bool = True
    report: str | None = None
    traced: bool = False                # built with the packet-trace code
    trace_filter: str | None = None     # its --trace-filter
    receives: bool = False              # some element receives packets (FromNet)
    elements: str | None = None         # count_elements: the file naming its element functions


def check_program(program: Any, options: BuildOptions = BuildOptions(),
                  stop_after: str | None = None) -> ProgramIR:
    """Run the front end and every pass (or up to ``stop_after``; no C compiler) with
    ``options``."""
    return run_pipeline(program, options, stop_after=stop_after)


@dataclass(frozen=True)
class Toolchain:
    """How a build compiles: the NIC platform, the host's and the NIC's C flags, and the
    packet I/O libraries."""

    platform: Platform
    cflags: list[str]
    nic_cflags: list[str]
    net_libs: list[str]
    runtime_cflags: list[str]               # the runtime archive's: no program's directory
    nic_runtime_cflags: list[str]


@dataclass(frozen=True)
class Written:
    """A build directory written but not compiled: its files, their content key, and what
    the build made (`compile_build` compiles it)."""

    ir: ProgramIR
    files: list[GeneratedFile]
    key: str
    result: BuildResult


def compile_ir(program: Any, options: BuildOptions, out_dir: str | None = None,
               dump_after: str | None = None) -> ProgramIR:
    """The pass pipeline; dumps (``dump_after``) into ``out_dir``, or into the cache's
    staging directory when the build directory is not known yet."""
    dump_dir = make_directory(_staging(out_dir), BUILD_DIRECTORY) if dump_after else None
    keep_compiled(make_directory(os.path.join(cache_root(), "templates"), "the build cache"))
    return run_pipeline(program, options, dump_after=dump_after, dump_dir=dump_dir)


def write_build(program: Any, ir: ProgramIR, options: BuildOptions, out_dir: str | None = None,
                dump_after: str | None = None, report_file: bool = False) -> Written:
    """The generated files of ``ir`` (``program`` compiled with ``options``), written with
    the launcher script, the runtime's sources and the report into ``out_dir`` (default:
    the cache's directory for their content key, which then receives the dumps)."""
    tools = _toolchain(program, ir, options)
    files = generate(ir, _settings(tools, ir))
    headers = [c.text.split('"')[1] for c in ir.includes if c.text.startswith('#include "/')]
    external = [f for p in ir.processes.values() for f in p.external_main]
    key = _content_key(files, tools.cflags + tools.nic_cflags, ir.depends + headers + external,
                       [tools.platform.compiler()] if _has_nic(ir) else [], program.params)
    if out_dir is None:
        out_dir = os.path.join(cache_root(), key[:24])
        if dump_after:
            shutil.copytree(_staging(None), out_dir, dirs_exist_ok=True)
    make_directory(out_dir, BUILD_DIRECTORY)
    script = launcher(ir, list(tools.platform.emulator))
    if script is not None:
        files.append(script)
    if options.count_elements:
        files.append(GeneratedFile(ELEMENT_LIST, "".join(f"{n.name}\n" for n in ir.nodes())))
    written = [_write(out_dir, f.name, f.text) for f in files]
    if script is not None:
        os.chmod(os.path.join(out_dir, "run"), 0o755)
    written += _copy_floem_c(out_dir)
    result = _result(ir, out_dir, written, tools.platform)
    result.traced, result.trace_filter = options.trace, options.trace_filter
    if options.count_elements:
        result.elements = os.path.join(out_dir, ELEMENT_LIST)
    if report_file:
        result.report = _write(out_dir, "report.txt", report(ir))
        result.files.append(result.report)
    return Written(ir, files, key, result)


def compile_build(build: Written) -> None:
    """make in the build directory, unless it already holds this key's outputs."""
    result = build.result
    stamp = os.path.join(result.out_dir, ".floem-build")
    outputs = list(result.executables.values()) + result.libraries
    if _read(stamp) == build.key and all(os.path.exists(p) for p in outputs):
        result.compiled = False
        return
    result.warnings += _make(result.out_dir, build.files, build.ir)
    _write(result.out_dir, ".floem-build", build.key)


def build_program(program: Any, options: BuildOptions = BuildOptions(),
                  out_dir: str | None = None, dump_after: str | None = None,
                  report_file: bool = False) -> BuildResult:
    """Compile ``program`` with ``options`` into ``out_dir`` (default: a content-addressed
    cache directory): the passes, the files written, make."""
    ir = compile_ir(program, options, out_dir, dump_after)
    build = write_build(program, ir, options, out_dir, dump_after, report_file)
    compile_build(build)
    return build.result


def _toolchain(program: Any, ir: ProgramIR, options: BuildOptions) -> Toolchain:
    """The host's C flags (defaults, the app's include directories, ``cflags(...)``,
    $FLOEM_CFLAGS, packet I/O), the NIC platform (its tools checked when a process is on the
    NIC) and its flags."""
    app_dir = [f"-I{d}" for d in ir.include_dirs()]
    user = shlex.split(os.environ.get("FLOEM_CFLAGS", ""))
    platform = PLATFORMS[options.nic]
    if _has_nic(ir):
        platform.check_tools()
    net_flags, net_libs = _network_flags(ir, options.net, platform, _has_nic(ir))
    counting = ["-DFLOEM_COUNT_INSTRUCTIONS"] if options.count_instructions else []
    cflags = DEFAULT_CFLAGS + app_dir + program.extra_cflags + user + net_flags + counting
    # the runtime names none of the program's include directories, only packet I/O's (DPDK's)
    runtime = _without_includes(DEFAULT_CFLAGS + program.extra_cflags + user) + net_flags \
        + counting
    # a counting build names each thread of a program of the user's by its start routine
    libs = net_libs + (["-Wl,--wrap=pthread_create"] if options.count_instructions else [])
    return Toolchain(platform, cflags, _nic_cflags(cflags, platform, options), libs, runtime,
                     _nic_cflags(runtime, platform, options))


def _staging(out_dir: str | None) -> str:
    """Where pass dumps go: the build directory, or the cache's staging directory while it
    is not known."""
    return out_dir or os.path.join(cache_root(), "staging")


def _has_nic(ir: ProgramIR) -> bool:
    return any(p.device == Device.NIC for p in ir.processes.values())


def _uses_network(ir: ProgramIR) -> bool:
    return any(n.uses_network for n in ir.nodes())


def run_program(program: Any, timeout: float | None = None, duration: float | None = None,
                args: list[str] | None = None, capture: bool = True, out_dir: str | None = None,
                dump_after: str | None = None, report_file: bool = False,
                **opts: Any) -> RunResult:
    """Build (cached) and run every process of ``program``; the result is the main process's.

    Network settings (``port``, ``listen``, ``pcap_in``, ``pcap_out``, ``pcap_timing``,
    ``pcap_loop``, ``eal``, ``iface``) go to the runtime; ``trace=N`` traces the first N
    packets (`run_built`); the other keywords are `BuildOptions` fields.
    """
    network = {k: opts.pop(k) for k in ("port", "listen", "pcap_in", "pcap_out",
                                        "pcap_timing", "pcap_loop", "eal", "iface") if k in opts}
    packets = opts.pop("trace", None)
    options = BuildOptions.from_keywords(trace=bool(packets), **opts)
    built = build_program(program, options, out_dir, dump_after, report_file)
    return run_built(built, program, timeout=timeout, duration=duration, args=args,
                     capture=capture, env=network_environment(options.net, **network),
                     trace=packets or None)


def network_environment(net: str = "udp", port: int | None = None, listen: str | None = None,
                        pcap_in: str | None = None,
                        pcap_out: str | None = None, eal: str | None = None,
                        pcap_timing: float | None = None,
                        pcap_loop: int | None = None,
                        iface: str | None = None) -> dict[str, str]:
    """Run-time settings of the packet I/O backend, as the runtime reads them (net.h)."""
    env = {"FLOEM_NET": net}
    for name, value in (("FLOEM_PCAP_IN", pcap_in), ("FLOEM_PCAP_OUT", pcap_out)):
        if value is not None:
            env[name] = os.path.abspath(value)
    for name, setting in (("FLOEM_NET_PORT", port), ("FLOEM_NET_ADDR", listen),
                          ("FLOEM_DPDK_EAL", eal),
                          ("FLOEM_PCAP_TIMING", pcap_timing), ("FLOEM_PCAP_LOOP", pcap_loop),
                          ("FLOEM_XDP_IFACE", iface)):
        if setting is not None:
            env[name] = repr(setting) if isinstance(setting, float) else str(setting)
    return env


@dataclass(frozen=True)
class Counting:
    """Count what every process's threads execute on packets (a build with
    ``count_instructions``; docs/exploration.md): each process under qemu-user of its ISA
    with Floem's counting plugin (`floem.explore.plugin`), which writes every thread's
    instructions, atomic operations and, for a process ``caches`` names, the misses of
    simulated caches of that geometry (``I1:D1:LL``, each ``BYTES,WAYS,LINE``: a first
    level per thread, the last shared) to ``base``.PROCESS; of a build with
    ``count_elements``, each element function's share of them and its calls too."""

    base: str
    caches: dict[str, str] = field(default_factory=dict)

    def prefix(self, process: str, emulator: list[str], cpu: int,
               elements: str | None = None) -> list[str]:
        """The command that runs ``process`` counted, before the process's executable
        (``emulator``: what runs it when not counted; none: it is this machine's;
        ``elements``: the build's list of element functions, to count each). Its threads
        share CPU ``cpu``, one at a time, so that no two of them ever race between a
        load-linked and its store-conditional: a failed store and its retry would count
        as work the program did."""
        return ["taskset", "-c", str(cpu), *(emulator or [NATIVE_QEMU]),
                *plugin_arguments(cache_root(), f"{self.base}.{process}",
                                  self.caches.get(process), elements)]

    def check(self) -> None:
        """A clear error when the counting tool is not installed."""
        if shutil.which("taskset") is None:
            raise FloemError("--count-instructions runs each process on one CPU with taskset: "
                             "apt-get install util-linux")
        elif shutil.which(NATIVE_QEMU) is None:
            raise FloemError(f"--count-instructions runs the program under qemu-user "
                             f"({NATIVE_QEMU}): apt-get install qemu-user")


#: qemu-user for this machine's own ISA, which counting runs its processes under.
NATIVE_QEMU = "qemu-x86_64"


def run_built(built: BuildResult, program: Any, timeout: float | None = None,
              duration: float | None = None, args: list[str] | None = None,
              capture: bool = True, env: dict[str, str] | None = None,
              count: Counting | None = None, trace: int | None = None) -> RunResult:
    """Run the processes of a finished build; the result is the main process's.

    ``count``: count what every process (built with ``count_instructions``) executes.
    ``trace``: trace the first that many packets (a build with the ``trace`` option) and,
    when the program has ended, write their paths (floem/trace.py) after its stderr.
    """
    if built.main_executable is None:
        raise FloemError("the program has no main process to run: give floem.main(...) or a "
                         "segment that runs as a thread", program.app_file)
    given = env or {}
    if given.get("FLOEM_NET") == "pcap" and built.receives and "FLOEM_PCAP_IN" not in given:
        raise FloemError("--net pcap replays a capture into the program's FromNet: give it "
                         "with --pcap-in FILE", program.app_file)
    if given.get("FLOEM_NET") == "xdp" and built.receives and "FLOEM_XDP_IFACE" not in given:
        raise FloemError("--net xdp reads the program's FromNet frames from a network "
                         "interface: give it with --iface NAME", program.app_file)
    others = {n: built.commands[n] for n, p in built.executables.items()
              if p != built.main_executable}
    prefixes = {}
    if count is not None:
        count.check()
        unknown = set(count.caches) - set(built.executables)
        if unknown:
            raise FloemError(f"--count-cache names no process of the program: "
                             f"{', '.join(sorted(unknown))} (its processes: "
                             f"{', '.join(sorted(built.executables))})")
        cpus = sorted(os.sched_getaffinity(0))     # the processes spread over the CPUs
        prefixes = {n: count.prefix(n, built.commands[n][:-1], cpus[i % len(cpus)],
                                    built.elements)
                    for i, n in enumerate(built.executables)}
        others = {n: [built.executables[n]] for n in others}
    env = {**given, **({"FLOEM_REPORT": "1"} if built.report else {})}
    if not trace:
        return launch(built.main_executable, others, args or [], timeout=timeout,
                      duration=duration, capture=capture, env=env, prefixes=prefixes)
    if not built.traced:
        raise FloemError("the build has no packet-trace code: build it with trace=True "
                         "(--trace)", program.app_file)
    with tempfile.TemporaryDirectory(prefix="floem-trace-") as kept:
        env.update(FLOEM_TRACE=str(trace), FLOEM_TRACE_DIR=kept)
        result = launch(built.main_executable, others, args or [], timeout=timeout,
                        duration=duration, capture=capture, env=env, prefixes=prefixes)
        text = trace_report(read_traces(kept), trace, built.trace_filter is not None)
    if capture:
        result.stderr += text
    else:
        sys.stderr.write(text)
    return result


def cache_root() -> str:
    """The build cache: ``$FLOEM_CACHE``, else ``$XDG_CACHE_HOME/floem``, else ``~/.cache/floem``."""
    given = os.environ.get("FLOEM_CACHE")
    root = given or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "floem")
    return make_directory(root, "the build cache (FLOEM_CACHE)" if given else "the build cache")


def _network_flags(ir: ProgramIR, net: str, platform: Platform,
                   has_nic: bool) -> tuple[list[str], list[str]]:
    """Compiler and linker flags of the ``--net`` backend, when packet I/O elements are used."""
    if not _uses_network(ir):
        return [], []
    flags = [f"-DFLOEM_NET_{net.upper()}"]
    if net == "pcap":
        return flags, _pcap_libs(platform if has_nic else None)
    if net == "xdp":
        return flags, _xdp_libs(platform if has_nic else None)
    if net != "dpdk":
        return flags, []
    if has_nic and platform.name != "emu":
        raise FloemError(f"--net dpdk runs on the host or --nic emu, not --nic {platform.name}")
    try:
        cflags = subprocess.run(["pkg-config", "--cflags", "libdpdk"], capture_output=True,
                                text=True, check=True).stdout.split()
        libs = subprocess.run(["pkg-config", "--libs", "libdpdk"], capture_output=True,
                              text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        raise FloemError("--net dpdk needs DPDK (apt-get install libdpdk-dev pkg-config)") from None
    return flags + cflags, libs


def _pcap_libs(nic: Platform | None) -> list[str]:
    """The linker flags of the pcap backend (libpcap), checking that libpcap is there for
    the host and for ``nic``'s cross compiler (scripts/cross_libpcap.sh builds it)."""
    if not any(os.path.exists(f"{d}/include/pcap/pcap.h") for d in ("/usr", "/usr/local")):
        raise FloemError("--net pcap needs libpcap (apt-get install libpcap-dev)")
    if nic is None or not nic.cc:
        return ["-lpcap"]
    triplet = nic.cc.removesuffix("-gcc")
    if not all(os.path.exists(f"/usr/{triplet}/{f}")
               for f in ("include/pcap/pcap.h", "lib/libpcap.a")):
        raise FloemError(f"--net pcap with --nic {nic.name} needs libpcap built for {triplet} "
                         "(bash scripts/cross_libpcap.sh)")
    # glibc warns about the name lookups libpcap's filter compiler links in statically
    # (never called on capture files): not the program's warnings.
    return ["-lpcap", "-Wl,--no-warnings"]


def _xdp_libs(nic: Platform | None) -> list[str]:
    """The linker flags of the xdp backend (libxdp's AF_XDP sockets, libbpf), which runs on
    the host or --nic emu, checking that they are there."""
    if nic is not None and nic.name != "emu":
        raise FloemError(f"--net xdp runs on the host or --nic emu, not --nic {nic.name}")
    if not os.path.exists("/usr/include/xdp/xsk.h"):
        raise FloemError("--net xdp needs libxdp (apt-get install libxdp-dev)")
    return ["-lxdp", "-lbpf"]


def _nic_cflags(cflags: list[str], platform: Platform, options: BuildOptions) -> list[str]:
    """Flags of the NIC program: the host's (sanitizers only natively) plus the platform's."""
    flags = [f for f in cflags if platform.name == "emu" or not f.startswith("-fsanitize")]
    flags += list(platform.cflags) + shlex.split(os.environ.get("FLOEM_NIC_CFLAGS", ""))
    if not options.sync_layer:
        flags.append("-DFLOEM_SYNC_BLOCKING")
    return flags


def _settings(tools: Toolchain, ir: ProgramIR) -> CompileSettings:
    """What the Makefile compiles with, the runtime archives its processes link (`_archive`)
    included."""
    host_cc = os.environ.get("CC", "cc")
    nic_cc = tools.platform.compiler()
    nic_ar = f"{tools.platform.cc.removesuffix('gcc')}ar" if tools.platform.cc else "ar"
    processes = ir.processes.values()
    objects = _runtime_objects(ir)
    archives = []
    if any(p.has_main and p.device == Device.CPU for p in processes):
        archives.append(_archive("RUNTIME", host_cc, "ar", tools.runtime_cflags, objects))
    if any(p.callables for p in processes):
        archives.append(_archive("PIC_RUNTIME", host_cc, "ar", tools.runtime_cflags + ["-fPIC"],
                                 objects))
    if any(p.has_main and p.device == Device.NIC for p in processes):
        archives.append(_archive("NIC_RUNTIME", nic_cc, nic_ar, tools.nic_runtime_cflags,
                                 objects, nic=True))
    return CompileSettings(cflags=tools.cflags, nic_cc=nic_cc, nic_ar=nic_ar,
                           nic_cflags=tools.nic_cflags, libs=tools.net_libs, archives=archives)


#: The runtime's sources (runtime/src/NAME.c) that only some programs link: the NIC's DMA
#: engine and sync layer (a program with a NIC process), the caches (one with a `Cache`),
#: tracing (`--trace`) and each packet I/O backend (`net_<--net>`, with packet I/O
#: elements). No other source of the runtime calls them.
NIC_SOURCES = ("dma", "sync")
CACHE_SOURCES = ("cache",)
TRACE_SOURCES = ("trace",)
NET_SOURCE = "net_"


def _runtime_objects(ir: ProgramIR) -> list[str]:
    """What the runtime archives of ``ir`` hold (runtime/runtime.mk's OBJECTS): the runtime's
    sources the program can call, and the element library's C files it depends on (only
    those: a program compiles what it links)."""
    left_out = set() if _has_nic(ir) else set(NIC_SOURCES)
    left_out |= set() if ir.caches else set(CACHE_SOURCES)
    left_out |= set() if ir.options.trace else set(TRACE_SOURCES)
    backend = NET_SOURCE + ir.options.net if _uses_network(ir) else ""
    stems = [name.removesuffix(".c") for name in _c_files(os.path.join(runtime_dir(), "src"))
             if name.endswith(".c")]
    built = [in_build(d) for d in ir.depends if d.endswith(".c")]
    library = {b.removeprefix("runtime/").removesuffix(".c") for b in built
               if b.startswith("runtime/library/")}
    return [f"src/{stem}" for stem in stems if stem not in left_out
            and (stem == backend or not stem.startswith(NET_SOURCE))] + sorted(library)


def _archive(variable: str, cc: str, ar: str, cflags: list[str], objects: list[str],
             nic: bool = False) -> Archive:
    """The runtime archive of ``objects`` made with ``cc``, ``ar`` and ``cflags``
    (`Toolchain.runtime_cflags`): in the build cache, in a directory keyed by those and by
    the runtime's files, so that each object is compiled once per toolchain, and named by
    its objects."""
    h = hashlib.sha256(f"{cc}\0{ar}\0{' '.join(cflags)}\0{_compiler_id(cc)}".encode())
    h.update(_floem_c_digest())
    name = f"libfloem-{hashlib.sha256(' '.join(objects).encode()).hexdigest()[:12]}.a"
    path = os.path.join(cache_root(), "runtime", h.hexdigest()[:24], name)
    return Archive(variable, path, cc, ar, cflags, objects, nic)


def _without_includes(flags: list[str]) -> list[str]:
    """``flags`` without their include directories (``-Idir``, ``-I dir``, ``-isystem dir``...)."""
    kept: list[str] = []
    skip = False
    for flag in flags:
        if skip:
            skip = False
        elif flag in ("-I", "-isystem", "-iquote", "-idirafter"):
            skip = True
        elif not flag.startswith(("-I", "-isystem", "-iquote", "-idirafter")):
            kept.append(flag)
    return kept


def _floem_c_digest() -> bytes:
    """A digest of Floem's C (`build_copies`) and the runtime archive's makefile."""
    h = hashlib.sha256()
    for path in _floem_c_paths():
        h.update(path.encode() + b"\0" + _read_bytes(path) + b"\0")
    return h.digest()


def _floem_c_paths() -> list[str]:
    """Every file of Floem's C a build directory holds a copy of (`build_copies`)."""
    return [os.path.join(installed, name) for installed in build_copies()
            for name in _c_files(installed)] + [os.path.join(runtime_dir(), RUNTIME_MAKEFILE)]


def _copy_floem_c(out_dir: str) -> list[str]:
    """Copy Floem's C (`build_copies`: the runtime, the element library's support files, the
    runtime archive's makefile) into the build directory, which its generated files name
    (`floem.paths.in_build`)."""
    return [_write(out_dir, in_build(path), _read(path) or "") for path in _floem_c_paths()]


def _c_files(directory: str) -> list[str]:
    """The C sources and headers in ``directory``, in order."""
    return sorted(f for f in os.listdir(directory) if f.endswith((".c", ".h")))


def _content_key(files: list[GeneratedFile], cflags: list[str], depends: list[str],
                 compilers: list[str], params: dict[str, Any]) -> str:
    h = hashlib.sha256(repr(sorted(params.items())).encode())
    for f in files:
        h.update(f.name.encode() + b"\0" + f.text.encode() + b"\0")
    h.update(_floem_c_digest())
    for dep in depends:
        h.update(dep.encode() + (_read_bytes(dep)))
    h.update(" ".join(cflags).encode())
    for cc in [os.environ.get("CC", "cc")] + compilers:
        h.update(_compiler_id(cc).encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=8)
def _compiler_id(cc: str) -> str:
    """``cc --version``, asked once per compiler per process (it keys the build cache)."""
    try:
        return subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    except OSError:
        raise FloemError(f"no C compiler: {cc!r} not found (install gcc)") from None


def _result(ir: ProgramIR, out_dir: str, written: list[str], platform: Platform) -> BuildResult:
    executables = {p.name: os.path.join(out_dir, p.name) for p in ir.processes.values() if p.has_main}
    commands = {p.name: platform.command(executables[p.name]) if p.device == Device.NIC
                else [executables[p.name]] for p in ir.processes.values() if p.has_main}
    libraries = [os.path.join(out_dir, f"lib{p.name}.{ext}") for p in ir.processes.values()
                 if p.callables for ext in ("a", "so")]
    headers = [os.path.join(out_dir, f"{p.name}.h") for p in ir.processes.values()]
    main = ir.placement.main
    return BuildResult(out_dir=out_dir, files=written + list(executables.values()) + libraries,
                       executables=executables, commands=commands, libraries=libraries, headers=headers,
                       main_executable=executables.get(main) if main else None,
                       warnings=list(ir.warnings),
                       receives=any(n.receives_packets for n in ir.nodes()))


def _make(out_dir: str, files: list[GeneratedFile], ir: ProgramIR) -> list[str]:
    """Run make; returns the C compiler's warnings, raises its first error."""
    if shutil.which("make") is None:
        raise FloemError("'make' is not installed (apt-get install make)")
    jobs = f"-j{os.cpu_count() or 1}"
    with subprocess.Popen(["make", "-s", "-C", out_dir, jobs], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, start_new_session=True) as make:
        try:
            stdout, stderr = make.communicate()
        except BaseException:           # floem stopped (a signal): the compilers stop too
            os.killpg(make.pid, signal.SIGKILL)
            raise
    if make.returncode != 0:
        raise _compile_error(stderr + stdout, out_dir, files, ir)
    warnings = [f"C compiler: {line}" for line in stderr.splitlines() if "warning:" in line]
    return list(dict.fromkeys(warnings))      # a file built for an executable and a library


_GCC_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$",
                        re.M)


def _compile_error(output: str, out_dir: str, files: list[GeneratedFile], ir: ProgramIR) -> FloemError:
    """The first gcc error, pointed back at the element (and app line) that produced it."""
    m = _GCC_ERROR.search(output)
    if m is None:
        return FloemError(f"C build failed in {out_dir}:\n{output.strip()}", ir.app_file)
    path, line, msg = m.group("file"), int(m.group("line")), m.group("msg")
    for n in ir.nodes():
        for code in (n.code, n.nic_code):
            if code and os.path.abspath(path) == code.loc.file:
                first = code.loc.line
                if first <= line < first + code.text.count("\n") + 1:
                    return FloemError(f"C compiler: {msg}", code.loc.file, line, n.name,
                                      line - first + 1)
    if path == TRACE_FILTER_FILE:
        return FloemError(f"C compiler: {msg}", TRACE_FILTER_FILE, line)
    main = ir.main.code
    if main and os.path.abspath(path) == main.loc.file and main.loc.line <= line:
        return FloemError(f"C compiler: {msg}", main.loc.file, line, "main",
                          line - main.loc.line + 1)
    generated = next((f for f in files if f.name == os.path.basename(path)), None)
    if generated is not None:
        owner = _owner(generated, line, ir)
        where = f"({os.path.join(out_dir, generated.name)}:{line})"
        if owner is not None and owner in ir.graph:
            n = ir.node(owner)
            return FloemError(f"C compiler, in code generated for this element {where}: {msg}",
                              n.loc.file, n.loc.line, owner)
        if owner in ir.segments:
            seg = ir.segments[owner]
            return FloemError(f"C compiler, in code generated for segment '{owner}' {where}: "
                              f"{msg}", seg.loc.file, seg.loc.line)
    return FloemError(f"C compiler: {path}:{line}: {msg}", ir.app_file)


def _owner(generated: GeneratedFile, line: int, ir: ProgramIR) -> str | None:
    """The element or segment whose generated code holds ``line`` (prototypes included)."""
    text = generated.text.split("\n")[line - 1] if line <= generated.text.count("\n") + 1 else ""
    m = re.match(r"static \w[\w\s*]*?\b(\w+)\(", text)
    if m and text.rstrip().endswith(";"):
        names = [n for n in ir.graph.nodes if m.group(1) == n or m.group(1).startswith(n + "_")]
        if names:
            return max(names, key=len)
    owner = None
    for start, name in generated.owners:
        if start <= line:
            owner = name
    return owner


def _write(out_dir: str, name: str, text: str) -> str:
    path = os.path.join(out_dir, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if _read(path) != text:
        with open(path, "w") as f:
            f.write(text)
    return path


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""
