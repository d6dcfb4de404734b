"""The Storm data plane of one server (Floem paper, section 7.1, Figure 9; FlexStorm in
FlexNIC, section 3.3): the workers stay a plain C program (workers/), and Floem supplies
what connects them, to each other and to the other servers.

    demux  (FromNet):       Receive -> inq[worker of the tuple's task] -> Acknowledge -> ToNet
    mux    (outq):          Backlog (of the tuple's server, or the local one)
    transmit:               Transmit (window, timeouts) -> ToNet;  local backlog -> inq[worker]
    inqueue_get(worker)     the next tuple for a local worker        (callable, host)
    outqueue_put(tuple)     a tuple from a local worker               (callable, host)

A design is a parameter, ``-D design=...``:

* ``cpu``: every segment on the host's cores.
* ``split``: demux, mux and transmit on the NIC; only their device changes.
* ``bypass``: ``split``, and a tuple for a worker on the same server goes through a host
  queue (``bypass_get``), never to the NIC and back.

``-D shared_out=false`` gives each worker its own output queue instance (the paper's H2).
Run a whole topology with ``python examples/storm/run.py``; one server by hand (the
servers' UDP ports in STORM_PORTS, as the default topology gives none):

    STORM_PORTS=7101,7102,7103 floem run examples/storm/storm.py -D server=a --port 7101 -- \\
        --executors spout0,spout1,counter0,counter1,ranker0 --spouts 4 --counters 4 \\
        --rankers 4 --input tweets.txt

docs/storm.md walks through the designs as diffs of each other.
"""
import ipaddress
import os

from floem import (Array, CallableSegment, Element, Field, FloemError, Flow, Input, Int, Output,
                   PerPacket, Pointer, Queue, Segment, State, Uint, Void, cflags,
                   external_main, include, param, target)
from floem.library import FRAME, FromNet, NetFree, ToNet

from topology import TopologyError, load

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY_C = os.path.join(HERE, "..", "..", "library", "c")
TRANSPORT = (os.path.join(HERE, "transport.h"),)
SOURCES = (os.path.join(HERE, "transport.c"), os.path.join(LIBRARY_C, "headers.c"))

design = param("design", "cpu", choices=("cpu", "split", "bypass"),
               help="cpu: all on the host; split: data plane on the NIC; bypass: split, "
                    "local tuples stay on the host")
topology_file = param("topology", os.path.join(HERE, "topology.toml"), help="the topology file")
server_name = param("server", "a", help="which server of the topology this process is")
shared_out = param("shared_out", True,
                   help="workers share one output queue (false: one instance each)")
queue_size = param("queue_size", 512, help="entries of each worker's input queue instance")
window = param("window", 256, help="most tuples in flight per connection (a power of 2)")
backlog = param("backlog", 1 << 16, help="tuples waiting per destination (a power of 2)")
rto_us = param("rto_us", 20000, help="retransmission timeout, microseconds")
loopback = param("loopback", True, help="every server is on 127.0.0.1 (--net udp); false: at "
                 "the addresses and MACs of the topology (--net dpdk)")
drop_every = param("drop_every", 0, help="tests: lose every k-th datagram sent (0: none)")
drop_permille = param("drop_permille", 0, help="tests: lose this many datagrams per 1000")
drop_seed = param("drop_seed", 1, help="tests: seed of drop_permille")

try:
    topology = load(topology_file)
    me = topology.server(server_name)
except TopologyError as e:
    raise FloemError(str(e)) from None
for name, value in (("window", window), ("backlog", backlog)):
    if value < 1 or value & (value - 1):
        raise FloemError(f"-D {name}={value}: must be a power of 2")
DEVICES = {"cpu": target.CPU, "split": target.NIC, "bypass": target.NIC}
WORKERS = len(me.executors)


def config_c() -> str:
    """The topology and transport settings as C (struct storm_dp_config storm_topology)."""
    where = topology.placement()
    servers = ", ".join(str(s) for s, _ in where)
    workers = ", ".join(str(w) for _, w in where)
    ends = ", ".join(
        "{{%s}, %du, %d}" % (", ".join(f"0x{b}" for b in s.mac.split(":")),
                             int(ipaddress.IPv4Address("127.0.0.1" if loopback else s.address)),
                             s.port)
        for s in topology.servers)
    return f'''
#include "transport.h"
static const int8_t storm_dp_server_of[] = {{{servers}}};
static const int16_t storm_dp_local_of[] = {{{workers}}};
static const struct storm_endpoint storm_dp_at[] = {{{ends}}};
static const struct storm_dp_config storm_topology = {{
    {me.index}, {len(topology.servers)}, {len(where)},
    storm_dp_server_of, storm_dp_local_of, storm_dp_at,
    {window}u, {backlog}u, {rto_us * 1000}ull, {drop_every}u, {drop_permille}u, {drop_seed}ull}};
'''


