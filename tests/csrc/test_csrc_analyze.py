"""`analyze`: reads, output forms, per-packet fields, persistent states, and every error."""

import pytest
from csrc_helpers import APP, APP_LINE, info_of, make_body

from floem.csrc import FieldUse, analyze
from floem.errors import FloemError

ONE = {"inp": ["int"]}
PAIR = {"pkt": ["uint8_t*", "size_t"]}
OUTS = {"a": ["int"], "b": [], "c": ["int"]}
FIELDS = {"key": "uint8_t*", "keylen": "size_t", "hdr": "struct hdr", "arr": "int[4]",
          "n": "int", "m": "int"}


def error_of(code: str, **kwargs: object) -> FloemError:
    with pytest.raises(FloemError) as e:
        info_of(code, **kwargs)
    return e.value


def assert_error(e: FloemError, body_line: int | None, *words: str) -> None:
    assert e.file == APP and e.element == "el"
    assert e.body_line == body_line
    assert e.line == APP_LINE + (body_line - 1 if body_line else 0)
    for word in words:
        assert word in e.message, e.message


# ---- input reads ----------------------------------------------------------------------

def test_single_value_reads_anywhere_in_expressions():
    info = info_of("int y;\ny = inp() + 1;\n", inputs=ONE)
    assert info.reads == {"inp": 2} and info.consumed == set()
    info = info_of("int y = 0;\nif (y) {\n  printf(\"%d\", inp());\n}", inputs=ONE)
    assert info.reads == {"inp": 3}


def test_multi_value_reads_declare_or_assign():
    info = info_of("x++;\n(uint8_t *p, size_t n) = pkt();\nq(p, n);", inputs=PAIR)
    assert info.reads == {"pkt": 2}
    info = info_of("uint8_t *p; size_t n;\n\n(p, n) = pkt();", inputs=PAIR)
    assert info.reads == {"pkt": 3}


def test_consuming_reads():
    info = info_of("go();\n  inp();\nif (1) pkt();", inputs={**ONE, **PAIR, "go": []})
    assert info.reads == {"go": 1, "inp": 2, "pkt": 3}
    assert info.consumed == {"go", "inp", "pkt"}


def test_port_read_twice_names_both_lines():
    e = error_of("int x = inp();\n\nif (x) x = inp();", inputs=ONE)
    assert_error(e, 3, "'inp'", "read twice", "body lines 1 and 3")


def test_multi_value_port_read_as_single_value():
    e = error_of("int x = 0;\nx = pkt();", inputs=PAIR)
    assert_error(e, 2, "'pkt' carries 2 values", "(uint8_t* v0, size_t v1) = pkt();")


def test_no_value_port_read_as_value():
    e = error_of("int x = go();", inputs={"go": []})
    assert_error(e, 1, "'go' carries no value", "go();")


def test_port_called_with_arguments():
    e = error_of("int a;\nint x = inp(a);", inputs=ONE)
    assert_error(e, 2, "'inp' takes no arguments")


def test_tuple_arity_is_checked():
    e = error_of("int a, b, c;\n(a, b, c) = pkt();", inputs=PAIR)
    assert_error(e, 2, "carries 2 values", "3 variables")


# ---- output forms ---------------------------------------------------------------------

def test_block_always_fires_direct_calls_only():
    info = info_of("int x = inp();\noutput {\n  a(x);\n  if (x) b();\n}\n", inputs=ONE,
                   outputs=OUTS)
    assert info.form == "block"
    assert info.calls == {"a": [3], "b": [4]}
    assert info.always_fires == {"a"}
    assert info.switch_ports == [] and not info.switch_has_else


def test_a_call_spelled_like_a_port_that_fires_nothing_is_a_misspelled_port():
    e = error_of("int x = inp();\noutput { aa(x); }", inputs=ONE, outputs=OUTS)
    assert_error(e, 2, "'aa' is not an output port of this element (its ports: a, b, c)")
    # a C function called for its effect, firing nothing, is not one
    assert info_of("output { cleanup_everything(); }", outputs=OUTS).calls == {}
    # nor one called beside a port
    assert info_of("output { a(1); cc(); }", outputs=OUTS).calls == {"a": [1]}


def test_block_may_come_before_other_statements():
    info = info_of("int x = 1;\noutput { a(x); c(x); }\nx++;", outputs=OUTS)
    assert info.always_fires == {"a", "c"}


