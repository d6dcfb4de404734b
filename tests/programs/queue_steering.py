"""Steering by state->qid over three instances; dequeue by qid; an empty instance returns the default."""
from floem import CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Queue, State, main


class Packet(State):
    key = Field(Int)
    qid = Field(Int)


class Steer(Element):
    def configure(self):
        self.inp = Input(Int, Int)
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            (int key, int qid) = inp();
            state->key = key;
            state->qid = qid;
            output { out(); }
        ''')


class Key(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(state->key); }")


steered = Queue("steered", inst=3, size=8)


class Steering(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class push(CallableSegment):
            def configure(self):
                self.inp = Input(Int, Int)

            def impl(self):
                self.inp >> Steer() >> steered

        class pop(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> steered.qid
                steered >> Key() >> self.out

        push("push")
        pop("pop", default_return="-1")


Steering()

main(r'''
    for (int key = 0; key < 9; key++)
        push(key, key % 3);
    push(99, 3);                 /* no instance 3: counted and dropped */
    push(98, -1);
    for (int qid = 0; qid < 4; qid++) {
        printf("instance %d:", qid);
        for (int key; (key = pop(qid)) != -1; )
            printf(" %d", key);
        printf(" (then %d)\n", pop(qid));
    }
''')
