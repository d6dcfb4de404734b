"""Running the key-value store (examples/kvs/kvs.py) for tests, and the requests they send it.

`kvs_server` starts ``floem run`` of a design in the background on a free UDP (or TCP) port
and stops it with SIGINT (its ``--report`` counters are then in ``stderr``); `oracle_requests`
makes a randomized sequence of memcached binary requests, valid and invalid;
`malformed_datagrams` makes datagrams the store must drop, each with its drop reason.
"""
from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from conftest import ROOT, floem_command
from streams import connects, free_tcp_port

sys.path.insert(0, os.path.join(ROOT, "examples", "kvs"))
import load  # noqa: E402
import protocol as kvp  # noqa: E402

KVS = os.path.join(ROOT, "examples", "kvs", "kvs.py")
#: The longest datagram a frame holds (2048-byte buffers, 42 bytes of headers); the udp
#: backend delivers longer ones cut.
DATAGRAM_MAX = 2006
#: The longest UDP payload over IPv4.
UDP_MAX = 65507
#: The longest value the store keeps by default (``value_max``): a binary SET of a 1-byte key.
VALUE_MAX = DATAGRAM_MAX - kvp.FRAME_HEADER_SIZE - kvp.HEADER_SIZE - 8 - 1

#: The designs the tests run, by name: their -D options.
DESIGNS = {
    "cpu": ["design=cpu"],
    "cpu-2-threads": ["design=cpu", "cores=2"],
    "split": ["design=split", "cores=2"],
    "split-own-queues": ["design=split", "share_queues=false", "queues=3", "nic_cores=2"],
    "cache-wt": ["design=cache-wt", "cores=2"],
    "cache-wb": ["design=cache-wb", "buckets=4", "entries=2"],   # tiny: evictions all along
    "cache-wb-unbounded": ["design=cache-wb", "entries=0", "write_alloc=false", "queues=2",
                           "nic_cores=2"],     # one host thread serving two instances
    "external": ["design=external", "cores=2"],
    "split-pointer": ["design=split-pointer", "cores=2"],
    "split-pointer-own-queues": ["design=split-pointer", "share_queues=false", "nic_cores=2"],
}