def test_switch_ports_and_else():
    code = ("int x = inp();\noutput switch {\n"
            "  case x > 0 ? x < 9 : 0: c(x);\n"
            "  case strcmp(\"a:b\", \"c\") == 0 && x != ':':\n    b();\n"
            "  else: a(x);\n}")
    info = info_of(code, inputs=ONE, outputs=OUTS)
    assert info.form == "switch"
    assert info.switch_ports == ["c", "b", "a"] and info.switch_has_else
    assert info.calls == {"c": [3], "b": [5], "a": [6]}
    assert info.always_fires == set()
    info = info_of("output switch { case 1: b(); }", outputs=OUTS)
    assert info.switch_ports == ["b"] and not info.switch_has_else


def test_multiple_calls_anywhere():
    info = info_of("output multiple;\nfor (int i = 0; i < 3; i++) {\n  out(i);\n}\nout(9);",
                   outputs={"out": ["int"]})
    assert info.form == "multiple"
    assert info.calls == {"out": [3, 5]} and info.always_fires == set()


def test_leaf_and_output_as_identifier():
    info = info_of("int output = 3; output++; // output {\nprintf(\"output { %d\", output);")
    assert info.form is None and info.calls == {} and info.always_fires == set()


@pytest.mark.parametrize("code, line, words", [
    ("int x = 1;\nif (x) {\n  output { a(x); }\n}", 3, ["top level"]),
    ("int x = 1;\nif (x)\n  output { a(x); }", 3, ["top level"]),
    ("while (1) {\n output switch { case 1: a(1); }\n}", 2, ["top level"]),
    ("output { a(1); }\n\noutput { b(); }", 3, ["at most one output form", "lines 1 and 3"]),
    ("output { a(1); }\noutput multiple;", 2, ["at most one output form"]),
    ("int x = 1;\na(x);\noutput { b(); }", 2, ["'a' called outside an output form"]),
    ("output { b(); }\nif (1) a(1);", 2, ["'a' called outside an output form"]),
    ("output {\n  a(1);\n  if (1) a(2);\n}", 3, ["'a' is called twice", "lines 2 and 3"]),
    ("output switch {\n case 1: a(1);\n case 2: x++;\n}", 3, ["exactly one output port",
                                                          "calls 0"]),
    ("output switch {\n case 1: a(1); b();\n}", 2, ["exactly one output port", "calls 2"]),
    ("output switch {\n case 1:\n   if (y) a(1);\n}", 3, ["'a' must be called directly"]),
    ("output switch {\n case c(1): a(1);\n}", 2, ["'c' called in a case condition"]),
    ("output multiple;", 1, ["exactly one output port", "has 3 (a, b, c)"]),
    ("output {\n a(1, 2); }", 2, ["'a' carries 1 value, but is called with 2 arguments"]),
    ("output {\n b(3); }", 2, ["'b' carries 0 values, but is called with 1 argument"]),
])
def test_output_form_errors(code, line, words):
    assert_error(error_of(code, outputs=OUTS), line, *words)


def test_output_form_without_output_ports():
    assert_error(error_of("int x;\noutput { x++; }"), 2, "no output ports")


def test_output_ports_without_form():
    assert_error(error_of("int x = 1;", outputs=OUTS), None, "no output form", "(a, b, c)")


def test_empty_body():
    info = info_of("")
    assert info.form is None and info.reads == {}
    assert_error(error_of("", outputs=OUTS), None, "no output form")


# ---- per-packet state -------------------------------------------------------------------

@pytest.mark.parametrize("code, uses, kills, writes", [
    ("int x = state->n;", {"n"}, set(), set()),
    ("int x = state.n + state.m;", {"n", "m"}, set(), set()),
    ("state->n = 1;", set(), {"n"}, {"n"}),
    ("state.n = state.n + 1;", {"n"}, {"n"}, {"n"}),
    ("if (1) state->n = 1;", set(), set(), {"n"}),
    ("for (;;) { state->n = 1; }", set(), set(), {"n"}),
    ("state->n += 1;", {"n"}, set(), {"n"}),
    ("state->n++; --state->m;", {"n", "m"}, set(), {"n", "m"}),
    ("state->hdr.len = 4;", set(), set(), {"hdr"}),
    ("state->arr[2] = 4;", set(), set(), {"arr"}),
    ("state->key[0] = 4;", {"key"}, set(), {"key"}),
    ("*state->key = 4;", {"key"}, set(), {"key"}),
    ("int *p = &state->n;", {"n"}, set(), {"n"}),
    ("int y = state->hdr.len;", {"hdr"}, set(), set()),
    ("f(state->n);", {"n"}, set(), set()),
    ("f(state->key);", {"key"}, set(), {"key"}),
    ("f(state->arr);", {"arr"}, set(), {"arr"}),
    ("printf(\"%s\", state->key);", {"key"}, set(), set()),
    ("memcpy(state->key, p, state->keylen);", {"key", "keylen"}, set(), {"key"}),
    ("memcpy(p, state->key, 4);", {"key"}, set(), set()),
    ("size_t s = sizeof(state->hdr) + sizeof state->n;", set(), set(), set()),
    ("f(state);", set(FIELDS), set(), set(FIELDS)),
    ("int x = 1, y = x ? state->n : state->m;", {"n", "m"}, set(), set()),
])
def test_field_classification(code, uses, kills, writes):
    info = info_of(code, fields=FIELDS)
    assert info.fields == FieldUse(uses, kills, writes)


