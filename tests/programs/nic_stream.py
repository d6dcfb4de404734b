"""4000 values host -> NIC -> host through two instances of small queues (many laps of each
ring, with the sync layer's batches wrapping): the host checks that each instance delivers
its values once each, in order, with the NIC's change applied."""
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Queue,
                   Segment, State, Uint, main, target)


class Packet(State):
    seq = Field(Uint(32))
    value = Field(Uint(64))
    qid = Field(Int)


class Make(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            int i = inp();
            state->seq = (uint32_t)i;
            state->value = (uint64_t)i * 0x9e3779b97f4a7c15ull;
            state->qid = i % 2;
            output { out(); }
        ''')


class Work(Element):
    """On the NIC: a change of the whole 64-bit value; the instance stays the same."""

    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c("state->value = state->value * 3 + 1; output { out(); }")


class Check(Element):
    """The value's sequence number if the NIC's change is all there, else its negation."""

    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            uint64_t want = (uint64_t)state->seq * 0x9e3779b97f4a7c15ull * 3 + 1;
            output { out(state->value == want ? (int)state->seq : -(int)state->seq); }
        ''')


to_nic = Queue("to_nic", inst=2, size=12)
to_host = Queue("to_host", inst=2, size=12)


class Stream(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class push(CallableSegment):
            def configure(self):
                self.inp = Input(Int)

            def impl(self):
                self.inp >> Make() >> to_nic

        class work(Segment):
            def impl(self):
                to_nic >> Work() >> to_host

        class pop(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> to_host.qid
                to_host >> Check() >> self.out

        push("push")
        work("work", device=target.NIC, cores=[0, 1])
        pop("pop", default_return="0")


Stream()

main(r'''
    enum { N = 4000, WINDOW = 20 };    /* at most WINDOW in flight: both queues never fill */
    int next = 1, done = 0, expect[2] = {2, 1}, count[2] = {0, 0}, errors = 0;
    while (done < N) {
        if (next <= N && next - 1 - done < WINDOW) {
            push(next++);
            continue;
        }
        for (int q = 0; q < 2; q++) {
            int seq = pop(q);
            if (seq == 0)
                continue;
            if (seq != expect[q] && errors++ < 5)
                printf("instance %d: expected %d, got %d\n", q, expect[q], seq);
            expect[q] = (seq < 0 ? -seq : seq) + 2;
            count[q]++;
            done++;
        }
    }
    for (int q = 0; q < 2; q++)
        printf("instance %d: %d values\n", q, count[q]);
    printf("%s\n", errors == 0 ? "all in order and intact" : "errors");
''')
