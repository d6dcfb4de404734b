"""The network sequencer's Stamp (examples/nf/sequencer.py) as its segment runs it, for
fuzz/harness/nf_sequencer.c:

* ``size_t sequencer(size_t size, uint8_t *data, void *buf)``: CheckUDP, Stamp and the reply
  (examples/nf/nf.py: ClearUDPChecksum, SwapUDP) on a received frame; the reply's size, or
  0 when CheckUDP or Stamp dropped it;
* ``uint64_t sequencer_drops(int which)``: Stamp's drop counts, ``too_short`` (0) and
  ``bad_groups`` (1);
* ``void sequencer_clear(void)``: every group back to its first number.
"""
from floem.library import CheckUDP

from callables import clear_function, counter_function, example_modules, frame_function

nf, sequencer = example_modules("nf", "nf", "sequencer")

frame_function("sequencer", CheckUDP(), sequencer.Stamp(states=[sequencer.groups, sequencer.drops]),
               nf.Reply())
counter_function("sequencer_drops", sequencer.drops, ("too_short", "bad_groups"))
clear_function("sequencer_clear", sequencer.groups)
