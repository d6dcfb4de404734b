"""Every user mistake is a located `FloemError`, reported by the real CLI.

Each case is a small app file: a shared header of elements plus the mistake.
The line the error must name carries the marker ``<-- error`` (a Python
comment, or a C comment inside a body). The CLI must exit 1 and print
``APP:LINE: error: ...`` on stderr (the form of compilers, which editors parse), with no
Python traceback; for a
mistake inside a C body it also names the element and the line inside the
body (counted from the line of ``self.run_c(r'''``, where the body starts).
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from conftest import floem

MARK = "<-- error"

HEADER = '''\
from floem import *


class Src(Element):
    def configure(self):
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(1); }")


class Inc(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c("int x = inp(); output { out(x + 1); }")


class Sink(Element):
    def configure(self, ty=Int):
        self.inp = Input(ty)

    def impl(self):
        self.run_c("inp();")


class Two(Element):
    """An element with two output ports."""

    def configure(self):
        self.inp = Input(Int)
        self.small = Output(Int)
        self.big = Output(Int)

    def impl(self):
        self.run_c("int x = inp(); output switch { case x < 9: small(x); else: big(x); }")


class Drop(Element):
    """A leaf taking a dequeued packet."""

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c("(void)0;")


class Packet(State):
    key = Field(Int)


'''


def body_element(name: str, body: str, outputs: str = "self.out = Output(Int)",
                 state: bool = False) -> str:
    """A segment ``s`` feeding `Src` into an element ``name`` with C body ``body``.

    With ``state`` the segment runs in a flow with per-packet state `Packet`.
    """
    inner = f'''\
class Body(Element):
    def configure(self):
        self.inp = Input(Int)
        {outputs}

    def impl(self):
        self.run_c(r\'\'\'{body}\'\'\')


class S(Segment):
    def impl(self):
        Src() >> Body(name="{name}")


'''
    if not state:
        return inner + 'S("s")\n'
    return inner + '''\
class F(Flow):
    state = PerPacket(Packet)

    def impl(self):
        S("s")


F()
'''


def callable_app(wiring: str, marked: bool = True) -> str:
    """A callable segment ``f(int) -> int`` wired by ``wiring`` (uses ``self``), and a main.

    With ``marked`` the error is expected at the segment's instantiation.
    """
    mark = "  # <-- error" if marked else ""
    return f'''\
class f(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
{textwrap.indent(textwrap.dedent(wiring), " " * 8)}

f("f"){mark}
main('printf("%d\\\\n", f(1));')
'''


def segment(wiring: str) -> str:
    """A segment whose `impl` is ``wiring``."""
    return f'''\
class S(Segment):
    def impl(self):
{textwrap.indent(textwrap.dedent(wiring), " " * 8)}

S("s")
'''


def queue_app(tx: str, rx: str, queue: str = "q = Queue('q', channel=2)") -> str:
    """Queue ``q`` (made by the line ``queue``) between segments wired by ``tx`` and ``rx``."""
    return f'''\
{queue}


class Tx(Segment):
    def impl(self):
        {tx}


class Rx(Segment):
    def impl(self):
        {rx}


Tx("tx")
Rx("rx")
'''


# (id, app text after HEADER, what the message says)
CHECK_CASES = [
    ("type mismatch on >>", segment('''
        src = Src()
        sink = Sink(ty=Uint(8))
        src >> sink  # <-- error
     '''), "type mismatch: Src0.out (int) >> Sink0.inp (uint8_t)"),
    ("type mismatch in a chain", segment('''
        Src() >> Inc() >> Sink(  # <-- error
            ty=Uint(8))
     '''), "type mismatch: Inc0.out (int) >> Sink0.inp (uint8_t)"),
    ("unknown port", segment('''
        a = Src()
        a.nope >> Sink()  # <-- error
     '''), "Src 'Src0' has no port 'nope' (ports: out)"),
    ("ambiguous output port", segment('''
        two = Two()
        Src() >> two
        two >> Sink()  # <-- error
     '''), "'Two0' has 2 output ports (small, big); name the port, e.g. Two0.small"),
    ("ambiguous input port", segment('''
        class Add(Element):
            def configure(self):
                self.a = Input(Int)
                self.b = Input(Int)
            def impl(self):
                self.run_c("a(); b();")
        Src() >> Add()  # <-- error
     '''), "'Add0' has 2 input ports (a, b); name the port, e.g. Add0.a"),
    ("connect into an output port", segment('''
        two = Two()
        Src() >> two.big  # <-- error
     '''), "cannot connect into output port Two0.big"),
    ("port read twice", body_element("twice", '''
            int a = inp();
            int b = inp();      /* <-- error */
            output { out(a + b); }
        '''), "element 'twice' (body line 3): input port 'inp' is read twice "
              "(body lines 2 and 3)"),
    ("output call outside the output forms", body_element("loose", '''
            int x = inp();
            if (x > 0)
                out(x);         /* <-- error */
            output { out(0); }
        '''), "element 'loose' (body line 4): output port 'out' called outside an output form"),
    ("C syntax error", body_element("broken", '''
            int x = inp();
            x = x + * ;         /* <-- error */
            output { out(x); }
        '''), "element 'broken' (body line 3): C syntax error"),
    ("unknown per-packet field", body_element("fields", '''
            int x = inp();
            state->nope = x;    /* <-- error */
            output { out(x); }
        ''', state=True), "element 'fields' (body line 3): the per-packet state has no field "
                          "'nope' (fields: key)"),
    ("per-packet state without a flow", body_element("nostate", '''
            int x = inp();
            state->key = x;     /* <-- error */
            output { out(x); }
        '''), "element 'nostate' (body line 3): 'state' used, but this element has no "
              "per-packet state"),
    ("output switch case calling no port", body_element("sw", '''
            int x = inp();
            output switch {
                case x > 0: small(x);
                case x < 0: ;   /* <-- error */
                else: big(0);
            }
        ''', outputs="self.small = Output(Int); self.big = Output(Int)"),
     "element 'sw' (body line 5): each case of an output switch calls exactly one output "
     "port; this one calls 0"),
    ("output port misspelled in a block", body_element("typo", '''
            int x = inp();
            output { outp(x + 1); }   /* <-- error */
        '''), "element 'typo' (body line 3): 'outp' is not an output port of this element (its "
              "ports: out)"),
    ("output port misspelled in a switch case", body_element("sw", '''
            int x = inp();
            output switch {
                case x < 0: negative(x);   /* <-- error */
                else: pos(x);
            }
        ''', outputs="self.neg = Output(Int); self.pos = Output(Int)"),
     "element 'sw' (body line 4): 'negative' is not an output port of this element (its ports: "
     "neg, pos)"),
    ("output port never fired", body_element("silent", '''/* <-- error: the body as a whole */
            printf("%d\\n", inp());
        '''), "element 'silent': element has output ports (out) but its body has no output "
              "form"),
    ("unreachable element", segment('''
        Src() >> Sink()
        lost = Inc()  # <-- error
        lost >> Sink()
     '''), "element 'Inc0' is unreachable from the source 'Src0' of segment 's'"),
    ("two sources in one segment", segment('''
        Src() >> Sink()
        Src() >> Sink()  # <-- error
     '''), "two sources in segment 's': 'Src0' ("),
    ("edge between two segments", '''\
class A(Segment):
    def impl(self):
        self.inc = Inc()
        Src() >> self.inc


a = A("a")


class B(Segment):
    def impl(self):
        a.inc >> Sink()  # <-- error


B("b")
''', "Inc0 (segment a) >> Sink0 (segment b) joins two segments; connect segments through "
     "a Queue"),
    ("join input never connected", segment('''
        j = Two()
        Src() >> j
        j.small >> Sink()
        class Join(Element):
            def configure(self):
                self.a = Input(Int)
                self.b = Input(Int)
            def impl(self):
                self.run_c("a(); b();")
        join = Join()  # <-- error
        j.big >> join.a
     '''), "join element 'Join0' never runs: input port 'b' is not connected"),
    ("callable output never reached", '''\
class f(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)  # <-- error

    def impl(self):
        self.inp >> Inc() >> Inc()

f("f")
main('printf("%d\\\\n", f(1));')
''', "nothing reaches the output of callable segment 'f': connect its last element to it "
        "(... >> self.out)"),
    ("callable arguments never read", callable_app('''
        Inc() >> self.out  # <-- error
     ''', marked=False), "element 'Inc0' is unreachable from the arguments of callable segment "
                        "'f' (self.inp)"),
    ("callable path without a return", callable_app('''
        two = Two()
        self.inp >> two
        two.small >> self.out
        two.big >> Sink()
     '''), "callable segment 'f' may finish without a return value (some path does not reach "
           "its output); give default_return=..."),
    ("name is not a C identifier", segment('''
        Src() >> Sink(name="my sink")  # <-- error
     '''), "name 'my sink' is not usable: names must be C identifiers"),
    ("name is a C keyword", segment('''
        Src() >> Sink(name="int")  # <-- error
     '''), "name 'int' is not usable"),
    ("name used twice", segment('''
        a = Src(name="same")
        a >> Sink(name="same")  # <-- error
     '''), "name 'same' is already used (at APP:"),
    ("segment and element with one name", segment('''
        Src() >> Sink(name="s")  # <-- error
     '''), "name 's' is already used (at APP:"),
    ("element named like a segment's thread function", segment('''
        Src() >> Sink(name="s_thread")  # <-- error
     '''), "element name 's_thread' is also the generated C's name for segment s's thread: "
        "rename the element"),
    ("element named like a queue's C global", queue_app(
        "Src() >> q.enq",
        "q.deq >> Drop(name='q_held')  # <-- error",
        queue="q = Queue('q')"),
     "element name 'q_held' is also the generated C's name for queue q's held"),
    ("element named like a persistent state's C pointer", segment('''
        class Counts(Element):
            seen = Persistent(Packet)

            def states(self, seen):
                self.seen = seen

            def configure(self):
                self.inp = Input(Int)

            def impl(self):
                self.run_c("seen->key += inp();")

        Src() >> Counts(states=[Packet(name="tally")], name="tally_state")  # <-- error
     '''), "element name 'tally_state' is also the generated C's name for state tally's state"),
    ("unknown configure keyword", segment('''
        Src() >> Sink(size=4)  # <-- error
     '''), "Sink.configure: got an unexpected keyword argument 'size'"),
    ("too many configure arguments", segment('''
        Src() >> Sink(configure=[Int, 4])  # <-- error
     '''), "Sink.configure: too many positional arguments"),
    ("missing configure argument", '''\
class Scale(Element):
    def configure(self, factor):
        self.inp = Input(Int)
        self.factor = factor

    def impl(self):
        self.run_c("inp();")


class S(Segment):
    def impl(self):
        Src() >> Scale()  # <-- error


S("s")
''', "Scale.configure: missing a required argument: 'factor'"),
    ("unknown segment option", '''\
class S(Segment):
    def impl(self):
        Src() >> Sink()


S("s", core=[1])  # <-- error
''', "unknown segment options: core"),
    ("bad cores", '''\
class S(Segment):
    def impl(self):
        Src() >> Sink()


S("s", cores=[])  # <-- error
''', "cores must be a non-empty list of core ids, not []"),
    ("cores as a number", '''\
class S(Segment):
    def impl(self):
        Src() >> Sink()


S("s", cores=2)  # <-- error
''', "cores is a list of core ids, one per thread (cores=[0, 1] for two threads), not the "
        "number 2"),
    ("cores as a word", '''\
class S(Segment):
    def impl(self):
        Src() >> Sink()


S("s", cores="0,1")  # <-- error
''', "cores must be a non-empty list of core ids, not '0,1'"),
    ("duplicate cores", '''\
class S(Segment):
    def impl(self):
        Src() >> Sink()


S("s", cores=[1, 2, 1])  # <-- error
''', "cores lists core 1 twice"),
    ("bad device", '''\
class S(Segment):
    def impl(self):
        Src() >> Sink()


S("s", device="GPU")  # <-- error
''', "device must be target.CPU, target.NIC or target.AUTO, not 'GPU'"),
    ("one-channel connection to a two-channel queue", queue_app(
        "Src() >> q  # <-- error", "q.deq[0] >> Drop()"),
     "queue 'q' has 2 channels: connect to q.enq[i]"),
    ("one-channel connection from a two-channel queue", queue_app(
        "Src() >> q.enq[0]", "q >> Drop()  # <-- error"),
     "queue 'q' has 2 channels: connect from q.deq[i]"),
    ("queue enqueued into but never dequeued", queue_app(
        "Src() >> q", "Src() >> Sink()", queue="q = Queue('q')  # <-- error"),
     "queue 'q': channel 0 is enqueued into but nothing dequeues from it"),
    ("queue with no channels", queue_app("Src() >> q", "q >> Drop()",
                                         queue="q = Queue('q', channel=0)  # <-- error"),
     "Queue channel= must be a positive integer, not 0"),
    ("queue of negative size", queue_app("Src() >> q", "q >> Drop()",
                                         queue="q = Queue('q', size=-1)  # <-- error"),
     "Queue size= must be a positive integer, not -1"),
    ("queue instances as a string", queue_app("Src() >> q", "q >> Drop()",
                                              queue="q = Queue('q', inst='2')  # <-- error"),
     "Queue inst= must be a positive integer, not '2'"),
    ("full port of a lossless queue", queue_app(
        "Src() >> q; q.full >> Drop()  # <-- error", "q >> Drop()", queue="q = Queue('q')"),
     "queue 'q' is lossless (its enqueues wait for room): only a Queue(..., lossless=False) "
     "has a full port"),
    ("external_main and main both given", callable_app("self.inp >> Inc() >> self.out",
                                                       marked=False)
     + "external_main('app.py')  # <-- error\n",
     "external_main(...) and main(...) (at APP:"),
    ("external_main of a missing file", segment("Src() >> Sink()")
     + "external_main('nowhere.c')  # <-- error\n",
     "external_main: no such file: "),
    ("external_main of a file that is not C", segment("Src() >> Sink()")
     + "external_main('app.py')  # <-- error\n",
     "external_main: give the program's C sources (.c files)"),
    ("external_main of a number", segment("Src() >> Sink()")
     + "external_main(3)  # <-- error\n",
     "external_main: give the program's C sources (.c files)"),
    ("edge beside a queue between its two segments", '''\
q = Queue("q")


class A(Segment):
    def impl(self):
        self.inc = Inc()
        Src() >> self.inc >> q


a = A("a")


class B(Segment):
    def impl(self):
        q >> Drop()
        a.inc >> Sink()  # <-- error


B("b")
''', "Inc0 (segment a) >> Sink0 (segment b) joins two segments; connect segments through "
     "a Queue"),
]


def expected_line(app: str) -> int:
    """The line holding the error marker."""
    lines = [i for i, text in enumerate(app.splitlines(), 1) if MARK in text]
    assert len(lines) == 1, "one error marker per case"
    return lines[0]


def body_line(app: str, line: int) -> int | None:
    """The body line of app line ``line``, when the marker there is a C comment on one line."""
    lines = app.splitlines()
    if "/* <-- error */" not in lines[line - 1]:
        return None
    start = max(i for i, text in enumerate(lines[:line], 1)
                if "run_c(r'''" in text or "main(r'''" in text)
    return line - start + 1


def write_app(tmp_path: Path, case_text: str) -> tuple[str, str]:
    app = HEADER + case_text
    path = tmp_path / "app.py"
    path.write_text(app)
    return str(path), app


def plain_quotes(text: str) -> str:
    """gcc quotes with ‘’ or '' depending on the locale."""
    return text.replace("‘", "'").replace("’", "'")


def assert_located_error(result, path: str, app: str, message: str) -> None:
    line = expected_line(app)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{path}:{line}: error: "), result.stderr
    assert plain_quotes(message.replace("APP", path)) in plain_quotes(result.stderr)
    inside = body_line(app, line)
    if inside is not None:
        assert f"(body line {inside}): " in first


@pytest.mark.parametrize("case_text, message", [c[1:] for c in CHECK_CASES],
                         ids=[c[0] for c in CHECK_CASES])
def test_floem_check_reports_the_mistake_at_its_line(tmp_path, case_text, message):
    path, app = write_app(tmp_path, case_text)
    assert_located_error(floem("check", path), path, app, message)


def test_a_channel_enqueued_into_but_never_dequeued(tmp_path):
    path, app = write_app(tmp_path, queue_app(
        "two = Two(); Src() >> two; two.small >> q.enq[0]; two.big >> q.enq[1]",
        "q.deq[0] >> Drop()", queue="q = Queue('q', channel=2)  # <-- error"))
    assert_located_error(floem("check", path), path, app,
                         "queue 'q': channel 1 is enqueued into but nothing dequeues from it")


# Mistakes only gcc sees: `floem build` maps them back to the element and app line
# (the tests build with -Werror, as tests/conftest.py sets for every build).
BUILD_CASES = [
    ("undeclared function", callable_app('''
        self.inp >> Inc() >> Calls(name="calls") >> self.out
     ''', marked=False), '''
class Calls(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r\'\'\'
            int x = inp();
            x = no_such_function(x);    /* <-- error */
            output { out(x); }
        \'\'\')

''', "element 'calls' (body line 3): C compiler: implicit declaration of function "
     "‘no_such_function’"),
    ("struct assigned to int", callable_app('''
        self.inp >> Inc() >> Assign(name="assign") >> self.out
     ''', marked=False), '''
class Assign(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r\'\'\'
            struct pair { int a, b; } p = { 1, 2 };
            int x = inp();
            x = p;                      /* <-- error */
            output { out(x); }
        \'\'\')

''', "element 'assign' (body line 4): C compiler: incompatible types when assigning to type "
     "‘int’ from type ‘struct pair’"),
    ("error in main", '''\
class S(Segment):
    def impl(self):
        Src() >> Sink()


S("s")
main(r\'\'\'
    int n = 1;
    n = nothing_here;                   /* <-- error */
\'\'\')
''', "", "element 'main' (body line 3): C compiler: ‘nothing_here’ undeclared"),
]


@pytest.mark.parametrize("case_text, elements, message", [c[1:] for c in BUILD_CASES],
                         ids=[c[0] for c in BUILD_CASES])
def test_floem_build_maps_gcc_errors_to_the_element(tmp_path, case_text, elements, message):
    path, app = write_app(tmp_path, elements + case_text)
    result = floem("check", path)
    assert result.returncode == 0, result.stderr
    result = floem("build", path, "-o", str(tmp_path / "out"))
    line = expected_line(app)
    assert_located_error(result, path, app, message)
    assert result.stderr.count("\n") == 1, "one line, not gcc's whole output"
    assert re.search(rf"^{re.escape(path)}:{line}: error: element '\w+' \(body line",
                     result.stderr)


def test_undeclared_function_without_werror(tmp_path):
    text = BUILD_CASES[0][2] + BUILD_CASES[0][1]
    path, app = write_app(tmp_path, text)
    result = floem("build", path, "-o", str(tmp_path / "out"), env={"FLOEM_CFLAGS": ""})
    assert_located_error(result, path, app, "element 'calls'")


def test_floem_run_reports_like_build(tmp_path):
    path, app = write_app(tmp_path, CHECK_CASES[0][1])
    result = floem("run", path)
    assert_located_error(result, path, app, CHECK_CASES[0][2])


def test_liveness_warnings_do_not_fail_check(tmp_path):
    path, app = write_app(tmp_path, body_element("dead", '''
            state->key = inp();
            output { out(0); }
        ''', state=True))
    result = floem("check", path)
    assert result.returncode == 0, result.stderr
    line = next(i for i, text in enumerate(app.splitlines(), 1) if 'name="dead"' in text)
    assert result.stderr.startswith(f"{path}:{line}: warning: per-packet field Packet.key "
                                    "is written by 'dead' but never read")
    assert result.stderr.count("\n") == 1


def test_gcc_error_in_generated_code_names_the_element(tmp_path):
    path, app = write_app(tmp_path, '''\
class Opaque(Element):
    def configure(self):
        self.out = Output("struct nothing")

    def impl(self):
        self.run_c("struct nothing *p = 0; output { out(*p); }")


class S(Segment):
    def impl(self):
        Opaque() >> Sink(ty="struct nothing")  # <-- error


S("s")
''')
    result = floem("build", path, "-o", str(tmp_path / "out"))
    assert_located_error(result, path, app, "element 'Opaque0'")


def test_independent_mistakes_are_reported_in_one_run(tmp_path):
    """Two wrongly typed connections, two bodies misusing their ports, two edges between
    segments: each check reports all its mistakes, in the order of the file, at once."""
    path, app = write_app(tmp_path, segment('''
        Src() >> Sink(ty=Uint(8))  # <-- first
        Src() >> Inc() >> Sink(ty=Uint(16))  # <-- second
     '''))
    result = floem("check", path)
    lines = app.splitlines()
    first, second = (lines.index(next(t for t in lines if mark in t)) + 1
                     for mark in ("<-- first", "<-- second"))
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.splitlines() == [
        f"{path}:{first}: error: type mismatch: Src0.out (int) >> Sink0.inp (uint8_t)",
        f"{path}:{second}: error: type mismatch: Inc0.out (int) >> Sink1.inp (uint16_t)"]

    bodies = '''
class Twice(Element):
    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.run_c("inp(); inp();")


class S(Segment):
    def impl(self):
        Src() >> Twice()
        Src() >> Twice()


S("s")
'''
    path, app = write_app(tmp_path, bodies)
    result = floem("check", path)
    assert result.returncode == 1, result.stderr
    assert [line.split(": error: ")[1] for line in result.stderr.splitlines()] == [
        f"element 'Twice{i}' (body line 1): input port 'inp' is read twice (body lines 1 and "
        "1); a port is read at most once" for i in (0, 1)]

    path, app = write_app(tmp_path, queue_app("global src; src = Src()",
                                              "src >> Sink(); src >> Inc() >> Sink()"))
    result = floem("check", path)
    assert result.returncode == 1, result.stderr
    assert [line.split(": error: ")[1] for line in result.stderr.splitlines()] == [
        f"Src0 (segment tx) >> {name} (segment rx) joins two segments; connect segments "
        "through a Queue" for name in ("Sink0", "Inc0")]


def test_a_flood_of_mistakes_is_cut_at_twenty(tmp_path):
    path, _ = write_app(tmp_path, segment("\n".join(["Src() >> Sink(ty=Uint(8))"] * 25)))
    result = floem("check", path)
    lines = result.stderr.splitlines()
    assert result.returncode == 1 and len(lines) == 21, result.stderr
    assert all(": error: type mismatch" in line for line in lines[:20])
    assert lines[20] == "floem: note: 5 more errors not shown"
