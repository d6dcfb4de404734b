/* The rankers. A ranking is the top N (--top) users by count, ties broken by user name
 * (strcmp, ascending); users with count 0 are not ranked.
 *
 * Intermediate ranker i of R keeps the latest count of each of its users (those whose
 * storm_hash is i modulo R). Every --emit-ms, if a count changed and its top N with it, and
 * once more when STORM_END has come from all C counters, it sends its top N to the total
 * ranker as STORM_RANK tuples, best first, closed by one STORM_RANK_DONE; after the last one,
 * STORM_END.
 *
 * The total ranker keeps each intermediate ranker's latest whole ranking (one replaces the
 * ranker's previous one when its STORM_RANK_DONE comes) and their union's top N. Since a
 * user belongs to one ranker, that is the exact top N over all users. When STORM_END has
 * come from all R rankers it prints it on stdout, a line per entry: `rank user count`,
 * rank from 1, and the process may end (storm_finish).
 */
#include <stdio.h>
#include <stdlib.h>

#include "table.h"
#include "workers.h"


/* Nonzero if a ranks above b. */
static int ranks_above(const struct storm_entry *a, const struct storm_entry *b)
{
    if (a->count != b->count)
        return a->count > b->count;
    return strcmp(a->user, b->user) < 0;
}

static int best_first(const void *a, const void *b)
{
    return ranks_above(a, b) ? -1 : ranks_above(b, a);
}

/* The best `room` entries offered, kept in a heap whose root is the worst of them (each
 * entry ranks above its parent); topn_sort turns it into a ranking, best first. */
struct topn {
    struct storm_entry *heap;
    int size, room;
};

static void topn_init(struct topn *h, int room)
{
    h->heap = storm_alloc((size_t)room * sizeof *h->heap);
    h->size = 0;
    h->room = room;
}

static void swap(struct storm_entry *a, struct storm_entry *b)
{
    struct storm_entry t = *a;
    *a = *b;
    *b = t;
}

static void topn_offer(struct topn *h, const struct storm_entry *x)
{
    if (x->count == 0)
        return;
    struct storm_entry *heap = h->heap;
    if (h->size < h->room) {
        int i = h->size++;
        heap[i] = *x;
        while (i > 0 && ranks_above(&heap[(i - 1) / 2], &heap[i])) {
            swap(&heap[(i - 1) / 2], &heap[i]);
            i = (i - 1) / 2;
        }
        return;
    }
    if (!ranks_above(x, &heap[0]))
        return;
    heap[0] = *x;
    for (int i = 0;;) {
        int worst = i, l = 2 * i + 1, r = 2 * i + 2;
        if (l < h->size && ranks_above(&heap[worst], &heap[l]))
            worst = l;
        if (r < h->size && ranks_above(&heap[worst], &heap[r]))
            worst = r;
        if (worst == i)
            break;
        swap(&heap[i], &heap[worst]);
        i = worst;
    }
}

static void topn_sort(struct topn *h)
{
    qsort(h->heap, (size_t)h->size, sizeof *h->heap, best_first);
}

static void send_marker(struct storm_executor *e, enum storm_kind kind)
{
    struct storm_tuple t;
    memset(&t, 0, sizeof t);
    t.kind = kind;
    uint64_t now = storm_clock_ns(CLOCK_REALTIME);
    t.created_ns = now;
    storm_send(e, &t, storm_total_id(e->config), now);
}

/* -- the intermediate ranker ---------------------------------------------------------- */

/* A user's value in the table. */
struct ranker_user {
    uint32_t count;                 /* the latest from the user's counter */
    uint64_t created_ns;
};

struct ranker {
    struct storm_executor *e;
    const struct storm_config *c;
    struct storm_table users;
    struct topn best;               /* the ranking of the last emission */
    struct storm_entry *sent;       /* the ranking last sent */
    int n_sent;
    int changed;                    /* a count changed since the last emission */
    char *ended;                    /* by counter: its STORM_END came */
    int ends;
};

static void take_count(struct ranker *r, const struct storm_tuple *t)
{
    char user[STORM_USER_MAX + 1];
    storm_user_copy(user, t->user, STORM_USER_MAX);
    if (user[0] == '\0') {
        r->e->ignored++;
        return;
    }
    uint32_t index = storm_table_insert(&r->users, user, storm_hash(user));
    struct ranker_user *u = storm_table_value(&r->users, index);
    if (u->count != t->count)
        r->changed = 1;
    u->count = t->count;
    u->created_ns = t->created_ns;
}

/* Nonzero if the new ranking has the users and counts of the one last sent. */
static int same_as_sent(const struct ranker *r)
{
    if (r->best.size != r->n_sent)
        return 0;
    for (int i = 0; i < r->n_sent; i++)
        if (r->best.heap[i].count != r->sent[i].count
            || strcmp(r->best.heap[i].user, r->sent[i].user) != 0)
            return 0;
    return 1;
}

/* Send the top N if a count changed and it is not the one last sent; always if final. */
static void emit(struct ranker *r, int final)
{
    if (!r->changed && !final)
        return;
    r->changed = 0;
    r->best.size = 0;
    for (uint32_t i = 0; i < r->users.size; i++) {
        const struct ranker_user *u = storm_table_value(&r->users, i);
        struct storm_entry x = {.count = u->count, .created_ns = u->created_ns};
        memcpy(x.user, storm_table_user(&r->users, i), sizeof x.user);
        topn_offer(&r->best, &x);
    }
    topn_sort(&r->best);
    if (!final && same_as_sent(r))
        return;
    uint64_t now = storm_clock_ns(CLOCK_REALTIME);
    for (int i = 0; i < r->best.size; i++) {
        const struct storm_entry *x = &r->best.heap[i];
        struct storm_tuple t;
        memset(&t, 0, sizeof t);
        t.kind = STORM_RANK;
        t.count = x->count;
        t.created_ns = x->created_ns;
        memcpy(t.user, x->user, sizeof t.user);
        storm_send(r->e, &t, storm_total_id(r->c), now);
    }
    send_marker(r->e, STORM_RANK_DONE);
    memcpy(r->sent, r->best.heap, (size_t)r->best.size * sizeof *r->sent);
    r->n_sent = r->best.size;
}

