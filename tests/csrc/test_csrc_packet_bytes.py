"""The bytes of a typed packet each body reads and writes, member by member (floem.csrc.fields)."""
from __future__ import annotations

import pytest

from floem.csrc import analyze
from floem.csrc.model import Member, PacketView
from floem.errors import FloemError

from csrc_helpers import APP_LINE, make_body

#: struct Hdr { uint8_t mac[6]; struct { uint8_t ttl; uint16_t csum; } ip; uint32_t addr; }
HDR = PacketView(members={
    ("mac",): Member(0, 6, 1),
    ("ip",): Member(6, 3),
    ("ip", "ttl"): Member(6, 1),
    ("ip", "csum"): Member(7, 2),
    ("addr",): Member(9, 4),
}, size=13)
PRELUDE = ("typedef struct { uint8_t ttl; uint16_t csum; } __attribute__((packed)) Ip;\n"
           "typedef struct { uint8_t mac[6]; Ip ip; uint32_t addr; } __attribute__((packed)) Hdr;\n"
           "typedef struct { Hdr *p; size_t n; } Pkt;\n")


def bytes_of(code: str, view: PacketView | None = HDR):
    """The ByteUse of field ``p`` in ``code``."""
    body = make_body(code, fields={"p": "Hdr *", "n": "size_t"})
    body.packets = {"p": view}
    info = analyze([body], prelude=PRELUDE)[body.element]
    return info.fields.bytes.get("p")


@pytest.mark.parametrize("code, reads, writes", [
    ("int t = state->p->ip.ttl;", {(6, 7)}, set()),
    ("state->p->ip.ttl = 3;", set(), {(6, 7)}),
    ("state->p->ip.ttl--;", {(6, 7)}, {(6, 7)}),
    ("state->p->addr += 1;", {(9, 13)}, {(9, 13)}),
    ("Ip copy = state->p->ip;", {(6, 9)}, set()),
    ("int b = state->p->mac[2];", {(2, 3)}, set()),
    ("size_t i = state->n; int b = state->p->mac[i];", {(0, 6)}, set()),
    ("Hdr whole = *state->p;", {(0, 13)}, set()),
    ("int t = state->p[0].ip.ttl;", {(6, 7)}, set()),
    ("uint8_t m[6]; memcpy(m, state->p->mac, 6);", {(0, 6)}, set()),
    ("memcpy(state->p->mac, \"abcdef\", 6);", {(0, 6)}, {(0, 6)}),
    ("void *a = &state->p->ip;", {(6, 9)}, {(6, 9)}),
])
def test_member_accesses_are_byte_ranges(code, reads, writes):
    use = bytes_of(code)
    assert use is not None
    assert (use.reads, use.writes, use.unbounded) == (reads, writes, None)


def test_sizeof_touches_no_byte():
    assert bytes_of("size_t s = sizeof state->p->ip;") is None


def test_setting_the_pointer_touches_no_byte():
    use = bytes_of("state->p = (Hdr *)0;")
    assert (use.reads, use.writes, use.unbounded) == (set(), set(), None)


@pytest.mark.parametrize("code, why", [
    ("void *q = state->p;", "used as a whole pointer"),
    ("uint8_t x = ((uint8_t *)state->p)[20];", "used as a whole pointer"),
    ("free(state->p);", "used as a whole pointer"),
    ("size_t i = state->n; int t = state->p[i].ip.ttl;", "indexed by something other than 0"),
])
def test_accesses_it_cannot_bound_name_their_line(code, why):
    use = bytes_of("\n\n" + code)
    assert use.unbounded is not None
    line, text = use.unbounded
    assert line == 3 and why in text


def test_a_member_of_unknown_size_makes_every_access_unbounded():
    use = bytes_of("int t = state->p->ip.ttl;", view=None)
    assert use.unbounded is not None and "size the compiler does not know" in use.unbounded[1]


def test_an_unknown_member_is_an_error_at_its_line():
    body = make_body("int t = 0;\nt = state->p->ip.tll;", fields={"p": "Hdr *", "n": "size_t"})
    body.packets = {"p": HDR}
    with pytest.raises(FloemError) as e:
        analyze([body], prelude=PRELUDE.replace("uint8_t ttl;", "uint8_t ttl, tll;"))
    assert "no member 'ip.tll'" in str(e.value) and f":{APP_LINE + 1}:" in str(e.value)
