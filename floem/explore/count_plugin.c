/* A qemu TCG plugin counting what each thread of a Floem program executes on packets.
 *
 * `floem run --count-instructions BASE` runs every process under qemu-user (qemu-x86_64,
 * qemu-aarch64, qemu-mips64: the process's own ISA) with this plugin, built with
 * -DFLOEM_COUNT_INSTRUCTIONS. The runtime calls marker functions that do nothing
 * (runtime/src/count.c), which the plugin recognises by their symbols when it translates
 * them:
 *
 *   floem_count_on, floem_count_off   the calling thread starts or stops being counted
 *                                     (a packet's turn begins or ends, a pause ends or
 *                                     begins); the markers' own instructions are not;
 *   floem_count_round                 a sync-layer manager's round begins: the calling
 *                                     thread is counted (within the round, floem_count_off
 *                                     and floem_count_on leave out the DMA engine's work);
 *   floem_count_idle                  the calling thread stops being counted, and what it
 *                                     counted since its round began goes to its idle
 *                                     counts instead (a round that moved nothing);
 *   floem_count_thread(fn, arg)       calls fn(arg): the thread is named by the next
 *                                     function it runs (a segment's `<segment>_thread`,
 *                                     or a start routine of the user's program).
 *
 * While a thread is counted, every instruction it executes is, with its atomic
 * read-modify-writes in the ISA's own terms (a lock-prefixed or memory XCHG on x86-64,
 * a store-exclusive, a CAS or an LSE atomic on AArch64, an SC or SCD on MIPS64: an LL/SC
 * pair counts once, a failed SC and its retry twice). With a cache geometry
 * (cache=I1:D1:LL or I1:D1:L2:LL, each BYTES/WAYS/LINE) every instruction fetch, load and
 * store of a thread goes through a cache simulation, counted or not (as callgrind
 * simulates what it does not collect: what the caches hold when a packet's turn begins is
 * what the thread did before it): a first-level instruction and data cache of the
 * thread's own, a unified second level of its own when the geometry has one (a core's
 * private L2), and one last level shared by the process's threads, each set-associative
 * with LRU replacement, write-allocate, an access straddling lines touching each; a miss
 * looks up the next level. The counted loads and fetches that miss are counted, stores
 * are not (they change what the caches hold).
 *
 * With elements=FILE (the element functions of a `--count-elements` build, one name a
 * line), what a thread counts is also charged to the element running: the innermost
 * element function on the thread's call stack, the functions it calls that are not
 * elements included. The plugin keeps a shadow stack of each thread's calls: a block
 * ending with a call (x86-64 CALL; AArch64 BL, BLR; MIPS64 JAL, JALR and the linking
 * branches, their delay slot in the block) pushes a frame returning to the address after
 * it (after the delay slot), which the callee runs in; a block starting at the return
 * address of a frame on the stack pops it and every frame above it. Control reaching an
 * element's code (named by its symbol, gcc's clones `f.constprop.0`, `f.isra.0`,
 * `f.part.0`, `f.cold` as `f`) from another function's makes that element the frame's:
 * a call, or a tail call, which jumps and returns where its caller would have. Each
 * such entry while counted is a call of the element by the one running before; each
 * call of floem_engine_end (runtime/src/count.c: the end of work handed to an engine) is
 * one by the element running, counted or not, as the runtime counts them. What a
 * floem_count_idle moves to the idle counts leaves the thread's line only: it ends rounds
 * of the sync layer's managers, which run no element.
 *
 * At exit it writes one line per thread to out=FILE:
 *
 *   events Ir Ge I1mr D1mr I2mr D2mr ILmr DLmr
 *   thread N ROOT <a count per event>
 *
 * (callgrind's names: instructions, atomics, first-level fetch and load misses,
 * second-level ones (the first level's when there is no second: every first-level miss
 * goes on), last-level ones), N the order the threads started in, ROOT the function the
 * thread is named by ("main" for the process's first thread); with
 * elements=FILE, after its thread's line, one line per element it ran and one per pair
 * of elements of which one called the other:
 *
 *   element NAME <a count per event>
 *   call CALLER CALLEE TIMES          (CALLEE floem_engine_end: an engine's work ended)
 *
 * and, after the line of a thread that ran sync-layer rounds, one with how many it ran, how
 * many of those moved nothing (ended by floem_count_idle), and what those counted (not in
 * its thread line):
 *
 *   idle ROUNDS IDLE <a count per event>
 *
 * What the thread counted outside every element is its line less its elements'.
 */
