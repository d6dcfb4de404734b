"""Network sequencer (Floem paper, section 7.1): stamp packets with per-group sequence numbers.

    segment sequencer (-D device, -D cores):  FromNet -> CheckUDP -> Stamp -> Reply -> ToNet

Each packet names a subset of 10 groups and gets, in each, the group's next sequence
number (1, 2, 3, ... per group), under the group's lock: the locks of the named groups
are taken in increasing group order, so the numbers of all groups agree on one order of
the packets (if p is before q in a group they share, it is in every group they share).
The UDP payload, big-endian:

    offset 0        uint16  bitmap: bit g names group g (g = 0..9; bits 10..15 must be 0)
    offset 2 + 8g   uint64  slot of group g: its sequence number in the reply
                            (slots of groups not named come back as they were)
    offset 82 ...           anything (comes back as it was)

A payload shorter than 82 bytes, or naming a group above 9, is dropped and counted in
drops. An empty bitmap is a valid packet: it is answered unchanged.

    floem run examples/nf/sequencer.py --port 9000
    floem run examples/nf/sequencer.py -D device=nic -D cores=3 --port 9000
"""
from floem import Array, Element, Field, Input, Int, Output, State, Uint
from floem.library import FRAME
from floem.library import headers

import nf

GROUPS = 10
where = nf.placement()


class Groups(State):
    """Per group: its lock (``floem_lock``) and the last sequence number it gave."""

    lock = Field(Array(Int, GROUPS))
    last = Field(Array(Uint(64), GROUPS))
    packed = False


class SequencerDrops(State):
    """Packets the sequencer dropped: payload too short, or a group above 9 named."""

    too_short = Field(Uint(64))
    bad_groups = Field(Uint(64))
    packed = False
    report = True


groups = Groups("groups")
drops = SequencerDrops("drops")


class Stamp(Element):
    """Stamp each group the payload names with its next number; malformed ones to ``drop``."""

    c_headers = headers.HEADERS
    c_sources = headers.SOURCES

    def configure(self) -> None:
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)
        self.drop = Output(*FRAME)

    def states(self, counters: State, counts: State) -> None:
        self.groups = counters
        self.drops = counts

    def impl(self) -> None:
        self.run_c(r'''
            (size_t size, uint8_t *data, void *buf) = inp();
            uint8_t *payload = floem_udp_payload(data);
            bool whole = floem_udp_payload_len(data) >= 2 + 8 * %(n)d;
            uint16_t named = whole ? floem_get16(payload) : 0;
            bool ok = whole && named >> %(n)d == 0;
            if (ok) {
                for (int g = 0; g < %(n)d; g++)
                    if (named >> g & 1)
                        floem_lock(&groups->lock[g]);
                for (int g = 0; g < %(n)d; g++)
                    if (named >> g & 1) {
                        uint64_t seq = ++groups->last[g];
                        floem_put32(payload + 2 + 8 * g, (uint32_t)(seq >> 32));
                        floem_put32(payload + 6 + 8 * g, (uint32_t)seq);
                    }
                for (int g = %(n)d - 1; g >= 0; g--)
                    if (named >> g & 1)
                        floem_unlock(&groups->lock[g]);
            } else {
                __atomic_fetch_add(whole ? &drops->bad_groups : &drops->too_short, 1,
                                   __ATOMIC_RELAXED);
            }
            output switch {
                case ok: out(size, data, buf);
                else: drop(size, data, buf);
            }
        ''' % {"n": GROUPS})


if __name__ == "__floem_app__":     # run by floem; imported, it only defines the function
    nf.serve("sequencer", lambda: Stamp(states=[groups, drops]), where)
