"""The C tokenizer: exact round trip, atomic comments/literals/directives, brackets."""
import pytest

from floem.csrc.model import BodyError
from floem.csrc.tokens import TokenList, tokenize

TRICKY = r'''// a comment with { and "quote and output {
/* block { comment
   output switch { */
#define CLOSE } /* a comment in a directive
   that goes on */ \
   still the directive
char c = '}', d = '\'', e = '"';
const char *s = "output { \" } // not a comment";
x = a->output + output;
'''


def test_round_trip_keeps_every_character():
    assert "".join(t.text for t in tokenize(TRICKY)) == TRICKY


def test_comments_strings_chars_and_directives_are_single_tokens():
    tokens = [t for t in tokenize(TRICKY) if t.kind != "ws"]
    kinds = [t.kind for t in tokens]
    assert kinds[:3] == ["comment", "comment", "pp"]
    assert tokens[2].text.endswith("still the directive")
    chars = [t.text for t in tokens if t.kind == "char"]
    assert chars == ["'}'", r"'\''", "'\"'"]
    strings = [t.text for t in tokens if t.kind == "string"]
    assert strings == [r'"output { \" } // not a comment"']
    braces = [t for t in tokens if t.text in "{}" and t.kind == "punct"]
    assert braces == []


def test_lines_and_columns():
    tokens = [t for t in tokenize(TRICKY) if t.kind not in ("ws", "comment")]
    first_char = next(t for t in tokens if t.text == "char")
    assert (first_char.line, first_char.column) == (7, 1)
    output_word = [t for t in tokens if t.text == "output"]
    assert [(t.line, t.column) for t in output_word] == [(9, 8), (9, 17)]


def test_directive_only_at_line_start():
    tokens = [t for t in tokenize("a # b\n  # if X\n") if t.kind != "ws"]
    assert [(t.kind, t.text) for t in tokens] == [
        ("ident", "a"), ("punct", "#"), ("ident", "b"), ("pp", "# if X")]


def test_prefixed_literals_and_numbers():
    code = 'L"w" u8"s" U\'c\' 0x1fULL 1.5e-3f .5 a->b ... <<='
    tokens = [t for t in tokenize(code) if t.kind != "ws"]
    assert [t.kind for t in tokens] == ["string", "string", "char", "number", "number",
                                        "number", "ident", "punct", "ident", "punct", "punct"]
    assert tokens[4].text == "1.5e-3f"


def test_brackets_match_across_trivia():
    tl = TokenList("f(a, '(', \")\" /* ) */, g[1]) { }")
    open_paren = next(i for i in tl.significant if tl[i].text == "(")
    close = tl.match[open_paren]
    assert tl.next(close) is not None and tl[tl.next(close)].text == "{"
    assert tl.opener[close] == open_paren
    inner = [tl[i].text for i in tl.between(open_paren, close)]
    assert inner == ["a", ",", "'('", ",", '")"', ",", "g", "["]


@pytest.mark.parametrize("code, line, message", [
    ('int x;\nchar *s = "abc;\n', 2, "unterminated string literal"),
    ("int x;\n\nchar c = 'a;\n", 3, "unterminated character literal"),
    ("int x; /* never\nclosed\n", 1, "unterminated comment"),
    ("int x;\nif (a) {\n  f(;\n}", 3, "'(' is never closed"),
    ("{\n}\n}", 3, "unbalanced '}'"),
    ("f(\n[1]", 1, "'(' is never closed"),
])
def test_mistakes_are_located(code, line, message):
    with pytest.raises(BodyError) as e:
        TokenList(code)
    assert (e.value.body_line, e.value.message) == (line, message)
