"""FIFO order from two enqueuing callables into one queue, dequeued by a callable."""
from floem import CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Queue, State, main


class Item(State):
    value = Field(Int)


class Save(Element):
    def configure(self, tag):
        self.inp = Input(Int)
        self.out = Output()
        self.tag = tag

    def impl(self):
        self.run_c("state->value = %d * 1000 + inp(); output { out(); }" % self.tag)


class Load(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(state->value); }")


fifo = Queue("fifo", size=16)


class Items(Flow):
    state = PerPacket(Item)

    def impl(self):
        class push_a(CallableSegment):
            def configure(self):
                self.inp = Input(Int)

            def impl(self):
                self.inp >> Save(tag=1) >> fifo

        class push_b(CallableSegment):
            def configure(self):
                self.inp = Input(Int)

            def impl(self):
                self.inp >> Save(tag=2) >> fifo

        class pop(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> fifo.qid
                fifo >> Load() >> self.out

        push_a("push_a")
        push_b("push_b")
        pop("pop", default_return="-1")


Items()

main(r'''
    push_a(1); push_b(1); push_b(2); push_a(2); push_a(3); push_b(3);
    for (int v; (v = pop(0)) != -1; )
        printf("%d\n", v);
    printf("empty: %d\n", pop(0));
''')