#include <qemu-plugin.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* Threads a process may start (vCPUs of qemu-user: one per guest thread). */
#define MAX_VCPUS 4096

/* The deepest call stack a thread may have while elements are counted. */
#define MAX_DEPTH 4096

enum isa { ISA_X86_64, ISA_AARCH64, ISA_MIPS64 };
enum marker { NO_MARKER, MARK_ON, MARK_OFF, MARK_ROUND, MARK_IDLE, MARK_THREAD, MARK_ENGINE };
/* The events of a thread's line (and of an element's), in order. */
enum event { IR, GE, I1MR, D1MR, I2MR, D2MR, ILMR, DLMR, N_EVENTS };

/* One set-associative cache: `ways` line numbers per set, the most recently used first
 * (UINT64_MAX: empty). */
struct cache {
    uint64_t *lines;
    uint64_t sets;
    unsigned ways, line_bits;
};

struct geometry {
    uint64_t bytes;
    unsigned ways, line;
};

/* An instruction fetch the caches see: an instruction that starts a line the one before it
 * in its block did not end in (the others hit the most recently used line: no change). */
struct fetch {
    uint64_t vaddr;
    unsigned size;
};

/* What the plugin knows of a translated block. */
struct block {
    const char *symbol;         /* the function it is in (NULL: no symbol) */
    enum marker marker;
    uint64_t vaddr;
    uint64_t call_return;       /* it ends with a call returning there (0: it does not) */
    int element;                /* the element function it is in (-1: none) */
    uint64_t insns, atomics;
    size_t n_fetches;
    struct fetch fetches[];
};

/* A call on a thread's shadow stack: where it returns to, the element it runs (-1: none). */
struct frame {
    uint64_t ret;
    int element;
};

/* Calls of one function (an element, or floem_engine_end: `n_elements`) by an element. */
struct calls {
    int callee;
    uint64_t times;
};

/* What one element counted on one thread while it was running, and what it called. */
struct tally {
    uint64_t counts[N_EVENTS];
    struct calls *calls;
    size_t n_calls;
};

/* One guest thread: whether it is counted now, what it is named by, its counts (and what
 * they were when its sync-layer round began: floem_count_idle goes back to them, moving what
 * was counted since to `idle`). */
struct thread {
    struct thread *next;        /* in the order threads started */
    const char *root;
    bool counted, naming;       /* naming: the next function it runs names it */
    uint64_t c[N_EVENTS], at_round[N_EVENTS];
    uint64_t idle[N_EVENTS], rounds, idle_rounds;
    struct cache i1, d1, l2;
    /* with elements=FILE: its shadow stack (the first frame: outside any call seen) */
    struct frame *stack;
    unsigned depth;
    uint64_t call_return;       /* the block run last ended with a call returning there */
    int running;                /* the element its counts are charged to now (-1: none) */
    uint64_t charged[N_EVENTS]; /* its counts when that element began running */
    struct tally *tallies;      /* per element, allocated when it first runs one */
};

static enum isa isa;
static const char *out_path;
static bool simulate, second_level;
static struct geometry i1_geometry, d1_geometry, l2_geometry, ll_geometry;
static struct cache last_level;
static pthread_mutex_t last_level_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static struct thread *vcpus[MAX_VCPUS];
static struct thread *first_thread, **last_next = &first_thread;
static const char *failure;     /* why the counts are not to be trusted */
static char **elements;         /* elements=FILE: the element functions' names, sorted */
static int n_elements;

static void cache_init(struct cache *c, const struct geometry *g)
{
    c->ways = g->ways;
    c->sets = g->bytes / ((uint64_t)g->line * g->ways);
    c->line_bits = (unsigned)__builtin_ctz(g->line);
    c->lines = malloc(c->sets * c->ways * sizeof *c->lines);
    if (c->lines == NULL) {
        fprintf(stderr, "floem count plugin: out of memory for a %" PRIu64 "-byte cache\n",
                g->bytes);
        exit(1);
    }
    memset(c->lines, 0xff, c->sets * c->ways * sizeof *c->lines);
}

