"""floem.library.sketch: count-min estimates of bytes per flow on a Zipf stream, against numpy."""
from __future__ import annotations

import math

import numpy as np

from .helpers import run_app

WIDTH, DEPTH = 512, 4
FLOWS, PACKETS = 3000, 40000

APP = r'''
from floem import (CallableSegment, Element, Field, Flow, Input, Output, PerPacket, Pointer,
                   SizeT, State, Uint, Void, main)
from floem.library.sketch import CountMin


class Packet(State):
    flow = Field(Pointer(Void))
    bytes = Field(Uint(64))
    estimate = Field(Uint(64))


class Take(Element):
    def configure(self):
        self.inp = Input(Pointer(Void), SizeT, Uint(64))
        self.out = Output()

    def impl(self):
        self.run_c("(void *k, size_t n, uint64_t b) = inp(); (void)n; "
                   "state->flow = k; state->bytes = b; output { out(); }")


class Estimate(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Uint(64))

    def impl(self):
        self.run_c("output { out(state->estimate); }")


class plain(CallableSegment):
    def configure(self):
        self.inp = Input(Pointer(Void), SizeT, Uint(64))
        self.out = Output(Uint(64))

    def impl(self):
        self.inp >> CountMin(width=WIDTH, depth=DEPTH, sketch="plain_sketch") >> self.out


class Classify(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class conservative(CallableSegment):
            def configure(self):
                self.inp = Input(Pointer(Void), SizeT, Uint(64))
                self.out = Output(Uint(64))

            def impl(self):
                (self.inp >> Take()
                 >> CountMin(width=WIDTH, depth=DEPTH, conservative=True, key="state->flow",
                             length="13", amount="state->bytes", into="state->estimate",
                             sketch="cu_sketch")
                 >> Estimate() >> self.out)

        conservative("conservative")


plain("plain")
Classify()

main(r"""
    FILE *in = fopen(argv[1], "rb");
    static uint8_t flows[FLOWS][13];
    if (!in || fread(flows, 13, FLOWS, in) != FLOWS)
        return 2;
    uint32_t rec[2];
    uint64_t mismatches = 0;
    while (fread(rec, sizeof rec, 1, in) == 1) {
        uint64_t a = plain(flows[rec[0]], 13, rec[1]);
        uint64_t b = conservative(flows[rec[0]], 13, rec[1]);
        mismatches += a != floem_cms_estimate(plain_sketch->counts, WIDTH, DEPTH, flows[rec[0]], 13);
        mismatches += b != floem_cms_estimate(cu_sketch->counts, WIDTH, DEPTH, flows[rec[0]], 13);
    }
    printf("totals %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", plain_sketch->total, cu_sketch->total,
           mismatches);
    for (int f = 0; f < FLOWS; f++)
        printf("%" PRIu64 " %" PRIu64 "\n",
               floem_cms_estimate(plain_sketch->counts, plain_sketch->width, plain_sketch->depth, flows[f], 13),
               floem_cms_estimate(cu_sketch->counts, cu_sketch->width, cu_sketch->depth, flows[f], 13));
""")
'''


def test_count_min_bounds(tmp_path) -> None:
    rng = np.random.default_rng(5)
    flows = rng.integers(0, 256, size=(FLOWS, 13), dtype=np.uint8)
    ranks = rng.zipf(1.2, size=PACKETS * 3)
    ranks = ranks[ranks <= FLOWS][:PACKETS] - 1
    assert len(ranks) == PACKETS
    sizes = rng.integers(64, 1501, size=PACKETS)
    stream = np.stack([ranks, sizes], axis=1).astype("<u4")
    (tmp_path / "stream.bin").write_bytes(flows.tobytes() + stream.tobytes())
    source = APP.replace("WIDTH", str(WIDTH)).replace("DEPTH", str(DEPTH)).replace(
        "FLOWS", str(FLOWS))
    out = run_app(tmp_path, source, str(tmp_path / "stream.bin")).splitlines()

    exact = np.bincount(ranks, weights=sizes, minlength=FLOWS).astype(np.int64)
    total = int(sizes.sum())
    assert out[0] == f"totals {total} {total} 0"
    est = np.array([[int(x) for x in line.split()] for line in out[1:]], dtype=np.int64)
    plain, cu = est[:, 0], est[:, 1]
    assert len(est) == FLOWS
    assert (plain >= exact).all() and (cu >= exact).all()
    assert (cu <= plain).all()
    bound = math.e / WIDTH * total
    delta = math.exp(-DEPTH)
    allowed = delta * FLOWS + 3 * math.sqrt(delta * FLOWS)
    assert ((plain - exact) > bound).sum() <= allowed
    assert ((cu - exact) > bound).sum() <= allowed
    assert (cu - exact).sum() < (plain - exact).sum()
