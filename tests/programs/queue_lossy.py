"""A lossy queue drops (and counts) what does not fit; a lossless one would wait."""
from floem import CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Queue, State, main


class Item(State):
    value = Field(Int)


class Save(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c("state->value = inp(); output { out(); }")


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

            def impl(self):
                self.inp >> Save() >> small

        class pop(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> small.qid
                small >> Load() >> self.out

        push("push")
        pop("pop", default_return="-1")


Items()

main(r'''
    for (int i = 1; i <= 10; i++)
        push(i);
    for (int v; (v = pop(0)) != -1; )
        printf("%d\n", v);
    push(11);
    printf("after draining: %d\n", pop(0));
''')
