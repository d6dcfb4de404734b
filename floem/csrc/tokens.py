"""A small C tokenizer that keeps every character of the source.

Joining the texts of `tokenize(code)` gives `code` back. Comments, string and
character literals and preprocessor lines are single tokens, so braces or the
word ``output`` inside them never reach the Floem-form scanner. `TokenList`
adds bracket matching and navigation over the significant tokens.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeGuard

from floem.csrc.model import BodyError


class TokenKind(StrEnum):
    """What a token is."""

    WS = "ws"                   # white space, backslash-newlines included
    COMMENT = "comment"
    PP = "pp"                   # a preprocessor line
    STRING = "string"
    CHAR = "char"
    IDENT = "ident"             # an identifier or a keyword
    NUMBER = "number"
    PUNCT = "punct"
    OTHER = "other"


#: Token kinds that carry no C syntax.
TRIVIA = frozenset({TokenKind.WS, TokenKind.COMMENT, TokenKind.PP})

_PUNCTUATORS = sorted(
    "... <<= >>= -> ++ -- << >> <= >= == != && || *= /= %= += -= &= ^= |= ## "
    "[ ] ( ) { } . & * + - ~ ! / % < > ^ | ? : ; = , #".split(),
    key=len, reverse=True)

_TOKEN = re.compile("|".join([
    r"(?P<ws>(?:[ \t\r\f\v\n]|\\\n)+)",
    r"(?P<comment>/\*.*?\*/|//(?:\\\n|[^\n])*)",
    r"(?P<bad_comment>/\*)",
    r'(?P<string>(?:u8|[uUL])?"(?:[^"\\\n]|\\.|\\\n)*")',
    r"(?P<char>(?:u8|[uUL])?'(?:[^'\\\n]|\\.)*')",
    r"(?P<ident>[A-Za-z_$][A-Za-z0-9_$]*)",
    r"(?P<number>\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.'])*)",
    "(?P<punct>" + "|".join(re.escape(p) for p in _PUNCTUATORS) + ")",
    r'(?P<bad_string>(?:u8|[uUL])?")',
    r"(?P<bad_char>(?:u8|[uUL])?')",
    r"(?P<other>.)",
]), re.DOTALL)

# Inside a preprocessor line: pieces that may hide a newline or a quote.
_PP_PIECE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:[^"\\\n]|\\.)*"|'
                       r"'(?:[^'\\\n]|\\.)*'|\\\n|[^\n]", re.DOTALL)

_BAD = {"bad_comment": "unterminated comment",
        "bad_string": "unterminated string literal",
        "bad_char": "unterminated character literal"}

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}


@dataclass(frozen=True, slots=True)
class Token:
    """One token: its kind, exact text and the line (1-based) where it starts."""

    kind: TokenKind
    text: str
    line: int
    column: int


def tokenize(code: str) -> list[Token]:
    """Split `code` into tokens; raises `BodyError` on unterminated literals."""
    return list(_tokens(code))


@functools.lru_cache(maxsize=4096)
def _tokens(code: str) -> tuple[Token, ...]:
    """The tokens of `code`, made once per text (the instances of an element class share
    their body's text)."""
    tokens: list[Token] = []
    pos, line, line_start = 0, 1, 0
    at_line_start = True
    while pos < len(code):
        if at_line_start and code[pos] == "#":
            end = _pp_end(code, pos)
            kind = TokenKind.PP
        else:
            m = _TOKEN.match(code, pos)
            assert m is not None and m.lastgroup is not None     # `other` takes any character
            if m.lastgroup in _BAD:
                raise BodyError(_BAD[m.lastgroup], line)
            kind = TokenKind(m.lastgroup)
            end = m.end()
        text = code[pos:end]
        tokens.append(Token(kind, text, line, pos - line_start + 1))
        newlines = text.count("\n")
        if newlines:
            line += newlines
            line_start = pos + text.rindex("\n") + 1
        if kind == TokenKind.WS:
            at_line_start = at_line_start or newlines > 0
        elif kind != TokenKind.COMMENT:
            at_line_start = False
        pos = end
    return tuple(tokens)


@functools.lru_cache(maxsize=4096)
def identifiers(text: str) -> frozenset[str]:
    """The identifiers (and keywords) the C ``text`` names."""
    return frozenset(t.text for t in _tokens(text) if t.kind == TokenKind.IDENT)


def mentions(name: str, texts: list[str]) -> bool:
    """True when identifier (or keyword) ``name`` appears in any of the C ``texts``."""
    return any(name in identifiers(text) for text in texts)


def _pp_end(code: str, pos: int) -> int:
    """End of the preprocessor directive starting at `pos` (before its newline)."""
    while pos < len(code) and code[pos] != "\n":
        piece = _PP_PIECE.match(code, pos)
        assert piece is not None                # it matches any character but a newline
        pos = piece.end()
    return pos


class TokenList:
    """Tokens of one body with matched brackets and significant-token navigation."""

    def __init__(self, code: str) -> None:
        self.tokens = tokenize(code)
        self.significant = [i for i, t in enumerate(self.tokens) if t.kind not in TRIVIA]
        self._rank = {i: k for k, i in enumerate(self.significant)}
        self.match = self._match_brackets()
        self.opener = {close: open_ for open_, close in self.match.items()}

    def __getitem__(self, index: int) -> Token:
        return self.tokens[index]

    def next(self, index: int) -> int | None:
        """Index of the significant token after token `index`, or None."""
        k = self._rank[index] + 1
        return self.significant[k] if k < len(self.significant) else None

    def after(self, index: int) -> int:
        """Index of the significant token after token `index`, which the caller knows is
        there (`next` would find it)."""
        return self.significant[self._rank[index] + 1]

    def prev(self, index: int) -> int | None:
        """Index of the significant token before token `index`, or None."""
        k = self._rank[index] - 1
        return self.significant[k] if k >= 0 else None

    def text_is(self, index: int | None, *texts: str) -> TypeGuard[int]:
        """Is token `index` (None: no token) spelled as one of `texts`?"""
        return index is not None and self.tokens[index].text in texts

    def between(self, start: int, end: int) -> list[int]:
        """Significant tokens strictly between `start` and `end` at bracket depth 0.

        A bracketed group inside appears as its opening bracket only.
        """
        result = []
        i = self.next(start)
        while i is not None and i < end:
            result.append(i)
            i = self.next(self.match.get(i, i))
        return result

    def is_member_name(self, index: int) -> bool:
        """Is the identifier at `index` a member name after `.` or `->`?"""
        return self.text_is(self.prev(index), ".", "->")

    def _match_brackets(self) -> dict[int, int]:
        match: dict[int, int] = {}
        stack: list[int] = []
        for i in self.significant:
            text = self.tokens[i].text
            if text in _OPEN:
                stack.append(i)
            elif text in _CLOSE:
                if not stack:
                    raise BodyError(f"unbalanced '{text}'", self.tokens[i].line)
                if self.tokens[stack[-1]].text != _CLOSE[text]:
                    break
                match[stack.pop()] = i
        if stack:
            token = self.tokens[stack[-1]]
            raise BodyError(f"'{token.text}' is never closed", token.line)
        return match


def render(tokens: list[Token], replace: dict[int, str], start: int = 0,
           end: int | None = None) -> str:
    """The text of tokens[start:end], with the texts in `replace` substituted."""
    stop = len(tokens) if end is None else end
    return "".join(replace.get(i, tokens[i].text) for i in range(start, stop))
