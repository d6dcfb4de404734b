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
from typing import Any, TypeVar

from floem.codegen.emit import GeneratedFile, generate, launcher
from floem.codegen.report import report
from floem.errors import FloemError
from floem.ir import BuildOptions, Device, ProgramIR
from floem.ir.plan import TRACE_FILTER_FILE
from floem.launcher import RunResult, launch
from floem.passes import run_pipeline
from floem.paths import build_copies, make_directory, runtime_dir
from floem.platforms import PLATFORMS, Platform
from floem.trace import read_traces, trace_report

DEFAULT_CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-O2", "-g", "-Wall", "-Wextra",
                  "-Werror=implicit-function-declaration", "-pthread"]
#: What a build's directory is called in the error when it cannot be created.
BUILD_DIRECTORY = "the build directory"
T = TypeVar("T")


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


def check_program(program: Any, options: BuildOptions = BuildOptions(),
                  stop_after: str | None = None) -> ProgramIR:
    """Run the front end and every pass (or up to ``stop_after``; no C compiler) with
    ``options``."""
    return run_pipeline(program, options, stop_after=stop_after)


@dataclass
class Build:
    """One build in progress: what it was asked, and what its steps have made so far."""

    program: Any
    options: BuildOptions
    out_dir: str | None
    dump_after: str | None
    report_file: bool
    ir: ProgramIR | None = None
    platform: Platform | None = None
    cflags: list[str] = field(default_factory=list)
    nic_cflags: list[str] = field(default_factory=list)
    net_libs: list[str] = field(default_factory=list)
    runtime_sources: list[str] = field(default_factory=list)
    files: list[GeneratedFile] = field(default_factory=list)
    key: str = ""
    result: BuildResult | None = None

    @property
    def staging(self) -> str:
        """Where pass dumps go before the build directory is known."""
        return self.out_dir or os.path.join(cache_root(), "staging")


def _ready(value: T | None) -> T:
    """A field of the `Build` that an earlier step filled."""
    assert value is not None
    return value


def _compile_passes(b: Build) -> None:
    """The pass pipeline (dumps with ``dump_after``)."""
    dump_dir = make_directory(b.staging, BUILD_DIRECTORY) if b.dump_after else None
    b.ir = run_pipeline(b.program, b.options, dump_after=b.dump_after, dump_dir=dump_dir)


def _choose_flags(b: Build) -> None:
    """The host's C flags (defaults, app directory, ``cflags(...)``, $FLOEM_CFLAGS, packet
    I/O), the NIC platform (its tools checked when a process is on the NIC) and its flags."""
    app_dir = [f"-I{os.path.dirname(b.program.app_file)}"] if b.program.app_file else []
    user = shlex.split(os.environ.get("FLOEM_CFLAGS", ""))
    ir = _ready(b.ir)
    b.platform = PLATFORMS[b.options.nic]
    if _has_nic(ir):
        b.platform.check_tools()
    net_flags, b.net_libs = _network_flags(ir, b.options.net, b.platform, _has_nic(ir))
    counting = ["-DFLOEM_COUNT_INSTRUCTIONS"] if b.options.count_instructions else []
    b.cflags = DEFAULT_CFLAGS + app_dir + b.program.extra_cflags + user + net_flags + counting
    b.nic_cflags = _nic_cflags(b.cflags, b.platform, b.options)


def _generate_files(b: Build) -> None:
    """The C of every process, its header and the Makefile."""
    b.runtime_sources = _runtime_sources()
    b.files = generate(_ready(b.ir), b.cflags, [f"runtime/src/{s}" for s in b.runtime_sources],
                       _ready(b.platform).compiler(), b.nic_cflags, b.net_libs)


def _choose_directory(b: Build) -> None:
    """The content key of everything the build reads, and the directory (given, or the
    cache's entry for the key, which then receives the dumps)."""
    ir = _ready(b.ir)
    headers = [c.text.split('"')[1] for c in ir.includes if c.text.startswith('#include "/')]
    external = [f for p in ir.processes.values() for f in p.external_main]
    b.key = _content_key(b.files, b.cflags + b.nic_cflags, ir.depends + headers + external,
                         [_ready(b.platform).compiler()] if _has_nic(ir) else [],
                         b.program.params)
    if b.out_dir is None:
        b.out_dir = os.path.join(cache_root(), b.key[:24])
        if b.dump_after:
            shutil.copytree(b.staging, b.out_dir, dirs_exist_ok=True)
    make_directory(b.out_dir, BUILD_DIRECTORY)


