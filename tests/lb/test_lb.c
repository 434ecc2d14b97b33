/* SPDX-License-Identifier: MIT */
/*
 * Tests of obl/lb.h: the shard batch size against a direct binomial sum;
 * batches routed, answered by a model shard engine and routed back,
 * compared with a plain map (batch semantics: answers see the state before
 * the batch, the last write wins, duplicates answered in place); overflow
 * with a tiny lambda; trace equality across keys, duplicates and skew; bad
 * input. Under memcheck (--ct) keys, values and ops are secret.
 */
#include <math.h>

#include <obl/lb.h>

#include "common/secret.h"
#include "common/trace.h"
#include "testutil.h"

static test_rng R;

static int test_random(void *opaque, void *buf, size_t len)
{
    test_rng_fill((test_rng *)opaque, buf, len);
    if (T.ct) /* the seed is secret: so are the permutations drawn from it */
        OBL_SECRET(buf, len);
    return 0;
}

/* b from a direct sum of the binomial pmf in long double. */
static size_t direct_b(size_t B, unsigned S, unsigned lambda)
{
    long double p = 1.0L / S, thr = powl(2.0L, -(long double)lambda), tail = 0;
    size_t n = B;
    for (;;) { /* tail = P[X > n] */
        if (tail > thr)
            return n + 1;
        long double lp = lgammal((long double)B + 1) - lgammal((long double)n + 1) -
                         lgammal((long double)(B - n) + 1) + n * logl(p) + (B - n) * log1pl(-p);
        tail += expl(lp);
        if (n == 0)
            return 0;
        n--;
    }
}

static void test_batch_size(void)
{
    long before = T.failures;
    static const size_t Bs[] = {1, 2, 10, 64, 1000, 4096};
    static const unsigned Ss[] = {1, 2, 3, 15, 64};
    for (size_t i = 0; i < sizeof Bs / sizeof *Bs; i++)
        for (size_t j = 0; j < sizeof Ss / sizeof *Ss; j++)
            for (unsigned lam = 1; lam <= 40; lam += 13) {
                size_t got = obl_lb_shard_batch_size(Bs[i], Ss[j], lam);
                size_t want = Ss[j] == 1 ? Bs[i] : direct_b(Bs[i], Ss[j], lam);
                CHECK_EQ_U64(got, want);
                CHECK(got <= Bs[i]);
            }
    CHECK_EQ_U64(obl_lb_shard_batch_size(0, 2, 40), 0);
    CHECK_EQ_U64(obl_lb_shard_batch_size(10, 0, 40), 0);
    CHECK_EQ_U64(obl_lb_shard_batch_size(10, 2, 201), 0);
    /* monotone in B and lambda */
    CHECK(obl_lb_shard_batch_size(1 << 16, 15, 40) <= obl_lb_shard_batch_size(1 << 17, 15, 40));
    CHECK(obl_lb_shard_batch_size(1 << 16, 15, 20) <= obl_lb_shard_batch_size(1 << 16, 15, 40));
    printf("  batch size vs direct binomial sum: %s (B 2^16 S 15: b = %zu)\n",
           T.failures == before ? "ok" : "FAILED", obl_lb_shard_batch_size(1 << 16, 15, 40));
}

/* The model map: keys below U, present[k], val[k]. */
typedef struct model {
    size_t U;
    uint8_t *present;
    uint64_t *val;
} model;

/* Key patterns: 0 distinct random keys, 1 many duplicates, 2 skewed to
 * few shards (keys from a small set chosen in one shard when possible). */
static void gen_batch(obl_lb_req *q, size_t B, size_t U, int pat)
{
    for (size_t i = 0; i < B; i++) {
        uint64_t k = pat == 0 ? test_rng_below(&R, U) : pat == 1 ? test_rng_below(&R, 5)
                                                                 : test_rng_below(&R, 3) * 7;
        q[i].key = k;
        q[i].op = (uint32_t)test_rng_below(&R, 3);
        q[i].value = test_rng_next(&R) | 1;
        q[i].found = 77;
    }
}

