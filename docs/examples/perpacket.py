"""Per-packet state: fields every element of a Flow reads and writes as `state->field`."""
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, State,
                   Uint, main)


class Order(State):
    """What one packet (here: one call) carries from element to element."""

    quantity = Field(Int)
    unit_price = Field(Int)
    discount = Field(Uint(8))     # percent


class Parse(Element):
    def configure(self):
        self.inp = Input(Int, Int)
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            (int quantity, int price) = inp();
            state->quantity = quantity;
            state.unit_price = price;       /* state.f means state->f */
            output { out(); }
        ''')


class Discount(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            if (state->quantity >= 10)
                state->discount = 20;
            output { out(); }
        ''')


class Total(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            int gross = state->quantity * state->unit_price;
            output { out(gross - gross * state->discount / 100); }
        ''')


class Shop(Flow):
    state = PerPacket(Order)

    def impl(self):
        class price(CallableSegment):
            def configure(self):
                self.inp = Input(Int, Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> Parse() >> Discount() >> Total() >> self.out

        price("price")


Shop()

main(r'''
    printf("3 x 100 = %d\n", price(3, 100));
    printf("10 x 100 = %d\n", price(10, 100));
    printf("3 x 100 = %d\n", price(3, 100));    /* discount is 0 again: state starts zeroed */
''')
