/* Fuzz target: the pool of kept frames (runtime/src/frames.c, the NIC side of payload
 * slicing) under any sequence of keeps, takes and drops by reference (made or made up),
 * and time passing.
 *
 * The input: operations of two bytes each. The harness is the pool's network and clock
 * (floem_net_free records the buffers given back, floem_now_ns is a time it advances),
 * and checks against a model of which buffer each reference holds: a frame is handed back
 * only to the reference made for it, once; a stale, duplicated or made-up reference is
 * refused; a keep is refused only when every slot holds a frame; a frame goes back to the
 * network once, when its reference is dropped, when it is reclaimed after the timeout, or
 * at finalize; and kept = taken + dropped + expired + held at every step.
 */
#include "fuzz.h"

#include "floem/frames.h"

#define SLOTS 4
#define BUFFERS 16
#define TIMEOUT 100

static uint64_t clock_now;
static int given_back[BUFFERS];      /* times each buffer went back to the network */
static char buffers[BUFFERS][8] __attribute__((aligned(8)));

uint64_t floem_now_ns(void)
{
    return clock_now;
}

void floem_net_free(floem_packet_t *pkt)
{
    int b = (int)(((char *)pkt->buffer - &buffers[0][0]) / 8);
    FUZZ_CHECK(b >= 0 && b < BUFFERS && pkt->buffer == buffers[b]);
    given_back[b]++;
}

/* Whether buffer b's frame went back to the network since the last look (reclaimed). */
static int went_back(int b)
{
    int back = given_back[b] > 0;
    given_back[b] = 0;
    return back;
}

static void check_pool(struct fuzz_input *in)
{
    uint64_t refs[32];                  /* references made, for takes and drops to reuse */
    int owner[32];                      /* the buffer each was made for */
    uint64_t current[BUFFERS] = {0};    /* the reference of each buffer kept now, or 0 */
    unsigned n_refs = 0;
    clock_now = 0;
    memset(given_back, 0, sizeof given_back);
    floem_frames_init(SLOTS, TIMEOUT);
    while (in->left >= 2) {
        uint8_t op = fuzz_u8(in), arg = fuzz_u8(in);
        int b = arg % BUFFERS;
        void *buffer, *data;
        int refused = 0;
        if (op % 5 == 0 && current[b] == 0) {                   /* keep a buffer */
            uint64_t ref = floem_frame_keep(buffers[b], buffers[b] + 1);
            refused = ref == 0;
            if (ref != 0) {
                FUZZ_CHECK(floem_frame_is_ref((void *)(uintptr_t)ref));
                for (int k = 0; k < BUFFERS; k++)
                    FUZZ_CHECK(current[k] != ref);
                current[b] = ref;
                if (n_refs < 32) {
                    refs[n_refs] = ref;
                    owner[n_refs++] = b;
                }
            }
        } else if ((op % 5 == 1 || op % 5 == 2) && n_refs > 0) {  /* take: made, made up */
            unsigned r = arg % n_refs;
            /* A made-up reference names the same slot with another generation: it may be
             * the reference of the frame that slot holds now, and then takes it. */
            uint64_t ref = op % 5 == 1 ? refs[r] : refs[r] ^ ((uint64_t)(arg >> 4) << 33);
            int o = -1;
            for (int k = 0; k < BUFFERS; k++)
                if (current[k] == ref)
                    o = k;
            if (floem_frame_take(ref, &buffer, &data)) {
                FUZZ_CHECK(o >= 0 && buffer == buffers[o] && data == buffers[o] + 1);
                current[o] = 0;
            } else {
                FUZZ_CHECK(o < 0);                      /* a frame held: taken by its ref */
            }
        } else if (op % 5 == 3 && n_refs > 0) {                 /* drop by reference */
            unsigned r = arg % n_refs;
            int o = owner[r], before = given_back[o];
            floem_frame_drop((void *)(uintptr_t)refs[r]);
            if (given_back[o] > before) {
                FUZZ_CHECK(refs[r] == current[o]);
                given_back[o]--;
                current[o] = 0;
            }
        } else if (op % 5 == 4) {                               /* time passes */
            clock_now += arg;
        }
        unsigned held = 0;
        for (int k = 0; k < BUFFERS; k++) {
            if (current[k] != 0 && went_back(k))                /* reclaimed after the timeout */
                current[k] = 0;
            FUZZ_CHECK(given_back[k] == 0);                     /* nothing went back twice */
            held += current[k] != 0;
        }
        floem_frames_stats_t st;
        floem_frames_stats(&st);
        FUZZ_CHECK(st.held == held && held <= SLOTS);
        FUZZ_CHECK(!refused || held == SLOTS);                  /* refused only when full */
        FUZZ_CHECK(st.kept == st.taken + st.dropped + st.expired + st.held);
    }
    floem_frames_finalize();
    for (int k = 0; k < BUFFERS; k++)
        FUZZ_CHECK(given_back[k] == (current[k] != 0));        /* finalize gives the kept back */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    check_pool(&in);
    return 0;
}