def test_kills_in_output_block_and_multi_value_reads():
    info = info_of("(state->key, state.keylen) = pkt();\noutput { state->n = 2; a(1); }",
                   inputs=PAIR, outputs=OUTS, fields=FIELDS)
    assert info.fields.kills == {"key", "keylen", "n"} and info.fields.uses == set()


COND = "int x = rand(), y = rand();\n"


@pytest.mark.parametrize("code, kills", [
    ("if (x) state->n = 1; else state->n = 2;", {"n"}),
    ("if (x) { state->n = 1; state->m = 1; } else { state->n = x ? 2 : 3; }", {"n"}),
    ("if (x) state->n = 1;", set()),
    ("if (x) state->n = 1; else if (y) state->n = 2;", set()),
    ("if (x) state->n = 1; else if (y) state->n = 2; else state->n = 3;", {"n"}),
    ("if (x) { if (y) state->n = 1; else state->n = 2; } else state->n = 3;", {"n"}),
    ("switch (x) { case 0: state->n = 1; break; case 1: case 2: state->n = 2; break;\n"
     "default: state->n = 3; }", {"n"}),
    ("switch (x) { case 0: state->m = 1; default: state->n = 3; }", {"n"}),
    ("switch (x) { case 0: state->n = 1; break; case 1: state->n = 2; }", set()),
    ("switch (x) { case 0: state->n = 1; break; default: break; }", set()),
    ("while (x) { state->n = 1; }", set()),
    ("for (int i = 0; i < x; i++) state->n = i;", set()),
    ("do { state->n = 1; } while (x);", {"n"}),
    ("do { if (y) continue; state->n = 1; } while (x);", set()),
    ("for (;;) { state->n = 1; break; }", {"n"}),
    ("for (;;) { if (y) break; state->n = 1; }", set()),
    ("state->n = state->m = 0;", {"n", "m"}),
    ("x = 1, state->n = 2;", {"n"}),
    ("state->n += 1;", set()),
    ("if (x) goto skip; state->n = 1; skip: state->m = 2;", set()),
    ("if (x) return; state->n = 1;", set()),
    ("state->n = 1; if (x) return;", {"n"}),
])
def test_a_field_assigned_on_every_path_is_killed(code, kills):
    assert info_of(COND + code, fields=FIELDS).fields.kills == kills


@pytest.mark.parametrize("code, kills", [
    ("if (x) state->n = 1; else state->n = 2;\noutput { a(1); }", {"n"}),
    ("output { a(1); }\nif (x) state->n = 1; else state->n = 2;", {"n"}),
    ("if (x) return; state->n = 1;\noutput { a(1); }", {"n"}),
    ("output { if (x) state->n = 1; a(1); }", set()),
    ("output { a(1); state->n = 1; }", set()),
    ("output switch { case x: state->n = 1; a(1); else: state->n = 2; b(); }", {"n"}),
    ("output switch { case x: state->n = 1; a(1); else: b(); }", set()),
    ("for (int i = 0; i < x; i++) { state->n = i; a(i); }\noutput multiple;", {"n"}),
    ("a(1); state->n = 1;\noutput multiple;", set()),
])
def test_a_field_is_killed_when_assigned_before_every_output_call(code, kills):
    outputs = {"a": OUTS["a"]} if "multiple" in code else OUTS
    info = info_of(COND + code, outputs=outputs, fields=FIELDS)
    assert info.fields.kills == kills
    assert kills <= info.fields.writes