/* The shard engine of the model: each real entry reads then applies its
 * op; checks the batch's structure on the way. */
static void engine(const obl_lb *lb, model *M, obl_lb_entry *e, size_t S, size_t b,
                   const obl_lb_req *q, size_t B)
{
    uint8_t *seen = calloc(M->U, 1), *inbatch = calloc(M->U, 1);
    uint32_t *lastop = calloc(M->U, sizeof *lastop);
    uint64_t *lastval = calloc(M->U, sizeof *lastval);
    for (size_t i = 0; i < B; i++) {
        inbatch[q[i].key] = 1;
        if (q[i].op == OBL_LB_PUT || q[i].op == OBL_LB_ERASE) {
            lastop[q[i].key] = q[i].op;
            lastval[q[i].key] = q[i].op == OBL_LB_PUT ? q[i].value : 0;
        }
    }
    int ok = 1;
    for (size_t j = 0; j < S; j++)
        for (size_t r = 0; r < b; r++) {
            obl_lb_entry *x = &e[j * b + r];
            if (!(x->flags & OBL_LB_REAL)) {
                ok &= x->key == 0 && x->op == OBL_LB_GET;
                x->value = test_rng_next(&R); /* a dummy's answer is ignored */
                continue;
            }
            uint64_t k = x->key;
            ok &= k < M->U && !seen[k] && inbatch[k];
            if (!(k < M->U))
                continue;
            unsigned sh = obl_lb_shard_of(lb, k); /* secret: the PRF key is */
            OBL_DECLASSIFY(&sh, sizeof sh);
            ok &= sh == j;
            ok &= x->op == lastop[k] && x->value == lastval[k];
            seen[k] = 1;
            uint64_t old = M->val[k];
            int had = M->present[k];
            if (x->op == OBL_LB_PUT) {
                M->present[k] = 1;
                M->val[k] = x->value;
            } else if (x->op == OBL_LB_ERASE) {
                M->present[k] = 0;
                M->val[k] = 0;
            }
            x->value = had ? old : 0;
            x->flags |= had ? OBL_LB_FOUND : 0;
        }
    for (size_t i = 0; i < B; i++)
        ok &= seen[q[i].key];
    CHECK(ok);
    free(seen);
    free(inbatch);
    free(lastop);
    free(lastval);
}

/* One balancer, several batches against the model. */
static void run_model(size_t B, unsigned S, unsigned threads, int pat, int nbatches)
{
    obl_lb_params p = {B, S, 0, threads, NULL, test_random, &R, NULL};
    obl_lb *lb = NULL;
    CHECK_EQ_U64(obl_lb_create(&lb, &p), OBL_OK);
    if (!lb)
        return;
    size_t b = obl_lb_shard_batch(lb), U = B * 2 + 20;
    model M = {U, calloc(U, 1), calloc(U, sizeof(uint64_t))};
    obl_lb_req *q = malloc(B * sizeof *q), *before = malloc(B * sizeof *q);
    obl_lb_entry *e = malloc(S * b * sizeof *e);
    for (int t = 0; t < nbatches; t++) {
        gen_batch(q, B, U, pat);
        memcpy(before, q, B * sizeof *q);
        /* the answers each request must get: the state before the batch */
        uint8_t *pres = malloc(U);
        uint64_t *val = malloc(U * sizeof *val);
        memcpy(pres, M.present, U);
        memcpy(val, M.val, U * sizeof *val);
        OBL_SECRET(q, B * sizeof *q);
        obl_err err = obl_lb_route(lb, q, e);
        CHECK_EQ_U64(err, OBL_OK);
        OBL_DECLASSIFY(e, S * b * sizeof *e);
        engine(lb, &M, e, S, b, before, B);
        OBL_SECRET(e, S * b * sizeof *e);
        err = obl_lb_answer(lb, e, q);
        OBL_DECLASSIFY(q, B * sizeof *q);
        CHECK_EQ_U64(err, OBL_OK);
        int ok = 1;
        for (size_t i = 0; i < B; i++) {
            uint64_t k = before[i].key;
            ok &= q[i].key == k && q[i].op == before[i].op;
            ok &= q[i].found == pres[k] && q[i].value == (pres[k] ? val[k] : 0);
        }
        CHECK(ok);
        if (!ok)
            fprintf(stderr, "  wrong answers: B %zu S %u threads %u pattern %d batch %d\n", B, S,
                    threads, pat, t);
        free(pres);
        free(val);
    }
    CHECK_EQ_U64(obl_lb_answer(lb, e, q), OBL_ERR_STATE); /* nothing routed */
    obl_lb_destroy(lb);
    free(M.present);
    free(M.val);
    free(q);
    free(before);
    free(e);
}

