"""A lossy queue's full port: a packet that finds its instance full goes on there, with its
state, instead of being dropped; what only that path reads is not carried by the queue."""
from floem import CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Queue, State, main


class Item(State):
    value = Field(Int)
    attempt = Field(Int)


class Save(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c("state->value = inp(); state->attempt = state->value * 100; output { out(); }")


class Refused(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(-state->attempt); }")


class Load(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(state->value); }")


small = Queue("small", size=4, lossless=False)


class Items(Flow):
    state = PerPacket(Item)

    def impl(self):
        class push(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> Save() >> small
                small.full >> Refused() >> self.out

        class pop(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> small.qid
                small >> Load() >> self.out

        push("push", default_return="0")
        pop("pop", default_return="-1")


Items()

main(r'''
    for (int i = 1; i <= 6; i++)
        printf("push %d: %d\n", i, push(i));
    for (int v; (v = pop(0)) != -1; )
        printf("%d\n", v);
''')
