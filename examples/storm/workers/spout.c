/* Spout i of S: the tweets of --input, one user name a line. It takes lines j with
 * j % S == i (0-based, counting every line), skips empty ones, and sends each tweet
 * (created_ns = sent_ns = now) to counter storm_hash(user) % C, as fast as the output
 * queue takes them; then STORM_END to every counter.
 *
 * A line's name is its bytes up to the newline (a '\r' before it is dropped too), cut to
 * STORM_USER_MAX (31) bytes if longer, and up to a NUL byte if it has one: names longer than
 * 31 bytes are counted by their first 31 bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "workers.h"

static void send_tweet(struct storm_executor *e, const char *line, size_t len)
{
    const struct storm_config *c = e->config;
    struct storm_tuple t;
    memset(&t, 0, sizeof t);
    t.kind = STORM_TWEET;
    t.count = 1;
    storm_user_copy(t.user, line, len);
    if (t.user[0] == '\0')          /* a line that starts with a NUL byte */
        return;
    uint64_t now = storm_clock_ns(CLOCK_REALTIME);
    t.created_ns = now;
    storm_send(e, &t, storm_counter_id(c, (int)(storm_hash(t.user) % (uint32_t)c->counters)), now);
}

static void send_end(struct storm_executor *e)
{
    const struct storm_config *c = e->config;
    struct storm_tuple t;
    memset(&t, 0, sizeof t);
    t.kind = STORM_END;
    uint64_t now = storm_clock_ns(CLOCK_REALTIME);
    t.created_ns = now;
    for (int i = 0; i < c->counters; i++)
        storm_send(e, &t, storm_counter_id(c, i), now);
}

void storm_spout(struct storm_executor *e)
{
    const struct storm_config *c = e->config;
    FILE *in = fopen(c->input, "r");
    if (in == NULL) {
        fprintf(stderr, "storm: %s: cannot open %s: %s\n", e->name, c->input, strerror(errno));
        storm_fail();
        send_end(e);
        return;
    }
    char *line = NULL;
    size_t room = 0;
    ssize_t len;
    e->began_ns = storm_clock_ns(CLOCK_REALTIME);
    for (long j = 0; (len = getline(&line, &room, in)) >= 0; j++) {
        if (storm_stopping(e))
            break;
        if (j % c->spouts != e->index)
            continue;
        if (len > 0 && line[len - 1] == '\n')
            len--;
        if (len > 0 && line[len - 1] == '\r')
            len--;
        if (len > 0)
            send_tweet(e, line, (size_t)len);
    }
    if (ferror(in)) {
        fprintf(stderr, "storm: %s: cannot read %s\n", e->name, c->input);
        storm_fail();
    }
    free(line);
    fclose(in);
    if (!storm_stopping(e))
        send_end(e);
}
