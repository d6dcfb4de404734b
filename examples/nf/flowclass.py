"""Flow classification (Floem paper, section 7.1): bytes per flow in a count-min sketch.

    segment flowclass (-D device, -D cores):  FromNet -> CheckUDP -> Classify -> Reply -> ToNet
    Classify = FlowKey -> CountMin -> Stamp

A flow is the 5-tuple (IPv4 source and destination, protocol, UDP source and
destination ports). Each packet adds its frame's length (Ethernet header included) to
its flow's count in a ``-D width=`` x ``-D depth=`` count-min sketch
(`floem.library.CountMin`), and the reply carries the flow's estimate after the update,
never below the bytes the flow sent so far, as a big-endian 64-bit number in the first
8 bytes of the UDP payload (the rest of the payload comes back as it was). Payloads
shorter than 8 bytes are dropped and counted in drops.

    floem run examples/nf/flowclass.py --port 9000
    floem run examples/nf/flowclass.py -D device=nic -D width=65536 --port 9000
"""
from floem import (Array, Composite, Element, Field, Flow, Input, Output, PerPacket, Pointer,
                   SizeT, State, Uint, Void, param)
from floem.library import FRAME, CountMin
from floem.library import headers

import nf

where = nf.placement()
width = param("width", 4096, help="counters in each row of the count-min sketch")
depth = param("depth", 4, help="rows of the count-min sketch (hash functions)")


class Packet(State):
    """The packet being classified: its frame, its flow, and the flow's estimate."""

    size = Field(SizeT)
    data = Field(Pointer(Uint(8)))
    buf = Field(Pointer(Void))
    flow = Field(Array(Uint(8), 13))            # the bytes of a struct floem_flow_key
    estimate = Field(Uint(64))


class FlowDrops(State):
    """Packets the classification dropped: UDP payload too short for the estimate."""

    too_short = Field(Uint(64))
    packed = False
    report = True


drops = FlowDrops("drops")


class FlowKey(Element):
    """Note the frame and its flow (the 5-tuple) in the packet's state; a payload shorter
    than 8 bytes is counted and leaves on ``drop``."""

    c_headers = headers.HEADERS
    c_sources = headers.SOURCES

    def configure(self) -> None:
        self.inp = Input(*FRAME)
        self.out = Output()
        self.drop = Output(*FRAME)

    def states(self, counts: State) -> None:
        self.drops = counts

    def impl(self) -> None:
        self.run_c(r'''
            (size_t size, uint8_t *data, void *buf) = inp();
            bool ok = floem_udp_payload_len(data) >= 8;
            if (ok) {
                struct floem_flow_key flow;
                floem_udp_flow_key(data, &flow);
                for (size_t i = 0; i < sizeof flow; i++)
                    state->flow[i] = ((const uint8_t *)&flow)[i];
                state->size = size;
                state->data = data;
                state->buf = buf;
            } else {
                floem_add(&drops->too_short, 1);
            }
            output switch {
                case ok: out();
                else: drop(size, data, buf);
            }
        ''')


class Stamp(Element):
    """Write the flow's estimate, big-endian, into the first 8 bytes of the UDP payload."""

    c_headers = headers.HEADERS
    c_sources = headers.SOURCES

    def configure(self) -> None:
        self.inp = Input()
        self.out = Output(*FRAME)

    def impl(self) -> None:
        self.run_c(r'''
            inp();
            uint8_t *payload = floem_udp_payload(state->data);
            floem_put32(payload, (uint32_t)(state->estimate >> 32));
            floem_put32(payload + 4, (uint32_t)state->estimate);
            output { out(state->size, state->data, state->buf); }
        ''')


class Classify(Composite):
    """Count the frame's bytes for its flow and stamp the flow's estimate into it."""

    def configure(self) -> None:
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)
        self.drop = Output(*FRAME)

    def impl(self) -> None:
        key = FlowKey(states=[drops])
        self.inp >> key
        key.out >> CountMin(width=width, depth=depth, key="state->flow",
                            length="sizeof state->flow", amount="state->size",
                            into="state->estimate") >> Stamp() >> self.out
        key.drop >> self.drop


class FlowClassification(Flow):
    """The function's segment, with `Packet` as its per-packet state."""

    state = PerPacket(Packet)

    def impl(self) -> None:
        nf.serve("flowclass", Classify, where)


if __name__ == "__floem_app__":     # run by floem; imported, it only defines the function
    FlowClassification()
