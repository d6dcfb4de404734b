"""`lower`: the rewritten body compiles cleanly and gcc points back at the app file."""
import pytest
from csrc_helpers import APP, APP_LINE, gcc_check, make_body

from floem.csrc import Body, analyze, lower

INPUTS = {"inp": ["int"], "pkt": ["uint8_t*", "size_t"], "go": []}
OUTPUTS = {"a": ["int"], "b": [], "c": ["int"]}
FIELDS = {"key": "uint8_t*", "keylen": "size_t", "n": "int"}
READS = {"inp": ["inp_0"], "pkt": ["pkt->data", "pkt_len"], "go": []}
FUNCS = {"a": "el_a", "b": "el_b", "c": "el_c", "out": "el_out"}

PREAMBLE = """\
#include <stdint.h>
#include <stdio.h>
#include <string.h>
typedef struct State { uint8_t *key; size_t keylen; int n; } State;
typedef struct Tracker { int total; } Tracker;
struct packet { uint8_t *data; };
static void el_a(State *state, int x) { (void)state; (void)x; }
static void el_b(State *state) { (void)state; }
static void el_c(State *state, int x) { (void)state; (void)x; }
static void el_out(State *state, uint8_t x) { (void)state; (void)x; }
void el(State *state, Tracker *tracker, int inp_0, struct packet *pkt, size_t pkt_len);
void el(State *state, Tracker *tracker, int inp_0, struct packet *pkt, size_t pkt_len) {
    (void)state; (void)tracker; (void)inp_0; (void)pkt; (void)pkt_len;
"""


def lowered(code: str, outputs: dict | None = None, body: Body | None = None,
            **kwargs: object) -> str:
    body = body or make_body(code, inputs=INPUTS, outputs=OUTPUTS if outputs is None else outputs,
                             fields=FIELDS, persistent={"tracker": "Tracker"})
    info = analyze([body])[body.element]
    return lower(info, READS, FUNCS, **kwargs)


def compiles(text: str, tmp_path) -> None:
    result = gcc_check(PREAMBLE + text + "}\n", tmp_path)
    assert result.returncode == 0, text + result.stderr


def directive(body_line: int) -> str:
    return f'#line {APP_LINE + body_line - 1} "{APP}"\n'


def test_block_moves_to_the_end_with_line_directives(tmp_path):
    code = ("int x = inp();  // read \"inp()\" { here\n"
            "output {\n"
            "    a(x + 1);\n"
            "    if (x) b();\n"
            "}\n"
            "x++; state.n = x;\n")
    text = lowered(code)
    assert text == (directive(1)
                    + "int x = inp_0;  // read \"inp()\" { here\n"
                    + directive(5) + "\nx++; state->n = x;\n"
                    + directive(2) + "{\n    el_a(state, x + 1);\n"
                    + "    if (x) el_b(state);\n}\n")
    compiles(text, tmp_path)


def test_switch_becomes_if_chain_at_the_end(tmp_path):
    code = ("int x = inp();\n"
            "output switch {\n"
            "  case x > 0 ? x < 9 : 0: c(x);\n"
            "  case strcmp(\"a:b\", \"c\") == 0:\n"
            "    b();\n"
            "  else: a(x);\n"
            "}\n"
            "tracker->total += x;\n")
    text = lowered(code)
    assert text.endswith(directive(2) + "{\n"      # where `output` stood
                         "  if ( x > 0 ? x < 9 : 0) { el_c(state, x);\n"
                         "  } else if ( strcmp(\"a:b\", \"c\") == 0) {\n"
                         "    el_b(state);\n"
                         "  } else { el_a(state, x);\n"
                         "} }\n")
    compiles(text, tmp_path)


def test_switch_without_else_and_only_else(tmp_path):
    compiles(lowered("int x = inp();\noutput switch { case x: a(x); case !x: b(); }"), tmp_path)
    compiles(lowered("output switch { else: b(); }"), tmp_path)


def test_multiple_is_removed_in_place(tmp_path):
    code = ("(uint8_t *p, size_t len) = pkt();\n"
            "output multiple;\n"
            "for (size_t i = 0; i < len; i++)\n"
            "    out(p[i]);\n")
    text = lowered(code, outputs={"out": ["uint8_t"]})
    assert text == (directive(1) + "uint8_t *p = (pkt->data); size_t len = pkt_len;\n \n"
                    "for (size_t i = 0; i < len; i++)\n    el_out(state, p[i]);\n")
    compiles(text, tmp_path)


def test_multi_value_assignment_and_consumes(tmp_path):
    code = ("uint8_t *p; size_t len;\n"
            "(p,\n len) = pkt();\n"
            "go();\n"
            "if (len) inp();\n"
            "(void)p;\n")
    text = lowered(code, outputs={})
    assert text == (directive(1) + "uint8_t *p; size_t len;\n"
                    "p = (pkt->data);\n len = pkt_len;\n"
                    "((void)0);\n"
                    "if (len) ((void)inp_0);\n"
                    "(void)p;\n")
    compiles(text, tmp_path)


def test_consume_of_multi_value_port(tmp_path):
    text = lowered("pkt();", outputs={})
    assert text == directive(1) + "((void)(pkt->data), (void)pkt_len);\n"
    compiles(text, tmp_path)


def test_comments_strings_and_members_are_untouched(tmp_path):
    code = ("/* output { a(1); } and inp() */\n"
            "struct { int state; struct { int n; } s; } v = { 0, { 0 } };\n"
            "int y = v.state + v.s.n; // state.n output switch {\n"
            "const char *msg = \"a(1); state.n; inp()\";\n"
            "output { a(y + (int)strlen(msg)); }\n")
    text = lowered(code)
    assert "/* output { a(1); } and inp() */" in text
    assert "int y = v.state + v.s.n; // state.n output switch {" in text
    assert "\"a(1); state.n; inp()\"" in text
    compiles(text, tmp_path)


def test_call_args_may_be_empty(tmp_path):
    text = lowered("int x = inp();\noutput { a(x); b(); }", call_args="")
    assert "el_a(x); el_b();" in text


def test_gcc_errors_point_at_the_app_file_lines(tmp_path):
    code = ("int x = inp();\n"
            "output {\n"
            "    a(x + in_block);\n"
            "}\n"
            "x += after_block;\n")
    result = gcc_check(PREAMBLE + lowered(code) + "}\n", tmp_path)
    assert f"{APP}:{APP_LINE + 2}:" in result.stderr and "in_block" in result.stderr
    assert f"{APP}:{APP_LINE + 4}:" in result.stderr and "after_block" in result.stderr


def test_app_file_name_is_escaped(tmp_path):
    path = str(tmp_path / 'we"ird\\dir' / "app.py")
    body = Body("el", "int x = 1;\nx += nowhere;", path, 7, [], [], None, {})
    text = lower(analyze([body])["el"], {}, {})
    assert text.startswith('#line 7 "') and '\\"ird\\\\dir' in text
    result = gcc_check(PREAMBLE + text + "}\n", tmp_path)
    assert f"{path}:8:" in result.stderr


def test_missing_read_expression_or_function():
    body = make_body("int x = inp();\noutput { a(x); }", inputs=INPUTS, outputs=OUTPUTS)
    info = analyze([body])["el"]
    with pytest.raises(ValueError, match="'inp' needs 1 read expression"):
        lower(info, {}, FUNCS)
    with pytest.raises(ValueError, match="no function for output port 'a'"):
        lower(info, READS, {})
