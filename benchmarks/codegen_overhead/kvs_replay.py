"""examples/kvs/kvs.py (design cpu), unchanged, with a `main` that stops at the end of a
replayed capture and prints what kvs_hand.c prints.

    floem run benchmarks/codegen_overhead/kvs_replay.py --net pcap --pcap-in IN --pcap-out OUT

The printout is the store's statistics (kvs_store_stats), ParseRequest's drops by reason and
Respond's counts of what the store answered (memcached's `stats`): with the replies in the output capture, what run.py compares with kvs_hand.c.
"""
import os
import runpy
import sys

from replay import stop_when_replayed

KVS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "kvs")
sys.path.insert(0, KVS)                 # kvs.py imports its elements as `floem run` lets it
runpy.run_path(os.path.join(KVS, "kvs.py"))
stop_when_replayed(r'''
    kvs_store_stats_t st = {0};
    if (table->store != NULL)
        kvs_store_stats(table->store, &st);
    printf("kvs: items %" PRIu64 ", gets %" PRIu64 ", hits %" PRIu64 ", sets %" PRIu64
           ", deletes %" PRIu64 ", evictions %" PRIu64 ", set failures %" PRIu64 "\n",
           st.items, st.gets, st.hits, st.sets, st.deletes, st.evictions, st.set_failures);
    printf("kvs: dropped not_udp %" PRIu64 ", ip_options %" PRIu64 ", too_short %" PRIu64
           ", multi_datagram %" PRIu64 ", bad_length %" PRIu64 ", incomplete %" PRIu64 "\n",
           drops->not_udp, drops->ip_options, drops->too_short, drops->multi_datagram,
           drops->bad_length, drops->incomplete);
    printf("kvs: cmd_get %" PRIu64 ", get_hits %" PRIu64 ", get_misses %" PRIu64 ", cmd_set %"
           PRIu64 ", cmd_delete %" PRIu64 ", delete_hits %" PRIu64 ", cmd_other %" PRIu64 "\n",
           counts->cmd_get, counts->get_hits, counts->get_misses, counts->cmd_set,
           counts->cmd_delete, counts->delete_hits, counts->cmd_other);
''')
