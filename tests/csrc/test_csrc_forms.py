"""Finding the Floem forms on tokens and spelling them as plain C for pycparser."""
import pytest

from floem.csrc.forms import scan
from floem.csrc.model import BodyError, Port

INPUTS = {"inp": Port("inp", ["int"]), "pair": Port("pair", ["uint8_t*", "size_t"]),
          "three": Port("three", ["int", "int", "int"])}


def parse_text(code: str) -> str:
    return scan(code, INPUTS).parse_text()


def test_plain_c_is_unchanged():
    code = "int output = inp(); // output {\noutput++; x.output = 1; f(\"output {\");\n"
    forms = scan(code, INPUTS)
    assert forms.outputs == [] and forms.tuples == []
    assert forms.parse_text() == code


def test_tuple_declaration_and_assignment():
    assert parse_text("(uint8_t *p, size_t n) = pair();") == \
        "uint8_t *p = __floem_tuple(); size_t n = __floem_tuple( pair());"
    assert parse_text("if (c) (a,\n  b) = pair();") == \
        "if (c) a = __floem_tuple();\n  b = __floem_tuple( pair());"
    t = scan("x = 1;\n(a, b, c) =\n three();", INPUTS).tuples[0]
    assert (t.port, t.line, len(t.commas)) == ("three", 3, 2)


def test_parenthesised_expressions_are_not_tuples():
    for code in ["f(a, b) = inp();", "x = (a, b) == inp();", "(a) = inp();", "(a, b) = other();"]:
        assert scan(code, INPUTS).tuples == []


def test_block_keeps_lines():
    code = "int x = 1;\noutput {\n  a(x);\n}\nx++;"
    assert parse_text(code) == "int x = 1;\n__floem_output_block: {\n  a(x);\n}\nx++;"
    (form,) = scan(code, INPUTS).outputs
    assert (form.kind, form.line) == ("block", 2)


def test_switch_becomes_if_chain():
    code = ("output switch {\n  case x > 0 ? 1 : 2: a(x);\n"
            "  case s[0] == ':' && strcmp(t, \"a:b\"): b();\n  else: c(x);\n}")
    assert parse_text(code) == (
        "__floem_output_switch:  {\n  if ( x > 0 ? 1 : 2) { a(x);\n"
        "  } else if ( s[0] == ':' && strcmp(t, \"a:b\")) { b();\n  } else { c(x);\n} }")
    (form,) = scan(code, INPUTS).outputs
    assert [(c.is_else, c.line) for c in form.cases] == [(False, 2), (False, 3), (True, 4)]


def test_switch_case_bodies_may_hold_c_else_and_nested_switch():
    code = ("output switch { case c: if (y) z++; else z--; a(); "
            "case d: switch (k) { case 1: break; } b(); }")
    assert parse_text(code) == (
        "__floem_output_switch:  { if ( c) { if (y) z++; else z--; a(); } else if ( d) "
        "{ switch (k) { case 1: break; } b(); } }")


def test_switch_with_only_else():
    assert parse_text("output switch { else: a(); }") == "__floem_output_switch:  { { a(); } }"


def test_multiple():
    assert parse_text("output multiple;\nfor (;;) out(1);") == \
        "__floem_output_multiple: ;\nfor (;;) out(1);"


def test_asm_statements_keep_their_lines():
    assert parse_text('x++;\nasm volatile ("pause"\n  ::: "memory");\ny++;') == \
        "x++;\n__floem_asm()\n;\ny++;"


@pytest.mark.parametrize("code, line, message", [
    ("x = 1;\n(a, b) = inp();", 2,
     "input port 'inp' carries 1 value (int), but 2 variables receive them"),
    ("(p, n, m) = pair();", 1,
     "input port 'pair' carries 2 values (uint8_t*, size_t), but 3 variables receive them"),
    ("(p, ) = pair();", 1, "empty item in the read of input port 'pair'"),
    ("(p, n) = pair()\nx = 1;", 1, "expected ';' after the read of input port 'pair'"),
    ("output switch\n(x) { }", 1, "expected '{' after 'output switch'"),
    ("output multiple\nx = 1;", 1, "expected ';' after 'output multiple'"),
    ("output switch {\n}", 1, "output switch has no cases"),
    ("output switch {\n x++; case 1: a(); }", 2,
     "expected 'case COND:' or 'else:' in output switch"),
    ("output switch {\n case 1: a();\n else: b();\n case 2: c(); }", 4,
     "'else:' must be the last case of an output switch"),
    ("output switch {\n case : a(); }", 2, "'case' without a condition"),
    ("output switch {\n case x a(); }", 2, "'case' without ':' in output switch"),
])
def test_malformed_forms_are_located(code, line, message):
    with pytest.raises(BodyError) as e:
        scan(code, INPUTS)
    assert (e.value.body_line, e.value.message) == (line, message)
