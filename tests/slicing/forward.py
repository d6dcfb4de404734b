"""A router's forwarding step on frames in the per-packet state, placed by -D device=:

    rx (port):  FromNet -> StoreFrame -> CheckFrame -> rxq           (malformed: DropFrame)
    nf:         rxq -> Decrement (TTL and IPv4 checksum) -> txq[0]   (TTL <= 1: txq[1])
    tx (port):  txq[0] -> LoadFrame -> ToNet;  txq[1] -> DropFrame

cpu: everything on the CPU; nic: everything on the NIC; split: packet I/O on the NIC and
the forwarding step on the CPU, where it reads and writes only the IPv4 header, so a frame
keeps its payload on the NIC; reverse: packet I/O on the CPU and the step on the NIC, so
frames cross the other way and the host keeps the payloads (tests/test_slicing.py)."""
from floem import Element, Flow, Frame, Input, Output, PerPacket, Queue, Segment, State, param
from floem import target
from floem.library import (CheckFrame, DropFrame, FromNet, IPv4Frame, LoadFrame, StoreFrame, ToNet,
                           length_prefixed)
from floem.library import packets

device = param("device", "cpu", choices=["cpu", "nic", "split", "reverse"],
               help="where the segments run")
port = target.CPU if device in ("cpu", "reverse") else target.NIC
work = target.NIC if device in ("nic", "reverse") else target.CPU


class Pkt(State):
    pkt = Frame(IPv4Frame)


class Decrement(Element):
    """Decrement the TTL and update the IPv4 checksum (RFC 1624); a TTL of 1 or less leaves
    on ``expired``."""

    c_headers = packets.HEADERS

    def configure(self):
        self.inp = Input()
        self.out = Output()
        self.expired = Output()

    def impl(self):
        self.run_c(r'''
            inp();
            uint8_t ttl = state->pkt->ip.ttl;
            bool alive = ttl > 1;
            if (alive) {
                uint16_t before = (uint16_t)(ttl << 8 | state->pkt->ip.protocol);
                state->pkt->ip.ttl = (uint8_t)(ttl - 1);
                state->pkt->ip.checksum = floem_csum_replace16(state->pkt->ip.checksum,
                    floem_hton16(before), floem_hton16((uint16_t)(before - 0x100)));
            }
            output switch { case alive: out(); else: expired(); }
        ''')


class Forward(Flow):
    state = PerPacket(Pkt)

    def impl(self):
        rxq = Queue("rxq", size=64)
        txq = Queue("txq", channel=2, size=64)

        class Rx(Segment):
            def impl(self):
                check = CheckFrame()
                FromNet(framer=length_prefixed()) >> StoreFrame() >> check
                check.out >> rxq
                check.drop >> DropFrame()

        class Work(Segment):
            def impl(self):
                step = Decrement()
                rxq >> step
                step.out >> txq.enq[0]
                step.expired >> txq.enq[1]

        class Tx(Segment):
            def impl(self):
                txq.deq[0] >> LoadFrame() >> ToNet()
                txq.deq[1] >> DropFrame()

        Rx("rx", device=port)
        Work("work", device=work)
        Tx("tx", device=port)


Forward()
