"""Stateful firewall: ordered rules decide new flows; allowed flows are remembered
so that both their directions pass.

    segments firewall_rx, firewall, firewall_tx (examples/nf/shallow.py)
    Filter: established flow? pass : first matching rule (allow: remember the flow)

A frame whose flow (5-tuple) or reverse flow is in the established-flow table passes. Any
other frame is a new flow's: the first of ``-D rules=`` that matches it decides, and no match
denies. An allowed new flow enters the table, so its replies pass as well (whichever side
started it: the rules say who may start flows, e.g. only the inside). Denied frames are
dropped and counted (``denied``). The table holds ``-D flows=`` flows and never forgets one
(no timeouts, no TCP state): once it is full, allowed new flows still pass but are not
remembered (counted per frame as ``table_full``), so their replies need a rule of their own.
Frames pass unchanged.

Rules, comma separated, each ``ACTION PROTO SRC DST``: ACTION ``allow`` or ``deny``; PROTO
``tcp``, ``udp`` or ``any``; SRC and DST ``PREFIX`` or ``any``, each optionally followed by
``:PORT`` or ``:LOW-HIGH``. The default lets the inside (10.1.0.0/16) reach web servers
(198.51.100.0/24 ports 80 and 443) and DNS anywhere, and the outside reach the inside server
10.1.0.80 on TCP ports below 1024 except 22.

    floem run examples/nf/firewall.py --net pcap --pcap-in in.pcap --pcap-out out.pcap
    floem run examples/nf/firewall.py -D device=nic -D rules="allow any 10.0.0.0/8 any"
"""
from typing import NamedTuple

from floem import Array, Field, State, Uint, param

import shallow

where = shallow.device()
queue_size = shallow.queue_size()
rules_text = param("rules", "allow tcp 10.1.0.0/16 198.51.100.0/24:80,"
                            "allow tcp 10.1.0.0/16 198.51.100.0/24:443,"
                            "allow udp 10.1.0.0/16 any:53,"
                            "deny tcp any 10.1.0.80/32:22,"
                            "allow tcp any 10.1.0.80/32:1-1023",
                   help="ACTION PROTO SRC[:PORTS] DST[:PORTS],...: the first match decides a "
                        "new flow (none: denied)")
flows = param("flows", 4096, help="flows the established-flow table holds")
if not 1 <= flows <= 1 << 24:
    raise shallow.app_error(f"-D flows={flows}: the table holds 1 to {1 << 24} flows")

PROTOCOLS = {"tcp": 6, "udp": 17, "any": 0}


class Rule(NamedTuple):
    """A rule: allow or deny, protocol (0: any), source and destination prefixes (host-order
    network and mask) and port ranges."""

    allow: bool
    proto: int
    src: tuple[int, int]
    sports: tuple[int, int]
    dst: tuple[int, int]
    dports: tuple[int, int]


