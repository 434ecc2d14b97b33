/* SPDX-License-Identifier: MIT */
/*
 * Tests of the scan engine (src/shard/scan.c) on one shard's padded
 * batches: against a plain model (a list of pairs) with hits, misses,
 * dummies, gets, puts of old and new keys and erases, at several capacities
 * and batch sizes, an empty and a full store; FULL leaves the store
 * unchanged; a store bucket's overflow (at the load and by a batch's new
 * keys) refused with the store unchanged; the table shape's bound; trace
 * equality of two batches of the same size with different requests (gets
 * and writes) on stores of different keys; answers in request order and in
 * any order with their keys (shard_batch.akeys) or request indices
 * (aidx). With --ct the requests and the stored pairs are marked secret
 * for memcheck.
 */
#include <obl/omap.h>

#include "common/cpu.h"
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

/* Answers with their request indices (shard_batch.aidx): a permutation
 * of the batch, each answer's dummy flag its request's; put back into
 * request order by index. 0 if not. */
static int by_aidx(req *q, const uint64_t *adummy, const uint64_t *aidx,
                   const unsigned char *aval, const uint64_t *afound)
{
    unsigned char seen[512] = {0};
    for (size_t a = 0; a < q->b; a++) {
        uint64_t i = aidx[a];
        if (i >= q->b || seen[i] || adummy[a] != (q->dummy[i] & 1))
            return 0;
        seen[i] = 1;
        q->found[i] = afound[a];
        memcpy(q->vout + i * VS, aval + a * VS, VS);
    }
    return 1;
}

/* One batch; any: 1 the answers in any order with their keys, 2 with
 * their request indices (aidx). */
