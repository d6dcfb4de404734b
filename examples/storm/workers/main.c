/* The Storm workers' program: the executors of one process, a thread each, over the data
 * plane of storm.h.
 *
 *   workers --executors LIST --spouts S --counters C --rankers R [--input FILE] [--top N]
 *           [--window-s W] [--emit-ms MS]
 *
 * LIST names the executors this process runs, comma-separated, from spout<i>, counter<i>,
 * ranker<i> and total; an executor's position in LIST is its local worker index (the data
 * plane's inqueue_get(worker)). The lifecycle is the data plane's: floem_init,
 * floem_run_threads, the executors, floem_kill_threads, floem_finalize. The process ends,
 * with status 0, when it runs the total ranker and that has printed the final ranking, or
 * on SIGINT or SIGTERM. A process without the total ranker keeps running after its
 * executors are done (its data plane may still be delivering what they sent) until a
 * signal. At the end it prints a line per executor on stderr: `storm: NAME: in X, out Y`.
 * Status 2: bad arguments; 1: an executor failed (it said why).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "workers.h"

static int stopping;                /* executors of roles below it should return */
static int failed;                  /* an executor reported an error */
static pthread_t main_thread;       /* waits for the stop signals */

int storm_stopping(const struct storm_executor *e)
{
    return __atomic_load_n(&stopping, __ATOMIC_RELAXED) > (int)e->role;
}

/* The main thread takes it as a stop signal (it is blocked, and main waits for it). */
void storm_finish(void)
{
    pthread_kill(main_thread, SIGTERM);
}

void storm_fail(void)
{
    __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
}

void *storm_alloc(size_t size)
{
    void *p = calloc(1, size == 0 ? 1 : size);
    if (p == NULL) {
        fprintf(stderr, "storm: out of memory (%zu bytes)\n", size);
        exit(1);
    }
    return p;
}

void *storm_realloc(void *p, size_t size)
{
    void *q = realloc(p, size == 0 ? 1 : size);
    if (q == NULL) {
        fprintf(stderr, "storm: out of memory (%zu bytes)\n", size);
        exit(1);
    }
    return q;
}

/* -- the command line ------------------------------------------------------------------ */

static const char usage[] =
    "usage: workers --executors LIST --spouts S --counters C --rankers R [--input FILE]\n"
    "               [--top N] [--window-s W] [--emit-ms MS]\n"
    "\n"
    "  --executors LIST  executors of this process, comma-separated: spout<i>, counter<i>,\n"
    "                    ranker<i>, total (a position in LIST is a local worker index)\n"
    "  --spouts S, --counters C, --rankers R   executors of each kind in the topology\n"
    "  --input FILE      the tweets, a user name a line (needed by spouts)\n"
    "  --top N           entries of a ranking (default 10)\n"
    "  --window-s W      counters count the last W seconds of tweets (default 0: all)\n"
    "  --emit-ms MS      counters and rankers send what changed every MS ms (default 100)\n";

/* Say what is wrong, then how to call the program, and exit 2. */
static _Noreturn __attribute__((format(printf, 1, 2))) void bad_arguments(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "workers: ");
    vfprintf(stderr, fmt, args);
    fprintf(stderr, "\n%s", usage);
    va_end(args);
    exit(2);
}

/* A decimal number in [low, high], all of text. */
static int parse_number(const char *text, long low, long high, long *value)
{
    if (*text < '0' || *text > '9')
        return 0;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < low || v > high)
        return 0;
    *value = v;
    return 1;
}

static int option_number(const char *option, const char *text, long low, long high)
{
    long v;
    if (!parse_number(text, low, high, &v))
        bad_arguments("%s wants a number from %ld to %ld, not '%s'", option, low, high, text);
    return (int)v;
}

