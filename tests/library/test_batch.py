"""floem.library.batch: items batched into queue entries and split after, in order."""
from __future__ import annotations

import re

from .helpers import run_app_result

N, ITEMS, BATCH = 1003, 1000, 8   # the last N - ITEMS items wait in a batch not yet full

APP = r'''
from floem import (Array, CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket,
                   Persistent, Pointer, Queue, Segment, State, Uint, main)
from floem.library.basic import Counter, Counts, Display, Inject
from floem.library.batch import Batcher, Debatcher


class Batch(State):
    count = Field(Int)
    items = Field(Pointer(Uint(64)), size="state->count * sizeof(uint64_t)")


class Arrivals(State):
    n = Field(Uint(64))
    values = Field(Array(Uint(64), @N@))
    packed = False


class Log(Element):
    arrivals = Persistent(Arrivals)

    def configure(self):
        self.inp = Input(Uint(64))
        self.out = Output(Uint(64))

    def impl(self):
        self.run_c("""
            uint64_t v = inp();
            uint64_t at = __atomic_fetch_add(&arrivals->n, 1, __ATOMIC_RELAXED);
            if (at < @N@)
                arrivals->values[at] = v;
            output { out(v); }
        """)


arrivals = Arrivals("arrivals")
received = Counts("received")
batches = Queue("batches", size=64)


class Batching(Flow):
    state = PerPacket(Batch)

    def impl(self):
        class produce(Segment):
            def impl(self):
                (Inject(gen="3 * i", count=@N@, ty=Uint(64))
                 >> Batcher(n=@BATCH@, items="state->items", count="state->count") >> batches)

        class consume(Segment):
            def impl(self):
                (batches >> Debatcher(items="state->items", count="state->count")
                 >> Log(states=[arrivals]) >> Counter(ty=Uint(64), size=0, states=[received]))

        produce("produce")
        consume("consume")


class direct(CallableSegment):
    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.inp >> Batcher(n=4, ty=Int) >> Debatcher(ty=Int) >> Display(ty=Int, label="item")


Batching()
direct("direct")

main(r"""
    for (int k = 1; k <= 10; k++) {
        printf("call %d\n", k);
        direct(k * k);
    }
    while (__atomic_load_n(&received->packets, __ATOMIC_ACQUIRE) < @ITEMS@)
        usleep(1000);
    usleep(20000);
    uint64_t in_order = 0;
    for (int k = 0; k < @ITEMS@; k++)
        in_order += arrivals->values[k] == 3 * (uint64_t)k;
    printf("received %" PRIu64 " bytes %" PRIu64 " in order %" PRIu64 "\n",
           received->packets, received->bytes, in_order);
""")
'''


def test_batcher_through_queue(tmp_path) -> None:
    source = APP.replace("@N@", str(N)).replace("@ITEMS@", str(ITEMS)).replace("@BATCH@", str(BATCH))
    result = run_app_result(tmp_path, source, options=("--report",))
    out = result.stdout.splitlines()
    want = []
    for k in range(1, 11):
        want.append(f"call {k}")
        if k % 4 == 0:
            want += [f"item {j * j}" for j in range(k - 3, k + 1)]
    assert out[:-1] == want
    assert out[-1] == f"received {ITEMS} bytes {sum(3 * k for k in range(ITEMS))} in order {ITEMS}"
    counters = re.search(r"queue batches\[0\] .*: enqueued (\d+), dequeued (\d+)", result.stderr)
    assert counters and counters.groups() == (str(ITEMS // BATCH), str(ITEMS // BATCH))
