"""Source NAT: the inside network's flows leave from one public address, each
inside endpoint with a public port of its own; replies are translated back.

    segments nat_rx, nat, nat_tx (examples/nf/shallow.py)
    Translate: outbound (inside -> outside): source address and port rewritten
               inbound (outside -> public address): destination address and port rewritten

A frame from ``-D inside=`` (a prefix) to an address outside it (and not the public one) is
outbound: its (protocol, source address, source port) gets the next free port of ``-D
ports=`` the first time it is seen, and keeps it (endpoint-independent mapping, RFC 4787);
the frame leaves from ``-D public=`` and that port. A frame from outside to the public
address is inbound: the protocol and destination port name the mapping, whose inside address
and port become the destination (endpoint-independent filtering: any outside host may use a
mapping). The IPv4 checksum and the TCP or UDP checksum (whose pseudo-header holds the
addresses) are updated incrementally (RFC 1624); a UDP checksum of 0 ("none") stays 0.

Dropped and counted: outbound frames once every port is taken (``no_port``; mappings are
never freed: no timeouts), inbound frames to a port without mapping or of another protocol
than the mapping's (``no_mapping``), and frames that are neither (``not_nat``: inside to
inside, outside to outside, outside to an inside address, inside to the public address).
TCP and UDP share the port range.

    floem run examples/nf/nat.py --net pcap --pcap-in in.pcap --pcap-out out.pcap
    floem run examples/nf/nat.py -D public=203.0.113.1 -D ports=20000-29999
"""
from floem import Array, Field, State, Uint, param

import shallow

where = shallow.device()
queue_size = shallow.queue_size()
inside = shallow.prefix("inside", param("inside", "10.1.0.0/16",
                                        help="the inside network (a prefix) whose flows are "
                                             "translated"))
public_text = param("public", "192.0.2.1", help="the public address inside flows leave from")
public = shallow.ipv4("public", public_text)
first_port, last_port = shallow.ports("ports", param("ports", "1024-65535",
                                                     help="LOW-HIGH: the public ports given "
                                                          "out, in order"))
if first_port == 0:
    raise shallow.app_error("-D ports: port 0 cannot be given out")
if (public & int(inside.netmask)) == int(inside.network_address):
    raise shallow.app_error(f"-D public: {public_text} is inside -D inside={inside}")
PORTS = last_port - first_port + 1
#: Slots of the outbound table: twice the ports, a power of two (probes stay short).
SLOTS = 1 << (2 * PORTS - 1).bit_length()


class NatDrops(State):
    """Frames the NAT dropped, by reason."""

    no_port = Field(Uint(64))
    no_mapping = Field(Uint(64))
    not_nat = Field(Uint(64))
    packed = False
    report = True


class Mappings(State):
    """The translation table both ways. ``out``: `SLOTS` entries of two words (0;
    1 << 56 | protocol << 48 | inside address << 16 | inside port), the entry's public
    port in ``out_port`` (probed by nf_table_find). ``back[port - first]``: the same second
    word for each public port given out, 0 for the others. ``given``: ports given out."""

    out = Field(Array(Uint(64), 2 * SLOTS))
    out_port = Field(Array(Uint(16), SLOTS))
    back = Field(Array(Uint(64), PORTS))
    given = Field(Uint(32))
    packed = False


drops = NatDrops("drops")
mappings = Mappings("mappings")


class Translate(shallow.Function):
    """Translate outbound and inbound frames; drop the others.

    Ports: ``inp``, ``out``, ``drop`` (no value: the frame is ``state->pkt``).
    """

    def states(self, counts: State, table: State) -> None:
        self.drops = counts
        self.table = table

    def impl(self) -> None:
        net, mask = int(inside.network_address), int(inside.netmask)
        self.run_c(f'''
            inp();
            uint8_t p = state->pkt->ip.protocol;
            uint32_t src = floem_ntoh32(state->pkt->ip.src);
            uint32_t dst = floem_ntoh32(state->pkt->ip.dst);
            bool from_inside = (src & 0x{mask:08x}u) == 0x{net:08x}u;
            bool to_inside = (dst & 0x{mask:08x}u) == 0x{net:08x}u;
            bool pass = false;
            /* The rewritten address (old and new as stored) and port, for the checksums. */
            uint32_t old_addr = 0, new_addr = 0;
            uint16_t old_port = 0, new_port = 0;
            if (from_inside && !to_inside && dst != 0x{public:08x}u) {{
                uint16_t sport = floem_ntoh16(state->pkt->l4.udp.src_port);
                uint64_t key = 1ull << 56 | (uint64_t)p << 48 | (uint64_t)src << 16 | sport;
                int64_t at = nf_table_find(table->out, {SLOTS}u, 0, key);
                if (at < 0 && table->given == {PORTS}u) {{
                    floem_add(&drops->no_port, 1);
                }} else {{
                    if (at < 0) {{
                        at = -1 - at;
                        table->out[2 * at + 1] = key;
                        table->out_port[at] = (uint16_t)({first_port}u + table->given);
                        table->back[table->given] = key;
                        table->given++;
                    }}
                    pass = true;
                    old_addr = state->pkt->ip.src;
                    new_addr = floem_hton32(0x{public:08x}u);
                    old_port = state->pkt->l4.udp.src_port;
                    new_port = floem_hton16(table->out_port[at]);
                    state->pkt->ip.src = new_addr;
                    state->pkt->l4.udp.src_port = new_port;
                }}
            }} else if (dst == 0x{public:08x}u && !from_inside) {{
                uint32_t given = (uint32_t)floem_ntoh16(state->pkt->l4.udp.dst_port)
                                 - {first_port}u;      /* wraps round below the range */
                uint64_t key = given < {PORTS}u ? table->back[given] : 0;
                if (key == 0 || (uint8_t)(key >> 48) != p) {{
                    floem_add(&drops->no_mapping, 1);
                }} else {{
                    pass = true;
                    old_addr = state->pkt->ip.dst;
                    new_addr = floem_hton32((uint32_t)(key >> 16));
                    old_port = state->pkt->l4.udp.dst_port;
                    new_port = floem_hton16((uint16_t)key);
                    state->pkt->ip.dst = new_addr;
                    state->pkt->l4.udp.dst_port = new_port;
                }}
            }} else {{
                floem_add(&drops->not_nat, 1);
            }}
            if (pass) {{
                state->pkt->ip.checksum =
                    floem_csum_replace32(state->pkt->ip.checksum, old_addr, new_addr);
                if (p == 6) {{
                    uint16_t c = floem_csum_replace32(state->pkt->l4.tcp.checksum, old_addr,
                                                      new_addr);
                    state->pkt->l4.tcp.checksum = floem_csum_replace16(c, old_port, new_port);
                }} else if (state->pkt->l4.udp.checksum != 0) {{
                    uint16_t c = floem_csum_replace32(state->pkt->l4.udp.checksum, old_addr,
                                                      new_addr);
                    state->pkt->l4.udp.checksum =
                        nf_udp_csum(floem_csum_replace16(c, old_port, new_port));
                }}
            }}
            output switch {{
                case pass: out();
                else: drop();
            }}
        ''')


def nat() -> Translate:
    """The function: one `Translate` over ``mappings``, counting in ``drops``."""
    return Translate(states=[drops, mappings])


if __name__ == "__floem_app__":     # run by floem; imported, it only defines the function
    shallow.serve("nat", nat, where, queue_size)