/* Executor `name` of the topology in c, or bad_arguments. */
static struct storm_executor parse_executor(const char *name, const struct storm_config *c)
{
    static const struct {
        const char *prefix;
        enum storm_role role;
    } kinds[] = {{"spout", STORM_ROLE_SPOUT},
                 {"counter", STORM_ROLE_COUNTER},
                 {"ranker", STORM_ROLE_RANKER}};
    struct storm_executor e = {.config = c};
    if (strcmp(name, "total") == 0) {
        e.role = STORM_ROLE_TOTAL;
        e.id = storm_total_id(c);
        snprintf(e.name, sizeof e.name, "total");
    } else {
        size_t k = 0;
        while (k < sizeof kinds / sizeof kinds[0]
               && strncmp(name, kinds[k].prefix, strlen(kinds[k].prefix)) != 0)
            k++;
        if (k == sizeof kinds / sizeof kinds[0])
            bad_arguments("no executor '%s' (spout<i>, counter<i>, ranker<i> or total)", name);
        int of_kind[] = {c->spouts, c->counters, c->rankers};
        long i;
        if (!parse_number(name + strlen(kinds[k].prefix), 0, of_kind[k] - 1, &i))
            bad_arguments("no executor '%s' in this topology (--spouts, --counters, --rankers)",
                          name);
        e.role = kinds[k].role;
        e.index = (int)i;
        int first[] = {0, storm_counter_id(c, 0), storm_ranker_id(c, 0)};
        e.id = first[k] + e.index;
        snprintf(e.name, sizeof e.name, "%s%d", kinds[k].prefix, e.index);
    }
    return e;
}

/* The executors of LIST, in its order; *n of them. */
static struct storm_executor *parse_executors(const char *list, const struct storm_config *c,
                                              int *n)
{
    int most = storm_total_id(c) + 1;
    struct storm_executor *executors = storm_alloc((size_t)most * sizeof *executors);
    char *seen = storm_alloc((size_t)most);
    char *names = storm_alloc(strlen(list) + 1);     /* zeroed: a copy of list with its NUL */
    memcpy(names, list, strlen(list));
    *n = 0;
    for (char *name = names, *next; name != NULL; name = next) {
        next = strchr(name, ',');
        if (next != NULL)
            *next++ = '\0';
        if (*name == '\0')
            bad_arguments("--executors '%s' has an empty name", list);
        struct storm_executor e = parse_executor(name, c);
        if (seen[e.id])
            bad_arguments("--executors names '%s' twice", name);
        seen[e.id] = 1;
        e.worker = *n;
        executors[(*n)++] = e;
    }
    free(names);
    free(seen);
    return executors;
}

