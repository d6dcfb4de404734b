"""The source NAT (examples/nf/nat.py) as its segments run it, for fuzz/harness/nf_nat.c,
inside 10.1.0.0/16 leaving from 192.0.2.1 with the 16 ports 1024-1039 (so that they run out):

* ``size_t nat(size_t size, uint8_t *data, void *buf)``: StoreFrame, CheckFrame (the
  receiving segment), Translate (the function's), LoadFrame (the sending one) on a received
  frame; its size, or 0 when CheckFrame or Translate dropped it;
* ``uint64_t nat_drops(int which)``: Translate's counts ``no_port`` (0), ``no_mapping`` (1),
  ``not_nat`` (2);
* ``void nat_clear(void)``: every mapping forgotten.
"""
from floem import defaults
from floem.library import CheckFrame, LoadFrame, StoreFrame

from callables import clear_function, counter_function, example_modules, frame_flow

defaults(inside="10.1.0.0/16", public="192.0.2.1", ports="1024-1039")
shallow, nat = example_modules("nf", "shallow", "nat")

frame_flow("nat", shallow.Packet, StoreFrame, CheckFrame, nat.nat, LoadFrame)
counter_function("nat_drops", nat.drops, ("no_port", "no_mapping", "not_nat"))
clear_function("nat_clear", nat.mappings)
