"""Parse-hash-count: count UDP packets per hash bucket of their payload (the key).

    segment hashcount:  FromNet -> CheckUDP -> Key -> JenkinsHash -> Count -> NetFree
                                   +-> NetFree  (not whole Ethernet/IPv4/UDP)

The frame and the key's hash travel in the per-packet state `Pkt`; `Key`
saves the checked frame there, the library's `JenkinsHash` hashes the UDP
payload into ``state->hash`` and `Count` adds one to bucket
``hash % BUCKETS`` of the persistent `Buckets` (named ``buckets``) before
the frame is given back. The hand-written equivalent is ``hashcount_hand.c``.
"""
from floem import Array, Element, Field, Flow, Input, Output, PerPacket, Persistent, Segment, State
from floem import Pointer, SizeT, Uint, Void
from floem.library import FRAME, CheckUDP, FromNet, JenkinsHash, NetFree, UDPCheckStats

from replay import stop_when_replayed

BUCKETS = 1024


class Pkt(State):
    """The per-packet state: the frame and the hash of its key."""

    size = Field(SizeT)
    data = Field(Pointer(Uint(8)))
    buf = Field(Pointer(Void))
    hash = Field(Uint(32))


class Buckets(State):
    """Packets counted per hash bucket."""

    count = Field(Array(Uint(64), BUCKETS))
    packed = False


class Key(Element):
    """Keep the checked frame in the per-packet state; its UDP payload is the key."""

    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            (size_t size, uint8_t *data, void *buf) = inp();
            state->size = size;
            state->data = data;
            state->buf = buf;
            output { out(); }
        ''')


class Count(Element):
    """One more packet in bucket ``hash % BUCKETS``; pass the frame on."""

    buckets = Persistent(Buckets)

    def configure(self):
        self.inp = Input()
        self.out = Output(*FRAME)

    def impl(self):
        self.run_c(r'''
            inp();
            buckets->count[state->hash %% %du]++;
            output { out(state->size, state->data, state->buf); }
        ''' % BUCKETS)


buckets = Buckets("buckets")
checks = UDPCheckStats("checks")


class HashCount(Flow):
    state = PerPacket(Pkt)

    def impl(self):
        class hashcount(Segment):
            def impl(self):
                check = CheckUDP(states=[checks])
                FromNet() >> check
                check.drop >> NetFree()
                check.out >> Key() >> JenkinsHash(
                    data="floem_udp_payload(state->data)",
                    length="floem_udp_payload_len(state->data)",
                    into="state->hash") >> Count(states=[buckets]) >> NetFree()

        hashcount("hashcount")


HashCount()

# With --net pcap: stop when the capture is replayed and print what hashcount_hand.c prints.
stop_when_replayed(r'''
    uint64_t sum = 0;
    for (unsigned i = 0; i < %d; i++)
        sum += buckets->count[i] * (i + 1);
    printf("hashcount: passed %%" PRIu64 ", dropped %%" PRIu64 ", buckets checksum %%" PRIu64 "\n",
           checks->passed, checks->dropped, sum);
''' % BUCKETS)
