"""The stateful firewall (examples/nf/firewall.py) as its segments run it, for
fuzz/harness/nf_firewall.c, with the rules below (the app's defaults) and a table of 16
flows (so that it fills):

* ``size_t firewall(size_t size, uint8_t *data, void *buf)``: StoreFrame, CheckFrame (the
  receiving segment), Filter (the function's), LoadFrame (the sending one) on a received
  frame; its size, or 0 when CheckFrame or Filter dropped it;
* ``uint64_t firewall_drops(int which)``: Filter's counts ``denied`` (0), ``table_full`` (1);
* ``void firewall_clear(void)``: the established-flow table emptied.
"""
from floem import defaults
from floem.library import CheckFrame, LoadFrame, StoreFrame

from callables import clear_function, counter_function, example_modules, frame_flow

defaults(flows=16, rules="allow tcp 10.1.0.0/16 198.51.100.0/24:80,"
                         "allow tcp 10.1.0.0/16 198.51.100.0/24:443,"
                         "allow udp 10.1.0.0/16 any:53,"
                         "deny tcp any 10.1.0.80/32:22,"
                         "allow tcp any 10.1.0.80/32:1-1023")
shallow, firewall = example_modules("nf", "shallow", "firewall")

frame_flow("firewall", shallow.Packet, StoreFrame, CheckFrame, firewall.firewall, LoadFrame)
counter_function("firewall_drops", firewall.drops, ("denied", "table_full"))
clear_function("firewall_clear", firewall.table)
