"""Host -> NIC -> host with a union in the per-packet state: its members share their bytes,
written and read in network byte order on both sides (htonl, ntohs), so a union must cross
as bytes, never converted member by member between the host's and a big-endian NIC's byte
order (docs/reference.md, State options)."""
from floem import (Array, CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket,
                   Queue, Segment, State, Uint, include, main, target)

include(r'''
#include <arpa/inet.h>
''')


class Word(State):
    """Four bytes seen as one 32-bit word or two 16-bit halves."""

    whole = Field(Uint(32))
    half = Field(Array(Uint(16), 2))
    union = True


class Packet(State):
    tag = Field(Uint(8))
    word = Field(Word)


class Make(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            int x = inp();
            state->tag = (uint8_t)x;
            state->word.whole = htonl((uint32_t)x * 100000000u);
            output { out(); }
        ''')


class Transform(Element):
    """Runs on the NIC: adds the tag to the low half (the second, in network order)."""

    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            state->word.half[1] = htons((uint16_t)(ntohs(state->word.half[1]) + state->tag));
            output { out(); }
        ''')


class Show(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            printf("tag=%u whole=%u high=%u\n", state->tag, ntohl(state->word.whole),
                   ntohs(state->word.half[0]));
            output { out(1); }
        ''')


to_nic = Queue("to_nic", size=16)
to_host = Queue("to_host", size=16)


class RoundTrip(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class push(CallableSegment):
            def configure(self):
                self.inp = Input(Int)

            def impl(self):
                self.inp >> Make() >> to_nic

        class on_nic(Segment):
            def impl(self):
                to_nic >> Transform() >> to_host

        class pop(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> to_host.qid
                to_host >> Show() >> self.out

        push("push")
        on_nic("on_nic", device=target.NIC)
        pop("pop", default_return="0")


RoundTrip()

main(r'''
    for (int i = 1; i <= 4; i++)
        push(i);
    for (int shown = 0; shown < 4; )
        shown += pop(0);
''')
