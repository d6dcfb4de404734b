"""Flow classification (examples/nf/flowclass.py) as its segment runs it, for
fuzz/harness/nf_flowclass.c, with a count-min sketch of 2 rows of 16 counters (flows
collide):

* ``size_t flowclass(size_t size, uint8_t *data, void *buf)``: CheckUDP, Classify (FlowKey's
  flow key, CountMin, Stamp) and the reply (examples/nf/nf.py: ClearUDPChecksum, SwapUDP) on
  a received frame; the reply's size, or 0 when CheckUDP or FlowKey dropped it;
* ``uint64_t flowclass_drops(int which)``: FlowKey's drop count ``too_short`` (0).
"""
from floem import defaults
from floem.library import CheckUDP

from callables import counter_function, example_modules, frame_flow

defaults(width=16, depth=2)
nf, flowclass = example_modules("nf", "nf", "flowclass")

frame_flow("flowclass", flowclass.Packet, CheckUDP, flowclass.Classify, nf.Reply)
counter_function("flowclass_drops", flowclass.drops, ("too_short",))
