/*
 * queue_model: a plain-memory model of the map's insertion queue, to
 * measure its failure rate over more operations than the oblivious map can
 * run in minutes (docs/omap.md, "Queue failure rate").
 *
 * It replays the policy of src/omap/omap.c on key indices, without ORAM or
 * constant-time code: two tables of M buckets of B slots (M sized as the
 * map sizes it for a given B), a queue of Q entries, and every
 * `interval`-th operation `kicks` kick-out steps: the first valid queue entry
 * goes to the first free slot of its bucket in the table its entry names,
 * else it swaps with a random occupant, which takes its queue slot with the
 * other table as its next try (Arbitman, Naor, Segev, ICALP 2009; random
 * walk as Fotakis et al. 2003). A put of a new key takes the first free
 * slot of its table-0 bucket, else of its table-1 bucket, else the first
 * free queue entry, else it is a FULL event. The workload is the one of
 * test_omap's queue_rate: fill to capacity, then pairs of (erase a random
 * present key, put a random absent one), so the map stays full. Each key's
 * two buckets are drawn uniformly at random (the tests' xoshiro stream),
 * which is what SipHash under a secret key looks like to this process.
 *
 *   queue_model [--cap N] [--slots B] [--load P] [--kicks K] [--interval I]
 *               [--pairs X] [--queue Q] [--seed S]
 * (defaults 65536, 5, 80, 1, 1, F = I, 10^6, 32, seed 1; F is the interval
 * while filling: F = 1 fills with a kick on every put, which leaves, like
 * obl_omap_build, an almost empty queue) prints the FULL count (in the
 * fill and in all), the largest queue occupancy in the fill and in the
 * churn, and the churn's histogram (operations after which the queue held
 * 0, 1, 2, ... entries).
 * Without arguments it runs its own check (ctest): a setting that must
 * overflow does, and the default one does not.
 */
#include "testutil.h"

#define QM_MAXQ 1024

typedef struct {
    uint64_t cap, M, U;
    test_rng rng;
    uint32_t B, Q, interval, kicks;
    uint32_t fill_interval; /* the interval while filling */
    uint64_t *slot; /* 2 * M * B slots: key index + 1, 0 = free */
    uint32_t *bucket; /* key k's buckets: bucket[2k] in table 0, bucket[2k + 1] in table 1 */
    uint64_t qkey[QM_MAXQ];
    unsigned char qtab[QM_MAXQ], qvalid[QM_MAXQ];
    unsigned char *present;
    uint64_t ops, full, fill_full, fill_qmax, qmax, hist[QM_MAXQ + 1];
} qmodel;

/* first slot of key k's bucket in table t */
static uint64_t *qm_bucket(qmodel *q, unsigned t, uint64_t k)
{
    return q->slot + ((uint64_t)t * q->M + q->bucket[2 * k + t]) * q->B;
}

static void qm_kick(qmodel *q)
{
    uint32_t j = 0;
    while (j < q->Q && !q->qvalid[j])
        j++;
    if (j == q->Q)
        return;
    uint64_t *b = qm_bucket(q, q->qtab[j], q->qkey[j]);
    for (uint32_t i = 0; i < q->B; i++)
        if (!b[i]) {
            b[i] = q->qkey[j] + 1;
            q->qvalid[j] = 0;
            return;
        }
    uint32_t v = (uint32_t)(test_rng_next(&q->rng) % q->B);
    uint64_t out = b[v] - 1;
    b[v] = q->qkey[j] + 1;
    q->qkey[j] = out;
    q->qtab[j] ^= 1;
}

/* one operation: kick if due, then the put or erase of key index k */
static void qm_op(qmodel *q, uint64_t k, int put)
{
    if (q->ops % (q->ops < q->cap ? q->fill_interval : q->interval) == 0)
        for (uint32_t i = 0; i < q->kicks; i++)
            qm_kick(q);
    q->ops++;
    if (put) {
        int got = 0;
        for (unsigned t = 0; t < 2 && !got; t++) {
            uint64_t *b = qm_bucket(q, t, k);
            for (uint32_t i = 0; i < q->B && !got; i++)
                if (!b[i]) {
                    b[i] = k + 1;
                    got = 1;
                }
        }
        for (uint32_t j = 0; j < q->Q && !got; j++)
            if (!q->qvalid[j]) {
                q->qvalid[j] = 1;
                q->qkey[j] = k;
                q->qtab[j] = 0;
                got = 1;
            }
        if (got)
            q->present[k] = 1;
        else
            q->full++;
    } else {
        int done = 0;
        for (uint32_t j = 0; j < q->Q && !done; j++)
            if (q->qvalid[j] && q->qkey[j] == k) {
                q->qvalid[j] = 0;
                done = 1;
            }
        for (unsigned t = 0; t < 2 && !done; t++) {
            uint64_t *b = qm_bucket(q, t, k);
            for (uint32_t i = 0; i < q->B && !done; i++)
                if (b[i] == k + 1) {
                    b[i] = 0;
                    done = 1;
                }
        }
        q->present[k] = 0;
    }
    uint64_t occ = 0;
    for (uint32_t j = 0; j < q->Q; j++)
        occ += q->qvalid[j];
    q->hist[occ]++;
    if (occ > q->qmax)
        q->qmax = occ;
}

