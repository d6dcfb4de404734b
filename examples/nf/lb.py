"""Load balancer: each flow to the virtual address goes to one backend, chosen by
consistent hashing of its 5-tuple (Maglev).

    segments lb_rx, lb, lb_tx (examples/nf/shallow.py)
    Balance: backend = table[FNV-1a(5-tuple) % size]; destination address and MACs rewritten

Frames to ``-D vip=`` are balanced over ``-D backends=`` (``ADDRESS=MAC`` entries, comma
separated): the 32-bit FNV-1a hash of the frame's 5-tuple (source address, destination
address, protocol, source port, destination port, in network byte order) indexes Maglev's
lookup table (Eisenbud et al., NSDI 2016) of ``-D table=`` entries (a prime), filled at build
time from the backends' addresses. The frame's destination address becomes the backend's,
its Ethernet destination the backend's MAC and its source ``-D mac=``; the IPv4 checksum and
the TCP or UDP checksum are updated incrementally (a UDP checksum of 0 stays 0). Ports are
kept, and backends answer clients directly (direct server return). A flow's frames always go
to the same backend; adding or removing a backend moves few flows (Maglev's table changes
little). Frames to any other address are dropped and counted (``not_vip``).

    floem run examples/nf/lb.py --net pcap --pcap-in in.pcap --pcap-out out.pcap
    floem run examples/nf/lb.py -D backends=10.2.0.1=02:00:00:00:04:01,10.2.0.2=02:00:00:00:04:02
"""
import hashlib
import ipaddress

from floem import Field, State, Uint, param

import shallow

where = shallow.device()
queue_size = shallow.queue_size()
vip = shallow.ipv4("vip", param("vip", "203.0.113.10", help="the virtual address balanced"))
lb_mac = shallow.mac("mac", param("mac", "02:00:00:00:00:01",
                                  help="the balancer's Ethernet address: the source of every "
                                       "frame it sends"))
backends_text = param("backends", "10.2.0.1=02:00:00:00:04:01,10.2.0.2=02:00:00:00:04:02,"
                                  "10.2.0.3=02:00:00:00:04:03,10.2.0.4=02:00:00:00:04:04",
                      help="ADDRESS=MAC,...: the backends")
table_size = param("table", 1021, help="entries of Maglev's lookup table (a prime, more than "
                                       "the backends; about 100 per backend spreads flows "
                                       "evenly)")


def parse_backends(text: str) -> list[tuple[int, bytes]]:
    """The (address, MAC) of each backend of ``-D backends=``."""
    backends = []
    for entry in filter(None, (e.strip() for e in text.split(","))):
        addr, sep, hop = entry.partition("=")
        if not sep:
            raise shallow.app_error(f"-D backends: {entry!r} is not ADDRESS=MAC")
        backends.append((shallow.ipv4("backends", addr), shallow.mac("backends", hop)))
    if not backends:
        raise shallow.app_error("-D backends: no backend given")
    if len(backends) > 255:
        raise shallow.app_error(f"-D backends: {len(backends)} backends, at most 255")
    if len({a for a, _ in backends}) != len(backends):
        raise shallow.app_error("-D backends: an address is given twice")
    return backends


def is_prime(n: int) -> bool:
    """Whether ``n`` is a prime."""
    return n >= 2 and all(n % d for d in range(2, int(n ** 0.5) + 1))


def maglev(names: list[str], size: int) -> list[int]:
    """Maglev's lookup table of ``size`` entries over backends ``names``: backend i's
    preference list is offset + j * skip (mod size), from SHA-256 of its name; backends take
    turns claiming their next preferred free entry until every entry is claimed."""
    prefs = []
    for name in names:
        digest = hashlib.sha256(name.encode()).digest()
        prefs.append((int.from_bytes(digest[:8], "big") % size,
                      int.from_bytes(digest[8:16], "big") % (size - 1) + 1))
    table = [-1] * size
    tried = [0] * len(names)
    claimed = 0
    while claimed < size:
        for i, (offset, skip) in enumerate(prefs):
            while table[(offset + tried[i] * skip) % size] >= 0:
                tried[i] += 1
            table[(offset + tried[i] * skip) % size] = i
            tried[i] += 1
            claimed += 1
            if claimed == size:
                break
    return table