def test_field_passed_to_output_port_is_read_only():
    info = info_of("output { o(state->key); }", outputs={"o": ["uint8_t*"]}, fields=FIELDS)
    assert info.fields == FieldUse({"key"}, set(), set())


def test_unknown_field_lists_the_fields():
    e = error_of("int x = 1;\nx = state->nope;", fields={"b": "int", "a": "int"})
    assert_error(e, 2, "no field 'nope'", "(fields: a, b)")


def test_state_without_per_packet_state():
    assert_error(error_of("int x;\nx = state->n;"), 2, "no per-packet state")
    assert_error(error_of("\nf(state);"), 2, "no per-packet state")


def test_local_named_state():
    info = info_of("struct { int n; } state;\nstate.n = 1;")
    assert info.fields == FieldUse()
    e = error_of("int x;\nint state = 0;", fields=FIELDS)
    assert_error(e, 2, "'state' names the per-packet state")


def test_member_and_designator_names_are_not_references():
    info = info_of("struct s v = { .state = 1, .tracker = 2 };\nv.tracker = p->state + q.tracker;",
                   fields=FIELDS, persistent={"tracker": "Tracker"})
    assert info.fields == FieldUse() and info.persistent_used == set()


# ---- persistent states ------------------------------------------------------------------

def test_persistent_states_used():
    prelude = "typedef struct Tracker { int total; } Tracker;"
    body = make_body("tracker->total++;\nint n = sizeof(*stats);",
                     persistent={"tracker": "Tracker", "stats": "Stats", "other": "Other"})
    info = analyze([body], prelude=prelude)["el"]
    assert info.persistent_used == {"tracker", "stats"}


@pytest.mark.parametrize("code, written", [
    ("unsigned long v = t->count;", False),
    ('printf("%lu %s", t->count, t->name);', False),
    ("int x = 0;\nif (t->count > 3) x = t->count + t->name[0];", False),
    ("unsigned long s = sizeof(*t) + sizeof(t->count = 1);", False),
    ("t->count = 0;", True),
    ("t->count++;", True),
    ("--t->count;", True),
    ("t->count += 2;", True),
    ("t->name[0] = 'a';", True),
    ("floem_add(&t->count, 1);", True),
    ("unsigned long *p = &t->count;", True),
    ("reset(t);", True),
    ("void *p = t;", True),
    ("fill(t->name);", True),
    ("fill(t->other);", True),
])
def test_persistent_state_written(code, written):
    info = info_of(code, persistent={"t": "Tally"},
                   persistent_fields={"t": {"count": "unsigned long", "name": "char[8]"}})
    assert info.persistent_used == {"t"}
    assert info.persistent_written == ({"t"} if written else set())


def test_persistent_state_is_a_pointer():
    e = error_of("int x = 1;\nx = tracker.total;", persistent={"tracker": "Tracker"})
    assert_error(e, 2, "'tracker' is a pointer", "tracker->total")


# ---- C syntax errors --------------------------------------------------------------------

@pytest.mark.parametrize("code, line, words", [
    ("int a = 1;\nint x = ;\nint y;", 2, ["C syntax error", "invalid expression"]),
    ("int a = 1;\nint b = 2 +\n\n;", 4, ["C syntax error", "invalid expression"]),
    ("int a = 1;\nint x = 1\nint y = 2;", 3, ["C syntax error", "unexpected 'int'"]),
    ("int a = 1;\nif (a) {\n  a = 2 *;\n}", 3, ["C syntax error"]),
    ("int a = 1;\nint b = a +\n\n", 2, ["C syntax error", "at the end of the body"]),
    ("int a;\nchar *s = \"abc;\n", 2, ["unterminated string literal"]),
    ("int a;\nif (a) {\n", 2, ["'{' is never closed"]),
    ("int a;\n#error stop here\n", 2, ["#error stop here"]),
    ("int a = 1;\na = 1 @ 2;", 2, ["C syntax error"]),
])
def test_syntax_errors_are_located(code, line, words):
    assert_error(error_of(code), line, *words)


def test_syntax_error_names_the_right_body():
    bodies = [make_body(f"int x{k} = {k};\nx{k}++;", element=f"e{k}") for k in range(5)]
    bodies[3] = make_body("int x = 3;\nx++\n", element="e3")
    bodies.append(make_body("int z = 1;", element="e5"))
    with pytest.raises(FloemError) as e:
        analyze(bodies)
    assert (e.value.element, e.value.body_line) == ("e3", 2)