/* storm_serve's periodic emission: the ranking, when it changed. */
static void emit_changed(void *self)
{
    emit(self, 0);
}

/* Take one tuple; nonzero once every counter has ended. */
static int ranker_handle(void *self, const struct storm_tuple *t)
{
    struct ranker *r = self;
    int counter = storm_sender_index(t->from, storm_counter_id(r->c, 0), r->c->counters);
    if (counter < 0) {
        r->e->ignored++;
    } else if (t->kind == STORM_COUNT) {
        take_count(r, t);
    } else if (t->kind == STORM_END && !r->ended[counter]) {
        r->ended[counter] = 1;
        r->ends++;
    } else {
        r->e->ignored++;
    }
    return r->ends == r->c->counters;
}

void storm_ranker(struct storm_executor *e)
{
    struct ranker r = {.e = e, .c = e->config};
    storm_table_init(&r.users, sizeof(struct ranker_user));
    topn_init(&r.best, r.c->top);
    r.sent = storm_alloc((size_t)r.c->top * sizeof *r.sent);
    r.ended = storm_alloc((size_t)r.c->counters);
    if (storm_serve(e, &r, ranker_handle, emit_changed)) {
        emit(&r, 1);
        send_marker(e, STORM_END);
    }
    free(r.ended);
    free(r.sent);
    free(r.best.heap);
    storm_table_free(&r.users);
}

/* -- the total ranker ----------------------------------------------------------------- */

/* An intermediate ranker's ranking, as received: at most N entries, best first. */
struct ranking {
    struct storm_entry *entries;
    int size, room;
};

struct total {
    struct storm_executor *e;
    const struct storm_config *c;
    struct ranking *whole;          /* by ranker: its latest whole ranking */
    struct ranking *coming;         /* by ranker: the entries since its last STORM_RANK_DONE */
    struct topn best;               /* the union's top N, best first */
    char *ended;                    /* by ranker: its STORM_END came */
    int ends;
};

static void take_entry(struct total *g, struct ranking *coming, const struct storm_tuple *t)
{
    if (coming->size == g->c->top || t->count == 0) {
        g->e->ignored++;
        return;
    }
    if (coming->size == coming->room) {
        coming->room = coming->room == 0 ? 16 : 2 * coming->room;
        if (coming->room > g->c->top)
            coming->room = g->c->top;
        coming->entries = storm_realloc(coming->entries,
                                        (size_t)coming->room * sizeof *coming->entries);
    }
    struct storm_entry *x = &coming->entries[coming->size++];
    storm_user_copy(x->user, t->user, STORM_USER_MAX);
    x->count = t->count;
    x->created_ns = t->created_ns;
}

/* Ranker `ranker`'s ranking is whole: it replaces the previous one, and the top N is redone. */
static void take_ranking(struct total *g, int ranker)
{
    struct ranking old = g->whole[ranker];
    g->whole[ranker] = g->coming[ranker];
    g->coming[ranker] = old;
    g->coming[ranker].size = 0;
    g->best.size = 0;
    for (int i = 0; i < g->c->rankers; i++)
        for (int j = 0; j < g->whole[i].size; j++)
            topn_offer(&g->best, &g->whole[i].entries[j]);
    topn_sort(&g->best);
}

/* Take one tuple; nonzero once every ranker has ended. */
static int total_handle(void *self, const struct storm_tuple *t)
{
    struct total *g = self;
    int ranker = storm_sender_index(t->from, storm_ranker_id(g->c, 0), g->c->rankers);
    if (ranker < 0 || g->ended[ranker])
        g->e->ignored++;
    else if (t->kind == STORM_RANK)
        take_entry(g, &g->coming[ranker], t);
    else if (t->kind == STORM_RANK_DONE)
        take_ranking(g, ranker);
    else if (t->kind == STORM_END) {
        g->ended[ranker] = 1;
        g->ends++;
    } else
        g->e->ignored++;
    return g->ends == g->c->rankers;
}

static void print_ranking(const struct topn *best)
{
    for (int i = 0; i < best->size; i++)
        printf("%d %s %u\n", i + 1, best->heap[i].user, (unsigned)best->heap[i].count);
    fflush(stdout);
}

void storm_total(struct storm_executor *e)
{
    struct total g = {.e = e, .c = e->config};
    g.whole = storm_alloc((size_t)g.c->rankers * sizeof *g.whole);
    g.coming = storm_alloc((size_t)g.c->rankers * sizeof *g.coming);
    g.ended = storm_alloc((size_t)g.c->rankers);
    topn_init(&g.best, g.c->top);
    if (storm_serve(e, &g, total_handle, NULL)) {
        print_ranking(&g.best);
        e->ended_ns = storm_clock_ns(CLOCK_REALTIME);
        storm_finish();
    }
    for (int i = 0; i < g.c->rankers; i++) {
        free(g.whole[i].entries);
        free(g.coming[i].entries);
    }
    free(g.best.heap);
    free(g.ended);
    free(g.coming);
    free(g.whole);
}
