/* SPDX-License-Identifier: MIT */
/*
 * Tests of the scan engine (src/shard/scan.c) on one shard's padded
 * batches: against a plain model (a list of pairs) with hits, misses,
 * dummies, gets, puts of old and new keys and erases, at several capacities
 * and batch sizes, an empty and a full store; FULL leaves the store
 * unchanged; the table shape's bound; trace equality of two batches of the
 * same size with different requests (gets and writes); answers in request
 * order and in any order with their keys (shard_batch.akeys). With --ct the
 * requests are marked secret for memcheck.
 */
#include <obl/omap.h>

#include "common/secret.h"
#include "common/trace.h"
#include "shard/shard_internal.h"
#include "shard/shard_model.h"
#include "testutil.h"

#define KS 8
#define VS 12

typedef struct {
    size_t b;
    uint64_t op[512], dummy[512], found[512];
    unsigned char keys[512 * KS], vin[512 * VS], vout[512 * VS];
} req;

/* A batch: distinct real keys, about half hits; dummies with junk. */
static void make_batch(test_rng *r, const model *m, req *q, size_t b, int writes)
{
    q->b = b;
    uint64_t used[512];
    for (size_t i = 0; i < b; i++) {
        uint64_t k;
        int dup;
        do {
            k = (m->n && test_rng_below(r, 2)) ? m->k[test_rng_below(r, m->n)]
                                               : 1 + test_rng_below(r, 1000);
            dup = 0;
            for (size_t j = 0; j < i; j++)
                dup |= used[j] == k;
        } while (dup);
        used[i] = k;
        q->dummy[i] = test_rng_below(r, 5) == 0;
        q->op[i] = writes ? test_rng_below(r, 3) : OBL_OMAP_GET;
        if (q->dummy[i])
            k = test_rng_next(r) % 4; /* junk, may equal a stored key */
        memcpy(q->keys + i * KS, &k, KS);
        test_rng_fill(r, q->vin + i * VS, VS);
    }
}

static void model_apply(model *m, const req *q, int *ok)
{
    for (size_t i = 0; i < q->b; i++) {
        if (q->dummy[i]) {
            static const unsigned char z[VS];
            *ok &= q->found[i] == 0 && !memcmp(q->vout + i * VS, z, VS);
            continue;
        }
        uint64_t k;
        memcpy(&k, q->keys + i * KS, KS);
        long p = model_find(m, k);
        *ok &= q->found[i] == (p >= 0);
        if (p >= 0)
            *ok &= !memcmp(q->vout + i * VS, m->v + (size_t)p * VS, VS);
    }
    for (size_t i = 0; i < q->b; i++) {
        uint64_t k;
        memcpy(&k, q->keys + i * KS, KS);
        if (!q->dummy[i])
            model_write(m, q->op[i], k, q->vin + i * VS);
    }
}

static void mark_secret(req *q)
{
    OBL_SECRET(q->op, q->b * 8);
    OBL_SECRET(q->dummy, q->b * 8);
    OBL_SECRET(q->keys, q->b * KS);
    OBL_SECRET(q->vin, q->b * VS);
}

/* The answers of a batch in any order (shard_batch.akeys) put back into
 * request order by their keys, the dummies' answers onto the dummies in
 * turn; 0 if they do not pair up. */
static int reorder(req *q, const unsigned char *akeys, const uint64_t *adummy,
                   const unsigned char *aval, const uint64_t *afound)
{
    size_t nd = 0, used = 0;
    int ok = 1;
    for (size_t i = 0; i < q->b; i++) {
        size_t hit = q->b;
        for (size_t a = 0; a < q->b; a++) {
            if (q->dummy[i] ? adummy[a] && a >= nd && hit == q->b
                            : !adummy[a] && !memcmp(akeys + a * KS, q->keys + i * KS, KS))
                hit = a;
        }
        if (hit == q->b) {
            ok = 0;
            continue;
        }
        nd = q->dummy[i] ? hit + 1 : nd;
        used++;
        q->found[i] = afound[hit];
        memcpy(q->vout + i * VS, aval + hit * VS, VS);
    }
    return ok && used == q->b;
}

/* One batch; any: the answers in any order, with their keys. */
static obl_err run(shard_scan *s, req *q, int writes, unsigned parts, obl_pool *pool, int any)
{
    static unsigned char akeys[512 * KS], aval[512 * VS];
    static uint64_t adummy[512], afound[512];
    shard_batch bt = {q->b,           q->op,      q->dummy, q->keys, writes ? q->vin : NULL,
                      any ? aval : q->vout, any ? afound : q->found, any ? akeys : NULL,
                      any ? adummy : NULL};
    if (T.ct)
        mark_secret(q);
    obl_err e = shard_scan_batch(s, &bt, pool, parts);
    OBL_DECLASSIFY(q->vout, q->b * VS);
    OBL_DECLASSIFY(q->found, q->b * 8);
    OBL_DECLASSIFY(q, sizeof *q);
    if (any) {
        OBL_DECLASSIFY(akeys, q->b * KS);
        OBL_DECLASSIFY(aval, q->b * VS);
        OBL_DECLASSIFY(adummy, q->b * 8);
        OBL_DECLASSIFY(afound, q->b * 8);
        if (e == OBL_OK && !reorder(q, akeys, adummy, aval, afound))
            e = OBL_ERR_STATE; /* fails the test */
    }
    return e;
}