static void test_models(void)
{
    long before = T.failures;
    static const size_t Bs[] = {1, 2, 3, 17, 64, 256, 1000, 4096, 1 << 14, 1 << 16};
    static const unsigned Ss[] = {1, 2, 3, 15};
    size_t maxB = T.ct ? 256 : ((size_t)1 << 16);
    for (size_t i = 0; i < sizeof Bs / sizeof *Bs; i++)
        for (size_t j = 0; j < sizeof Ss / sizeof *Ss; j++)
            for (int pat = 0; pat < 3; pat++) {
                if (Bs[i] > maxB || (Bs[i] > 4096 && (pat || Ss[j] != 15)))
                    continue;
                run_model(Bs[i], Ss[j], (unsigned)(1 + (i + j) % 2), pat,
                          Bs[i] > 4096 || T.ct ? 1 : 3);
            }
    printf("  batches vs the model map: %s\n", T.failures == before ? "ok" : "FAILED");
}

/* A tiny lambda and all keys in one shard: OBL_ERR_FULL, out unchanged,
 * and the balancer still works. */
static void test_overflow(void)
{
    long before = T.failures;
    const size_t B = 64;
    const unsigned S = 8;
    unsigned char key[16] = {1, 2, 3};
    obl_lb_params p = {B, S, 1, 1, key, test_random, &R, NULL};
    obl_lb *lb = NULL;
    CHECK_EQ_U64(obl_lb_create(&lb, &p), OBL_OK);
    if (!lb)
        return;
    size_t b = obl_lb_shard_batch(lb);
    CHECK(b < B);
    obl_lb_req q[64];
    uint64_t k = 0;
    for (size_t i = 0; i < B; i++) {
        while (obl_lb_shard_of_key(key, S, k) != 0)
            k++;
        q[i] = (obl_lb_req){k++, i, OBL_LB_PUT, 0};
    }
    obl_lb_entry *e = malloc(S * b * sizeof *e);
    memset(e, 0xab, S * b * sizeof *e);
    OBL_SECRET(q, sizeof q);
    CHECK_EQ_U64(obl_lb_route(lb, q, e), OBL_ERR_FULL);
    OBL_DECLASSIFY(q, sizeof q);
    int same = 1;
    for (size_t i = 0; i < S * b * sizeof *e; i++)
        same &= ((unsigned char *)e)[i] == 0xab;
    CHECK(same);
    CHECK_EQ_U64(obl_lb_answer(lb, e, q), OBL_ERR_STATE);
    for (size_t i = 0; i < B; i++)
        q[i] = (obl_lb_req){i % 3, i, OBL_LB_GET, 0}; /* 3 keys: fits */
    CHECK_EQ_U64(obl_lb_route(lb, q, e), OBL_OK);
    CHECK_EQ_U64(obl_lb_answer(lb, e, q), OBL_OK);
    obl_lb_destroy(lb);
    free(e);
    printf("  overflow with lambda 1 (b = %zu of B = %zu): %s\n", b, B,
           T.failures == before ? "ok" : "FAILED");
}