/* Runs the model; returns 0, or -1 on bad arguments or no memory. */
static int qm_run(qmodel *q, uint64_t cap, uint32_t B, uint32_t load, uint32_t interval,
                  uint32_t fill_interval, uint32_t kicks, uint64_t pairs, uint32_t Q,
                  uint64_t seed)
{
    if (!cap || !B || load < 10 || load > 95 || !interval || !fill_interval || !kicks || !Q ||
        Q > QM_MAXQ)
        return -1;
    memset(q, 0, sizeof(*q));
    uint64_t need = (cap * 100 + load - 1) / load; /* slots, as omap_size */
    q->cap = cap;
    q->B = B;
    q->Q = Q;
    q->interval = interval;
    q->fill_interval = fill_interval;
    q->kicks = kicks;
    q->M = (need + 2 * (uint64_t)B - 1) / (2 * (uint64_t)B);
    q->U = 4 * cap;
    test_rng_seed(&q->rng, seed);
    q->slot = (uint64_t *)calloc(2 * q->M * B, sizeof(uint64_t));
    q->bucket = (uint32_t *)malloc(2 * q->U * sizeof(uint32_t));
    q->present = (unsigned char *)calloc(q->U, 1);
    if (!q->slot || !q->bucket || !q->present || q->M > UINT32_MAX) {
        free(q->slot);
        free(q->bucket);
        free(q->present);
        return -1;
    }
    for (uint64_t i = 0; i < 2 * q->U; i++)
        q->bucket[i] = (uint32_t)test_rng_below(&q->rng, q->M);
    for (uint64_t k = 0; k < cap; k++)
        qm_op(q, k, 1);
    memset(q->hist, 0, sizeof(q->hist));
    q->fill_qmax = q->qmax;
    q->qmax = 0;
    q->fill_full = q->full;
    for (uint64_t t = 0; t < pairs; t++) {
        uint64_t a, b;
        do
            a = test_rng_next(&q->rng) % q->U;
        while (!q->present[a]);
        qm_op(q, a, 0);
        do
            b = test_rng_next(&q->rng) % q->U;
        while (q->present[b]);
        qm_op(q, b, 1);
    }
    free(q->slot);
    free(q->bucket);
    free(q->present);
    q->slot = NULL;
    q->bucket = NULL;
    q->present = NULL;
    return 0;
}

static void qm_print(const qmodel *q, uint32_t load)
{
    printf("cap %" PRIu64 " B %u load %u%% Q %u %u kick(s) every %u: %" PRIu64
           " operations, FULL %" PRIu64 " (in the fill %" PRIu64 "), queue max in the fill %" PRIu64
           ", in the churn %" PRIu64 "\nchurn histogram:",
           q->cap, q->B, load, q->Q, q->kicks, q->interval, q->ops, q->full, q->fill_full,
           q->fill_qmax, q->qmax);
    for (uint64_t i = 0; i <= q->qmax; i++)
        printf(" %" PRIu64, q->hist[i]);
    printf("\n");
}

/* The ctest: the model must see what the oblivious map's long test sees.
 * Seeded by -s (T.seed). */
static int self_check(void)
{
    static qmodel q, r;
    /* B = 2 at 80% load overflows (the map's own long test sees ~5000) */
    CHECK(qm_run(&q, 4096, 2, 80, 1, 1, 1, 200000, 32, T.seed) == 0);
    qm_print(&q, 80);
    CHECK(q.full > 0);
    /* the default (B = 5, a kick on every op) keeps the queue short, in the
     * fill by puts and in the churn */
    CHECK(qm_run(&q, 4096, 5, 80, 1, 1, 1, 200000, 32, T.seed) == 0);
    qm_print(&q, 80);
    CHECK_EQ_U64(q.full, 0);
    CHECK(q.qmax <= 24 && q.fill_qmax <= 24);
    /* interval 4 drains too slowly: the queue grows beyond interval 1's */
    CHECK(qm_run(&r, 4096, 5, 80, 4, 4, 1, 200000, 32, T.seed) == 0);
    CHECK(r.qmax > q.qmax);
    return test_done("queue_model");
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "queue_model");
    if (argc == 1 || (argc == 3 && !strcmp(argv[1], "-s")))
        return self_check(); /* ctest passes -s SEED */
    uint64_t cap = 65536, pairs = 1000000, seed = T.seed;
    uint32_t B = 5, load = 80, interval = 1, fill_interval = 0, kicks = 1, Q = 32;
    for (int i = 1; i + 1 < argc; i += 2) {
        uint64_t v = strtoull(argv[i + 1], NULL, 0);
        if (!strcmp(argv[i], "--cap"))
            cap = v;
        else if (!strcmp(argv[i], "--slots"))
            B = (uint32_t)v;
        else if (!strcmp(argv[i], "--load"))
            load = (uint32_t)v;
        else if (!strcmp(argv[i], "--interval"))
            interval = (uint32_t)v;
        else if (!strcmp(argv[i], "--fill-interval"))
            fill_interval = (uint32_t)v;
        else if (!strcmp(argv[i], "--kicks"))
            kicks = (uint32_t)v;
        else if (!strcmp(argv[i], "--pairs"))
            pairs = v;
        else if (!strcmp(argv[i], "--queue"))
            Q = (uint32_t)v;
        else if (!strcmp(argv[i], "--seed") || !strcmp(argv[i], "-s"))
            seed = v;
        else {
            fprintf(stderr, "queue_model: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    static qmodel q;
    if (qm_run(&q, cap, B, load, interval, fill_interval ? fill_interval : interval, kicks,
               pairs, Q, seed)) {
        fprintf(stderr, "queue_model: bad arguments or out of memory\n");
        return 2;
    }
    qm_print(&q, load);
    return 0;
}
