/* Fuzz target: the Storm spout's reading of its --input file of tweets
 * (examples/storm/workers/spout.c): one user name a line.
 *
 * The input is the file's content. It is written to a memory file that the spout opens
 * by name (/proc/self/fd/N), as it opens --input. Spouts 0 and 1 of two read it. Checks:
 * every tweet sent carries a user name of 1 to 31 bytes, NUL-padded, without a line end;
 * each spout sends one tweet per non-empty line of its share (lines j with j % 2 equal to
 * its index) and then STORM_END to every counter.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "workers.h"

#define SPOUTS 2
#define COUNTERS 3

static struct storm_config config = {.spouts = SPOUTS, .counters = COUNTERS, .rankers = 1,
                                     .top = 10, .emit_ms = 100};
static size_t tweets, ends;

void outqueue_put(struct storm_tuple *t)
{
    FUZZ_CHECK(t->task >= storm_counter_id(&config, 0) &&
               t->task < storm_counter_id(&config, COUNTERS));
    if (t->kind == STORM_END) {
        ends++;
        return;
    }
    FUZZ_CHECK(t->kind == STORM_TWEET && t->count == 1);
    size_t len = strnlen(t->user, sizeof t->user);
    FUZZ_CHECK(len >= 1 && len <= STORM_USER_MAX);
    FUZZ_CHECK(memchr(t->user, '\n', len) == NULL);
    for (size_t i = len; i < sizeof t->user; i++)
        FUZZ_CHECK(t->user[i] == '\0');
    tweets++;
}

struct storm_tuple *inqueue_get(int worker)
{
    (void)worker;
    return NULL;
}

int storm_stopping(const struct storm_executor *e)
{
    (void)e;
    return 0;
}

void storm_fail(void)
{
    FUZZ_CHECK(!"the spout could not read its input");
}

/* Lines of `data` that spout `index` takes and sends (non-empty, not starting with NUL). */
static size_t expected_tweets(const uint8_t *data, size_t size, int index)
{
    size_t n = 0, line = 0;
    for (size_t at = 0; at < size; line++) {
        const uint8_t *end = memchr(data + at, '\n', size - at);
        size_t len = end != NULL ? (size_t)(end - (data + at)) : size - at;
        size_t text = len > 0 && data[at + len - 1] == '\r' ? len - 1 : len;
        if (line % SPOUTS == (size_t)index && text > 0 && data[at] != '\0')
            n++;
        at += len + 1;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("tweets", 0);
        FUZZ_CHECK(fd >= 0);
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        config.input = path;
    }
    FUZZ_CHECK(ftruncate(fd, 0) == 0);
    FUZZ_CHECK(pwrite(fd, data, size, 0) == (ssize_t)size);
    for (int index = 0; index < SPOUTS; index++) {
        struct storm_executor e = {.role = STORM_ROLE_SPOUT, .index = index, .id = index,
                                   .config = &config};
        tweets = ends = 0;
        storm_spout(&e);
        FUZZ_CHECK(tweets == expected_tweets(data, size, index));
        FUZZ_CHECK(ends == COUNTERS);
    }
    return 0;
}
