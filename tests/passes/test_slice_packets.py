"""Typed packets across queues: liveness's byte ranges, and slice_packets' windows and
frame crossings (what crosses, and whether a frame's payload stays by its port)."""
from __future__ import annotations

import pytest

from floem import (Element, FloemError, Flow, Frame, Input, Output, PerPacket, Program, Queue,
                   Segment, State, target)
from floem.ir import TO_THE_END, FrameCrossing
from floem.ir.sizes import packet_view
from floem.library import DropFrame, FromNet, IPv4Frame, LoadFrame, StoreFrame, ToNet

from .conftest import run_until


class Pkt(State):
    pkt = Frame(IPv4Frame)


class Body(Element):
    """An element with the given body, one input and one output without values."""

    def configure(self, code: str) -> None:
        self.code = code
        self.inp = Input()
        self.out = Output()

    def impl(self) -> None:
        self.run_c(self.code)


def forwarder(work: str, io=target.NIC, at=target.CPU):
    """rx (io): FromNet -> StoreFrame -> rxq;  nf (at): rxq -> Body(work) -> txq;
    tx (io): txq -> LoadFrame -> ToNet (channel 1: DropFrame)."""
    with Program("fwd") as p:
        class F(Flow):
            state = PerPacket(Pkt)

            def impl(self):
                rxq = Queue("rxq", size=16)
                txq = Queue("txq", channel=2, size=16)

                class Rx(Segment):
                    def impl(self):
                        FromNet() >> StoreFrame() >> rxq

                class Nf(Segment):
                    def impl(self):
                        rxq >> Body(code=work) >> txq.enq[0]

                class Tx(Segment):
                    def impl(self):
                        txq.deq[0] >> LoadFrame() >> ToNet()
                        txq.deq[1] >> DropFrame()

                Rx("rx", device=io)
                Nf("nf", device=at)
                Tx("tx", device=io)
        F()
    return p


TTL = "inp(); state->pkt->ip.ttl--; if (state->pkt->eth.dst[0]) {} output { out(); }"


def test_the_library_frame_lays_out_its_headers_as_the_wire_does():
    ir = run_until(forwarder(TTL), "parse_bodies")
    view = packet_view(next(s for s in ir.layouts if s.name == "IPv4Frame"))
    offsets = {path: (m.offset, m.size) for path, m in view.members.items()}
    assert offsets[("eth", "type")] == (12, 2)
    assert offsets[("ip", "ttl")] == (22, 1)
    assert offsets[("ip", "dst")] == (30, 4)
    assert offsets[("l4", "udp", "dst_port")] == (36, 2)       # a union: UDP and TCP overlap
    assert offsets[("l4", "tcp", "checksum")] == (50, 2)
    assert view.size == 54


def test_liveness_gives_the_bytes_in_use_after_each_channel():
    ir = run_until(forwarder(TTL), "liveness")
    rx = ir.liveness.packets["rxq"][0]["pkt"]
    assert rx.ranges == ((0, TO_THE_END),) and rx.whole     # LoadFrame sends every byte
    assert any("LoadFrame" in cause for cause in rx.causes)
    drop = ir.liveness.packets["txq"][1]["pkt"]
    assert drop.ranges == () and not drop.whole          # DropFrame reads no byte


def test_a_split_forwarder_keeps_the_payload_on_the_nic():
    ir = run_until(forwarder(TTL), "slice_packets")
    rx, back, drop = (ir.windows.packets["rxq"][0]["pkt"], ir.windows.packets["txq"][0]["pkt"],
                      ir.windows.packets["txq"][1]["pkt"])
    assert (rx.crossing, back.crossing, drop.crossing) == (
        FrameCrossing.LEAVES, FrameCrossing.RETURNS, FrameCrossing.RETURNS)
    assert rx.sliced and back.sliced
    assert rx.window == back.window == 23                  # ttl (22) and eth.dst[0] (0)
    assert not ir.warnings


def test_no_slicing_sends_the_frame_whole():
    ir = run_until(forwarder(TTL), "slice_packets", slicing=False)
    rx = ir.windows.packets["rxq"][0]["pkt"]
    assert not rx.sliced and rx.window is None


def test_sending_all_fields_sends_every_byte():
    ir = run_until(forwarder(TTL), "slice_packets", send_all_fields=True)
    for q in ir.queues.values():
        for carried in ir.windows.packets[q.name]:
            assert all(b.window is None and not b.sliced for b in carried.values())


@pytest.mark.parametrize("device", [target.CPU, target.NIC])
def test_frames_on_one_device_stay_in_their_buffers(device):
    ir = run_until(forwarder(TTL, io=device, at=device), "slice_packets")
    assert {b.crossing for q in ir.queues.values() for c in ir.windows.packets[q.name]
            for b in c.values()} == {FrameCrossing.STAYS}


def test_an_unbounded_access_away_from_the_port_is_warned_about_with_its_line():
    ir = run_until(forwarder("inp(); uint8_t *raw = (uint8_t *)state->pkt;\n"
                             "raw[60] = 1; output { out(); }"), "slice_packets")
    rx = ir.windows.packets["rxq"][0]["pkt"]
    assert not rx.sliced and rx.window is None
    [warning] = ir.warnings
    assert "crosses between NIC and CPU whole" in warning
    assert "'Body0'" in warning and "used as a whole pointer" in warning


def test_io_on_both_devices_cannot_share_a_frame():
    with Program("both") as p:
        class F(Flow):
            state = PerPacket(Pkt)

            def impl(self):
                q = Queue("q", size=16)

                class Rx(Segment):
                    def impl(self):
                        FromNet() >> StoreFrame() >> q

                class Tx(Segment):
                    def impl(self):
                        q >> LoadFrame() >> ToNet()

                Rx("rx", device=target.NIC)
                Tx("tx", device=target.CPU)
        F()
    with pytest.raises(FloemError, match="both have packet I/O elements"):
        run_until(p, "slice_packets")