class Tuple(State):
    data = Field(Array(Uint(8), 64))      # the tuple, as it is on the wire (workers/tuple.h)
    qid = Field(Int)                      # the worker (input queues) or output queue instance
    peer = Field(Int)                     # the server it came from
    frame = Field(Pointer(Uint(8)))       # the received frame, to acknowledge
    buf = Field(Pointer(Void))
    outcome = Field(Int)                  # STORM_DELIVERED or STORM_NOT_NEXT


class TransportElement(Element):
    """An element of the transport (transport.h)."""

    c_headers = TRANSPORT
    c_sources = SOURCES


class Receive(TransportElement):
    """Demux: a tuple next in sequence for a local worker on ``tuple`` (its worker in qid),
    one out of sequence on ``again``, acknowledgements (taken) and junk on ``free``."""

    def configure(self):
        self.inp = Input(*FRAME)
        self.tuple = Output()
        self.again = Output()
        self.free = Output(*FRAME)

    def impl(self):
        self.run_c(r'''
            (size_t size, uint8_t *data, void *buf) = inp();
            struct storm_transport *t = storm_dp_open(&storm_topology);
            int peer = -1, worker = -1;
            const uint8_t *tuple = NULL;
            enum storm_received r = storm_dp_receive(t, data, size, &peer, &tuple);
            if (r == STORM_RX_DATA && storm_dp_route(t, tuple, &worker) != storm_topology.self)
                r = STORM_RX_JUNK;                  /* not for an executor of this server */
            if (r == STORM_RX_DATA || r == STORM_RX_AGAIN) {
                memcpy(state->data, tuple, sizeof state->data);
                state->qid = worker;
                state->peer = peer;
                state->frame = data;
                state->buf = buf;
                state->outcome = r == STORM_RX_DATA ? STORM_DELIVERED : STORM_NOT_NEXT;
            }
            output switch {
                case r == STORM_RX_DATA: tuple();
                case r == STORM_RX_AGAIN: again();
                else: free(size, data, buf);
            }
        ''')


class Acknowledge(TransportElement):
    """Demux: the received frame becomes the acknowledgement of what has been delivered."""

    def configure(self):
        self.inp = Input()
        self.out = Output(*FRAME)
        self.lost = Output(*FRAME)

    def impl(self):
        self.run_c(r'''
            struct storm_transport *t = storm_dp_open(&storm_topology);
            size_t size = storm_dp_acknowledge(t, state->frame, state->peer, state->outcome);
            int lose = storm_dp_lose(t);
            output switch {
                case !lose: out(size, state->frame, state->buf);
                else: lost(size, state->frame, state->buf);
            }
        ''')


class Backlog(TransportElement):
    """Mux: the tuple waits in its server's backlog (or the local one) for the transmitter."""

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c(r'''
            struct storm_transport *t = storm_dp_open(&storm_topology);
            int worker;
            int server = storm_dp_route(t, state->data, &worker);
            if (server >= 0)
                while (!storm_dp_backlog_put(t, server, state->data) && floem_running())
                    floem_cpu_relax();
        ''')


class Transmit(TransportElement):
    """Transmitter (a source): datagrams to other servers (resends first, within the window),
    then tuples for local workers as frames of no bytes with the tuple in the state."""

    def configure(self):
        self.out = Output(*FRAME)

    def impl(self):
        self.run_c(r'''
            struct storm_transport *t = storm_dp_open(&storm_topology);
            storm_dp_transmit_begin(t, floem_now_ns());
            unsigned n = 0;
            uint8_t *frame;
            uint32_t len;
            void *buffer;
            const uint8_t *tuple;
            output multiple;
            for (; n < 32 && storm_dp_transmit_next(t, &frame, &len, &buffer); n++)
                out(len, frame, buffer);
            for (; n < 64 && (tuple = storm_dp_local_peek(t)) != NULL; n++) {
                int worker;
                storm_dp_route(t, tuple, &worker);
                memcpy(state->data, tuple, sizeof state->data);
                state->qid = worker;
                out(0, NULL, NULL);
                if (storm_dp_queue_refused())
                    break;
                storm_dp_local_pop(t);
            }
            if (n == 0)
                floem_idle = 1;
        ''')


