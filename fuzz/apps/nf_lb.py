"""The load balancer (examples/nf/lb.py) as its segments run it, for fuzz/harness/nf_lb.c,
balancing 203.0.113.10 over the three backends below with a Maglev table of 13 entries:

* ``size_t lb(size_t size, uint8_t *data, void *buf)``: StoreFrame, CheckFrame (the receiving
  segment), Balance (the function's), LoadFrame (the sending one) on a received frame; its
  size, or 0 when CheckFrame or Balance dropped it;
* ``uint64_t lb_drops(int which)``: Balance's count ``not_vip`` (0).
"""
from floem import defaults
from floem.library import CheckFrame, LoadFrame, StoreFrame

from callables import counter_function, example_modules, frame_flow

defaults(vip="203.0.113.10", mac="02:00:00:00:00:01", table=13,
         backends="10.2.0.1=02:00:00:00:04:01,10.2.0.2=02:00:00:00:04:02,"
                  "10.2.0.3=02:00:00:00:04:03")
shallow, lb = example_modules("nf", "shallow", "lb")

frame_flow("lb", shallow.Packet, StoreFrame, CheckFrame, lb.balancer, LoadFrame)
counter_function("lb_drops", lb.drops, ("not_vip",))