def free_udp_port() -> int:
    """A UDP port of 127.0.0.1 nobody uses now."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """A running store: its port, and (after it stopped) what it printed on stderr."""

    port: int
    proc: subprocess.Popen
    stderr: str = ""

    def report(self, what: str) -> dict[str, int]:
        """The numbers of the report line ``floem: WHAT: name N, name N ns, ...``, e.g. for
        ``what="state drops"`` or ``"cache kv"``."""
        line = next(ln for ln in self.stderr.splitlines() if ln.startswith(f"floem: {what}"))
        tail = line.split(": ", 2)[2]
        return {name: int(n) for name, n in re.findall(r"(\w[\w -]*?) (\d+)(?: ns)?(?=, |$)", tail)}


def answers(port: int, timeout: float) -> bool:
    """True once the store (or a memcached) answers a NOOP on ``port`` of 127.0.0.1."""
    return load.answers_noop(load.Server("127.0.0.1", port), timeout)


@contextlib.contextmanager
def kvs_server(*defines: str, nic: str = "emu", start_timeout: float = 300,
               env: dict[str, str] | None = None, net: str = "udp") -> Iterator[Server]:
    """``floem run kvs.py -D ...`` serving a free port until the block ends (``env``: more
    environment variables, e.g. ``FLOEM_FAULTS``; ``net``: "udp" or "tcp"). A port found free
    may be taken (by another test's client) before the store binds it, seconds later: the
    store is then started again on another."""
    with tempfile.TemporaryFile("w+") as err:
        for attempt in range(3):
            port = free_udp_port() if net == "udp" else free_tcp_port()
            command = floem_command() + ["run", KVS, "--port", str(port), "--nic", nic,
                                         "--net", net, "--report", "--timeout", "900"]
            for d in defines:
                command += ["-D", d]
            err.seek(0)
            err.truncate()
            proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, text=True,
                                    start_new_session=True, env={**os.environ, **(env or {})})
            if _started(proc, port, start_timeout, net):
                break
            _stop(proc)
            err.seek(0)
            text = err.read()
            if "Address already in use" not in text or attempt == 2:
                raise AssertionError(f"the store did not start: {' '.join(command)}\n{text}")
        server = Server(port, proc)
        try:
            yield server
        finally:
            _stop(proc)
            err.seek(0)
            server.stderr = err.read()


def _started(proc: subprocess.Popen, port: int, timeout: float, net: str) -> bool:
    """Whether ``proc`` answers on ``port`` (over TCP: accepts connections) before it exits
    or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not (answers(port, 0.2) if net == "udp" else connects(port)):
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        if net == "tcp":
            time.sleep(0.2)
    return True


def _stop(proc: subprocess.Popen) -> None:
    """Stop the store as a user does (SIGINT), killing it after a minute."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@dataclass
class Client:
    """One request at a time to one server; every response reassembled."""

    port: int
    timeout: float = 5.0
    sock: socket.socket = field(init=False)

    def __post_init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(self.timeout)

    def ask(self, datagram: bytes) -> kvp.Response:
        """Send ``datagram`` and wait for the whole response to it."""
        rid = kvp.FRAME_HEADER.unpack_from(datagram)[0]
        self.sock.sendto(datagram, ("127.0.0.1", self.port))
        assembler = kvp.Reassembler()
        while True:
            data, _ = self.sock.recvfrom(65536)
            if kvp.parse_frame_header(data).request_id != rid:
                continue                    # a late answer to something else
            response = assembler.feed(data)
            if response is not None:
                return response

    def replies(self, datagram: bytes, count: int) -> list[bytes]:
        """Send ``datagram`` and take the ``count`` datagrams answering it (its request id);
        an answer to another request fails."""
        rid = kvp.FRAME_HEADER.unpack_from(datagram)[0]
        self.sock.sendto(datagram, ("127.0.0.1", self.port))
        got = []
        while len(got) < count:
            data, _ = self.sock.recvfrom(65536)
            assert kvp.FRAME_HEADER.unpack_from(data)[0] == rid, f"an answer to another request: {data!r}"
            got.append(data)
        return got

    def replies_until_mn(self, datagram: bytes) -> list[bytes]:
        """Send ``datagram`` and take every datagram answering it: a binary request's
        answer, or what answers a text datagram until the "MN" of an "mn" sent after it (of
        another request id) comes, for a memcached of one thread, which answers datagrams
        in order."""
        if datagram[kvp.FRAME_HEADER_SIZE:kvp.FRAME_HEADER_SIZE + 1] == bytes([kvp.MAGIC_REQUEST]):
            rid = kvp.FRAME_HEADER.unpack_from(datagram)[0]
            self.sock.sendto(datagram, ("127.0.0.1", self.port))
            got: list[bytes] = []
            while not got or len(got) < kvp.parse_frame_header(got[0]).total:
                data, _ = self.sock.recvfrom(65536)
                if kvp.FRAME_HEADER.unpack_from(data)[0] == rid:
                    got.append(data)
            return got
        rid = kvp.FRAME_HEADER.unpack_from(datagram)[0]
        mark = rid ^ 0x8000
        self.sock.sendto(datagram, ("127.0.0.1", self.port))
        self.sock.sendto(kvp.FRAME_HEADER.pack(mark, 0, 1, 0) + b"mn\r\n", ("127.0.0.1", self.port))
        got = []
        while True:
            data, _ = self.sock.recvfrom(65536)
            if kvp.FRAME_HEADER.unpack_from(data)[0] == mark:
                return got
            got.append(data)

    def send(self, datagram: bytes) -> None:
        """Send without waiting for an answer."""
        self.sock.sendto(datagram, ("127.0.0.1", self.port))

    def silent(self, wait: float = 0.05) -> bool:
        """True when nothing arrives within ``wait`` seconds."""
        self.sock.settimeout(wait)
        try:
            self.sock.recvfrom(65536)
            return False
        except TimeoutError:
            return True
        finally:
            self.sock.settimeout(self.timeout)

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()


# -- the requests ------------------------------------------------------------

def _key(rng: random.Random, length: int) -> bytes:
    return bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz0123456789-_:") for _ in range(length))


def _expiration(rng: random.Random) -> int:
    """Expiry times whose outcome does not depend on when the request arrives."""
    now = int(time.time())
    return rng.choice([0] * 12 + [1000, 2592000, now + 3600,     # live
                                  2592001, now - 100])           # expired at once


INVALID_SHAPES = [
    dict(opcode=kvp.GET, key=b""), dict(opcode=kvp.GETK, key=b""),
    dict(opcode=kvp.GET, key=b"k" * 251), dict(opcode=kvp.GET, key=b"key", extras=b"1234"),
    dict(opcode=kvp.GET, key=b"key", value=b"a value"),
    dict(opcode=kvp.SET, key=b"key", value=b"v"), dict(opcode=kvp.SET, key=b"key", extras=b"1234"),
    dict(opcode=kvp.SET, key=b"", extras=bytes(8), value=b"v"),
    dict(opcode=kvp.SET, key=b"k" * 251, extras=bytes(8), value=b"v"),
    dict(opcode=kvp.DELETE, key=b"key", extras=b"1234"), dict(opcode=kvp.DELETE, key=b""),
    dict(opcode=kvp.NOOP, key=b"k"), dict(opcode=kvp.NOOP, extras=b"1234"),
]
#: Opcodes memcached 1.6 does not know (it answers them when they carry no body).
UNKNOWN_OPCODES = [0x30, 0x45, 0x7f, 0xa0, 0xff]


def _text_expiration(rng: random.Random) -> bytes:
    """A text exptime whose outcome does not depend on when the request arrives."""
    return b"%d" % rng.choice([0] * 8 + [1000, 2592000, int(time.time()) + 3600, 2592001, -1])


def _text_value(rng: random.Random, room: int) -> bytes:
    """A value: a number (for incr and decr), text, or bytes, "\r\n" included."""
    kind = rng.random()
    if kind < 0.3:
        return b"%d" % rng.choice([0, 1, 9, 10, 99, 100, 2 ** 32, 2 ** 64 - 1])
    length = rng.choice([0, 1, 10, 64, 300, rng.randint(0, room)])
    return rng.randbytes(length) if kind < 0.6 else bytes(rng.choice(b"ab \r\n") for _ in range(length))


WRITES = ("storage", "cas", "incr", "meta_set")


class ValueLengths(dict[bytes, int]):
    """The longest value each key may hold after the requests made so far (a write that
    may fail leaves the longer of the two), so that an append never grows a value past
    what the store keeps (memcached keeps 1 MiB, and would store it)."""

    def wrote(self, key: bytes, length: int, surely: bool) -> None:
        """A write of a ``length``-byte value, ``surely`` done if it is a plain set."""
        self[key] = length if surely else max(length, self.get(key, 0))

    def appended(self, key: bytes, length: int) -> None:
        """An append or prepend of ``length`` bytes."""
        self[key] = self.get(key, 0) + length

    def room(self, key: bytes) -> int:
        """How many bytes may be appended to ``key``'s value."""
        return VALUE_MAX - self.get(key, 0)


def text_command(rng: random.Random, key: bytes, pool: list[bytes], room: int, last: bool,
                 lengths: ValueLengths, writes: bool = True, updates: bool = True) -> bytes:
    """One text command (and its data block) of the kinds memcached 1.6 answers the same
    way every time; ``last``: it may be a get or mn (after one, memcached reads the rest of
    a datagram or not, depending on when the next datagram comes: the store never does),
    or a meta command with q (whether memcached then sends the empty answer to a get's key
    that follows depends on the outcome; the store takes q to leave the answer out);
    ``lengths``: what each key's value may hold, kept up to date (an append that could grow
    one past ``VALUE_MAX`` becomes a set);
    ``writes``: it may take a CAS value (one write per datagram: the offload designs have
    the requests of a datagram in flight together, and a write that fails then leaves a
    gap in the CAS values if another was handed out since; flush_all takes one too);
    ``updates``: it may read what a key holds to write it (add, replace, append, prepend,
    cas, incr, decr, touch, gat, ms and md comparing a CAS value or in another mode than
    set: split-pointer answers them "not supported"). A write is never silent
    (noreply, ms's q): its datagram would be answered before it is done, and the next
    datagram's write could take a CAS value before a failed one gives its value back."""
    noreply = b" noreply" if rng.random() < 0.1 else b""
    kinds = ["storage", "cas", "delete", "incr", "touch", "meta_get", "meta_set",
             "meta_delete", "misc", "error"] + ["get"] * 4 * last
    kind = rng.choice([k for k in kinds if (writes or k not in WRITES)
                       and (updates or k not in ("cas", "incr", "touch"))])
    if kind in WRITES:
        noreply = b""
    if kind == "get":
        command = rng.choice([b"get", b"gets"]
                             + [b"gat %d" % rng.choice([0, 1000]), b"gats 0"] * updates)
        keys = [key] + [rng.choice(pool) for _ in range(rng.choice([0, 0, 1, 3]))]
        return command + b" " + b" ".join(keys) + b"\r\n"
    if kind in ("storage", "cas"):
        command = rng.choice([b"set", b"set"]
                             + [b"add", b"replace", b"append", b"prepend"] * updates)
        appends = command in (b"append", b"prepend")
        value = _text_value(rng, 8 if appends else room - len(key))
        if appends and len(value) > lengths.room(key):
            command = b"set"
        if command in (b"append", b"prepend"):
            lengths.appended(key, len(value))
        else:
            lengths.wrote(key, len(value), command == b"set" and kind == "storage")
        cas = b""
        if kind == "cas":
            command, cas = b"cas", b" %d" % rng.randint(0, 60)
        line = b"%s %s %d %s %d%s%s\r\n" % (command, key, rng.getrandbits(32),
                                          _text_expiration(rng), len(value), cas, noreply)
        return line + value + rng.choice([b"\r\n"] * 9 + [b"\r\r"])
    if kind == "delete":
        return b"delete %s%s%s\r\n" % (key, rng.choice([b"", b"", b" 0"]), noreply)
    if kind == "incr":
        lengths.wrote(key, 20, surely=False)
        return b"%s %s %d%s\r\n" % (rng.choice([b"incr", b"decr"]), key,
                                     rng.choice([0, 1, 7, 2 ** 64 - 1]), noreply)
    if kind == "touch":
        return b"touch %s %s%s\r\n" % (key, _text_expiration(rng), noreply)
    if kind == "meta_get":
        flags = rng.sample([b"v", b"c", b"f", b"s", b"k", b"O%d" % rng.randint(0, 99)]
                           + [b"q"] * last, rng.randint(0, 4))
        return b" ".join([b"mg", key] + flags) + b"\r\n"
    if kind == "meta_set":
        flags = rng.sample([b"c", b"k", b"F%d" % rng.getrandbits(16), b"T0",
                            b"O%d" % rng.randint(0, 99)]
                           + [b"C%d" % rng.randint(1, 60),
                              b"M" + bytes([rng.choice(b"SEAPR")])] * updates,
                           rng.randint(0, 4))
        appends = any(f in (b"MA", b"MP") for f in flags)
        value = _text_value(rng, 8 if appends else room - len(key) - 40)
        if appends and len(value) > lengths.room(key):
            flags = [f for f in flags if f not in (b"MA", b"MP")]
            appends = False
        if appends:
            lengths.appended(key, len(value))
        else:
            lengths.wrote(key, len(value), surely=False)
        return b" ".join([b"ms", key, b"%d" % len(value)] + flags) + b"\r\n" + value + b"\r\n"
    if kind == "meta_delete":
        flags = rng.sample([b"k", b"O%d" % rng.randint(0, 99)] + [b"q"] * last
                           + [b"C%d" % rng.randint(1, 60)] * updates, rng.randint(0, 2))
        return b" ".join([b"md", key] + flags) + b"\r\n"
    if kind == "misc":
        return rng.choice([b"version\r\n", b"verbosity 1\r\n", b"verbosity 0 noreply\r\n",
                           b"mn\r\n" if last else b"version\r\n",
                           b"flush_all 0\r\n" if rng.random() < 0.1 and writes
                           else b"version\r\n"])
    return rng.choice([b"bogus\r\n", b"\r\n", b"GET x\r\n", b"get\r\n", b"set k 0 0\r\n",
                       b"set k x 0 1\r\n", b"incr k x\r\n", b"touch k x\r\n",
                       b"delete k 1\r\n", b"mg k zz\r\n", b"mg k v v\r\n", b"ms k\r\n",
                       b"ms k 1 MZ\r\nx\r\n", b"set " + b"k" * 251 + b" 0 0 1\r\n"])


def oracle_requests(seed: int, count: int, keys: int = 40, updates: bool = True) -> list[bytes]:
    """``count`` request datagrams over a small key set (hits, misses, overwrites), keys of
    1..250 bytes and values from empty to the largest a datagram carries, flags and expiry
    times: binary GET, GETK, SET (with a CAS value or not), DELETE and NOOP, unknown opcodes
    and invalid arguments; and text datagrams of one to three commands, each on keys of
    its own (every storage
    command, cas, get and gets of several keys, get-and-touch, incr, decr, touch, delete,
    noreply, mg, ms, md, mn, version, verbosity, flush_all, and errors); ``updates``: with
    the requests that read what a key holds to write it (`text_command`), binary SETs and
    DELETEs comparing a CAS value among them."""
    rng = random.Random(seed)
    pool = [_key(rng, rng.choice([1, 2, 8, 32, 32, 100, 249, 250])) for _ in range(keys)]
    lengths = ValueLengths()
    out = []
    for rid in range(1, count + 1):
        key = rng.choice(pool) if rng.random() < 0.9 else _key(rng, rng.randint(1, 250))
        opaque = rng.getrandbits(32)
        kind = rng.choices(["get", "getk", "set", "delete", "noop", "unknown", "invalid", "text"],
                           [15, 8, 15, 5, 3, 2, 4, 50])[0]
        if kind == "text":
            room = DATAGRAM_MAX - kvp.FRAME_HEADER_SIZE - 300
            commands, body, writes = rng.choice([1, 1, 1, 2, 3]), b"", True
            # keys of their own: the offload designs serve them in any order
            shuffled, share = rng.sample(pool, len(pool)), len(pool) // commands
            for i in range(commands):
                keys = shuffled[i * share:(i + 1) * share]
                command = text_command(rng, rng.choice(keys), keys, room // commands,
                                       i == commands - 1, lengths, writes, updates)
                writes = writes and not any(command.startswith(w) for w in (
                    b"set", b"add", b"replace", b"append", b"prepend", b"cas", b"incr",
                    b"decr", b"ms", b"flush_all"))
                body += command
            out.append(kvp.FRAME_HEADER.pack(rid, 0, 1, 0) + body)
        elif kind in ("get", "getk"):
            out.append(kvp.encode_request(rid, kvp.GET if kind == "get" else kvp.GETK, key=key,
                                          opaque=opaque))
        elif kind == "set":
            room = DATAGRAM_MAX - kvp.FRAME_HEADER_SIZE - kvp.HEADER_SIZE - 8 - len(key)
            length = rng.choice([0, 1, 10, 64, 64, 500, 1000, rng.randint(0, room), room])
            cas = rng.choice([0] * 6 + [rng.randint(1, rid)] * updates)
            lengths.wrote(key, length, surely=cas == 0)
            out.append(kvp.encode_set(rid, key, rng.randbytes(length), flags=rng.getrandbits(32),
                                      expiration=_expiration(rng), opaque=opaque, cas=cas))
        elif kind == "delete":
            out.append(kvp.encode_request(rid, kvp.DELETE, key=key, opaque=opaque,
                                          cas=rng.choice([0] * 6 + [rng.randint(1, rid)] * updates)))
        elif kind == "noop":
            out.append(kvp.encode_noop(rid, opaque=opaque))
        elif kind == "unknown":
            out.append(kvp.encode_request(rid, rng.choice(UNKNOWN_OPCODES), opaque=opaque))
        else:
            out.append(kvp.encode_request(rid, opaque=opaque, **rng.choice(INVALID_SHAPES)))
    return out


def phased_requests(seed: int, keys: int = 60) -> list[bytes]:
    """Requests for a capture replayed at full speed, where nothing but the order of arrival
    may decide an answer: no request touches a key while an earlier one on it may still be
    in flight through queues of another kind (SETs of every key, then reads, NOOPs and
    refused requests, then DELETEs of half the keys, then reads of every key)."""
    rng = random.Random(seed)
    pool = list(dict.fromkeys(_key(rng, rng.choice([1, 16, 32, 250])) for _ in range(keys)))
    out: list[bytes] = []

    def add(make) -> None:
        out.append(make(len(out) + 1, rng.getrandbits(32)))

    for key in pool:
        room = DATAGRAM_MAX - kvp.FRAME_HEADER_SIZE - kvp.HEADER_SIZE - 8 - len(key)
        value = rng.randbytes(rng.choice([0, 64, 64, 1000, room]))
        add(lambda rid, op, k=key, v=value: kvp.encode_set(rid, k, v, flags=rng.getrandbits(32),
                                                           expiration=_expiration(rng), opaque=op))
    for key in pool:
        add(lambda rid, op, k=key: kvp.encode_request(rid, rng.choice([kvp.GET, kvp.GETK]), key=k,
                                                      opaque=op))
        if rng.random() < 0.3:
            add(lambda rid, op: kvp.encode_request(rid, opaque=op, **rng.choice(INVALID_SHAPES)))
        if rng.random() < 0.1:
            add(lambda rid, op: kvp.encode_noop(rid, opaque=op))
        if rng.random() < 0.1:
            add(lambda rid, op: kvp.encode_request(rid, rng.choice(UNKNOWN_OPCODES), opaque=op))
    for key in pool[::2] + [b"never-set"]:
        add(lambda rid, op, k=key: kvp.encode_request(rid, kvp.DELETE, key=k, opaque=op))
    for key in pool:
        add(lambda rid, op, k=key: kvp.encode_getk(rid, k, opaque=op))
    return out


def malformed_datagrams(seed: int) -> list[tuple[str, bytes]]:
    """Datagrams that hold no whole request, each with the drop counter it must bump (a
    datagram not starting with the binary magic is text: memcached waits for the rest of a
    line without its "\n" or of a data block cut short, the store drops them)."""
    rng = random.Random(seed)
    good = kvp.encode_set(0x7000, b"malformed", b"v" * 20, opaque=1)
    header = kvp.FRAME_HEADER_SIZE + kvp.HEADER_SIZE
    short_body = bytearray(good)
    short_body[header - 16:header - 12] = (len(good) - header + 5).to_bytes(4, "big")
    long_body = bytearray(good)
    long_body[header - 16:header - 12] = (len(good) - header - 3).to_bytes(4, "big")
    bad_parts = bytearray(kvp.encode_request(0x7001, kvp.GET, key=b"abc"))
    bad_parts[kvp.FRAME_HEADER_SIZE + 2:kvp.FRAME_HEADER_SIZE + 4] = (9).to_bytes(2, "big")
    wrong_magic = bytearray(good)                # text, then, without a "\n"
    wrong_magic[kvp.FRAME_HEADER_SIZE] = rng.choice([0x00, 0x81, 0x42])
    multi = bytearray(good)
    multi[4:6] = (2).to_bytes(2, "big")
    later = bytearray(good)
    later[2:4] = (1).to_bytes(2, "big")
    later[4:6] = (2).to_bytes(2, "big")
    return [("too_short", b""), ("too_short", good[:rng.randint(1, header - 1)]),
            ("too_short", good[:header - 1]), ("bad_length", bytes(short_body)),
            ("bad_length", bytes(long_body)), ("bad_length", good[:-1]),
            ("bad_length", bytes(bad_parts)), ("incomplete", bytes(wrong_magic)),
            ("multi_datagram", bytes(multi)), ("multi_datagram", bytes(later)),
            ("incomplete", kvp.FRAME_HEADER.pack(0x7002, 0, 1, 0) + b"\x42"
             + rng.randbytes(50).replace(b"\n", b" ")),
            ("incomplete", kvp.FRAME_HEADER.pack(0x7003, 0, 1, 0) + b"set k 0 0 10\r\nshort\r\n"),
            ("incomplete", kvp.FRAME_HEADER.pack(0x7004, 0, 1, 0) + b"get k")]


def ordering_requests(first_id: int, updates: bool = True) -> list[bytes]:
    """Text datagrams whose last ones are a get of three keys that take different paths in the
    cache designs: ``order:k3`` and ``order:k9`` set (a NIC cache holds them, a hit answered
    on the NIC) and ``order:k7`` set then appended to (the append takes it out of a NIC
    cache: a miss served by the host's store), then ``get order:k3 order:k7 order:k9`` and a
    gets of the three the other way round, each answered in the order of its keys with END
    last; ``updates``: with the append (split-pointer answers it "not supported")."""
    commands = [b"set order:k3 3 0 2\r\nv3\r\n", b"set order:k7 7 0 2\r\nv7\r\n",
                b"set order:k9 9 0 2\r\nv9\r\n"]
    if updates:
        commands.append(b"append order:k7 0 0 1\r\n+\r\n")
    commands += [b"get order:k3 order:k7 order:k9\r\n", b"gets order:k9 order:k7 order:k3\r\n"]
    return [kvp.FRAME_HEADER.pack(first_id + i, 0, 1, 0) + c for i, c in enumerate(commands)]
