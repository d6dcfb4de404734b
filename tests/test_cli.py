"""The floem command as a user drives it: build outputs and cache, run, check, graph; its
conventions (--version, python -m floem, examples in --help, exit statuses, errors and
warnings in the compilers' FILE:LINE form) and docs/cli.md generated from its parser."""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from conftest import PROGRAMS, ROOT, floem, left_in_shm
from floem.cli import EXAMPLES, EXIT_STATUSES

INC2 = os.path.join(PROGRAMS, "callable_inc2.py")

THREAD_APP = r'''
from floem import Element, Output, Segment, main

class Tick(Element):
    def configure(self):
        self.out = Output()
    def impl(self):
        self.run_c("usleep(1000); output { out(); }")

class Sink(Element):
    def configure(self):
        from floem import Input
        self.inp = Input()
    def impl(self):
        self.run_c("")

class Ticker(Segment):
    def impl(self):
        Tick() >> Sink()

Ticker("ticker")
'''


def write_app(tmp_path, text: str, name: str = "app.py") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_build_writes_every_output(tmp_path) -> None:
    out = tmp_path / "out"
    result = floem("build", INC2, "-o", str(out))
    assert result.returncode == 0, result.stderr
    for name in ("callable_inc2.c", "callable_inc2.h", "Makefile", "callable_inc2",
                 "libcallable_inc2.a", "libcallable_inc2.so"):
        assert (out / name).exists(), name
    header = (out / "callable_inc2.h").read_text()
    assert "int inc2(int arg0);" in header
    assert "void floem_init(void);" in header and "void floem_finalize(void);" in header


def test_an_app_of_several_files_is_named_after_the_one_given(tmp_path) -> None:
    """The program is the app file's, even when a module it imports makes the first named
    thing; and an element's C includes a header beside the Python file that holds it (the
    front end reads its type, gcc its macro), as a trace filter's C does."""
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "__init__.py").write_text("")
    (tmp_path / "parts" / "twice.h").write_text("typedef int count_t;\n"
                                                "#define TWICE(x) (2 * (x))\n")
    (tmp_path / "parts" / "elements.py").write_text(
        "from floem import Element, Input, Int, Output, State, Field, include\n"
        "class Total(State):\n"
        "    n = Field(Int)\n"
        "total = Total('total')\n"
        "include('#include \"twice.h\"')\n"
        "class Double(Element):\n"
        "    def configure(self):\n"
        "        self.inp = Input(Int)\n"
        "        self.out = Output(Int)\n"
        "    def impl(self):\n"
        "        self.run_c('count_t x = inp(); output { out(TWICE(x)); }')\n")
    app = tmp_path / "doubler.py"
    app.write_text(
        "from floem import CallableSegment, Input, Int, Output, main\n"
        "from parts.elements import Double\n"
        "class doubled(CallableSegment):\n"
        "    def configure(self):\n"
        "        self.inp = Input(Int)\n"
        "        self.out = Output(Int)\n"
        "    def impl(self):\n"
        "        self.inp >> Double() >> self.out\n"
        "doubled('doubled')\n"
        "main(r'printf(\"%d\\n\", doubled(21));')\n")
    out = tmp_path / "out"
    built = floem("build", str(app), "-o", str(out))
    assert built.returncode == 0, built.stderr
    assert (out / "doubler.c").exists() and (out / "doubler").exists(), os.listdir(out)
    ran = subprocess.run([str(out / "doubler")], capture_output=True, text=True, timeout=60)
    assert ran.stdout == "42\n", ran.stderr
    traced = floem("build", str(app), "-o", str(tmp_path / "traced"), "--trace",
                   "--trace-filter", "(count_t)1 == 1")      # the filter finds the header too
    assert traced.returncode == 0, traced.stderr


def test_generated_c_is_readable(tmp_path) -> None:
    out = tmp_path / "out"
    assert floem("build", INC2, "-o", str(out)).returncode == 0
    c = (out / "callable_inc2.c").read_text()
    assert "static void Inc0(void *state, int inp_0)" in c
    assert "static void Inc1(void *state, int inp_0)" in c
    assert "int x = inp_0;" in c                       # the body, recognisable
    assert f'#line 11 "{INC2}"' in c                   # pointing at the app file


def test_rebuild_of_unchanged_app_does_not_recompile(tmp_path) -> None:
    out = tmp_path / "out"
    assert "compiled" in floem("build", INC2, "-o", str(out)).stdout
    exe = out / "callable_inc2"
    before = exe.stat().st_mtime_ns
    second = floem("build", INC2, "-o", str(out))
    assert "up to date" in second.stdout
    assert exe.stat().st_mtime_ns == before


