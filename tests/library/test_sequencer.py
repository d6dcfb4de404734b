"""floem.library.sequencer: two threads stamping four groups, no gaps or duplicates;
stamping into per-packet state from a callable segment."""
from __future__ import annotations

from collections import Counter as Tally

from .helpers import run_app

GROUPS, PACKETS = 4, 40000

APP = r'''
from floem import (Array, CallableSegment, Element, Field, Flow, Input, Output, PerPacket,
                   Persistent, Segment, State, Uint, main)
from floem.library.basic import Counter, Counts, Inject
from floem.library.sequencer import Sequencer

GROUPS, PACKETS = @GROUPS@, @PACKETS@
SLOT = PACKETS // GROUPS


class Seen(State):
    times = Field(Array(Uint(32), PACKETS))
    out_of_range = Field(Uint(64))
    packed = False


class Record(Element):
    seen = Persistent(Seen)

    def configure(self):
        self.inp = Input(Uint(32), Uint(64))
        self.out = Output()

    def impl(self):
        self.run_c(f"""
            (uint32_t group, uint64_t seq) = inp();
            if (seq >= 1 && seq <= {SLOT})
                __atomic_fetch_add(&seen->times[group * {SLOT} + seq - 1], 1, __ATOMIC_RELAXED);
            else
                __atomic_fetch_add(&seen->out_of_range, 1, __ATOMIC_RELAXED);
            output {{ out(); }}
        """)


seen = Seen("seen")
stamped, dropped = Counts("stamped"), Counts("dropped")


class stamp(Segment):
    def impl(self):
        s = Sequencer(groups=GROUPS, counters="counters")
        Inject(gen=f"(uint32_t)(i % {GROUPS + 1})", count=PACKETS, ty=Uint(32)) >> s
        s.out >> Record(states=[seen]) >> Counter(states=[stamped])
        s.drop >> Counter(ty=Uint(32), states=[dropped])


class Message(State):
    group = Field(Uint(32))
    seq = Field(Uint(64))


class SetGroup(Element):
    def configure(self):
        self.inp = Input(Uint(32))
        self.out = Output()

    def impl(self):
        self.run_c("state->group = inp(); output { out(); }")


class GetSeq(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Uint(64))

    def impl(self):
        self.run_c("output { out(state->seq); }")


class Stamping(Flow):
    state = PerPacket(Message)

    def impl(self):
        class next_seq(CallableSegment):
            def configure(self):
                self.inp = Input(Uint(32))
                self.out = Output(Uint(64))

            def impl(self):
                s = Sequencer(groups=2, group="state->group", into="state->seq",
                              counters="small")
                self.inp >> SetGroup() >> s
                s.out >> GetSeq() >> self.out

        next_seq("next_seq", default_return="0")


stamp("stamp", cores=[0, 1])
Stamping()

main(r"""
    while (__atomic_load_n(&stamped->packets, __ATOMIC_ACQUIRE)
           + __atomic_load_n(&dropped->packets, __ATOMIC_ACQUIRE) < PACKETS)
        usleep(1000);
    usleep(10000);
    printf("stamped %" PRIu64 " dropped %" PRIu64 " out_of_range %" PRIu64 "\n",
           stamped->packets, dropped->packets, seen->out_of_range);
    for (int g = 0; g < GROUPS; g++) {
        uint64_t once = 0, more = 0, never = 0, n = counters->last[g];
        for (uint64_t s = 0; s < n; s++) {
            uint32_t t = seen->times[g * SLOT + s];
            once += t == 1;
            more += t > 1;
            never += t == 0;
        }
        printf("group %d last %" PRIu64 " once %" PRIu64 " more %" PRIu64 " never %" PRIu64 "\n",
               g, n, once, more, never);
    }
    int groups[] = {0, 1, 1, 0, 7, 1};
    for (int k = 0; k < 6; k++)
        printf("%" PRIu64 " ", next_seq(groups[k]));
    printf("\n");
""".replace("PACKETS", str(PACKETS)).replace("GROUPS", str(GROUPS)).replace("SLOT", str(SLOT)))
'''


def test_sequencer_threads(tmp_path) -> None:
    out = run_app(tmp_path, APP.replace("@GROUPS@", str(GROUPS)).replace("@PACKETS@", str(PACKETS))).splitlines()
    per_group = Tally(i % (GROUPS + 1) for i in range(PACKETS))
    assert out[0] == (f"stamped {PACKETS - per_group[GROUPS]} dropped {per_group[GROUPS]} "
                      "out_of_range 0")
    assert out[1:1 + GROUPS] == [f"group {g} last {per_group[g]} once {per_group[g]} more 0 never 0"
                                 for g in range(GROUPS)]
    want, last = [], Tally()
    for g in (0, 1, 1, 0, 7, 1):
        last[g] += g < 2
        want.append(last[g] if g < 2 else 0)
    assert out[1 + GROUPS] == " ".join(map(str, want)) + " "
