"""The library elements whose C bodies parse bytes, as callable segments for the fuzz harnesses.

The parsing of CheckUDP, SwapUDP, SetUDPLength, FillUDP (library/headers.py),
ParseMemcached and MemcachedReply (library/memcached.py), CheckFrame on a typed frame
and a rewrite of its header members (library/packets.py), and the splitting of
Batcher and Debatcher (library/batch.py) are C bodies inside Python classes:
this app compiles those very bodies into C functions that fuzz/harness/*.c
call (scripts/fuzz.sh builds it with ``floem build`` and compiles the
generated C with clang's sanitizers). The harness defines the functions that
``include`` declares below: where the elements hand their results.
"""
from floem import (CallableSegment, Element, Field, Flow, Frame, Input, Int, Output, PerPacket,
                   Pointer, Queue, State, Uint, include)
from floem.library import CheckFrame, IPv4Frame, LoadFrame, StoreFrame
from floem.library import packets
from floem.library.batch import Batcher, Debatcher
from floem.library.headers import CheckUDP, FillUDP, SetUDPLength, SwapUDP
from floem.library.memcached import MemcachedReply, ParseMemcached

from callables import frame_function

#: Items per batch of the queued path, and of the direct (callable) path.
BATCH = 5
DIRECT_BATCH = 3

include(r'''
/* Defined by the harness (fuzz/harness/memcached.c, batch.c). */
struct fuzz_mc_request {
    uint16_t request_id;
    uint8_t opcode, data_type;
    uint16_t vbucket;
    uint32_t opaque;
    uint64_t cas;
    const uint8_t *extras, *key, *value;
    uint8_t extlen;
    uint16_t keylen;
    uint32_t vallen;
};
extern struct fuzz_mc_request fuzz_mc;
void fuzz_batch_item(uint64_t item);
void fuzz_direct_item(int item);
''')


frame_function("udp_reply", CheckUDP(), SwapUDP(), SetUDPLength())
frame_function("udp_reply_verified", CheckUDP(verify_checksums=True), SwapUDP(),
               SetUDPLength(udp_checksum=True))
frame_function("udp_fill", FillUDP(src_mac="02:00:00:00:00:01", dst_mac="02:00:00:00:00:02",
                                   src_ip="10.0.0.1", dst_ip="10.0.0.2", src_port=1234,
                                   dst_port=11211, udp_checksum=True))
frame_function("mc_parse", ParseMemcached(**{name: f"fuzz_mc.{name}" for name in (
    "request_id", "opcode", "data_type", "vbucket", "opaque", "cas", "extras", "extlen", "key",
    "keylen", "value", "vallen")}))
frame_function("mc_reply", ParseMemcached(), MemcachedReply(
    status="req.opcode == FLOEM_MC_GET ? FLOEM_MC_KEY_NOT_FOUND : FLOEM_MC_OK",
    cas="req.cas + 1", extras="req.extras", extlen="req.extras_len", key="req.key",
    keylen="req.key_len", value="req.value", vallen="req.value_len", capacity=2048),
    SwapUDP(), SetUDPLength())


class Framed(State):
    """The per-packet state of the frame functions: the frame, typed."""

    pkt = Frame(IPv4Frame)


class RewriteSource(Element):
    """A source NAT's rewrite of a checked frame: IPv4 source 10.9.9.9 and transport source
    port 4242, the IPv4 and UDP/TCP checksums updated incrementally (a UDP checksum of 0,
    "none", stays 0; one that comes out 0 is sent as 0xffff, RFC 768)."""

    c_headers = packets.HEADERS

    def configure(self) -> None:
        self.inp = Input()
        self.out = Output()

    def impl(self) -> None:
        self.run_c(r'''
            inp();
            uint32_t old_ip = state->pkt->ip.src, new_ip = floem_hton32(0x0a090909);
            uint16_t old_port = state->pkt->l4.udp.src_port, new_port = floem_hton16(4242);
            state->pkt->ip.src = new_ip;
            state->pkt->ip.checksum = floem_csum_replace32(state->pkt->ip.checksum, old_ip,
                                                           new_ip);
            state->pkt->l4.udp.src_port = new_port;        /* where TCP's is too */
            if (state->pkt->ip.protocol == 6) {
                uint16_t c = floem_csum_replace32(state->pkt->l4.tcp.checksum, old_ip, new_ip);
                state->pkt->l4.tcp.checksum = floem_csum_replace16(c, old_port, new_port);
            } else if (state->pkt->l4.udp.checksum != 0) {
                uint16_t c = floem_csum_replace32(state->pkt->l4.udp.checksum, old_ip, new_ip);
                c = floem_csum_replace16(c, old_port, new_port);
                state->pkt->l4.udp.checksum = c ? c : 0xffff;
            }
            output { out(); }
        ''')


class Frames(Flow):
    """``frame_check`` (StoreFrame, CheckFrame) and ``frame_rewrite`` (the same, then
    RewriteSource): the frame's size when it passes, 0 when CheckFrame drops it."""

    state = PerPacket(Framed)

    def impl(self) -> None:
        frame_function("frame_check", StoreFrame(), CheckFrame(), LoadFrame())
        frame_function("frame_rewrite", StoreFrame(), CheckFrame(), RewriteSource(), LoadFrame())

Frames()


class Batch(State):
    """The per-packet state of the batching flow: a batch of ``count`` items."""

    count = Field(Int)
    items = Field(Pointer(Uint(64)), size="state->count * sizeof(uint64_t)")


class Item(Element):
    """Leaf: hand a value to the harness (``fuzz_batch_item`` or ``fuzz_direct_item``)."""

    def configure(self, ty: object = Int, to: str = "fuzz_direct_item") -> None:
        self.inp = Input(ty)
        self.to = to

    def impl(self) -> None:
        self.run_c(f"{self.to}(inp());")


batches = Queue("batches", size=8)


class Batching(Flow):
    """The queued path: ``batch_push`` and ``batch_pull`` around the queue ``batches``."""

    state = PerPacket(Batch)

    def impl(self) -> None:
        class batch_push(CallableSegment):
            """One item into the Batcher; every BATCH-th call enqueues a batch."""

            def configure(self) -> None:
                self.inp = Input(Uint(64))

            def impl(self) -> None:
                self.inp >> Batcher(n=BATCH, items="state->items", count="state->count") >> batches

        class batch_pull(CallableSegment):
            """One batch from instance ``qid``, split by the Debatcher (nothing when empty)."""

            def configure(self) -> None:
                self.inp = Input(Int)

            def impl(self) -> None:
                self.inp >> batches.qid
                (batches >> Debatcher(items="state->items", count="state->count")
                 >> Item(ty=Uint(64), to="fuzz_batch_item"))

        batch_push("batch_push")
        batch_pull("batch_pull")


class batch_direct(CallableSegment):
    """Batcher straight into Debatcher, values on ports: every DIRECT_BATCH-th call splits."""

    def configure(self) -> None:
        self.inp = Input(Int)

    def impl(self) -> None:
        (self.inp >> Batcher(n=DIRECT_BATCH, ty=Int) >> Debatcher(ty=Int)
         >> Item())


Batching()
batch_direct("batch_direct")