/* Look line `line` up in its set: true when it was not there (it is now, the most
 * recently used). */
static bool line_missed(struct cache *c, uint64_t line)
{
    uint64_t *set = c->lines + (line % c->sets) * c->ways;
    if (set[0] == line)
        return false;
    unsigned way = 1;
    while (way < c->ways && set[way] != line)
        way++;
    bool missed = way == c->ways;
    if (missed)
        way--;
    memmove(set + 1, set, way * sizeof *set);
    set[0] = line;
    return missed;
}

/* An access of `size` bytes at `vaddr`: true when a line it touches was not there. */
static bool missed(struct cache *c, uint64_t vaddr, unsigned size)
{
    bool miss = false;
    uint64_t last = (vaddr + size - 1) >> c->line_bits;
    for (uint64_t line = vaddr >> c->line_bits; line <= last; line++)
        miss |= line_missed(c, line);
    return miss;
}

static bool last_level_missed(uint64_t vaddr, unsigned size)
{
    pthread_mutex_lock(&last_level_lock);
    bool miss = missed(&last_level, vaddr, size);
    pthread_mutex_unlock(&last_level_lock);
    return miss;
}

static void vcpu_init(qemu_plugin_id_t id, unsigned int vcpu)
{
    (void)id;
    struct thread *t = calloc(1, sizeof *t);
    if (t == NULL || vcpu >= MAX_VCPUS) {
        failure = t == NULL ? "out of memory" : "more threads than it can count";
        free(t);
        return;
    }
    if (simulate) {
        cache_init(&t->i1, &i1_geometry);
        cache_init(&t->d1, &d1_geometry);
        if (second_level)
            cache_init(&t->l2, &l2_geometry);
    }
    if (elements != NULL) {
        t->stack = malloc(MAX_DEPTH * sizeof *t->stack);
        if (t->stack == NULL) {
            failure = "out of memory";
            free(t);
            return;
        }
        t->stack[0] = (struct frame){0, -1};
        t->depth = 1;
        t->running = -1;
    }
    pthread_mutex_lock(&threads_lock);
    t->root = first_thread == NULL ? "main" : NULL;
    *last_next = t;
    last_next = &t->next;
    vcpus[vcpu] = t;
    pthread_mutex_unlock(&threads_lock);
}

/* The tally of `element` on the thread (NULL: out of memory). */
static struct tally *tally_of(struct thread *t, int element)
{
    if (t->tallies == NULL && (t->tallies = calloc(n_elements, sizeof *t->tallies)) == NULL) {
        failure = "out of memory";
        return NULL;
    }
    return &t->tallies[element];
}

/* Charge what the thread counted since the element running began to it. */
static void charge(struct thread *t)
{
    struct tally *tally = t->running >= 0 ? tally_of(t, t->running) : NULL;
    for (int e = 0; tally != NULL && e < N_EVENTS; e++)
        tally->counts[e] += t->c[e] - t->charged[e];
    memcpy(t->charged, t->c, sizeof t->c);
}

/* Element `caller` calls `callee` (an element, or floem_engine_end: `n_elements`) once more. */
static void called(struct thread *t, int caller, int callee)
{
    struct tally *tally = tally_of(t, caller);
    if (tally == NULL)
        return;
    for (size_t i = 0; i < tally->n_calls; i++)
        if (tally->calls[i].callee == callee) {
            tally->calls[i].times++;
            return;
        }
    struct calls *more = realloc(tally->calls, (tally->n_calls + 1) * sizeof *more);
    if (more == NULL) {
        failure = "out of memory";
        return;
    }
    tally->calls = more;
    tally->calls[tally->n_calls++] = (struct calls){callee, 1};
}

/* Follow the thread's calls and returns into block `b` (elements=FILE), and charge what it
 * counted to the element that was running when the element running changes. */
