"""A NIC segment with cores=[0, 1, 2]: each NIC core forwards its instance to a host instance."""
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Queue,
                   Segment, State, main, target)


class Packet(State):
    key = Field(Int)
    qid = Field(Int)


class Steer(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            int key = inp();
            state->key = key;
            state->qid = key % 3;
            output { out(); }
        ''')


class Tag(Element):
    """On the NIC: remember which NIC core handled the packet; steer back to the same index."""

    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            state->key = state->key * 10 + floem_core_id;
            state->qid = floem_core_id;
            output { out(); }
        ''')


class Key(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(state->key); }")


requests = Queue("requests", inst=3, size=8)
replies = Queue("replies", inst=3, size=8)


class Steering(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class push(CallableSegment):
            def configure(self):
                self.inp = Input(Int)

            def impl(self):
                self.inp >> Steer() >> requests

        class forward(Segment):
            def impl(self):
                requests >> Tag() >> replies

        class pop(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> replies.qid
                replies >> Key() >> self.out

        push("push")
        forward("forward", device=target.NIC, cores=[0, 1, 2])
        pop("pop", default_return="-1")


Steering()

main(r'''
    for (int key = 1; key <= 9; key++)
        push(key);
    for (int qid = 0; qid < 3; qid++) {
        printf("host instance %d:", qid);
        for (int n = 0; n < 3; ) {
            int v = pop(qid);
            if (v == -1) {
                usleep(100);
                continue;
            }
            printf(" %d", v);
            n++;
        }
        printf("\n");
    }
''')