def endpoint(text: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """``PREFIX[:PORTS]`` or ``any[:PORTS]``: (network, mask) and port range."""
    addr, sep, span = text.partition(":")
    net = shallow.prefix("rules", "0.0.0.0/0" if addr == "any" else addr)
    ports = shallow.ports("rules", span) if sep else (0, 65535)
    return (int(net.network_address), int(net.netmask)), ports


def parse_rules(text: str) -> list[Rule]:
    """The rules of ``-D rules=``, in order."""
    rules = []
    for entry in filter(None, (e.strip() for e in text.split(","))):
        words = entry.split()
        if len(words) != 4 or words[0] not in ("allow", "deny") or words[1] not in PROTOCOLS:
            raise shallow.app_error(f"-D rules: {entry!r} is not 'allow|deny tcp|udp|any SRC "
                                    "DST'")
        src, sports = endpoint(words[2])
        dst, dports = endpoint(words[3])
        rules.append(Rule(words[0] == "allow", PROTOCOLS[words[1]], src, sports, dst, dports))
    if not rules:
        raise shallow.app_error("-D rules: no rule given (everything would be denied)")
    return rules


rules = parse_rules(rules_text)


class FirewallDrops(State):
    """Frames denied; allowed frames of new flows the full table could not remember."""

    denied = Field(Uint(64))
    table_full = Field(Uint(64))
    packed = False
    report = True


class FlowTable(State):
    """The established flows: ``flows`` entries of two words (source << 32 | destination;
    1 << 40 | protocol << 32 | source port << 16 | destination port), 0 when empty."""

    keys = Field(Array(Uint(64), 2 * flows))
    packed = False


drops = FirewallDrops("drops")
table = FlowTable("table")


class Filter(shallow.Function):
    """Pass established flows; decide new ones by the rules, remembering the allowed.

    Ports: ``inp``, ``out``, ``drop`` (no value: the frame is ``state->pkt``).
    """

    def states(self, counts: State, flows_table: State) -> None:
        self.drops = counts
        self.table = flows_table

    def impl(self) -> None:
        def column(values: list[int], fmt: str = "{}u") -> str:
            return ", ".join(fmt.format(v) for v in values)

        n = len(rules)
        self.run_c(f'''
            static const uint8_t allow[{n}] = {{{column([int(r.allow) for r in rules])}}};
            static const uint8_t proto[{n}] = {{{column([r.proto for r in rules])}}};
            static const uint32_t src_net[{n}] = {{{column([r.src[0] for r in rules])}}};
            static const uint32_t src_mask[{n}] = {{{column([r.src[1] for r in rules])}}};
            static const uint32_t dst_net[{n}] = {{{column([r.dst[0] for r in rules])}}};
            static const uint32_t dst_mask[{n}] = {{{column([r.dst[1] for r in rules])}}};
            static const uint16_t sport_lo[{n}] = {{{column([r.sports[0] for r in rules])}}};
            static const uint16_t sport_hi[{n}] = {{{column([r.sports[1] for r in rules])}}};
            static const uint16_t dport_lo[{n}] = {{{column([r.dports[0] for r in rules])}}};
            static const uint16_t dport_hi[{n}] = {{{column([r.dports[1] for r in rules])}}};
            inp();
            uint8_t p = state->pkt->ip.protocol;
            uint32_t src = floem_ntoh32(state->pkt->ip.src);
            uint32_t dst = floem_ntoh32(state->pkt->ip.dst);
            uint16_t sport = floem_ntoh16(state->pkt->l4.udp.src_port);
            uint16_t dport = floem_ntoh16(state->pkt->l4.udp.dst_port);
            uint64_t key0 = (uint64_t)src << 32 | dst;
            uint64_t key1 = 1ull << 40 | (uint64_t)p << 32 | (uint32_t)sport << 16 | dport;
            uint64_t back0 = (uint64_t)dst << 32 | src;
            uint64_t back1 = 1ull << 40 | (uint64_t)p << 32 | (uint32_t)dport << 16 | sport;
            int64_t at = nf_table_find(table->keys, {flows}u, key0, key1);
            bool pass = at >= 0 || nf_table_find(table->keys, {flows}u, back0, back1) >= 0;
            if (!pass) {{
                int rule = -1;
                for (int i = 0; i < {n} && rule < 0; i++)
                    if ((proto[i] == 0 || proto[i] == p)
                        && (src & src_mask[i]) == src_net[i] && (dst & dst_mask[i]) == dst_net[i]
                        && sport >= sport_lo[i] && sport <= sport_hi[i]
                        && dport >= dport_lo[i] && dport <= dport_hi[i])
                        rule = i;
                pass = rule >= 0 && allow[rule];
                if (!pass) {{
                    floem_add(&drops->denied, 1);
                }} else if (at == -1 - (int64_t){flows}) {{
                    floem_add(&drops->table_full, 1);
                }} else {{
                    uint32_t slot = (uint32_t)(-1 - at);
                    table->keys[2 * slot] = key0;
                    table->keys[2 * slot + 1] = key1;
                }}
            }}
            output switch {{
                case pass: out();
                else: drop();
            }}
        ''')


def firewall() -> Filter:
    """The function: one `Filter` over ``table``, counting in ``drops``."""
    return Filter(states=[drops, table])


if __name__ == "__floem_app__":     # run by floem; imported, it only defines the function
    shallow.serve("firewall", firewall, where, queue_size)
