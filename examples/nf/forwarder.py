"""L2/L3 forwarder: route each IPv4 frame to its next hop by destination prefix.

    segments forwarder_rx, forwarder, forwarder_tx (examples/nf/shallow.py)
    Forward: TTL - 1 (checksum updated incrementally), Ethernet addresses rewritten

Each frame's destination address picks the longest matching prefix of ``-D routes=``
(``PREFIX=MAC`` entries, comma separated); its Ethernet destination becomes that next hop's
address and its source ``-D mac=`` (this router's). Its TTL goes down by one and the IPv4
checksum is updated for it (RFC 1624). A frame with a TTL of 1 or 0 (``ttl_expired``) or no
matching route (``no_route``) is dropped and counted in ``drops``; no ICMP message is sent.

    floem run examples/nf/forwarder.py --net pcap --pcap-in in.pcap --pcap-out out.pcap
    floem run examples/nf/forwarder.py -D device=cpu -D routes=0.0.0.0/0=02:00:00:00:00:02
"""
from floem import Field, State, Uint, param

import shallow

where = shallow.device()
queue_size = shallow.queue_size()
router_mac = shallow.mac("mac", param("mac", "02:00:00:00:00:01",
                                      help="this router's Ethernet address: the source of "
                                           "every frame it sends"))
routes_text = param("routes", "10.1.0.0/16=02:00:00:00:01:01,198.51.100.0/24=02:00:00:00:02:01,"
                              "203.0.113.0/24=02:00:00:00:02:02,0.0.0.0/0=02:00:00:00:03:01",
                    help="PREFIX=MAC,...: the next hop of each destination prefix "
                         "(the longest match wins; no match: dropped)")


def parse_routes(text: str) -> list[tuple[int, int, bytes]]:
    """``PREFIX=MAC,...`` as (network, mask, next hop) in host order, longest prefix first."""
    routes = []
    for entry in filter(None, (e.strip() for e in text.split(","))):
        net, sep, hop = entry.partition("=")
        if not sep:
            raise shallow.app_error(f"-D routes: {entry!r} is not PREFIX=MAC")
        network = shallow.prefix("routes", net)
        routes.append((network, shallow.mac("routes", hop)))
    if not routes:
        raise shallow.app_error("-D routes: no route given")
    if len({n for n, _ in routes}) != len(routes):
        raise shallow.app_error("-D routes: a prefix is given twice")
    routes.sort(key=lambda r: -r[0].prefixlen)
    return [(int(n.network_address), int(n.netmask), hop) for n, hop in routes]


routes = parse_routes(routes_text)


class ForwardDrops(State):
    """Frames the forwarder dropped, by reason."""

    ttl_expired = Field(Uint(64))
    no_route = Field(Uint(64))
    packed = False
    report = True


drops = ForwardDrops("drops")


class Forward(shallow.Function):
    """Look up the next hop, decrement the TTL, rewrite the Ethernet addresses.

    Ports: ``inp``, ``out``, ``drop`` (no value: the frame is ``state->pkt``).
    """

    def impl(self) -> None:
        nets = ", ".join(f"0x{n:08x}u" for n, _, _ in routes)
        masks = ", ".join(f"0x{m:08x}u" for _, m, _ in routes)
        hops = ", ".join(f"{{{shallow.c_bytes(h)}}}" for _, _, h in routes)
        self.run_c(f'''
            static const uint32_t nets[{len(routes)}] = {{{nets}}};
            static const uint32_t masks[{len(routes)}] = {{{masks}}};
            static const uint8_t hops[{len(routes)}][6] = {{{hops}}};
            inp();
            bool forward = false;
            uint8_t ttl = state->pkt->ip.ttl;
            if (ttl <= 1) {{
                floem_add(&drops->ttl_expired, 1);
            }} else {{
                uint32_t dst = floem_ntoh32(state->pkt->ip.dst);
                int route = -1;
                for (int i = 0; i < {len(routes)} && route < 0; i++)
                    if ((dst & masks[i]) == nets[i])
                        route = i;
                if (route < 0) {{
                    floem_add(&drops->no_route, 1);
                }} else {{
                    forward = true;
                    /* TTL is the high byte of the 16-bit word it shares with the protocol */
                    uint8_t proto = state->pkt->ip.protocol;
                    state->pkt->ip.ttl = (uint8_t)(ttl - 1);
                    state->pkt->ip.checksum = floem_csum_replace16(
                        state->pkt->ip.checksum,
                        floem_hton16((uint16_t)(ttl << 8 | proto)),
                        floem_hton16((uint16_t)((ttl - 1) << 8 | proto)));
                    state->pkt->eth.dst[0] = hops[route][0];
                    state->pkt->eth.dst[1] = hops[route][1];
                    state->pkt->eth.dst[2] = hops[route][2];
                    state->pkt->eth.dst[3] = hops[route][3];
                    state->pkt->eth.dst[4] = hops[route][4];
                    state->pkt->eth.dst[5] = hops[route][5];
                    {shallow.set_mac("state->pkt->eth.src", router_mac)}
                }}
            }}
            output switch {{
                case forward: out();
                else: drop();
            }}
        ''')


def forwarder() -> Forward:
    """The function: one `Forward` counting its drops in ``drops``."""
    return Forward(states=[drops])


shallow.serve("forwarder", forwarder, where, queue_size)
