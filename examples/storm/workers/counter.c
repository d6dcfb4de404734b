/* Counter i of C: tweets per user, for the users whose storm_hash is i modulo C.
 *
 * Every --emit-ms, and once more when STORM_END has come from all S spouts, it sends
 * STORM_COUNT(user, count) to ranker storm_hash(user) % R for each user whose count changed
 * since it was last sent (created_ns: the user's newest tweet); then STORM_END to every
 * ranker.
 *
 * --window-s 0 counts the whole stream. --window-s W counts the tweets of the last W
 * seconds: each user has W one-second buckets by the tweets' created_ns (a ring, indexed by
 * second modulo W). The window ends at the counter's clock (CLOCK_REALTIME, the clock of
 * created_ns) when it emits, so a user's count falls, and is sent again, as its tweets get
 * older than W seconds, down to 0 (which the rankers read as "no longer ranked"). A tweet
 * older than the window (behind the user's newest one by W seconds or more) is not counted.
 */
#include <stdio.h>
#include <stdlib.h>

#include "table.h"
#include "workers.h"


/* A user's value in the table. */
struct counter_user {
    uint32_t count;                 /* tweets (in the window) */
    uint32_t sent;                  /* the count last sent */
    uint64_t created_ns;            /* the newest tweet's */
    uint64_t newest_s;              /* window: the second of the newest bucket */
    uint32_t dirty;                 /* on the dirty list: counted since the last emission */
    uint32_t buckets[];             /* window: tweets in second s at s % W */
};

struct counter {
    struct storm_executor *e;
    const struct storm_config *c;
    struct storm_table users;
    uint32_t *dirty;                /* the users counted since the last emission */
    uint32_t n_dirty, dirty_room;
    uint64_t scanned_s;             /* window: the second of the last full scan */
    char *ended;                    /* by spout: its STORM_END came */
    int ends;
};

/* Window: empty the buckets of the seconds after the newest one up to second s. */
static void advance(struct counter_user *u, uint32_t w, uint64_t s)
{
    if (s <= u->newest_s)
        return;
    uint64_t gap = s - u->newest_s < w ? s - u->newest_s : w;
    for (uint64_t k = 1; k <= gap; k++) {
        uint32_t *b = &u->buckets[(u->newest_s + k) % w];
        u->count -= *b;
        *b = 0;
    }
    u->newest_s = s;
}

static void count_tweet(struct counter *k, const struct storm_tuple *t)
{
    char user[STORM_USER_MAX + 1];
    storm_user_copy(user, t->user, STORM_USER_MAX);
    if (user[0] == '\0') {
        k->e->ignored++;
        return;
    }
    uint32_t index = storm_table_insert(&k->users, user, storm_hash(user));
    struct counter_user *u = storm_table_value(&k->users, index);
    uint32_t w = (uint32_t)k->c->window_s;
    if (w > 0) {
        uint64_t s = t->created_ns / 1000000000u;
        advance(u, w, s);
        if (s + w <= u->newest_s)
            return;
        u->buckets[s % w]++;
    }
    u->count++;
    if (t->created_ns > u->created_ns)
        u->created_ns = t->created_ns;
    if (!u->dirty) {
        u->dirty = 1;
        if (k->n_dirty == k->dirty_room) {
            k->dirty_room *= 2;
            k->dirty = storm_realloc(k->dirty, k->dirty_room * sizeof *k->dirty);
        }
        k->dirty[k->n_dirty++] = index;
    }
}

/* Send user `index`'s count if it changed since it was last sent. */
static void emit_user(struct counter *k, uint32_t index, uint64_t now_ns)
{
    struct counter_user *u = storm_table_value(&k->users, index);
    u->dirty = 0;
    if (k->c->window_s > 0)
        advance(u, (uint32_t)k->c->window_s, now_ns / 1000000000u);
    if (u->count == u->sent)
        return;
    u->sent = u->count;
    const char *user = storm_table_user(&k->users, index);
    struct storm_tuple t;
    memset(&t, 0, sizeof t);
    t.kind = STORM_COUNT;
    t.count = u->count;
    t.created_ns = u->created_ns;
    memcpy(t.user, user, sizeof t.user);
    int ranker = (int)(storm_hash(user) % (uint32_t)k->c->rankers);
    storm_send(k->e, &t, storm_ranker_id(k->c, ranker), now_ns);
}

/* The changed counts; with a window, once a second every user's (counts fall with time). */
static void emit(void *self)
{
    struct counter *k = self;
    uint64_t now = storm_clock_ns(CLOCK_REALTIME);
    if (k->c->window_s > 0 && now / 1000000000u != k->scanned_s) {
        k->scanned_s = now / 1000000000u;
        for (uint32_t i = 0; i < k->users.size; i++)
            emit_user(k, i, now);
    } else {
        for (uint32_t i = 0; i < k->n_dirty; i++)
            emit_user(k, k->dirty[i], now);
    }
    k->n_dirty = 0;
}

static void send_end(struct counter *k)
{
    struct storm_tuple t;
    memset(&t, 0, sizeof t);
    t.kind = STORM_END;
    uint64_t now = storm_clock_ns(CLOCK_REALTIME);
    t.created_ns = now;
    for (int i = 0; i < k->c->rankers; i++)
        storm_send(k->e, &t, storm_ranker_id(k->c, i), now);
}

/* Count one tuple; nonzero once every spout has ended. */
static int handle(void *self, const struct storm_tuple *t)
{
    struct counter *k = self;
    int spout = storm_sender_index(t->from, 0, k->c->spouts);
    if (spout < 0) {
        k->e->ignored++;
    } else if (t->kind == STORM_TWEET) {
        count_tweet(k, t);
    } else if (t->kind == STORM_END && !k->ended[spout]) {
        k->ended[spout] = 1;
        k->ends++;
    } else {
        k->e->ignored++;
    }
    return k->ends == k->c->spouts;
}

void storm_counter(struct storm_executor *e)
{
    struct counter k = {.e = e, .c = e->config, .dirty_room = 1024};
    size_t buckets = (size_t)k.c->window_s * sizeof(uint32_t);
    storm_table_init(&k.users, sizeof(struct counter_user) + buckets);
    k.dirty = storm_alloc(k.dirty_room * sizeof *k.dirty);
    k.ended = storm_alloc((size_t)k.c->spouts);
    if (storm_serve(e, &k, handle, emit)) {
        emit(&k);
        send_end(&k);
    }
    free(k.ended);
    free(k.dirty);
    storm_table_free(&k.users);
}
