/* The tuple every Storm executor sends and receives (examples/storm): fixed size, 64 bytes,
 * the same on every server and on the NIC (all fields little-endian on the wire; the data
 * plane converts where the NIC is big-endian).
 *
 * Executors have global ids (see topology.toml): spouts 0..S-1, counters S..S+C-1,
 * intermediate rankers S+C..S+C+R-1, the total ranker S+C+R.
 */
#ifndef STORM_TUPLE_H
#define STORM_TUPLE_H

#include <stdint.h>

#define STORM_USER_MAX 31           /* longest user name, bytes (NUL-padded to 32) */

enum storm_kind {
    STORM_TWEET = 1,                /* spout -> counter: one tweet by `user` */
    STORM_COUNT = 2,                /* counter -> ranker: `user` has `count` tweets (in the window) */
    STORM_RANK = 3,                 /* ranker -> total: one entry of a ranking, `count` for `user` */
    STORM_RANK_DONE = 4,            /* ranker -> total: the ranking sent since the last one is whole */
    STORM_END = 5,                  /* end of stream from executor `from` */
};

struct storm_tuple {
    int32_t task;                   /* global id of the executor the tuple is for */
    int32_t from;                   /* global id of the executor that emitted it */
    uint32_t kind;                  /* enum storm_kind */
    uint32_t count;
    uint64_t created_ns;            /* when the spout read the tweet (CLOCK_REALTIME) */
    uint64_t sent_ns;               /* when the emitting executor put it out */
    char user[STORM_USER_MAX + 1];
};

_Static_assert(sizeof(struct storm_tuple) == 64, "a tuple is 64 bytes");

#endif