static void track(struct thread *t, const struct block *b)
{
    uint64_t ret = t->call_return;
    bool returned = false;
    t->call_return = b->call_return;
    if (ret != 0 && b->vaddr != ret) {          /* a call (not a link not taken) */
        if (t->depth == MAX_DEPTH) {
            failure = "a call stack deeper than it follows";
            return;
        }
        t->stack[t->depth] = (struct frame){ret, t->stack[t->depth - 1].element};
        t->depth++;
    } else if (ret == 0) {
        for (unsigned i = t->depth - 1; i > 0 && !returned; i--)
            if (t->stack[i].ret == b->vaddr) {  /* its return (and any tail calls') */
                t->depth = i;
                returned = true;
            }
    }
    struct frame *top = &t->stack[t->depth - 1];
    if (b->element >= 0 && top->element != b->element) {   /* an element's code entered */
        if (!returned && t->counted && top->element >= 0)
            called(t, top->element, b->element);
        top->element = b->element;
    }
    if (top->element != t->running) {
        charge(t);
        t->running = top->element;
    }
    if (b->marker == MARK_ENGINE && t->running >= 0)
        called(t, t->running, n_elements);
}

/* A first-level miss of thread `t` (counted: `count`; `first`: I1MR for a fetch, D1MR for a
 * load) goes on to the second level, if there is one, and the last: each miss adds one to
 * its event (the second level's and the last's two and four after the first's). */
static void below_first(struct thread *t, uint64_t vaddr, unsigned size, bool count,
                        enum event first)
{
    t->c[first] += count;
    if (second_level && !missed(&t->l2, vaddr, size))
        return;
    t->c[first + 2] += count;
    if (last_level_missed(vaddr, size))
        t->c[first + 4] += count;
}

static void block_executed(unsigned int vcpu, void *data)
{
    struct thread *t = vcpus[vcpu];
    const struct block *b = data;
    if (t == NULL)
        return;
    if (elements != NULL)
        track(t, b);
    switch (b->marker) {
    case MARK_ON:
        t->counted = true;
        return;
    case MARK_OFF:
        t->counted = false;
        return;
    case MARK_ROUND:
        t->counted = true;
        t->rounds++;
        memcpy(t->at_round, t->c, sizeof t->c);
        return;
    case MARK_IDLE:
        t->counted = false;
        if (t->stack != NULL)
            charge(t);          /* to no element: the sync layer's managers run none */
        t->idle_rounds++;
        for (int e = 0; e < N_EVENTS; e++)
            t->idle[e] += t->c[e] - t->at_round[e];
        memcpy(t->c, t->at_round, sizeof t->c);
        memcpy(t->charged, t->c, sizeof t->c);
        return;
    case MARK_THREAD:
        t->naming = true;
        return;
    case MARK_ENGINE:
    case NO_MARKER:
        break;
    }
    if (t->naming) {
        t->naming = false;
        t->root = b->symbol;
    }
    if (t->counted) {
        t->c[IR] += b->insns;
        t->c[GE] += b->atomics;
    }
    if (!simulate)
        return;
    for (size_t i = 0; i < b->n_fetches; i++) {
        const struct fetch *f = &b->fetches[i];
        if (missed(&t->i1, f->vaddr, f->size))
            below_first(t, f->vaddr, f->size, t->counted, I1MR);
    }
}

/* `data` is non-NULL for an atomic read-modify-write, whose one access qemu reports as a
 * store: it is a load too. */
static void memory_accessed(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr,
                            void *data)
{
    struct thread *t = vcpus[vcpu];
    if (t == NULL)
        return;
    unsigned size = 1u << qemu_plugin_mem_size_shift(info);
    bool load = t->counted && (!qemu_plugin_mem_is_store(info) || data != NULL);
    if (missed(&t->d1, vaddr, size))
        below_first(t, vaddr, size, load, D1MR);
}

static bool legacy_prefix(uint8_t byte)
{
    switch (byte) {
    case 0xf0: case 0xf2: case 0xf3: case 0x2e: case 0x36: case 0x3e: case 0x26: case 0x64:
    case 0x65: case 0x66: case 0x67:
        return true;
    default:
        return false;
    }
}