def _write_files(b: Build) -> None:
    """The generated files, the launcher script, the runtime's sources, the report."""
    ir, platform, out_dir = _ready(b.ir), _ready(b.platform), _ready(b.out_dir)
    script = launcher(ir, list(platform.emulator))
    if script is not None:
        b.files.append(script)
    written = [_write(out_dir, f.name, f.text) for f in b.files]
    if script is not None:
        os.chmod(os.path.join(out_dir, "run"), 0o755)
    written += _copy_floem_c(out_dir)
    b.result = result = _result(ir, out_dir, written, platform)
    result.traced, result.trace_filter = b.options.trace, b.options.trace_filter
    if b.report_file:
        result.report = _write(out_dir, "report.txt", report(ir))
        result.files.append(result.report)


def _compile_c(b: Build) -> None:
    """make, unless the directory already holds this key's outputs."""
    out_dir, result = _ready(b.out_dir), _ready(b.result)
    stamp = os.path.join(out_dir, ".floem-build")
    outputs = list(result.executables.values()) + result.libraries
    if _read(stamp) == b.key and all(os.path.exists(p) for p in outputs):
        result.compiled = False
        return
    result.warnings += _make(out_dir, b.files, _ready(b.ir))
    _write(out_dir, ".floem-build", b.key)


#: The build driver, in order; each step reads and fills the `Build`.
BUILD_STEPS = [_compile_passes, _choose_flags, _generate_files, _choose_directory, _write_files,
               _compile_c]


def build_program(program: Any, options: BuildOptions = BuildOptions(),
                  out_dir: str | None = None, dump_after: str | None = None,
                  report_file: bool = False) -> BuildResult:
    """Compile ``program`` with ``options`` into ``out_dir`` (default: a content-addressed
    cache directory): the `BUILD_STEPS`."""
    b = Build(program, options, out_dir, dump_after, report_file)
    for step in BUILD_STEPS:
        step(b)
    return _ready(b.result)


def _has_nic(ir: ProgramIR) -> bool:
    return any(p.device == Device.NIC for p in ir.processes.values())


def run_program(program: Any, timeout: float | None = None, duration: float | None = None,
                args: list[str] | None = None, capture: bool = True, out_dir: str | None = None,
                dump_after: str | None = None, report_file: bool = False,
                **opts: Any) -> RunResult:
    """Build (cached) and run every process of ``program``; the result is the main process's.

    Network settings (``port``, ``listen``, ``pcap_in``, ``pcap_out``, ``pcap_timing``,
    ``pcap_loop``, ``eal``) go to the runtime; ``trace=N`` traces the first N packets (`run_built`);
    the other keywords are `BuildOptions` fields.
    """
    network = {k: opts.pop(k) for k in ("port", "listen", "pcap_in", "pcap_out",
                                        "pcap_timing", "pcap_loop", "eal") if k in opts}
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
                        pcap_loop: int | None = None) -> dict[str, str]:
    """Run-time settings of the packet I/O backend, as the runtime reads them (net.h)."""
    env = {"FLOEM_NET": net}
    for name, value in (("FLOEM_PCAP_IN", pcap_in), ("FLOEM_PCAP_OUT", pcap_out)):
        if value is not None:
            env[name] = os.path.abspath(value)
    for name, setting in (("FLOEM_NET_PORT", port), ("FLOEM_NET_ADDR", listen),
                          ("FLOEM_DPDK_EAL", eal),
                          ("FLOEM_PCAP_TIMING", pcap_timing), ("FLOEM_PCAP_LOOP", pcap_loop)):
        if setting is not None:
            env[name] = repr(setting) if isinstance(setting, float) else str(setting)
    return env