/* Same B and S, different keys, duplicate patterns and skew: the same
 * trace (one thread: the hook is per thread). */
static void test_traces(void)
{
    if (!obl_trace_enabled())
        return;
    long before = T.failures;
    const size_t B = 100;
    const unsigned S = 3;
    obl_trace tr[3];
    for (int run = 0; run < 3; run++) {
        obl_lb_params p = {B, S, 0, 1, NULL, test_random, &R, NULL};
        obl_lb *lb = NULL;
        CHECK_EQ_U64(obl_lb_create(&lb, &p), OBL_OK);
        if (!lb)
            return;
        size_t b = obl_lb_shard_batch(lb);
        obl_lb_req q[100];
        obl_lb_entry *e = calloc(S * b, sizeof *e);
        gen_batch(q, B, 1000, run);
        CHECK(obl_trace_init(&tr[run], 1u << 22));
        obl_trace_begin(&tr[run]);
        CHECK_EQ_U64(obl_lb_route(lb, q, e), OBL_OK);
        CHECK_EQ_U64(obl_lb_answer(lb, e, q), OBL_OK);
        obl_trace_end();
        obl_lb_destroy(lb);
        free(e);
    }
    CHECK(tr[0].n > 0);
    CHECK(obl_trace_equal(&tr[0], &tr[1]));
    CHECK(obl_trace_equal(&tr[0], &tr[2]));
    for (int run = 0; run < 3; run++)
        obl_trace_free(&tr[run]);
    printf("  traces (distinct keys, duplicates, skew): %s\n",
           T.failures == before ? "ok" : "FAILED");
}

static void test_bad_input(void)
{
    long before = T.failures;
    obl_lb *lb = (obl_lb *)&R;
    obl_lb_params p = {0, 4, 0, 1, NULL, test_random, &R, NULL};
    CHECK_EQ_U64(obl_lb_create(&lb, &p), OBL_ERR_INVALID_ARG);
    CHECK(lb == NULL);
    p.batch = 16;
    p.shards = 0;
    CHECK_EQ_U64(obl_lb_create(&lb, &p), OBL_ERR_INVALID_ARG);
    p.shards = 4;
    p.lambda = 500;
    CHECK_EQ_U64(obl_lb_create(&lb, &p), OBL_ERR_INVALID_ARG);
    p.lambda = 0;
    p.batch = (size_t)1 << 30;
    CHECK_EQ_U64(obl_lb_create(&lb, &p), OBL_ERR_TOO_LARGE);
    CHECK_EQ_U64(obl_lb_create(NULL, &p), OBL_ERR_INVALID_ARG);
    p.batch = 16;
    for (long budget = 0; budget < 12; budget++) {
        test_failing_alloc fa = {budget, 0, 0};
        obl_allocator al = {test_fa_alloc, test_fa_free, &fa};
        p.alloc = &al;
        obl_err e = obl_lb_create(&lb, &p);
        CHECK(e == OBL_OK || e == OBL_ERR_NOMEM);
        if (e == OBL_OK) {
            obl_lb_req q[16] = {{0}};
            obl_lb_entry *en = calloc(4 * obl_lb_shard_batch(lb), sizeof *en);
            CHECK_EQ_U64(obl_lb_route(lb, NULL, en), OBL_ERR_INVALID_ARG);
            CHECK_EQ_U64(obl_lb_route(lb, q, en), OBL_OK);
            CHECK_EQ_U64(obl_lb_answer(lb, NULL, q), OBL_ERR_INVALID_ARG);
            free(en);
        }
        obl_lb_destroy(lb);
        CHECK_EQ_U64(fa.live, 0);
    }
    obl_lb_destroy(NULL);
    printf("  bad input: %s\n", T.failures == before ? "ok" : "FAILED");
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_lb");
    test_rng_seed(&R, T.seed);
    test_batch_size();
    test_bad_input();
    test_overflow();
    test_models();
    test_traces();
    return test_done("test_lb");
}