def test_error_in_include_text():
    with pytest.raises(FloemError) as e:
        analyze([make_body("int x;")],
                include_text="#include <stdio.h>\ntypedef int myint;\nint = 3;")
    assert "floem.include text, line 3" in e.value.message and e.value.file == APP


# ---- headers, types and GCC extensions --------------------------------------------------

def test_typedefs_from_include_text():
    body = make_body("my_t v = 0;\n(my_t a, pair_t b) = inp();\nv = a + b.x;",
                     inputs={"inp": ["my_t", "pair_t"]})
    include = "#include <stdint.h>\ntypedef uint32_t my_t;\ntypedef struct { int x; } pair_t;\n"
    assert analyze([body], include_text=include)["el"].reads == {"inp": 2}


def test_typedef_from_quoted_header_in_include_dirs(tmp_path):
    (tmp_path / "proto.h").write_text(
        "#ifndef PROTO_H\n#define PROTO_H\n#include <stdint.h>\n"
        "typedef struct { uint16_t port; } udp_t;\n#define PORT_OF(u) ((u)->port)\n#endif\n")
    body = make_body("udp_t u;\nudp_t *p = &u;\nint x = PORT_OF(p);")
    analyze([body], include_text='#include "proto.h"\n', include_dirs=[str(tmp_path)])


def test_error_in_a_user_header_names_the_header(tmp_path):
    header = tmp_path / "broken.h"
    header.write_text("#define OK 1\n\n#error broken header\n")
    with pytest.raises(FloemError) as e:
        analyze([make_body("int x;")], include_text='#include "broken.h"',
                include_dirs=[str(tmp_path)])
    assert (e.value.file, e.value.line) == (str(header), 3)
    assert "broken header" in e.value.message


def test_standard_header_not_in_the_fake_set():
    body = make_body("#include <sys/prctl.h>\nint x = 1;\nprctl(x);")
    analyze([body], include_text="#include <rte_mbuf.h>\n#include <dpdk/rte_ring.h>\n")


def test_missing_type_from_stubbed_header_is_explained():
    with pytest.raises(FloemError) as e:
        analyze([make_body("int x = 1;\nrte_ring_t r;")], include_text="#include <rte_ring.h>")
    assert e.value.body_line == 2 and "rte_ring.h" in e.value.message


def test_standard_names_without_includes():
    code = r'''
uint64_t v = UINT64_MAX;
printf("v=%" PRIu64 " size=%zu\n", v, SIZE_MAX);
int32_t count = 0;
__atomic_fetch_add(&count, 1, __ATOMIC_SEQ_CST);
if (__builtin_expect(count > INT32_MAX, 0)) exit(EXIT_FAILURE);
bool ok = true;
pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
pthread_spinlock_t spin;
ssize_t got = read(0, NULL, 0);
int unused __attribute__((unused)) = offsetof(struct { int a; int b; }, b);
asm volatile ("pause" ::: "memory");
__asm__ __volatile__ ("" : : : "memory");
atomic_int a = ATOMIC_VAR_INIT(0);
time_t now = time(NULL);
struct timespec ts;
clock_gettime(CLOCK_MONOTONIC, &ts);
in_addr_t addr = htonl(INADDR_ANY);
FILE *f = fopen("x", "r");
va_list ap;
int from_va = va_arg(ap, int);
static __thread int per_thread;
_Static_assert(sizeof(int) == 4, "int");
'''
    info_of(code)


def test_a_thousand_bodies_in_one_unit():
    """Each of many bodies parsed in one unit gets its own analysis (their speed is measured
    by benchmarks/compile_time/bodies.py)."""
    code = ("int x = inp();\nif (x > 3) {\n  state->n = x * 2;\n} else {\n"
            "  tracker->total += x;  /* { */\n}\nprintf(\"%d\\n\", x);\noutput { out(x); }\n")
    bodies = [make_body(code, inputs=ONE, outputs={"out": ["int"]}, fields=FIELDS,
                        persistent={"tracker": "Tracker"}, element=f"e{k}") for k in range(1000)]
    infos = analyze(bodies, prelude="typedef struct Tracker { int total; } Tracker;")
    assert sorted(infos) == sorted(f"e{k}" for k in range(1000))
    assert all(i.always_fires == {"out"} and i.fields.writes == {"n"} for i in infos.values())


def test_bad_element_names():
    with pytest.raises(FloemError, match="not a C identifier"):
        analyze([make_body("", element="my-el")])
    with pytest.raises(FloemError, match="two bodies"):
        analyze([make_body(""), make_body("")])