/* The 4-byte instruction `bytes` as a word, in the ISA's byte order. */
static uint32_t word(const uint8_t *bytes)
{
    if (isa == ISA_MIPS64)
        return (uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 | (uint32_t)bytes[2] << 8
               | bytes[3];
    return (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16
           | (uint32_t)bytes[3] << 24;
}

/* Whether the instruction `bytes` (`size` bytes) calls: jumps and links a return address. */
static bool links(const uint8_t *bytes, size_t size)
{
    switch (isa) {
    case ISA_X86_64: {
        size_t i = 0;
        while (i < size && legacy_prefix(bytes[i]))
            i++;
        if (i < size && (bytes[i] & 0xf0) == 0x40)  /* REX */
            i++;
        if (i < size && bytes[i] == 0xe8)           /* CALL rel32 */
            return true;
        return i + 1 < size && bytes[i] == 0xff && (bytes[i + 1] >> 3 & 7) == 2;  /* CALL r/m */
    }
    case ISA_AARCH64: {
        uint32_t w = size == 4 ? word(bytes) : 0;
        return (w & 0xfc000000) == 0x94000000 || (w & 0xfffffc1f) == 0xd63f0000;  /* BL, BLR */
    }
    case ISA_MIPS64: {
        uint32_t w = size == 4 ? word(bytes) : 0;
        unsigned opcode = w >> 26, rt = w >> 16 & 0x1f;
        return opcode == 0x03                                   /* JAL */
               || (size == 4 && opcode == 0 && (w & 0x3f) == 0x09)     /* JALR */
               || (opcode == 0x01 && rt >= 0x10 && rt <= 0x13);  /* BLTZAL, BGEZAL, ...L */
    }
    }
    return false;
}

/* Whether the instruction `bytes` (`size` bytes) is an atomic read-modify-write. */
static bool atomic(const uint8_t *bytes, size_t size)
{
    switch (isa) {
    case ISA_X86_64: {
        size_t i = 0;
        for (; i < size && legacy_prefix(bytes[i]); i++)
            if (bytes[i] == 0xf0)               /* lock */
                return true;
        if (i < size && (bytes[i] & 0xf0) == 0x40)  /* REX */
            i++;
        /* xchg with a memory operand is locked without the prefix */
        return i + 1 < size && (bytes[i] == 0x86 || bytes[i] == 0x87)
               && (bytes[i + 1] >> 6) != 3;
    }
    case ISA_AARCH64: {
        if (size != 4)
            return false;
        uint32_t w = word(bytes);
        if ((w & 0x3f000000) == 0x08000000) {   /* load/store exclusive, ordered, CAS */
            bool o2 = w >> 23 & 1, load = w >> 22 & 1, o1 = w >> 21 & 1, wide = w >> 31 & 1;
            if (!o2 && !load && (!o1 || wide))  /* STXR, STLXR (B, H), STXP, STLXP */
                return true;
            return o1 && (w >> 10 & 0x1f) == 0x1f && (o2 || !wide);    /* CAS, CASP */
        }
        /* LSE atomics: LDADD... SWP (not LDAPR, which shares the encoding space) */
        return (w & 0x3f200c00) == 0x38200000 && (w & 0xf000) != 0xc000;
    }
    case ISA_MIPS64: {
        if (size != 4)
            return false;
        unsigned opcode = bytes[0] >> 2;        /* big-endian */
        return opcode == 0x38 || opcode == 0x3c;    /* SC, SCD */
    }
    }
    return false;
}

/* The marker a block starting at `vaddr` in function `symbol` is: a marker function's
 * first block, the first of it translated (a block after a call it makes returns is not). */
static enum marker marker_of(const char *symbol, uint64_t vaddr)
{
    static const char *const names[] = {[MARK_ON] = "floem_count_on",
                                        [MARK_OFF] = "floem_count_off",
                                        [MARK_ROUND] = "floem_count_round",
                                        [MARK_IDLE] = "floem_count_idle",
                                        [MARK_THREAD] = "floem_count_thread",
                                        [MARK_ENGINE] = "floem_engine_end"};
    static uint64_t entries[] = {[MARK_ENGINE] = 0};    /* translation is serialized */
    if (symbol == NULL)
        return NO_MARKER;
    for (enum marker m = MARK_ON; m <= MARK_ENGINE; m++) {
        if (strcmp(symbol, names[m]) != 0)
            continue;
        if (entries[m] == 0)
            entries[m] = vaddr;
        return entries[m] == vaddr ? m : NO_MARKER;
    }
    return NO_MARKER;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The element whose function `symbol` is (gcc's clones `f.constprop.0`, `f.cold`... are
 * f's), or -1. */
static int element_of(const char *symbol)
{
    if (symbol == NULL || elements == NULL)
        return -1;
    char name[256];
    size_t length = strcspn(symbol, ".");
    if (length == 0 || length >= sizeof name)
        return -1;
    memcpy(name, symbol, length);
    name[length] = '\0';
    const char *key = name;
    char **found = bsearch(&key, elements, (size_t)n_elements, sizeof *elements, by_name);
    return found == NULL ? -1 : (int)(found - elements);
}

/* Where a call ending block `tb` of `n` instructions returns to, or 0: after the call, or
 * on MIPS64 after the delay slot that follows it. */
static uint64_t call_return(struct qemu_plugin_tb *tb, size_t n)
{
    size_t slots = isa == ISA_MIPS64 ? 1 : 0;
    if (n < 1 + slots)
        return 0;
    struct qemu_plugin_insn *call = qemu_plugin_tb_get_insn(tb, n - 1 - slots);
    size_t size = qemu_plugin_insn_size(call);
    if (!links(qemu_plugin_insn_data(call), size))
        return 0;
    return qemu_plugin_insn_vaddr(call) + (slots ? 8 : size);
}

static void block_translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    struct block *b = calloc(1, sizeof *b + n * sizeof b->fetches[0]);
    if (b == NULL) {
        failure = "out of memory";
        return;
    }
    b->insns = n;
    b->vaddr = qemu_plugin_tb_vaddr(tb);
    b->element = -1;
    if (elements != NULL)
        b->call_return = call_return(tb, n);
    uint64_t line_end = 0;          /* the end of the line the previous fetch ended in */
    unsigned line_bits = simulate ? (unsigned)__builtin_ctz(i1_geometry.line) : 0;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t vaddr = qemu_plugin_insn_vaddr(insn);
        size_t size = qemu_plugin_insn_size(insn);
        if (i == 0) {
            b->symbol = qemu_plugin_insn_symbol(insn);
            b->marker = marker_of(b->symbol, vaddr);
            b->element = element_of(b->symbol);
        }
        bool rmw = atomic(qemu_plugin_insn_data(insn), size);
        b->atomics += rmw;
        if (!simulate)
            continue;
        if (i == 0 || vaddr + size > line_end) {
            b->fetches[b->n_fetches++] = (struct fetch){vaddr, (unsigned)size};
            line_end = (((vaddr + size - 1) >> line_bits) + 1) << line_bits;
        }
        qemu_plugin_register_vcpu_mem_cb(insn, memory_accessed, QEMU_PLUGIN_CB_NO_REGS,
                                         QEMU_PLUGIN_MEM_RW, rmw ? b : NULL);
    }
    qemu_plugin_register_vcpu_tb_exec_cb(tb, block_executed, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void write_events(FILE *out, const uint64_t counts[N_EVENTS])
{
    for (int e = 0; e < N_EVENTS; e++)
        fprintf(out, " %" PRIu64, counts[e]);
    fputc('\n', out);
}

/* Element `e`'s lines: what it counted and what it called, if anything. */
static void write_tally(FILE *out, int e, const struct tally *tally)
{
    bool counted = tally->n_calls > 0;
    for (int i = 0; i < N_EVENTS; i++)
        counted |= tally->counts[i] != 0;
    if (!counted)
        return;
    fprintf(out, "element %s", elements[e]);
    write_events(out, tally->counts);
    for (size_t i = 0; i < tally->n_calls; i++) {
        int callee = tally->calls[i].callee;
        fprintf(out, "call %s %s %" PRIu64 "\n", elements[e],
                callee == n_elements ? "floem_engine_end" : elements[callee],
                tally->calls[i].times);
    }
}

static void write_counts(qemu_plugin_id_t id, void *data)
{
    (void)id;
    (void)data;
    FILE *out = fopen(out_path, "w");
    if (out == NULL) {
        fprintf(stderr, "floem count plugin: cannot write %s: %s\n", out_path, strerror(errno));
        return;
    }
    if (failure != NULL)
        fprintf(out, "failed %s\n", failure);
    fprintf(out, "events Ir Ge I1mr D1mr I2mr D2mr ILmr DLmr\n");
    unsigned n = 0;
    for (struct thread *t = first_thread; t != NULL; t = t->next, n++) {
        fprintf(out, "thread %u %s", n, t->root ? t->root : "?");
        write_events(out, t->c);
        if (t->stack != NULL)
            charge(t);          /* what the element running counted since it began */
        for (int e = 0; t->tallies != NULL && e < n_elements; e++)
            write_tally(out, e, &t->tallies[e]);
        if (t->rounds != 0) {
            fprintf(out, "idle %" PRIu64 " %" PRIu64, t->rounds, t->idle_rounds);
            write_events(out, t->idle);
        }
    }
    fclose(out);
}

/* BYTES/WAYS/LINE: a whole number of sets, a line of a power of two bytes. */
static bool parse_geometry(const char *text, struct geometry *g)
{
    char end;
    if (sscanf(text, "%" SCNu64 "/%u/%u%c", &g->bytes, &g->ways, &g->line, &end) != 3)
        return false;
    return g->ways > 0 && g->line > 0 && (g->line & (g->line - 1)) == 0
           && g->bytes % ((uint64_t)g->ways * g->line) == 0 && g->bytes > 0;
}

/* Add `name` to `elements` (false: out of memory). */
static bool add_element(const char *name, size_t *room)
{
    if ((size_t)n_elements == *room) {
        *room = *room ? 2 * *room : 64;
        char **more = realloc(elements, *room * sizeof *elements);
        if (more == NULL)
            return false;
        elements = more;
    }
    size_t size = strlen(name) + 1;
    char *copy = malloc(size);
    if (copy == NULL)
        return false;
    elements[n_elements++] = memcpy(copy, name, size);
    return true;
}

/* The element functions' names in FILE, one a line, sorted into `elements`. */
static bool read_elements(const char *path)
{
    FILE *in = fopen(path, "r");
    if (in == NULL) {
        fprintf(stderr, "floem count plugin: cannot read %s: %s\n", path, strerror(errno));
        return false;
    }
    char line[256];
    size_t room = 0;
    bool ok = true;
    while (ok && fgets(line, sizeof line, in) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        ok = line[0] == '\0' || add_element(line, &room);
    }
    fclose(in);
    if (ok && elements == NULL)         /* no element: every thread's count is outside them */
        ok = (elements = malloc(sizeof *elements)) != NULL;
    if (!ok) {
        fprintf(stderr, "floem count plugin: out of memory for the elements of %s\n", path);
        return false;
    }
    qsort(elements, (size_t)n_elements, sizeof *elements, by_name);
    return true;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                           int argc, char **argv)
{
    if (strcmp(info->target_name, "x86_64") == 0)
        isa = ISA_X86_64;
    else if (strcmp(info->target_name, "aarch64") == 0)
        isa = ISA_AARCH64;
    else if (strcmp(info->target_name, "mips64") == 0)
        isa = ISA_MIPS64;
    else {
        fprintf(stderr, "floem count plugin: cannot count %s instructions\n", info->target_name);
        return -1;
    }
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0)
            out_path = argv[i] + 4;
        else if (strncmp(argv[i], "cache=", 6) == 0) {
            char levels[4][64], end;
            int n = sscanf(argv[i] + 6, "%63[^:]:%63[^:]:%63[^:]:%63[^:]%c", levels[0],
                           levels[1], levels[2], levels[3], &end);
            second_level = n == 4;
            simulate = (n == 3 || n == 4) && parse_geometry(levels[0], &i1_geometry)
                       && parse_geometry(levels[1], &d1_geometry)
                       && (!second_level || parse_geometry(levels[2], &l2_geometry))
                       && parse_geometry(levels[n - 1], &ll_geometry);
            if (!simulate) {
                fprintf(stderr, "floem count plugin: cache=%s: need I1:D1:LL or I1:D1:L2:LL, "
                        "each BYTES/WAYS/LINE\n", argv[i] + 6);
                return -1;
            }
        } else if (strncmp(argv[i], "elements=", 9) == 0) {
            if (!read_elements(argv[i] + 9))
                return -1;
        } else {
            fprintf(stderr, "floem count plugin: unknown argument %s\n", argv[i]);
            return -1;
        }
    }
    if (out_path == NULL) {
        fprintf(stderr, "floem count plugin: give out=FILE\n");
        return -1;
    }
    if (simulate)
        cache_init(&last_level, &ll_geometry);
    qemu_plugin_register_vcpu_init_cb(id, vcpu_init);
    qemu_plugin_register_vcpu_tb_trans_cb(id, block_translated);
    qemu_plugin_register_atexit_cb(id, write_counts, NULL);
    return 0;
}
