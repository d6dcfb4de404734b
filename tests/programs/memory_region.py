"""A MemoryRegion written by an element and read by main (and the other way round)."""
from floem import CallableSegment, Element, Input, Int, MemoryRegion, main

MemoryRegion("scratch", 4096)


class Fill(Element):
    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.run_c(r'''
            int n = inp();
            int *words = scratch;
            for (int i = 0; i < n; i++)
                words[i] = words[1000] + i * i;
        ''')


class fill(CallableSegment):
    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.inp >> Fill()


fill("fill")

main(r'''
    int *words = scratch;
    words[1000] = 100;            /* main writes, the element reads */
    fill(5);
    for (int i = 0; i < 5; i++)
        printf("scratch[%d] = %d\n", i, words[i]);
''')