static struct storm_executor *parse_arguments(int argc, char **argv, struct storm_config *c,
                                              int *n)
{
    static const struct option options[] = {
        {"executors", required_argument, NULL, 'x'}, {"spouts", required_argument, NULL, 's'},
        {"counters", required_argument, NULL, 'c'},  {"rankers", required_argument, NULL, 'r'},
        {"input", required_argument, NULL, 'i'},     {"top", required_argument, NULL, 'n'},
        {"window-s", required_argument, NULL, 'w'},  {"emit-ms", required_argument, NULL, 'e'},
        {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0}};
    *c = (struct storm_config){.top = 10, .emit_ms = 100};
    const char *list = NULL;
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":", options, NULL)) != -1) {
        switch (opt) {
        case 'x': list = optarg; break;
        case 's': c->spouts = option_number("--spouts", optarg, 1, STORM_EXECUTORS_MAX); break;
        case 'c': c->counters = option_number("--counters", optarg, 1, STORM_EXECUTORS_MAX); break;
        case 'r': c->rankers = option_number("--rankers", optarg, 1, STORM_EXECUTORS_MAX); break;
        case 'i': c->input = optarg; break;
        case 'n': c->top = option_number("--top", optarg, 1, STORM_TOP_MAX); break;
        case 'w': c->window_s = option_number("--window-s", optarg, 0, STORM_WINDOW_MAX); break;
        case 'e': c->emit_ms = option_number("--emit-ms", optarg, 1, STORM_EMIT_MS_MAX); break;
        case 'h': fputs(usage, stdout); exit(0);
        case ':': bad_arguments("%s needs a value", argv[optind - 1]);
        default: bad_arguments("no option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        bad_arguments("unexpected argument '%s'", argv[optind]);
    if (list == NULL || c->spouts == 0 || c->counters == 0 || c->rankers == 0)
        bad_arguments("--executors, --spouts, --counters and --rankers are required");
    struct storm_executor *executors = parse_executors(list, c, n);
    for (int i = 0; i < *n; i++)
        if (executors[i].role == STORM_ROLE_SPOUT) {
            if (c->input == NULL)
                bad_arguments("%s needs --input", executors[i].name);
            FILE *f = fopen(c->input, "r");
            if (f == NULL)
                bad_arguments("cannot open --input %s: %s", c->input, strerror(errno));
            fclose(f);
            break;
        }
    return executors;
}

/* -- the executors' threads ------------------------------------------------------------ */

static void *run_executor(void *arg)
{
    struct storm_executor *e = arg;
    switch (e->role) {
    case STORM_ROLE_SPOUT: storm_spout(e); break;
    case STORM_ROLE_COUNTER: storm_counter(e); break;
    case STORM_ROLE_RANKER: storm_ranker(e); break;
    case STORM_ROLE_TOTAL: storm_total(e); break;
    }
    return NULL;
}

#define TIMER_EVERY 64              /* tuples handled between looks at the clock */

int storm_serve(struct storm_executor *e, void *self,
                int (*handle)(void *self, const struct storm_tuple *t), void (*emit)(void *self))
{
    uint64_t period = (uint64_t)e->config->emit_ms * 1000000u;
    uint64_t next_emit = storm_clock_ns(CLOCK_MONOTONIC) + period;
    struct storm_backoff idle = {0};
    unsigned handled = 0;
    int ended = 0;
    while (!ended && !storm_stopping(e)) {
        struct storm_tuple *t = storm_receive(e);
        if (t != NULL) {
            storm_backoff_reset(&idle);
            ended = handle(self, t);
            if (++handled % TIMER_EVERY != 0)
                continue;
        }
        uint64_t now = emit != NULL ? storm_clock_ns(CLOCK_MONOTONIC) : 0;
        if (emit != NULL && now >= next_emit) {
            emit(self);
            next_emit = now + period;
        }
        if (t == NULL)
            storm_backoff_idle(&idle);
    }
    return ended;
}

int main(int argc, char **argv)
{
    struct storm_config config;
    int n;
    struct storm_executor *executors = parse_arguments(argc, argv, &config, &n);

    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);          /* every thread inherits it */
    main_thread = pthread_self();

    floem_init();
    floem_run_threads();
    pthread_t *threads = storm_alloc((size_t)n * sizeof *threads);
    for (int i = 0; i < n; i++)
        if (pthread_create(&threads[i], NULL, run_executor, &executors[i]) != 0) {
            fprintf(stderr, "storm: cannot start %s\n", executors[i].name);
            return 1;
        }
    int sig;
    sigwait(&stop, &sig);
    /* Spouts first, then counters, rankers and the total ranker: an executor blocked in
     * outqueue_put waits for a local receiver, which still takes tuples until it stops. */
    for (int role = STORM_ROLE_SPOUT; role <= STORM_ROLE_TOTAL; role++) {
        __atomic_store_n(&stopping, role + 1, __ATOMIC_RELAXED);
        for (int i = 0; i < n; i++)
            if ((int)executors[i].role == role)
                pthread_join(threads[i], NULL);
    }
    floem_kill_threads();
    floem_finalize();
    for (int i = 0; i < n; i++) {
        const struct storm_executor *e = &executors[i];
        fprintf(stderr, "storm: %s: in %llu, out %llu", e->name, (unsigned long long)e->in,
                (unsigned long long)e->out);
        if (e->ignored > 0)
            fprintf(stderr, ", ignored %llu", (unsigned long long)e->ignored);
        fputc('\n', stderr);
        if (e->began_ns != 0)           /* the clocks benchmarks/storm reads */
            fprintf(stderr, "storm: %s: started %llu\n", e->name, (unsigned long long)e->began_ns);
        if (e->ended_ns != 0)
            fprintf(stderr, "storm: %s: finished %llu\n", e->name, (unsigned long long)e->ended_ns);
    }
    struct rusage used;                 /* this host process: workers (and a CPU data plane) */
    getrusage(RUSAGE_SELF, &used);
    fprintf(stderr, "storm: cpu %llu ns\n",
            (unsigned long long)(used.ru_utime.tv_sec + used.ru_stime.tv_sec) * 1000000000ull +
                (unsigned long long)(used.ru_utime.tv_usec + used.ru_stime.tv_usec) * 1000ull);
    free(threads);
    free(executors);
    return __atomic_load_n(&failed, __ATOMIC_RELAXED) ? 1 : 0;
}