def test_run_uses_the_cache(tmp_path) -> None:
    cache = tmp_path / "cache"
    env = {"FLOEM_CACHE": str(cache)}
    assert floem("run", INC2, env=env).returncode == 0
    stamps = {p: p.stat().st_mtime_ns for p in cache.glob("*/callable_inc2")}
    assert len(stamps) == 1
    assert floem("run", INC2, env=env).stdout.startswith("inc2(0) = 2")
    assert {p: p.stat().st_mtime_ns for p in cache.glob("*/callable_inc2")} == stamps


def test_run_passes_arguments_and_exit_status(tmp_path) -> None:
    app = write_app(tmp_path, r'''
from floem import main
main(r"""
    for (int i = 1; i < argc; i++)
        printf("arg %s\n", argv[i]);
    return argc;
""")
''')
    result = floem("run", app, "--", "one", "two words")
    assert result.stdout == "arg one\narg two words\n"
    assert result.returncode == 3
    after_app = floem("run", app, "--timeout", "60", "--", "--one", "-D", "x=1")
    assert after_app.stdout == "arg --one\narg -D\narg x=1\n", after_app.stderr


def test_timeout_is_reported_not_hung(tmp_path) -> None:
    app = write_app(tmp_path, 'from floem import main\nmain("for (;;) sleep(1);")\n')
    start = time.monotonic()
    result = floem("run", "--timeout", "1", app)
    assert time.monotonic() - start < 30
    assert result.returncode == 124
    assert "timed out after 1 s" in result.stderr


def test_crash_is_reported_by_name_and_signal(tmp_path) -> None:
    app = write_app(tmp_path, 'from floem import include, main\n'
                    'include("#include <signal.h>")\nmain("raise(SIGSEGV);")\n', name="crasher.py")
    result = floem("run", "--timeout", "30", app)
    assert result.returncode == 128 + 11
    assert "process 'crasher' was killed by SIGSEGV" in result.stderr


def test_duration_stops_threads_cleanly(tmp_path) -> None:
    app = write_app(tmp_path, THREAD_APP)
    start = time.monotonic()
    result = floem("run", "--duration", "0.5", "--timeout", "30", app)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - start < 20


def test_check_runs_no_compiler(tmp_path) -> None:
    cache = tmp_path / "cache"
    result = floem("check", INC2, env={"CC": "/nonexistent/cc", "FLOEM_CACHE": str(cache)})
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stdout
    assert not list(cache.glob("**/*.c"))


def test_check_takes_every_option_that_changes_what_the_passes_decide() -> None:
    kvs = [os.path.join(ROOT, "examples", "kvs", "kvs.py"), "-D", "design=split"]
    assert floem("check", *kvs).stderr == ""
    # Queues carrying whole states carry fields some paths never wrote: what build warns.
    result = floem("check", *kvs, "--send-all-fields", "--no-slicing", "--no-sync-layer",
                   "--no-counters", "--slice-pool", "64")
    assert result.returncode == 0, result.stderr
    assert "Request.vallen is read by 'requests_enq0' on a path where it was never written" \
        in result.stderr
    result = floem("check", *kvs, "--slice-pool", "-1")
    assert result.returncode == 1 and "--slice-pool must be a whole number" in result.stderr


def test_report(tmp_path) -> None:
    result = floem("build", os.path.join(PROGRAMS, "perpacket_state.py"), "-o",
                   str(tmp_path / "out"), "--report")
    assert result.returncode == 0, result.stderr
    report = (tmp_path / "out" / "report.txt").read_text()
    assert "calc: callable, device CPU" in report
    assert "per-packet state Packet: uses doubled, key, tag" in report


def test_graph_dot(tmp_path) -> None:
    dot = floem("graph", os.path.join(PROGRAMS, "fanout_join.py")).stdout
    assert 'subgraph "cluster_square_minus"' in dot
    assert '"Square0" -> "Sum0" [taillabel="out", headlabel="a"' in dot
    assert "fillcolor=\"#dbe9f6\"" in dot          # CPU colour


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
@pytest.mark.parametrize("fmt,magic", [("svg", b"<svg"), ("png", b"\x89PNG")])
def test_graph_rendered(tmp_path, fmt: str, magic: bytes) -> None:
    out = tmp_path / f"g.{fmt}"
    assert floem("graph", INC2, "-o", str(out)).returncode == 0
    assert magic in out.read_bytes()[:400]


