"""Pointer keys and values of varying lengths behind a write-back cache (CPU).

Keys are strings "k", "kx", "kxx"... followed by a number (the slot); values are
strings of 1 to 40 bytes. Run: floem run kv_bytes_app.py -- OPS with lines
"g KEY" / "s KEY VALUE"; every get prints "KEY=VALUE" (or "KEY=-" when unset).
"""
from floem import (Array, CallableSegment, Cache, Element, Field, Flow, Input, Int, Output,
                   PerPacket, Persistent, Pointer, State, Uint, main)


class Request(State):
    key = Field(Pointer(Uint(8)))
    keylen = Field(Int)
    val = Field(Pointer(Uint(8)))
    vallen = Field(Int)


class Slot(State):
    len = Field(Int)
    bytes = Field(Array(Uint(8), 48))
    packed = False


class Backing(State):
    slots = Field(Array(Slot, 64))
    packed = False


class Make(Element):
    def configure(self):
        self.inp = Input(Int, Pointer(Uint(8)), Int, Pointer(Uint(8)), Int)
        self.get = Output()
        self.set = Output()

    def impl(self):
        self.run_c(r'''
            (int op, uint8_t *key, int keylen, uint8_t *val, int vallen) = inp();
            state->key = key;
            state->keylen = keylen;
            state->val = val;
            state->vallen = vallen;
            output switch { case op == 0: get(); else: set(); }
        ''')


class Slotted(Element):
    """Base of the two store elements: the slot of a key is the number it ends with."""

    backing = Persistent(Backing)

    def states(self, backing):
        self.backing = backing

    def configure(self):
        self.inp = Input()
        self.out = Output()


class StoreGet(Slotted):
    def impl(self):
        self.run_c(r'''
            int slot = atoi((const char *)state->key + strspn((const char *)state->key, "kx"));
            state->val = backing->slots[slot].bytes;
            state->vallen = backing->slots[slot].len;
            output { out(); }
        ''')


class StorePut(Slotted):
    def impl(self):
        self.run_c(r'''
            int slot = atoi((const char *)state->key + strspn((const char *)state->key, "kx"));
            memcpy(backing->slots[slot].bytes, state->val, (size_t)state->vallen);
            backing->slots[slot].len = state->vallen;
            output { out(); }
        ''')


class Reply(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            printf("%.*s=%.*s\n", state->keylen, (const char *)state->key,
                   state->vallen ? state->vallen : 1, state->vallen ? (const char *)state->val : "-");
            output { out(0); }
        ''')


class Ack(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(0); }")


backing = Backing("backing")
kv = Cache("kvb", key="key", keylen="keylen", val="val", vallen="vallen", buckets=2, entries=2,
           policy=Cache.WRITE_BACK, write_miss=Cache.WRITE_ALLOC)


class KV(Flow):
    state = PerPacket(Request)

    def impl(self):
        class request(CallableSegment):
            def configure(self):
                self.inp = Input(Int, Pointer(Uint(8)), Int, Pointer(Uint(8)), Int)
                self.out = Output(Int)

            def impl(self):
                m = Make()
                self.inp >> m
                m.get >> kv.get_start >> StoreGet(states=[backing]) >> kv.get_end >> Reply() >> self.out
                m.set >> kv.set_start >> StorePut(states=[backing]) >> kv.set_end >> Ack() >> self.out

        request("request")


KV()

main(r'''
    FILE *ops = fopen(argv[1], "r");
    char op, key[64], val[64];
    while (fscanf(ops, " %c %63s", &op, key) == 2) {
        if (op == 's') {
            if (fscanf(ops, " %63s", val) != 1)
                return 2;
            request(1, (uint8_t *)key, (int)strlen(key), (uint8_t *)val, (int)strlen(val));
        } else {
            request(0, (uint8_t *)key, (int)strlen(key), NULL, 0);
        }
    }
    fclose(ops);
''')