backends = parse_backends(backends_text)
if not is_prime(table_size) or table_size <= len(backends) or table_size > 65521:
    raise shallow.app_error(f"-D table={table_size}: must be a prime above the number of "
                            f"backends ({len(backends)}) and at most 65521")
lookup = maglev([str(ipaddress.IPv4Address(a)) for a, _ in backends], table_size)


class BalanceDrops(State):
    """Frames the balancer dropped: not to the virtual address."""

    not_vip = Field(Uint(64))
    packed = False
    report = True


drops = BalanceDrops("drops")


class Balance(shallow.Function):
    """Send frames to the virtual address to their flow's backend.

    Ports: ``inp``, ``out``, ``drop`` (no value: the frame is ``state->pkt``).
    """

    def impl(self) -> None:
        n = len(backends)
        addrs = ", ".join(f"0x{a:08x}u" for a, _ in backends)
        macs = ", ".join(f"{{{shallow.c_bytes(m)}}}" for _, m in backends)
        entries = ", ".join(str(b) for b in lookup)
        self.run_c(f'''
            static const uint8_t lookup[{table_size}] = {{{entries}}};
            static const uint32_t addr[{n}] = {{{addrs}}};
            static const uint8_t mac[{n}][6] = {{{macs}}};
            inp();
            bool pass = floem_ntoh32(state->pkt->ip.dst) == 0x{vip:08x}u;
            if (!pass) {{
                floem_add(&drops->not_vip, 1);
            }} else {{
                uint8_t p = state->pkt->ip.protocol;
                uint32_t h = nf_fnv1a(NF_FNV_BASIS, floem_ntoh32(state->pkt->ip.src), 4);
                h = nf_fnv1a(h, 0x{vip:08x}u, 4);
                h = nf_fnv1a(h, p, 1);
                h = nf_fnv1a(h, floem_ntoh16(state->pkt->l4.udp.src_port), 2);
                h = nf_fnv1a(h, floem_ntoh16(state->pkt->l4.udp.dst_port), 2);
                int b = lookup[h % {table_size}u];
                uint32_t old_addr = state->pkt->ip.dst;
                uint32_t new_addr = floem_hton32(addr[b]);
                state->pkt->ip.dst = new_addr;
                state->pkt->ip.checksum =
                    floem_csum_replace32(state->pkt->ip.checksum, old_addr, new_addr);
                if (p == 6)
                    state->pkt->l4.tcp.checksum =
                        floem_csum_replace32(state->pkt->l4.tcp.checksum, old_addr, new_addr);
                else if (state->pkt->l4.udp.checksum != 0)
                    state->pkt->l4.udp.checksum = nf_udp_csum(
                        floem_csum_replace32(state->pkt->l4.udp.checksum, old_addr, new_addr));
                state->pkt->eth.dst[0] = mac[b][0];
                state->pkt->eth.dst[1] = mac[b][1];
                state->pkt->eth.dst[2] = mac[b][2];
                state->pkt->eth.dst[3] = mac[b][3];
                state->pkt->eth.dst[4] = mac[b][4];
                state->pkt->eth.dst[5] = mac[b][5];
                {shallow.set_mac("state->pkt->eth.src", lb_mac)}
            }}
            output switch {{
                case pass: out();
                else: drop();
            }}
        ''')


def balancer() -> Balance:
    """The function: one `Balance`, counting in ``drops``."""
    return Balance(states=[drops])


if __name__ == "__floem_app__":     # run by floem; imported, it only defines the function
    shallow.serve("lb", balancer, where, queue_size)
