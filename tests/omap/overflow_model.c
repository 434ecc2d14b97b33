/* SPDX-License-Identifier: MIT */
/*
 * overflow_model: a plain-memory model of the map's overflow stash, to
 * measure its occupancy over more operations than the oblivious map can
 * run in minutes, against the bound the map is sized with (docs/omap.md,
 * "Overflow stash").
 *
 * The stash invariant of src/omap (omap_internal.h) (an entry of bucket b is in the
 * stash only while b is full) makes the stash hold exactly
 * sum_b max(0, load_b - B) entries: a function of the keys held, not of
 * the order of operations. So the model keeps only the M bucket loads and
 * that sum, updated in O(1) per operation. The workload is the one of
 * test_omap's overflow_rate: fill to capacity, then pairs of (erase a
 * random present key, put a random absent one), so the map stays full;
 * each key's bucket is drawn uniformly at random (the tests' xoshiro
 * stream), which is what SipHash under a secret key looks like to this
 * process.
 *
 *   overflow_model [--cap N] [--load L] [--slots B] [--pairs X] [--seed S]
 * (defaults 65536, 16, 0 = the map's automatic choice, 10^6, 1) prints M,
 * B, the stash size S the map would use (the 2^-40 Chernoff bound), the
 * mean occupancy the Poisson model predicts, the observed mean and maximum
 * and the histogram's tail.
 * Without arguments it runs its own check (ctest): the observed mean is
 * near the predicted one, the maximum stays below the bound, and a
 * setting with too few slots overflows a small stash.
 */
#include <math.h>

#include "omap/omap_internal.h"
#include "testutil.h"

typedef struct {
    uint64_t cap, M, U, pairs;
    uint32_t B;
    test_rng rng;
    uint32_t *load;     /* M bucket loads */
    uint32_t *bucket;   /* U keys' buckets */
    uint64_t *present;  /* cap present key indices */
    uint64_t *absent;   /* U - cap absent ones */
    uint64_t occ, max;  /* stash occupancy: sum max(0, load - B) */
    double sum;         /* of occ after each operation of the churn */
    uint64_t ops;
    uint64_t *hist;     /* hist[k]: operations ending with k entries, k < hn */
    uint64_t hn;
} omodel;

static void om_add(omodel *o, uint64_t k)
{
    uint32_t *l = &o->load[o->bucket[k]];
    o->occ += *l >= o->B;
    (*l)++;
}

static void om_remove(omodel *o, uint64_t k)
{
    uint32_t *l = &o->load[o->bucket[k]];
    (*l)--;
    o->occ -= *l >= o->B;
}

static void om_note(omodel *o)
{
    o->ops++;
    o->sum += (double)o->occ;
    o->max = o->occ > o->max ? o->occ : o->max;
    o->hist[o->occ < o->hn ? o->occ : o->hn - 1]++;
}

/* Runs the model; returns 0, or 1 on allocation failure. */
static int om_run(omodel *o)
{
    o->U = 2 * o->cap;
    o->load = (uint32_t *)calloc(o->M, sizeof(uint32_t));
    o->bucket = (uint32_t *)malloc(o->U * sizeof(uint32_t));
    o->present = (uint64_t *)malloc(o->cap * sizeof(uint64_t));
    o->absent = (uint64_t *)malloc((o->U - o->cap) * sizeof(uint64_t));
    o->hn = 4096;
    o->hist = (uint64_t *)calloc(o->hn, sizeof(uint64_t));
    if (!o->load || !o->bucket || !o->present || !o->absent || !o->hist)
        return 1;
    for (uint64_t k = 0; k < o->U; k++)
        o->bucket[k] = (uint32_t)test_rng_below(&o->rng, o->M);
    for (uint64_t k = 0; k < o->cap; k++) {
        o->present[k] = k;
        om_add(o, k);
    }
    for (uint64_t k = o->cap; k < o->U; k++)
        o->absent[k - o->cap] = k;
    o->max = o->occ;
    for (uint64_t t = 0; t < o->pairs; t++) {
        uint64_t a = test_rng_below(&o->rng, o->cap), b = test_rng_below(&o->rng, o->U - o->cap);
        uint64_t ka = o->present[a], kb = o->absent[b];
        om_remove(o, ka);
        om_note(o);
        om_add(o, kb);
        om_note(o);
        o->present[a] = kb;
        o->absent[b] = ka;
    }
    return 0;
}

static void om_free(omodel *o)
{
    free(o->load);
    free(o->bucket);
    free(o->present);
    free(o->absent);
    free(o->hist);
}

/* M and B as the map chooses them for capacity cap and bucket load `load`
 * (B given: kept). Returns the stash size the map uses, or 0. */