static obl_err run(shard_scan *s, req *q, int writes, unsigned parts, obl_pool *pool, int any)
{
    static unsigned char akeys[512 * KS], aval[512 * VS];
    static uint64_t adummy[512], afound[512], aidx[512];
    shard_batch bt = {q->b,           q->op,      q->dummy, q->keys, writes ? q->vin : NULL,
                      any ? aval : q->vout, any ? afound : q->found, any ? akeys : NULL,
                      any ? adummy : NULL,  any == 2 ? aidx : NULL};
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
        OBL_DECLASSIFY(aidx, q->b * 8);
        if (e == OBL_OK && !(any == 2 ? by_aidx(q, adummy, aidx, aval, afound)
                                      : reorder(q, akeys, adummy, aval, afound)))
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

/* Traces of two stores with batches of b, from the load on: with shapes =
 * 0 different stored pairs and different requests (must be equal); with
 * shapes = 1 the same requests under two table shapes of one more slot
 * per bucket, with shapes = 2 on stores of two capacities (controls: must
 * differ). 1 equal, 0 not, -1 without tracing. */
static int traces_equal(size_t b, int writes, int any, int shapes)
{
    obl_trace t[2];
    CHECK(obl_trace_init(&t[0], 1u << 23) && obl_trace_init(&t[1], 1u << 23));
    for (int k = 0; k < 2; k++) {
        obl_alloc_ctx ac;
        obl_alloc_init(&ac, NULL);
        obl_prg g;
        obl_prg_init_seed(&g, 7 + (shapes ? 0 : (uint64_t)k));
        shard_scan *s = NULL;
        uint64_t cap = shapes == 2 && k ? 700 : 600;
        CHECK(shard_scan_create(&s, cap, KS, VS, &g, &ac) == OBL_OK);
        uint64_t keys[450];
        unsigned char vals[450 * VS];
        memset(vals, shapes ? 0 : k + 1, sizeof vals);
        for (int i = 0; i < 450; i++)
            keys[i] = (shapes ? 1001 : 1001 + 7919 * (uint64_t)k) + (uint64_t)i * (1 + k * !shapes);
        test_rng r;
        test_rng_seed(&r, T.seed + (shapes ? 0 : (uint64_t)k * 99));
        model m = {450, 600, VS, keys, vals};
        static req q;
        make_batch(&r, &m, &q, b, writes);
        if (shapes == 1)
            shard_scan_force_shape(s, b, 1, b + (size_t)k);
        obl_trace_begin(&t[k]);
        CHECK(shard_scan_load(s, keys, vals, 450) == OBL_OK);
        CHECK(run(s, &q, writes, 1, NULL, any) == OBL_OK);
        obl_trace_end();
        shard_scan_destroy(s);
    }
    int eq = obl_trace_enabled() ? obl_trace_equal(&t[0], &t[1]) : -1;
    CHECK(eq == -1 || t[0].n > 0);
    obl_trace_free(&t[0]);
    obl_trace_free(&t[1]);
    return eq;
}

/* A get batch of b on a store of n pairs (keys 0 and 1001.., values of vs
 * bytes) in the read scan's form the environment allows: every answer
 * against the model. Hits, misses and dummies whose keys are stored keys,
 * 0 among them, the key of the table's fillers: a dummy or a filler slot
 * that matches an entry must still answer nothing. */
static void get_batch_sizes(size_t vs, size_t b, size_t nb, size_t z)
{
    enum { N = 300, CAP = 400 };
    obl_alloc_ctx ac;
    obl_alloc_init(&ac, NULL);
    obl_prg g;
    obl_prg_init_seed(&g, T.seed ^ vs);
    shard_scan *s = NULL;
    CHECK(shard_scan_create(&s, CAP, 8, vs, &g, &ac) == OBL_OK);
    if (!s)
        return;
    static uint64_t keys[N], op[CAP], dummy[CAP], found[CAP], qk[CAP];
    static unsigned char vals[N * 64], vout[CAP * 64];
    test_rng r;
    test_rng_seed(&r, T.seed ^ vs ^ b << 8);
    for (size_t i = 0; i < N; i++)
        keys[i] = i ? 1000 + i : 0;
    test_rng_fill(&r, vals, sizeof vals);
    if (T.ct) { /* the stored pairs are secret */
        OBL_SECRET(keys, sizeof keys);
        OBL_SECRET(vals, sizeof vals);
    }
    CHECK(shard_scan_load(s, keys, vals, N) == OBL_OK);
    OBL_DECLASSIFY(keys, sizeof keys);
    OBL_DECLASSIFY(vals, sizeof vals);
    for (size_t i = 0; i < b; i++) { /* distinct real keys: i-th of a walk */
        op[i] = OBL_OMAP_GET;
        dummy[i] = i % 5 == 4;
        qk[i] = dummy[i] ? keys[test_rng_below(&r, 8)] : i % 3 ? keys[(7 * i) % N] : 5000 + i;
    }
    if (nb)
        shard_scan_force_shape(s, b, nb, z);
    shard_batch bt = {b,     op,   dummy, (const unsigned char *)qk, NULL, vout,
                      found, NULL, NULL,  NULL};
    if (T.ct) { /* ops, dummy flags and keys secret */
        OBL_SECRET(op, b * 8);
        OBL_SECRET(dummy, b * 8);
        OBL_SECRET(qk, b * 8);
    }
    obl_err e = shard_scan_batch(s, &bt, NULL, 1);
    OBL_DECLASSIFY(op, b * 8);
    OBL_DECLASSIFY(dummy, b * 8);
    OBL_DECLASSIFY(qk, b * 8);
    OBL_DECLASSIFY(found, b * 8);
    OBL_DECLASSIFY(vout, b * vs);
    CHECK(e == OBL_OK);
    int ok = e == OBL_OK;
    for (size_t i = 0; ok && i < b; i++) {
        long p = -1;
        for (size_t j = 0; !dummy[i] && j < N; j++)
            p = keys[j] == qk[i] ? (long)j : p;
        static const unsigned char zero[64];
        ok &= found[i] == (p >= 0);
        ok &= !memcmp(vout + i * vs, p >= 0 ? vals + (size_t)p * vs : zero, vs);
    }
    CHECK(ok);
    if (!ok)
        fprintf(stderr, "  vs %zu b %zu form %s\n", vs, b, obl_isa_name(obl_isa_pick()));
    shard_scan_destroy(s);
}

/* The read scan's forms (AVX-512, AVX2, 64-bit words: chosen when the
 * store is created, common/cpu.h), each up to the form the environment
 * allows, on value sizes that take 4 and 8 words per slot, with the table
 * shape of the store and with one bucket holding every request. */
static void read_forms(void)
{
    int top = obl_isa_pick();
    const char *env = getenv("OBL_CT_VARIANT");
    char saved[32] = "";
    if (env)
        snprintf(saved, sizeof saved, "%s", env);
    static const char *const names[] = {"portable", "avx2", "avx512"};
    for (int v = 0; v <= top && v < 3; v++) {
        setenv("OBL_CT_VARIANT", names[v], 1);
        if (obl_isa_pick() != v) /* not built or not on this CPU */
            continue;
        size_t sizes[] = {8, 24, 48, 56};
        for (size_t i = 0; i < 4; i++) {
            get_batch_sizes(sizes[i], T.ct ? 20 : 200, 0, 0);
            get_batch_sizes(sizes[i], T.ct ? 20 : 200, 1, T.ct ? 20 : 200);
        }
    }
    if (env)
        setenv("OBL_CT_VARIANT", saved, 1);
    else
        unsetenv("OBL_CT_VARIANT");
}

/* An empty store for cap keys of KS/VS bytes, its randomness from seed;
 * NULL (a failed check) if it could not be made. */
static shard_scan *new_store(uint64_t cap, uint64_t seed)
{
    obl_alloc_ctx ac;
    obl_alloc_init(&ac, NULL);
    obl_prg g;
    obl_prg_init_seed(&g, seed);
    shard_scan *s = NULL;
    CHECK(shard_scan_create(&s, cap, KS, VS, &g, &ac) == OBL_OK);
    return s;
}

/* A bucket overflow: a shape of one bucket with fewer slots than the
 * batch's real requests fails the batch with STASH_OVERFLOW, pending
 * nothing, and the store still answers as the model; a shape whose one
 * bucket the requests fill exactly answers right (read_forms); a table
 * too large to index is refused. */
static void overflow(void)
{
    shard_scan *s = new_store(64, T.seed + 5);
    if (!s)
        return;
    test_rng r;
    test_rng_seed(&r, T.seed + 6);
    model m = model_new(64, VS);
    for (size_t i = 0; i < 30; i++) {
        m.k[i] = 1001 + i;
        test_rng_fill(&r, m.v + i * VS, VS);
    }
    m.n = 30;
    CHECK(shard_scan_load(s, m.k, m.v, 30) == OBL_OK);
    static req q;
    for (int it = 0; it < 4; it++) {
        make_batch(&r, &m, &q, 12, 1);
        size_t reals = 0;
        for (size_t i = 0; i < 12; i++)
            reals += !q.dummy[i];
        if (reals < 2)
            continue;
        shard_scan_force_shape(s, 12, 1, reals - 1);
        CHECK(run(s, &q, 1, 1, NULL, 0) == OBL_ERR_STASH_OVERFLOW);
        make_batch(&r, &m, &q, 13, it % 2); /* b = 13: the computed shape */
        CHECK(run(s, &q, it % 2, 1, NULL, 0) == OBL_OK);
        int ok = 1;
        model_apply(&m, &q, &ok);
        CHECK(ok);
    }
    /* a table of 2^28 slots or more: its records' index field (scan.c,
     * SC_IDX) cannot number them, so the batch is TOO_LARGE before any
     * allocation, and the store still answers as the model */
    make_batch(&r, &m, &q, 12, 1);
    shard_scan_force_shape(s, 12, (size_t)1 << 20, 256);
    CHECK(run(s, &q, 1, 1, NULL, 0) == OBL_ERR_TOO_LARGE);
    make_batch(&r, &m, &q, 13, 0);
    CHECK(run(s, &q, 0, 1, NULL, 0) == OBL_OK);
    int ok = 1;
    model_apply(&m, &q, &ok);
    CHECK(ok);
    shard_scan_destroy(s);
    model_free(&m);
}

/* A batch of explicit requests: keys k[0 .. n) with ops op[0 .. n)
 * (values random), padded with dummies to b. */
static void make_ops(test_rng *r, req *q, size_t b, const uint64_t *k, const uint64_t *op,
                     size_t n)
{
    q->b = b;
    for (size_t i = 0; i < b; i++) {
        uint64_t key = i < n ? k[i] : 7;
        q->dummy[i] = i >= n;
        q->op[i] = i < n ? op[i] : OBL_OMAP_GET;
        memcpy(q->keys + i * KS, &key, KS);
        test_rng_fill(r, q->vin + i * VS, VS);
    }
}

/* Gets of every key in k[0 .. n) (stored or not), b = 100 a batch,
 * against the model. */
static void check_gets(shard_scan *s, model *m, const uint64_t *k, size_t n)
{
    static req q;
    static uint64_t op[100];
    test_rng r;
    test_rng_seed(&r, 1);
    for (size_t i = 0; i < n; i += 100) {
        size_t c = n - i < 100 ? n - i : 100;
        make_ops(&r, &q, 100, k + i, op, c); /* op zero: gets */
        CHECK(run(s, &q, 0, 1, NULL, 0) == OBL_OK);
        int ok = 1;
        model_apply(m, &q, &ok);
        CHECK(ok);
    }
}

/* A store bucket's overflow: a load of C + 1 keys of one bucket and a
 * batch whose new keys would take a bucket beyond C are refused with
 * STASH_OVERFLOW, the store unchanged (the model still answers); erases
 * in the same batch free their slots first, so a bucket can be filled to
 * exactly C. Every batch has b = 100. */
static void bucket_overflow(void)
{
    shard_scan *s = new_store(2048, T.seed + 11);
    if (!s)
        return;
    size_t nsb, C, n0 = 0, n1 = 0;
    shard_scan_store_shape(s, &nsb, &C);
    CHECK(nsb > 1 && C < 1000);
    if (nsb < 2 || C >= 1000)
        return;
    /* requests of one store bucket share a table bucket: one table bucket
     * of b slots holds them all */
    shard_scan_force_shape(s, 100, 1, 100);
    static uint64_t b0[1024], other[100], op[100];
    for (uint64_t k = 1; n0 < C + 20; k++) { /* keys of bucket 0, and others */
        size_t x = shard_scan_bucket_of(s, &k);
        OBL_DECLASSIFY(&x, sizeof x);
        if (x == 0)
            b0[n0++] = k;
        else if (n1 < 100)
            other[n1++] = k;
    }
    CHECK(n0 == C + 20);
    test_rng r;
    test_rng_seed(&r, T.seed + 12);
    model m = model_new(2048, VS);
    static unsigned char vals[1024 * VS];
    test_rng_fill(&r, vals, sizeof vals);
    CHECK(shard_scan_load(s, b0, vals, C + 1) == OBL_ERR_STASH_OVERFLOW);
    check_gets(s, &m, b0, C + 1); /* still empty */
    /* C - 5 keys of bucket 0 and 100 of others */
    for (size_t i = 0; i < C - 5; i++)
        model_write(&m, OBL_OMAP_PUT, b0[i], vals + i * VS);
    CHECK(shard_scan_load(s, b0, vals, C - 5) == OBL_OK);
    static req q;
    for (size_t i = 0; i < 100; i++)
        op[i] = OBL_OMAP_PUT;
    make_ops(&r, &q, 100, other, op, 100);
    CHECK(run(s, &q, 1, 2, NULL, 0) == OBL_OK);
    int ok = 1;
    model_apply(&m, &q, &ok);
    CHECK(ok);
    /* 10 new keys of bucket 0: beyond C by 5, refused */
    make_ops(&r, &q, 100, b0 + C - 5, op, 10);
    CHECK(run(s, &q, 1, 1, NULL, 0) == OBL_ERR_STASH_OVERFLOW);
    check_gets(s, &m, b0, C + 20);
    check_gets(s, &m, other, 100);
    /* 5 erases and the 10 new keys: exactly C */
    static uint64_t k2[15];
    for (size_t i = 0; i < 15; i++) {
        k2[i] = i < 5 ? b0[i] : b0[C - 10 + i];
        op[i] = i < 5 ? OBL_OMAP_ERASE : OBL_OMAP_PUT;
    }
    make_ops(&r, &q, 100, k2, op, 15);
    CHECK(run(s, &q, 1, 1, NULL, 0) == OBL_OK);
    ok = 1;
    model_apply(&m, &q, &ok);
    CHECK(ok);
    /* one more new key of bucket 0 is refused; with an erase it fits */
    k2[0] = b0[C + 5];
    op[0] = OBL_OMAP_PUT;
    make_ops(&r, &q, 100, k2, op, 1);
    CHECK(run(s, &q, 1, 1, NULL, 0) == OBL_ERR_STASH_OVERFLOW);
    k2[1] = b0[7];
    op[1] = OBL_OMAP_ERASE;
    make_ops(&r, &q, 100, k2, op, 2);
    CHECK(run(s, &q, 1, 1, NULL, 0) == OBL_OK);
    ok = 1;
    model_apply(&m, &q, &ok);
    CHECK(ok);
    check_gets(s, &m, b0, C + 20);
    check_gets(s, &m, other, 100);
    shard_scan_destroy(s);
    model_free(&m);
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
            if (T.ct && (caps[i] > 300 || bs[j] > 33 || (caps[i] > 64 && bs[j] > 5)))
                continue;
            model_stream(caps[i], bs[j], 1 + (unsigned)(i + j) % 3, pool, T.ct ? 3 : 8,
                         (int)(i + j) % 3);
        }
    for (int any = 0; any < 3; any++) {
        CHECK(traces_equal(T.ct ? 5 : 40, 0, any, 0) != 0);
        CHECK(traces_equal(T.ct ? 5 : 40, 1, any, 0) != 0);
    }
    CHECK(traces_equal(10, 0, 0, 1) != 1); /* the trace sees the table */
    CHECK(traces_equal(10, 0, 0, 2) != 1); /* and the store's shape */
    read_forms();
    /* stores of several buckets, many batches of puts, erases and re-puts */
    uint64_t big[] = {3000, 5000};
    for (size_t i = 0; i < 2; i++)
        for (size_t j = 2; j < 5; j++)
            if (!T.ct || j == 2)
                model_stream(big[i], bs[j], 1 + (unsigned)(i + j) % 3, pool, T.ct ? 3 : 30,
                             (int)(i + j) % 3);
    bucket_overflow();
    overflow();
    obl_pool_destroy(pool);
    return test_done("test_scan");
}