@dataclass(frozen=True)
class Counting:
    """Run every process under callgrind (a build with ``count_instructions``), which writes
    to ``base``.PROCESS-N (its N-th thread) what its threads execute on packets:
    instructions, atomic operations and, for a process ``caches`` names, the misses of a
    simulated cache of that geometry (``I1:D1:LL``, each ``BYTES,WAYS,LINE``)
    (docs/exploration.md); and valgrind's own messages to ``base``.PROCESS.log."""

    base: str
    caches: dict[str, str] = field(default_factory=dict)

    def prefix(self, process: str) -> list[str]:
        """The command that runs ``process`` counted, before the process's own command."""
        command = ["valgrind", "-q", "--tool=callgrind", "--collect-atstart=no",
                   "--collect-bus=yes", "--separate-threads=yes",
                   f"--callgrind-out-file={self.base}.{process}",
                   f"--log-file={self.base}.{process}.log"]
        if process in self.caches:
            i1, d1, ll = self.caches[process].split(":")
            command += ["--cache-sim=yes", f"--I1={i1}", f"--D1={d1}", f"--LL={ll}"]
        return command


def run_built(built: BuildResult, program: Any, timeout: float | None = None,
              duration: float | None = None, args: list[str] | None = None,
              capture: bool = True, env: dict[str, str] | None = None,
              count: Counting | None = None, trace: int | None = None) -> RunResult:
    """Run the processes of a finished build; the result is the main process's.

    ``count``: run every process (built with ``count_instructions``) under callgrind.
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
    others = {n: built.commands[n] for n, p in built.executables.items()
              if p != built.main_executable}
    prefixes = {}
    if count is not None:
        if shutil.which("valgrind") is None:
            raise FloemError("--count-instructions needs valgrind (apt-get install valgrind)")
        unknown = set(count.caches) - set(built.executables)
        if unknown:
            raise FloemError(f"--count-cache names no process of the program: "
                             f"{', '.join(sorted(unknown))} (its processes: "
                             f"{', '.join(sorted(built.executables))})")
        prefixes = {n: count.prefix(n) for n in built.executables}
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
    if not any(n.uses_network for n in ir.nodes()):
        return [], []
    flags = [f"-DFLOEM_NET_{net.upper()}"]
    if net == "pcap":
        return flags, _pcap_libs(platform if has_nic else None)
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


def _nic_cflags(cflags: list[str], platform: Platform, options: BuildOptions) -> list[str]:
    """Flags of the NIC program: the host's (sanitizers only natively) plus the platform's."""
    flags = [f for f in cflags if platform.name == "emu" or not f.startswith("-fsanitize")]
    flags += list(platform.cflags) + shlex.split(os.environ.get("FLOEM_NIC_CFLAGS", ""))
    if not options.sync_layer:
        flags.append("-DFLOEM_SYNC_BLOCKING")
    return flags


def _runtime_sources() -> list[str]:
    return [f for f in _c_files(os.path.join(runtime_dir(), "src")) if f.endswith(".c")]


def _copy_floem_c(out_dir: str) -> list[str]:
    """Copy Floem's C (`build_copies`: the runtime, the element library's support files) into
    the build directory, which its generated files name (`floem.paths.in_build`)."""
    return [_write(out_dir, f"{copy}/{name}", _read(os.path.join(installed, name)) or "")
            for installed, copy in build_copies().items() for name in _c_files(installed)]


def _c_files(directory: str) -> list[str]:
    """The C sources and headers in ``directory``, in order."""
    return sorted(f for f in os.listdir(directory) if f.endswith((".c", ".h")))


def _content_key(files: list[GeneratedFile], cflags: list[str], depends: list[str],
                 compilers: list[str], params: dict[str, Any]) -> str:
    h = hashlib.sha256(repr(sorted(params.items())).encode())
    for f in files:
        h.update(f.name.encode() + b"\0" + f.text.encode() + b"\0")
    for installed in build_copies():
        for name in _c_files(installed):
            h.update(name.encode() + (_read(os.path.join(installed, name)) or "").encode())
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
    main = ir.main_process
    return BuildResult(out_dir=out_dir, files=written + list(executables.values()) + libraries,
                       executables=executables, commands=commands, libraries=libraries, headers=headers,
                       main_executable=executables.get(main) if main else None,
                       warnings=list(ir.warnings),
                       receives=any(n.receives_packets for n in ir.nodes()))


def _make(out_dir: str, files: list[GeneratedFile], ir: ProgramIR) -> list[str]:
    """Run make; returns the C compiler's warnings, raises its first error."""
    if shutil.which("make") is None:
        raise FloemError("'make' is not installed (apt-get install make)")
    with subprocess.Popen(["make", "-s", "-C", out_dir, "-j2"], stdout=subprocess.PIPE,
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