static uint64_t om_size(omodel *o, uint32_t load, uint32_t B)
{
    obl_omap_params p;
    memset(&p, 0, sizeof(p));
    p.capacity = o->cap;
    p.key_size = 8;
    p.value_size = 8;
    p.bucket_load = load;
    p.slots_per_bucket = B;
    p.use_seed = 1;
    obl_omap *m = NULL;
    if (omap_alloc(&m, &p) != OBL_OK)
        return 0;
    o->M = m->M;
    o->B = m->B;
    uint64_t S = m->S;
    omap_free(m);
    return S;
}

/* M * E[max(0, X - B)], X ~ Poisson(cap / M) */
static double om_predicted(const omodel *o)
{
    double lam = (double)o->cap / (double)o->M, lp = -lam, e = 0;
    for (uint64_t k = 0; k < o->B + 2000; k++) {
        if (k > 0)
            lp += log(lam) - log((double)k);
        if (k > o->B)
            e += exp(lp) * (double)(k - o->B);
    }
    return e * (double)o->M;
}

static int om_report(omodel *o, uint32_t load, uint32_t B, uint64_t seed)
{
    test_rng_seed(&o->rng, seed);
    uint64_t S = om_size(o, load, B);
    if (!S || om_run(o)) {
        fprintf(stderr, "overflow_model: sizing or allocation failed\n");
        return 1;
    }
    printf("cap %" PRIu64 " M %" PRIu64 " B %u: stash size S %" PRIu64
           " (2^-40 bound); mean occupancy predicted %.2f, observed %.2f over %" PRIu64
           " operations; maximum %" PRIu64 "\n",
           o->cap, o->M, o->B, S, om_predicted(o), o->sum / (double)o->ops, o->ops, o->max);
    printf("histogram tail (occupancy: operations):");
    uint64_t from = o->max > 12 ? o->max - 12 : 0;
    for (uint64_t k = from; k <= o->max && k < o->hn; k++)
        printf(" %" PRIu64 ":%" PRIu64, k, o->hist[k]);
    printf("\n");
    return 0;
}

static void self_check(uint64_t seed)
{
    static const struct {
        uint64_t cap;
        uint32_t load, B;
    } cs[] = {{4096, 16, 0}, {65536, 16, 0}, {65536, 8, 0}, {65536, 16, 24}};
    for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
        omodel o;
        memset(&o, 0, sizeof(o));
        o.cap = cs[i].cap;
        /* enough churn to renew the key set a few dozen times: the
         * occupancy drifts slowly (200,000 pairs at 2^16 failed the mean
         * check for 2 of 60 seeds) */
        o.pairs = 50 * cs[i].cap;
        test_rng_seed(&o.rng, seed + i);
        uint64_t S = om_size(&o, cs[i].load, cs[i].B);
        CHECK(S > 0);
        CHECK_EQ_U64(om_run(&o), 0);
        double pred = om_predicted(&o), obs = o.sum / (double)o.ops;
        /* the mean: within 25% plus 2 entries */
        CHECK(fabs(obs - pred) <= 0.25 * pred + 2.0);
        CHECK(o.max <= S);
        printf("  cap %" PRIu64 " M %" PRIu64 " B %u S %" PRIu64 ": mean %.1f (predicted %.1f), max %" PRIu64 "\n",
               o.cap, o.M, o.B, S, obs, pred, o.max);
        om_free(&o);
    }
    /* too few slots: the occupancy exceeds what the default sizing allows */
    omodel o;
    memset(&o, 0, sizeof(o));
    o.cap = 65536;
    o.pairs = 20000;
    test_rng_seed(&o.rng, seed);
    CHECK(om_size(&o, 16, 16) > OBL_OMAP_OVERFLOW_TARGET);
    CHECK_EQ_U64(om_run(&o), 0);
    CHECK(o.max > OBL_OMAP_OVERFLOW_TARGET);
    om_free(&o);
}

int main(int argc, char **argv)
{
    if (argc <= 1 || (argc == 3 && strcmp(argv[1], "-s") == 0)) {
        test_init(argc, argv, "overflow_model");
        self_check(T.seed);
        return test_done("overflow_model");
    }
    omodel o;
    memset(&o, 0, sizeof(o));
    o.cap = 65536;
    o.pairs = 1000000;
    uint32_t load = 16, B = 0;
    uint64_t seed = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        uint64_t v = strtoull(argv[i + 1], NULL, 0);
        if (!strcmp(argv[i], "--cap"))
            o.cap = v;
        else if (!strcmp(argv[i], "--load"))
            load = (uint32_t)v;
        else if (!strcmp(argv[i], "--slots"))
            B = (uint32_t)v;
        else if (!strcmp(argv[i], "--pairs"))
            o.pairs = v;
        else if (!strcmp(argv[i], "--seed"))
            seed = v;
        else {
            fprintf(stderr, "overflow_model: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (o.cap < 2 || o.cap > ((uint64_t)1 << 31)) {
        fprintf(stderr, "overflow_model: --cap in 2 .. 2^31\n");
        return 2;
    }
    int r = om_report(&o, load, B, seed);
    om_free(&o);
    return r;
}
