/* The pool of kept frames (floem/frames.h): references that never take the wrong frame, a
 * full pool that keeps nothing, frames reclaimed after the timeout, and several threads
 * keeping and taking at once (run under TSan and ASan).
 *
 * The test is the pool's network and clock: built with -DFLOEM_NET_PCAP, it defines
 * floem_net_free (recording the buffers given back) and floem_now_ns (a time it sets), so
 * reclaiming is deterministic.
 *
 * Usage: test_frames [seconds of the threaded test, default 1] */
#include "check.h"

#include "floem/frames.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static uint64_t now;
static void *freed[64];
static unsigned n_freed;

uint64_t floem_now_ns(void)
{
    return __atomic_load_n(&now, __ATOMIC_RELAXED);
}

void floem_net_free(floem_packet_t *pkt)
{
    unsigned i = __atomic_fetch_add(&n_freed, 1, __ATOMIC_RELAXED);
    if (i < sizeof freed / sizeof freed[0])
        freed[i] = pkt->buffer;
}

static bool was_freed(void *buffer)
{
    for (unsigned i = 0; i < n_freed && i < sizeof freed / sizeof freed[0]; i++)
        if (freed[i] == buffer)
            return true;
    return false;
}

/* Buffers are any even addresses: the pool never dereferences them. */
static char buffers[8][64] __attribute__((aligned(64)));

static void test_references(void)
{
    floem_frames_init(3, 1000);
    uint64_t refs[3];
    for (int i = 0; i < 3; i++) {
        refs[i] = floem_frame_keep(buffers[i], buffers[i] + 2);
        CHECK(refs[i] != 0 && floem_frame_is_ref((void *)(uintptr_t)refs[i]));
        CHECK(!floem_frame_is_ref(buffers[i]));
    }
    CHECK(refs[0] != refs[1] && refs[1] != refs[2]);
    CHECK(floem_frame_keep(buffers[3], buffers[3]) == 0);          /* full */

    void *buffer, *data;
    CHECK(floem_frame_take(refs[1], &buffer, &data));
    CHECK(buffer == buffers[1] && data == buffers[1] + 2);
    CHECK(!floem_frame_take(refs[1], &buffer, &data));              /* taken already */
    CHECK(!floem_frame_take(refs[0] + (1ull << 32), &buffer, &data));   /* another generation */
    CHECK(!floem_frame_take(refs[0] & ~1ull, &buffer, &data));      /* not a reference */
    CHECK(!floem_frame_take((1ull << 32) | (1000u << 1) | 1, &buffer, &data)); /* no such slot */

    uint64_t reused = floem_frame_keep(buffers[4], buffers[4]);     /* refs[1]'s slot, again */
    CHECK(reused != 0 && reused != refs[1]);
    CHECK(!floem_frame_take(refs[1], &buffer, &data));
    CHECK(floem_frame_take(reused, &buffer, &data) && buffer == buffers[4]);

    floem_frame_drop((void *)(uintptr_t)refs[2]);                  /* dropped where kept */
    CHECK(was_freed(buffers[2]));
    CHECK(!floem_frame_take(refs[2], &buffer, &data));
    floem_frame_drop(NULL);                                         /* crossed whole: nothing */

    floem_frames_stats_t st;
    floem_frames_stats(&st);
    CHECK(st.kept == 4 && st.taken == 2 && st.full == 1 && st.stale == 6 && st.dropped == 1);
    CHECK(st.kept == st.taken + st.dropped + st.expired + st.held);
    CHECK(st.held == 1 && st.slots == 3);

    floem_frames_finalize();                                        /* refs[0] still held */
    CHECK(was_freed(buffers[0]));
}

static void test_reclaiming(void)
{
    n_freed = 0;
    now = 0;
    floem_frames_init(2, 1000);
    uint64_t a = floem_frame_keep(buffers[0], buffers[0]);
    uint64_t b = floem_frame_keep(buffers[1], buffers[1]);
    CHECK(a != 0 && b != 0);
    now = 1500;                                 /* both older than the timeout */
    uint64_t c = floem_frame_keep(buffers[2], buffers[2]);   /* reclaims the slot it looks at */
    CHECK(c != 0 && n_freed == 1);
    void *buffer, *data;
    CHECK(floem_frame_take(c, &buffer, &data) && buffer == buffers[2]);
    void *expired = freed[0];
    CHECK(expired == buffers[0] || expired == buffers[1]);
    CHECK(!floem_frame_take(expired == buffers[0] ? a : b, &buffer, &data));   /* reclaimed */
    CHECK(floem_frame_take(expired == buffers[0] ? b : a, &buffer, &data));
    floem_frames_stats_t st;
    floem_frames_stats(&st);
    CHECK(st.expired == 1 && st.stale == 1 && st.held == 0);
    floem_frames_finalize();

    floem_frames_init(0, 1000);                 /* a pool of nothing keeps nothing */
    CHECK(floem_frame_keep(buffers[0], buffers[0]) == 0);
    floem_frames_finalize();
}

/* Threads keep their own buffers and take them back: a reference only ever gives back the
 * buffer it was made for, however the slots are shared. */
static bool stop;

static void *worker(void *arg)
{
    char *mine = arg;
    unsigned long rounds = 0;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        uint64_t refs[4];
        for (int i = 0; i < 4; i++)
            refs[i] = floem_frame_keep(mine + 2 * i, mine + 2 * i);
        for (int i = 3; i >= 0; i--) {
            void *buffer, *data;
            if (refs[i] == 0)
                continue;
            CHECK(floem_frame_take(refs[i], &buffer, &data));
            CHECK(buffer == mine + 2 * i && data == mine + 2 * i);
            CHECK(!floem_frame_take(refs[i], &buffer, &data));
        }
        rounds++;
    }
    return (void *)rounds;
}

static void test_threads(double seconds)
{
    floem_frames_init(6, UINT64_MAX);
    pthread_t threads[3];
    for (int t = 0; t < 3; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, buffers[t]) == 0);
    struct timespec pause = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&pause, NULL);
    __atomic_store_n(&stop, true, __ATOMIC_RELAXED);
    unsigned long rounds = 0;
    for (int t = 0; t < 3; t++) {
        void *r;
        CHECK(pthread_join(threads[t], &r) == 0);
        rounds += (unsigned long)r;
    }
    floem_frames_stats_t st;
    floem_frames_stats(&st);
    CHECK(rounds > 0 && st.kept == st.taken && st.held == 0 && st.stale == st.taken);
    floem_frames_finalize();
}

int main(int argc, char **argv)
{
    test_references();
    test_reclaiming();
    test_threads(argc > 1 ? atof(argv[1]) : 1.0);
    printf("ok: %lu checks\n", checks);
    return 0;
}
