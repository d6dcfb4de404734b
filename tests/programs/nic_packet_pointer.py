"""A per-packet field pointing at a message (a wire-format struct with a size expression)
crosses host -> NIC -> host: each side reads and writes its own copy through state->pkt->...

The struct is not packed (its 32-bit member needs 4-byte alignment, which MIPS enforces)
and the state's fixed fields are an odd number of bytes: the copy must still be aligned.
"""
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Queue,
                   Segment, State, Uint, include, main, target)

include(r'''
#include <arpa/inet.h>
struct msg {                 /* multi-byte members in network byte order, as on a wire */
    uint32_t seq;
    uint16_t keylen;
    uint8_t op;
    uint8_t key[];
};
''')


class Request(State):
    pkt = Field("struct msg *", size="sizeof(struct msg) + ntohs(state->pkt->keylen)")
    tag = Field(Uint(8))


class Make(Element):
    """Builds message i in the caller's buffer; only the pointer goes into the state."""

    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            int i = inp();
            static _Alignas(8) uint8_t buf[64];
            struct msg *m = (struct msg *)buf;
            int len = snprintf((char *)m->key, 40, "key-%d", i * 1111);
            m->seq = htonl((uint32_t)i * 100000u);
            m->keylen = htons((uint16_t)len);
            m->op = (uint8_t)i;
            state->pkt = m;
            state->tag = (uint8_t)(i + 10);
            output { out(); }
        ''')


class Upper(Element):
    """On the NIC: upper-cases the key and bumps op and seq in the NIC's copy."""

    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            struct msg *m = state->pkt;
            for (int i = 0; i < ntohs(m->keylen); i++)
                if (m->key[i] >= 'a' && m->key[i] <= 'z')
                    m->key[i] -= 32;
            m->op += 100;
            m->seq = htonl(ntohl(m->seq) + 7);
            output { out(); }
        ''')


class Show(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            struct msg *m = state->pkt;
            printf("tag %u: seq %u op %u key %.*s (aligned %d)\n", state->tag, ntohl(m->seq),
                   m->op, ntohs(m->keylen), (char *)m->key, (int)((uintptr_t)m % 4 == 0));
            output { out(1); }
        ''')


to_nic = Queue("to_nic", size=16)
to_host = Queue("to_host", size=16)


class Messages(Flow):
    state = PerPacket(Request)

    def impl(self):
        class push(CallableSegment):
            def configure(self):
                self.inp = Input(Int)

            def impl(self):
                self.inp >> Make() >> to_nic

        class on_nic(Segment):
            def impl(self):
                to_nic >> Upper() >> to_host

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


Messages()

main(r'''
    for (int i = 1; i <= 4; i++)
        push(i);
    for (int shown = 0; shown < 4; )
        shown += pop(0);
''')