static void model_stream(uint64_t cap, size_t b, unsigned parts, obl_pool *pool, int rounds,
                         int any)
{
    obl_alloc_ctx ac;
    obl_alloc_init(&ac, NULL);
    obl_prg g;
    uint64_t seed = T.seed;
    if (T.ct) /* the store's randomness (batch keys, dummy buckets) is secret */
        OBL_SECRET(&seed, sizeof seed);
    obl_prg_init_seed(&g, seed);
    shard_scan *s = NULL;
    CHECK(shard_scan_create(&s, cap, KS, VS, &g, &ac) == OBL_OK);
    if (!s)
        return;
    test_rng r;
    test_rng_seed(&r, T.seed ^ cap ^ b << 20);
    model m = model_new(cap, VS);
    size_t n0 = cap / 2;
    for (size_t i = 0; i < n0; i++) { /* keys 1001.. for the load */
        m.k[i] = 1001 + i;
        test_rng_fill(&r, m.v + i * VS, VS);
    }
    m.n = n0;
    if (T.ct) { /* the stored pairs are secret */
        OBL_SECRET(m.k, n0 * 8);
        OBL_SECRET(m.v, n0 * VS);
    }
    CHECK(shard_scan_load(s, m.k, m.v, n0) == OBL_OK);
    OBL_DECLASSIFY(m.k, n0 * 8);
    OBL_DECLASSIFY(m.v, n0 * VS);
    static req q;
    for (int it = 0; it < rounds; it++) {
        int writes = it % 3 != 0;
        make_batch(&r, &m, &q, b, writes);
        obl_err e = run(s, &q, writes, parts, pool, any);
        int ok = 1;
        if (e == OBL_ERR_FULL) { /* unchanged: the same batch as gets */
            CHECK(m.n + b > cap);
            e = run(s, &q, 0, parts, pool, any);
            for (size_t i = 0; i < b; i++)
                q.op[i] = OBL_OMAP_GET;
        }
        CHECK(e == OBL_OK);
        model_apply(&m, &q, &ok);
        CHECK(ok);
        if (!ok)
            fprintf(stderr, "  cap %" PRIu64 " b %zu parts %u round %d any %d\n", cap, b, parts,
                    it, any);
    }
    shard_scan_destroy(s);
    model_free(&m);
}

/* Two stores in the same state, batches of the same b, different requests:
 * identical traces. */
static void trace_equal(size_t b, int writes, int any)
{
    obl_trace t[2];
    CHECK(obl_trace_init(&t[0], 1u << 22) && obl_trace_init(&t[1], 1u << 22));
    for (int k = 0; k < 2; k++) {
        obl_alloc_ctx ac;
        obl_alloc_init(&ac, NULL);
        obl_prg g;
        obl_prg_init_seed(&g, 7);
        shard_scan *s = NULL;
        CHECK(shard_scan_create(&s, 200, KS, VS, &g, &ac) == OBL_OK);
        uint64_t keys[150];
        unsigned char vals[150 * VS] = {0};
        for (int i = 0; i < 150; i++)
            keys[i] = 1001 + (uint64_t)i;
        CHECK(shard_scan_load(s, keys, vals, 150) == OBL_OK);
        test_rng r;
        test_rng_seed(&r, T.seed + (uint64_t)k * 99);
        model m = {150, 200, VS, keys, vals};
        static req q;
        make_batch(&r, &m, &q, b, writes);
        obl_trace_begin(&t[k]);
        CHECK(run(s, &q, writes, 1, NULL, any) == OBL_OK);
        obl_trace_end();
        shard_scan_destroy(s);
    }
    if (obl_trace_enabled()) {
        CHECK(t[0].n > 0);
        CHECK(obl_trace_equal(&t[0], &t[1]));
    }
    obl_trace_free(&t[0]);
    obl_trace_free(&t[1]);
}

static void shape(void)
{
    size_t nb, z;
    shard_scan_table_shape(1, 100, &nb, &z);
    CHECK(nb == 1 && z == 1);
    for (size_t b = 2; b <= ((size_t)1 << 16); b *= 4) {
        shard_scan_table_shape(b, 1u << 20, &nb, &z);
        CHECK(nb >= 1 && (nb & (nb - 1)) == 0 && z >= b / nb && nb * z < 40 * b);
    }
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_scan");
    shape();
    obl_pool *pool = NULL;
    CHECK(obl_pool_create(&pool, T.ct ? 1 : 3, NULL) == OBL_OK);
    uint64_t caps[] = {1, 2, 7, 64, 300};
    size_t bs[] = {1, 2, 5, 33, 200};
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < 5; j++) {
            if (T.ct && (caps[i] > 64 || bs[j] > 33))
                continue;
            model_stream(caps[i], bs[j], 1 + (unsigned)(i + j) % 3, pool, T.ct ? 3 : 8,
                         (int)(i + j) % 2);
        }
    for (int any = 0; any < 2; any++) {
        trace_equal(T.ct ? 5 : 40, 0, any);
        trace_equal(T.ct ? 5 : 40, 1, any);
    }
    obl_pool_destroy(pool);
    return test_done("test_scan");
}