def test_build_writes_a_launcher_for_multi_process_programs(tmp_path) -> None:
    out = tmp_path / "out"
    assert floem("build", os.path.join(PROGRAMS, "queue_processes.py"), "-o", str(out)).returncode == 0
    before = set(os.listdir("/dev/shm"))
    result = subprocess.run([str(out / "run")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "received 1000 packets, sum 500500\n"
    assert left_in_shm(before) == set()


# -- conventions: --version, python -m floem, --help, error forms, docs/cli.md --------------

def test_version_is_the_package_metadata() -> None:
    result = floem("--version")
    assert result.returncode == 0
    assert result.stdout == f"floem {importlib.metadata.version('floem')}\n"


def test_python_m_floem_is_the_command() -> None:
    result = subprocess.run([sys.executable, "-m", "floem", "check", INC2], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{INC2}: ok (1 segment, 4 elements)\n"


UNMADE_APP = '''from floem import Element, Input, Output, Segment, main

class Src(Element):
    def configure(self):
        self.out = Output()
    def impl(self):
        self.run_c("output { out(); }")

class Sink(Element):
    def configure(self):
        self.inp = Input()
    def impl(self):
        self.run_c("inp();")

class Base(Segment):
    pass

class Pipe(Base):
    def impl(self):
        Src() >> Sink()

class Forgotten(Base):
    def impl(self):
        Src() >> Sink()

Pipe("pipe")
'''


def test_a_segment_class_never_made_is_a_warning(tmp_path) -> None:
    app = write_app(tmp_path, UNMADE_APP)
    result = floem("check", app)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{app}: ok (1 segment, 2 elements)\n"
    # a base class of one that is made is not named, nor the classes imported
    assert result.stderr == (f"{app}:22: warning: segment class 'Forgotten' is defined but "
                             f"never instantiated, so its elements are not in the program "
                             f"(make one: Forgotten(\"name\"))\n")


@pytest.mark.parametrize("command", sorted(EXAMPLES))
def test_every_subcommand_help_ends_with_an_example(command: str) -> None:
    result = floem(command, "--help")
    assert result.returncode == 0, result.stderr
    example = result.stdout.split("\nexample", 1)[1]
    assert f"  floem {command} " in example


def test_top_help_lists_the_exit_statuses() -> None:
    result = floem("--help")
    assert result.returncode == 0
    assert "exit status:" in result.stdout
    for status, _ in EXIT_STATUSES:
        assert f"\n  {status} " in result.stdout


def test_usage_error_is_status_2() -> None:
    result = floem("build", "--nic", "octeon", INC2)
    assert result.returncode == 2
    assert "floem build: error: argument --nic: invalid choice: 'octeon'" in result.stderr


def test_a_wrong_option_shows_the_usage_of_its_command() -> None:
    result = floem("run", INC2, "--bogus")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: floem run ")
    assert "floem run: error: unrecognized arguments: --bogus" in result.stderr
    missing = floem("run")
    assert missing.returncode == 2
    assert missing.stderr.splitlines()[-1] == \
        "floem run: error: the following arguments are required: app"


@pytest.mark.parametrize("args, message", [
    (["graph", INC2, "--after", "bogus"], "argument --after: no pass named 'bogus'"),
    (["graph", INC2, "-o", "g.jpg"], "argument -o/--out: cannot write 'g.jpg': use .dot, .svg, "
                                     ".png or .pdf"),
    (["run", INC2, "--port", "70000"], "argument --port: need a UDP port, 1 to 65535, not "
                                       "'70000'"),
    (["place", INC2, "--nic", "octeon"], "argument --nic: no nic platform 'octeon'"),
])
def test_a_bad_value_is_a_usage_error(args: list[str], message: str) -> None:
    result = floem(*args)
    assert result.returncode == 2
    assert f"floem {args[0]}: error: {message}" in result.stderr


def test_a_nic_for_a_program_with_no_nic_segment_is_a_warning() -> None:
    echo = os.path.join(ROOT, "examples", "echo", "echo.py")
    result = floem("check", "--nic", "liquidio", echo)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "floem: warning: --nic liquidio: the program has no NIC segment, " \
                            "so nothing runs on that NIC\n"
    assert floem("check", "--nic", "liquidio", echo, "-D", "device=nic").stderr == ""


def test_a_directory_is_not_an_app_file(tmp_path) -> None:
    result = floem("check", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr == f"floem: error: {tmp_path} is a directory: give the app file (a " \
                            f"Python file) in it\n"


@pytest.mark.parametrize("option", ["--timeout", "--duration"])
def test_a_time_below_zero_is_a_usage_error(option: str) -> None:
    result = floem("run", option, "-1", INC2)
    assert result.returncode == 2
    assert f"argument {option}: need a number above 0, not '-1'" in result.stderr


@pytest.mark.parametrize("args, env, message", [
    (["build", INC2, "-o", "{file}"], {},
     "cannot create the build directory {file}: it exists and is not a directory"),
    (["build", INC2, "-o", "{file}/sub"], {},
     "cannot create the build directory {file}/sub: {file} is not a directory"),
    (["build", INC2, "--dump-after", "all", "-o", "{file}"], {},
     "cannot create the build directory {file}: it exists and is not a directory"),
    (["run", INC2], {"FLOEM_CACHE": "/proc/floem-cache"},
     "cannot create the build cache (FLOEM_CACHE) /proc/floem-cache: No such file or directory"),
    (["run", INC2], {"FLOEM_CACHE": "{file}/cache"},
     "cannot create the build cache (FLOEM_CACHE) {file}/cache: {file} is not a directory"),
    (["graph", INC2, "-o", "{file}/graph.dot"], {}, "{file}/graph.dot: {file} is not a directory"),
    (["graph", INC2, "-o", "/proc/floem-graph.dot"], {},
     "/proc/floem-graph.dot: No such file or directory"),
], ids=["build-o-file", "build-o-under-file", "dump-after-o-file", "cache-unmakable",
        "cache-under-file", "graph-o-under-file", "graph-o-unwritable"])
def test_a_path_floem_cannot_write_is_one_line_and_status_1(tmp_path, args: list[str],
                                                             env: dict[str, str],
                                                             message: str) -> None:
    file = tmp_path / "file"
    file.write_text("")
    result = floem(*[a.format(file=file) for a in args],
                   env={k: v.format(file=file) for k, v in env.items()})
    assert (result.returncode, result.stderr) == \
        (1, f"floem: error: {message.format(file=file)}\n")


LOCATED_APP = '''from floem import Element, Segment, Output

class Src(Element):
    def configure(self):
        self.out = Output()
    def impl(self):
        self.run_c("output { out(); }")

class S(Segment):
    def impl(self):
        Src() >> Nowhere()
S("s")
'''


def test_located_error_has_the_compiler_form(tmp_path) -> None:
    """`FILE:LINE: error: ...` alone on its line, as editors parse it."""
    app = write_app(tmp_path, LOCATED_APP)
    result = floem("check", app)
    assert result.returncode == 1
    assert re.fullmatch(rf"{re.escape(app)}:11: error: the app raised NameError: .*Nowhere.*\n",
                        result.stderr), result.stderr


def test_error_in_a_file_at_no_line(tmp_path) -> None:
    app = write_app(tmp_path, "from floem import param\nparam('n', 1)\n")
    result = floem("check", app, "-D", "m=2")
    assert result.returncode == 1
    assert result.stderr.startswith(f"{app}: error: -D m: no such parameter"), result.stderr


def test_error_with_no_place_keeps_the_floem_form(tmp_path) -> None:
    result = floem("check", str(tmp_path / "missing.py"))
    assert result.returncode == 1
    assert result.stderr == f"floem: error: no such app file: {tmp_path / 'missing.py'}\n"


def test_gcc_warning_has_the_compiler_form(tmp_path) -> None:
    app = write_app(tmp_path, 'from floem import main\nmain(r"""\n    int unused;\n""")\n')
    result = floem("build", app, "-o", str(tmp_path / "out"), env={"FLOEM_CFLAGS": ""})
    assert result.returncode == 0, result.stderr
    assert re.search(rf"^{re.escape(app)}:3:\d+: warning: C compiler: unused variable",
                     result.stderr, re.M), result.stderr


def test_cli_doc_is_current() -> None:
    """docs/cli.md is what `python -m floem.cli_doc` writes from the parser now."""
    result = subprocess.run([sys.executable, "-m", "floem.cli_doc"], capture_output=True,
                            text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    with open(os.path.join(ROOT, "docs", "cli.md")) as f:
        assert result.stdout == f.read(), \
            "docs/cli.md is stale: python -m floem.cli_doc > docs/cli.md"
    for command in EXAMPLES:
        assert f"## `floem {command}`" in result.stdout and EXAMPLES[command] in result.stdout
    for status, meaning in EXIT_STATUSES:
        assert f"| {status} | {meaning} |" in result.stdout


def test_help_gives_the_defaults_cli_md_gives():
    """Every option whose default docs/cli.md states is given with it by ``--help``."""
    from floem.cli import build_parser, default_note
    commands = next(a for a in build_parser()._actions
                    if isinstance(a, argparse._SubParsersAction)).choices
    for name, parser in commands.items():
        helps = re.split(r"\n(?=  -)", floem(name, "--help").stdout)
        for action in parser._actions:
            note = default_note(action).strip()
            if note:
                option = action.option_strings[0]
                told = [h for h in helps if h.startswith(f"  {option}")]
                assert told and note in " ".join(told[0].split()), (name, option, note)