class Sort(TransportElement):
    """Transmitter: a datagram to send on ``remote`` (on ``lost`` when the drop options lose
    it), a tuple for a local worker on ``local``."""

    def configure(self):
        self.inp = Input(*FRAME)
        self.remote = Output(*FRAME)
        self.lost = Output(*FRAME)
        self.local = Output()

    def impl(self):
        self.run_c(r'''
            (size_t size, uint8_t *data, void *buf) = inp();
            bool here = data == NULL;
            bool lose = !here && storm_dp_lose(storm_dp_open(&storm_topology));
            output switch {
                case here: local();
                case lose: lost(size, data, buf);
                else: remote(size, data, buf);
            }
        ''')


class Full(TransportElement):
    """Demux and transmitter: the worker's input queue had no room (the tuple will come again,
    or stays in the backlog)."""

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c("storm_dp_queue_full();")


class Hand(TransportElement):
    """Callable: the dequeued tuple, in the calling thread's copy (valid until its next call)."""

    def configure(self):
        self.inp = Input()
        self.out = Output("struct storm_tuple *")

    def impl(self):
        self.run_c(r'''
            static _Thread_local struct storm_tuple copy;
            memcpy(&copy, state->data, sizeof copy);
            output { out(&copy); }
        ''')


class Take(TransportElement):
    """Callable: a worker's tuple, to the output queue (its own instance unless shared)."""

    def configure(self):
        self.inp = Input("struct storm_tuple *")
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            struct storm_tuple *tuple = inp();
            memcpy(state->data, tuple, sizeof state->data);
            state->qid = %s;
            output { out(); }
        ''' % ("0" if shared_out else "(uint32_t)tuple->from < (uint32_t)storm_topology.executors"
                                       " ? storm_dp_local_of[tuple->from] : -1"))


class Bypass(TransportElement):
    """Bypass design: a tuple for a worker of this server on ``local`` (its worker in qid),
    others on ``remote``."""

    def configure(self):
        self.inp = Input()
        self.local = Output()
        self.remote = Output()

    def impl(self):
        self.run_c(r'''
            int worker;
            bool here = storm_dp_route(storm_dp_open(&storm_topology), state->data, &worker)
                        == storm_topology.self;
            if (here)
                state->qid = worker;
            output switch {
                case here: local();
                else: remote();
            }
        ''')


include(config_c())
cflags(f"-I{HERE}", f"-I{os.path.join(HERE, 'workers')}", f"-I{LIBRARY_C}")
if design == "bypass":
    cflags("-DSTORM_BYPASS")
device = DEVICES[design]                  # of the data plane: the one difference of split
inq = Queue("inq", inst=WORKERS, size=queue_size, lossless=False)
outq = Queue("outq", inst=1 if shared_out else WORKERS, size=queue_size)
bypass = Queue("bypass", inst=WORKERS, size=queue_size) if design == "bypass" else None


class Storm(Flow):
    state = PerPacket(Tuple)

    def impl(self):
        class demux(Segment):
            def impl(self):
                receive, acknowledge = Receive(), Acknowledge()
                FromNet() >> receive
                receive.tuple >> inq
                inq.full >> Full()
                receive.tuple >> acknowledge
                receive.again >> acknowledge
                acknowledge.out >> ToNet()
                acknowledge.lost >> NetFree()
                receive.free >> NetFree()

        class mux(Segment):
            def impl(self):
                outq >> Backlog()

        class transmit(Segment):
            def impl(self):
                sort = Sort()
                Transmit() >> sort
                sort.remote >> ToNet()
                sort.lost >> NetFree()
                sort.local >> inq
                inq.full >> Full()

        def getter(queue: Queue) -> type:
            class get(CallableSegment):
                def configure(self):
                    self.inp = Input(Int)
                    self.out = Output("struct storm_tuple *")

                def impl(self):
                    self.inp >> queue.qid
                    queue >> Hand() >> self.out
            return get

        class outqueue_put(CallableSegment):
            def configure(self):
                self.inp = Input("struct storm_tuple *")

            def impl(self):
                take = Take()
                self.inp >> take
                if bypass is None:
                    take >> outq
                else:
                    route = Bypass()
                    take >> route
                    route.local >> bypass
                    route.remote >> outq

        # One thread each (parallel=False): the receiver takes a connection's tuples in
        # sequence, and the multiplexer and the transmitter share each destination's
        # backlog, a single-producer single-consumer ring (transport.h).
        demux("demux", device=device, parallel=False)
        mux("mux", device=device, parallel=False)
        transmit("transmit", device=device, parallel=False)
        getter(inq)("inqueue_get", default_return="NULL")
        outqueue_put("outqueue_put")
        if bypass is not None:
            getter(bypass)("bypass_get", default_return="NULL")


Storm()
external_main("workers/main.c", "workers/spout.c", "workers/counter.c", "workers/ranker.c",
              "workers/table.c")
