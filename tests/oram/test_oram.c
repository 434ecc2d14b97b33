/* SPDX-License-Identifier: MIT */
/*
 * Tests of the ORAM module (obl/oram.h): NRORAM and RORAM against plain
 * reference models on long seeded operation streams, stash overflow with a
 * tiny stash (nothing lost), trace equality of the NRORAM for fixed public
 * positions, a chi-square test of the revealed leaves, bad input and
 * allocation failure at every allocation point. In the ct build (--ct)
 * every secret input is marked with OBL_SECRET and the run is under
 * memcheck, so any secret-dependent branch or address fails it; sizes
 * shrink there.
 *
 * --long [--soak N OPS]: the stash soak (10^8 NRORAM accesses at 2^16 by
 * default, histogram printed) for docs/oram.md; not run in CI.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <obl/oram.h>

#include "common/secret.h"
#include "common/trace.h"
#include "oram/nroram_internal.h"
#include "oram/roram_internal.h"
#include "testutil.h"

static test_rng R;

/* The sanitizer build (Debug, ASan) is ~15x slower: its streams are shorter. */
#ifdef __SANITIZE_ADDRESS__
#define SAN_DIV 4
#else
#define SAN_DIV 1
#endif

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

/* --------------------------------------------------------------- NRORAM -- */

/* The id of model index i: i itself, or in a tagged tree (nroram_internal.h)
 * a 64-bit id whose low word is one of four (all ones among them: not the
 * empty marker there) and whose next bits, kept above the leaf, tell the
 * ids of one low word apart: ids that differ in those bits only are
 * stored and found apart. */
static uint64_t model_id(const obl_nroram *o, uint64_t i)
{
    static const uint64_t lo[4] = {5, 0xffffffffu, 7, 0x9e3779b9u};
    return o->tagged ? (i >> 2) << 32 | lo[i & 3] : i;
}

/* Model: for each id in [0, cap): present flag, value, position. A tagged
 * tree (tagged & 1, nr_create) is given the ids of model_id; tagged & 2
 * makes the tree dense. */
static void nroram_model_t(uint64_t cap, size_t vs, long ops, uint32_t stash, uint32_t pos_bytes,
                           int tagged)
{
    obl_nroram_params p;
    memset(&p, 0, sizeof(p));
    p.capacity = cap;
    p.value_size = vs;
    p.stash_size = stash;
    p.pos_bytes = tagged & 1 ? NR_POS_TAGGED : pos_bytes;
    p.dense = tagged >> 1;
    tagged &= 1;
    p.use_seed = 1;
    p.seed = test_rng_next(&R);
    obl_nroram *o = NULL;
    CHECK_EQ_U64(tagged ? nr_create(&o, &p, 1) : obl_nroram_create(&o, &p), OBL_OK);
    if (!o)
        return;
    uint64_t L = obl_nroram_num_leaves(o);
    unsigned char *mv = (unsigned char *)xmalloc(cap * vs);
    uint64_t *mpos = (uint64_t *)xmalloc(cap * sizeof(uint64_t));
    unsigned char *present = (unsigned char *)calloc(cap, 1);
    unsigned char *in = (unsigned char *)xmalloc(vs), *out = (unsigned char *)xmalloc(vs);
    unsigned char *zero = (unsigned char *)calloc(vs, 1);
    long overflows = 0, bad = 0;
    for (long t = 0; t < ops; t++) {
        uint64_t id = test_rng_below(&R, cap);
        uint64_t op = test_rng_below(&R, 8);
        op = op < 4 ? OBL_ORAM_READ : op < 7 ? OBL_ORAM_WRITE : OBL_ORAM_REMOVE;
        uint64_t pos = present[id] ? mpos[id] : test_rng_below(&R, L);
        uint64_t np = obl_nroram_random_pos(o);
        OBL_DECLASSIFY(&np, sizeof(np)); /* the test keeps it in its model */
        test_rng_fill(&R, in, vs);
        uint64_t found = 7, sid = model_id(o, id), sop = op;
        OBL_SECRET(&sid, sizeof(sid));
        OBL_SECRET(&sop, sizeof(sop));
        OBL_SECRET(in, vs);
        uint64_t snp = np;
        OBL_SECRET(&snp, sizeof(snp));
        obl_err e = obl_nroram_access(o, sid, pos, snp, sop, in, out, &found);
        OBL_DECLASSIFY(out, vs);
        OBL_DECLASSIFY(&found, sizeof(found));
        OBL_DECLASSIFY(in, vs);
        if (e == OBL_ERR_STASH_OVERFLOW)
            overflows++;
        else if (e != OBL_OK) {
            CHECK_EQ_U64(e, OBL_OK);
            bad++;
            if (bad > 3)
                break;
            continue;
        }
        CHECK_EQ_U64(found, present[id]);
        CHECK_MEM(out, present[id] ? mv + id * vs : zero, vs);
        if (op == OBL_ORAM_WRITE) {
            memcpy(mv + id * vs, in, vs);
            present[id] = 1;
        } else if (op == OBL_ORAM_REMOVE) {
            present[id] = 0;
        }
        mpos[id] = np;
    }
    /* every stored block still reads back */
    for (uint64_t id = 0; id < cap && id < 4096; id++) {
        uint64_t pos = present[id] ? mpos[id] : test_rng_below(&R, L);
        uint64_t np = obl_nroram_random_pos(o), found = 7;
        OBL_DECLASSIFY(&np, sizeof(np));
        obl_err e =
            obl_nroram_access(o, model_id(o, id), pos, np, OBL_ORAM_READ, NULL, out, &found);
        CHECK(e == OBL_OK || e == OBL_ERR_STASH_OVERFLOW);
        OBL_DECLASSIFY(out, vs);
        OBL_DECLASSIFY(&found, sizeof(found));
        CHECK_EQ_U64(found, present[id]);
        CHECK_MEM(out, present[id] ? mv + id * vs : zero, vs);
        mpos[id] = np;
    }
    obl_oram_stats st;
    obl_nroram_stats(o, &st);
    CHECK_EQ_U64(st.overflows, (uint64_t)overflows);
    CHECK(st.stash_max <= st.stash_size + 1);
    if (stash >= 20)
        CHECK_EQ_U64(overflows, 0);
    obl_nroram_destroy(o);
    free(mv);
    free(mpos);
    free(present);
    free(in);
    free(out);
    free(zero);
}

static void nroram_model(uint64_t cap, size_t vs, long ops, uint32_t stash, uint32_t pos_bytes)
{
    nroram_model_t(cap, vs, ops, stash, pos_bytes, 0);
}

/* A seeded NRORAM of 8-byte blocks (stash 0: the default), with the stash
 * histogram when hist. */
static obl_nroram *nr_tree8(uint64_t cap, uint32_t stash, uint64_t seed, int hist)
{
    obl_nroram_params p;
    memset(&p, 0, sizeof(p));
    p.capacity = cap;
    p.value_size = 8;
    p.stash_size = stash;
    p.track_histogram = hist;
    p.use_seed = 1;
    p.seed = seed;
    obl_nroram *o = NULL;
    CHECK_EQ_U64(obl_nroram_create(&o, &p), OBL_OK);
    return o;
}

/*
 * A tiny stash (S = 2) and more blocks than the capacity (1.5x, about 75%
 * of the tree's slots) force overflows: each must be reported, lose
 * nothing, and leave the structure usable. An access refused with
 * OBL_ERR_STATE must not have happened at all.
 */
static void nroram_overflow(void)
{
    uint64_t cap = T.ct ? 64 : 512, nb = cap + cap / 2;
    nroram_model(cap, 8, T.ct ? 400 : 20000, 2, 0);
    obl_nroram *o = nr_tree8(cap, 2, 5, 0);
    uint64_t *pos = (uint64_t *)xmalloc(nb * sizeof(uint64_t));
    uint64_t *val = (uint64_t *)xmalloc(nb * sizeof(uint64_t));
    unsigned char *present = (unsigned char *)calloc(nb, 1);
    uint64_t L = obl_nroram_num_leaves(o);
    long of = 0, refused = 0;
    for (uint64_t i = 0; i < nb; i++) {
        val[i] = i * 3 + 1;
        obl_err e = obl_nroram_insert(o, i, &val[i], &pos[i]);
        OBL_DECLASSIFY(&pos[i], sizeof(pos[i]));
        CHECK(e == OBL_OK || e == OBL_ERR_STASH_OVERFLOW || e == OBL_ERR_STATE);
        of += e == OBL_ERR_STASH_OVERFLOW;
        refused += e == OBL_ERR_STATE;
        present[i] = e != OBL_ERR_STATE;
    }
    for (long t = 0; t < (T.ct ? 300 : 5000); t++) {
        uint64_t i = test_rng_below(&R, nb), v = 0, found = 9, w = test_rng_next(&R);
        uint64_t op = test_rng_below(&R, 2), np = obl_nroram_random_pos(o);
        OBL_DECLASSIFY(&np, sizeof(np));
        uint64_t ps = present[i] ? pos[i] : test_rng_below(&R, L);
        obl_err e = obl_nroram_access(o, i, ps, np, op, &w, &v, &found);
        CHECK(e == OBL_OK || e == OBL_ERR_STASH_OVERFLOW || e == OBL_ERR_STATE);
        if (e == OBL_ERR_STATE) {
            refused++;
            continue;
        }
        of += e == OBL_ERR_STASH_OVERFLOW;
        OBL_DECLASSIFY(&v, sizeof(v));
        OBL_DECLASSIFY(&found, sizeof(found));
        CHECK_EQ_U64(found, present[i]);
        CHECK_EQ_U64(v, present[i] ? val[i] : 0);
        if (op == OBL_ORAM_WRITE) {
            val[i] = w;
            present[i] = 1;
        }
        pos[i] = np;
    }
    obl_oram_stats st;
    obl_nroram_stats(o, &st);
    printf("  tiny stash (S=2, %" PRIu64 " blocks for capacity %" PRIu64 "): %ld overflows, %ld"
           " refused, stash max %" PRIu64 "\n",
           nb, cap, of, refused, st.stash_max);
    CHECK_EQ_U64(st.overflows, (uint64_t)of);
    CHECK(of > 0); /* the test must exercise the overflow path */
    free(pos);
    free(val);
    free(present);
    obl_nroram_destroy(o);
}

static void tr_update(void *ctx, void *value, uint64_t found, uint64_t *keep)
{
    /* adds ctx's word to an 8-byte counter, creating it when absent */
    uint64_t v;
    memcpy(&v, value, 8);
    v += *(uint64_t *)ctx;
    memcpy(value, &v, 8);
    *keep = found | 1;
}

static void nroram_update(void)
{
    obl_nroram_params p;
    memset(&p, 0, sizeof(p));
    p.capacity = 100;
    p.value_size = 8;
    p.use_seed = 1;
    p.seed = 9;
    obl_nroram *o = NULL;
    CHECK_EQ_U64(obl_nroram_create(&o, &p), OBL_OK);
    uint64_t pos[100], cnt[100] = {0};
    uint64_t L = obl_nroram_num_leaves(o);
    for (int i = 0; i < 100; i++)
        pos[i] = test_rng_below(&R, L);
    for (int t = 0; t < (T.ct ? 200 : 3000); t++) {
        uint64_t id = test_rng_below(&R, 100), add = test_rng_below(&R, 1000);
        uint64_t np = obl_nroram_random_pos(o);
        OBL_DECLASSIFY(&np, sizeof(np));
        OBL_SECRET(&add, sizeof(add));
        CHECK_EQ_U64(obl_nroram_update(o, id, pos[id], np, tr_update, &add), OBL_OK);
        OBL_DECLASSIFY(&add, sizeof(add));
        cnt[id] += add;
        pos[id] = np;
    }
    for (int i = 0; i < 100; i++) {
        uint64_t v = 0, np = obl_nroram_random_pos(o);
        OBL_DECLASSIFY(&np, sizeof(np));
        CHECK_EQ_U64(obl_nroram_access(o, i, pos[i], np, OBL_ORAM_READ, NULL, &v, NULL), OBL_OK);
        OBL_DECLASSIFY(&v, sizeof(v));
        CHECK_EQ_U64(v, cnt[i]);
        pos[i] = np;
    }
    obl_nroram_destroy(o);
}

/*
 * Trace equality: the same public positions with different secret ids,
 * values, new positions and op codes give identical traces (every bucket
 * and stash touch is recorded).
 */
static void nroram_trace(void)
{
    if (!obl_trace_enabled()) {
        printf("  trace hook not compiled in: trace test skipped\n");
        return;
    }
    const int ops = T.ct ? 30 : 300;
    obl_trace tr[2];
    uint64_t *pubpos = (uint64_t *)xmalloc(ops * sizeof(uint64_t));
    uint64_t L = 0;
    for (int run = 0; run < 2; run++) {
        obl_nroram_params p;
        memset(&p, 0, sizeof(p));
        p.capacity = 200;
        p.value_size = 24;
        p.use_seed = 1;
        p.seed = 77 + run; /* different secret randomness too */
        obl_nroram *o = NULL;
        CHECK_EQ_U64(obl_nroram_create(&o, &p), OBL_OK);
        L = obl_nroram_num_leaves(o);
        if (run == 0)
            for (int t = 0; t < ops; t++)
                pubpos[t] = test_rng_below(&R, L);
        CHECK(obl_trace_init(&tr[run], 1u << 20));
        test_rng sr;
        test_rng_seed(&sr, 1000 + run);
        obl_trace_begin(&tr[run]);
        for (int t = 0; t < ops; t++) {
            unsigned char in[24], out[24];
            test_rng_fill(&sr, in, sizeof(in));
            uint64_t id = test_rng_below(&sr, 200), op = test_rng_below(&sr, 3);
            uint64_t np = test_rng_below(&sr, L);
            obl_err e = obl_nroram_access(o, id, pubpos[t], np, op, in, out, NULL);
            CHECK(e == OBL_OK);
        }
        obl_trace_end();
        obl_nroram_destroy(o);
    }
    CHECK(tr[0].n > 0);
    CHECK(obl_trace_equal(&tr[0], &tr[1]));
    if (!obl_trace_equal(&tr[0], &tr[1]))
        fprintf(stderr, "  traces differ at event %zu\n", obl_trace_first_diff(&tr[0], &tr[1]));
    obl_trace_free(&tr[0]);
    obl_trace_free(&tr[1]);
    free(pubpos);
}

/* ---------------------------------------------------------------- RORAM -- */

/* RORAM parameters: n values of vs bytes, scan_max, a fresh seed. */
static void roram_params(obl_roram_params *p, uint64_t n, size_t vs, uint32_t scan_max)
{
    memset(p, 0, sizeof(*p));
    p->n = n;
    p->value_size = vs;
    p->scan_max = scan_max;
    p->use_seed = 1;
    p->seed = test_rng_next(&R);
}

static void roram_model(uint64_t n, size_t vs, long ops, uint32_t scan_max, int from)
{
    obl_roram_params p;
    roram_params(&p, n, vs, scan_max);
    unsigned char *mv = (unsigned char *)xmalloc(n * vs);
    if (from)
        test_rng_fill(&R, mv, n * vs);
    else
        memset(mv, 0, n * vs);
    obl_roram *r = NULL;
    obl_err e = OBL_OK;
    (void)e;
    if (from) {
        unsigned char *init = (unsigned char *)xmalloc(n * vs);
        memcpy(init, mv, n * vs);
        OBL_SECRET(init, n * vs);
        e = obl_roram_create_from(&r, &p, init);
        free(init);
    } else {
        e = obl_roram_create(&r, &p);
    }
    CHECK_EQ_U64(e, OBL_OK);
    if (!r) {
        free(mv);
        return;
    }
    CHECK_EQ_U64(obl_roram_size(r), n);
    unsigned char *in = (unsigned char *)xmalloc(vs), *out = (unsigned char *)xmalloc(vs);
    for (long t = 0; t < ops; t++) {
        uint64_t idx = test_rng_below(&R, n), w = test_rng_below(&R, 2);
        test_rng_fill(&R, in, vs);
        uint64_t sidx = idx, sw = w;
        OBL_SECRET(&sidx, sizeof(sidx));
        OBL_SECRET(&sw, sizeof(sw));
        OBL_SECRET(in, vs);
        int kind = (int)(t % 3); /* access, read, write */
        if (kind == 0)
            e = obl_roram_access(r, sidx, sw, in, out);
        else if (kind == 1)
            e = obl_roram_read(r, sidx, out);
        else
            e = obl_roram_write(r, sidx, in);
        OBL_DECLASSIFY(in, vs);
        OBL_DECLASSIFY(out, vs);
        CHECK_EQ_U64(e, OBL_OK);
        if (e != OBL_OK && T.failures < 40)
            fprintf(stderr, "  roram n=%" PRIu64 " vs=%zu scan_max=%u from=%d op %ld: %s\n", n, vs,
                    scan_max, from, t, obl_err_name(e));
        if (kind != 2)
            CHECK_MEM(out, mv + idx * vs, vs);
        if ((kind == 0 && w) || kind == 2)
            memcpy(mv + idx * vs, in, vs);
    }
    /* final sweep over (a prefix of) the array */
    for (uint64_t i = 0; i < n && i < (T.ct ? 16u : 2048u); i++) {
        e = obl_roram_read(r, i, out);
        OBL_DECLASSIFY(out, vs);
        CHECK_EQ_U64(e, OBL_OK);
        CHECK_MEM(out, mv + i * vs, vs);
    }
    obl_oram_stats st;
    obl_roram_stats(r, &st);
    CHECK_EQ_U64(st.overflows, 0);
    obl_roram_destroy(r);
    free(mv);
    free(in);
    free(out);
}

static void ro_add_fn(void *ctx, void *value, uint64_t found, uint64_t *keep)
{
    (void)found;
    (void)keep;
    unsigned char *v = (unsigned char *)value;
    v[0] = (unsigned char)(v[0] + *(unsigned char *)ctx);
}

/* A RORAM of n random values of vs bytes built from an array (*a, the
 * caller frees it), with the given scan_max and a fresh seed. */
static obl_err build_random(obl_roram **r, unsigned char **a, uint64_t n, size_t vs,
                            uint32_t scan_max)
{
    *a = (unsigned char *)xmalloc(n * vs);
    test_rng_fill(&R, *a, n * vs);
    obl_roram_params p;
    roram_params(&p, n, vs, scan_max);
    return obl_roram_create_from(r, &p, *a);
}

/*
 * Builds from an array at every size n = 1 .. nmax (values of 8, 56 and 100
 * bytes, forced recursion every other size), each read back whole: the
 * build's stash window and expansion meet every ratio of n to the tree's
 * slots.
 */
static void roram_build_sizes(uint64_t nmax)
{
    static const size_t vss[] = {8, 56, 100};
    unsigned char out[100];
    for (uint64_t n = 1; n <= nmax; n++)
        for (size_t v = 0; v < 3; v++) {
            size_t vs = vss[v];
            unsigned char *a = NULL;
            obl_roram *r = NULL;
            CHECK_EQ_U64(build_random(&r, &a, n, vs, n & 1 ? 2 : 0), OBL_OK);
            for (uint64_t i = 0; r && i < n; i++) {
                CHECK_EQ_U64(obl_roram_read(r, i, out), OBL_OK);
                OBL_DECLASSIFY(out, vs); /* the test compares it */
                CHECK_MEM(out, a + i * vs, vs);
            }
            obl_roram_destroy(r);
            free(a);
        }
}

/*
 * The build's stash path: with every leaf forced to 0, first fit fills path
 * 0 and puts the rest into the stash (n - 2 * levels blocks); every value
 * must still read back, and a build needing more than the stash fails
 * with OBL_ERR_STASH_OVERFLOW, freeing everything.
 */
static void roram_build_crowded(void)
{
    static const size_t vss[] = {8, 64, 100};
    unsigned char out[100];
    nr_build_set_leaf_mask(0);
    for (size_t v = 0; v < 3; v++)
        for (uint64_t n = 1; n <= 40; n++) {
            size_t vs = vss[v];
            unsigned char *a = NULL;
            obl_roram *r = NULL;
            /* scan_max 2: trees, even for so few values */
            obl_err e = build_random(&r, &a, n, vs, 2);
            /* the data level has 8 values of 8 bytes per block */
            uint64_t blocks = vs == 8 ? (n + 7) / 8 : n, D = nr_log_leaves(blocks) + 1;
            /* the default stash: 24 above 2 blocks per leaf (nr_shape) */
            uint64_t S =
                blocks > ((uint64_t)2 << (D - 1)) ? NR_STASH_LOADED : OBL_ORAM_DEFAULT_STASH;
            if (blocks > 2 * D + S) { /* the path and the stash */
                CHECK_EQ_U64(e, OBL_ERR_STASH_OVERFLOW);
                CHECK(r == NULL);
            } else {
                CHECK_EQ_U64(e, OBL_OK);
                /* the reads start with a stash that may be nearly full:
                 * an overflow is reported (the read is complete), or the
                 * structure refuses (STATE) until extra evictions succeed */
                for (uint64_t i = 0; r && i < n; i++) {
                    obl_err re = OBL_ERR_STATE;
                    for (int t = 0; t < 50 && re == OBL_ERR_STATE; t++)
                        re = obl_roram_read(r, i, out);
                    CHECK(re == OBL_OK || re == OBL_ERR_STASH_OVERFLOW);
                    OBL_DECLASSIFY(out, vs); /* the test compares it */
                    CHECK_MEM(out, a + i * vs, vs);
                }
            }
            obl_roram_destroy(r);
            free(a);
        }
    nr_build_set_leaf_mask(UINT64_MAX);
}

/*
 * The end of a build's trace-equality case: the two runs' traces (of a
 * build of n values of vs bytes, described by `what`) must be long, whole
 * and equal; prints the case and frees both.
 */
static void build_traces_done(obl_trace tr[2], const char *what, uint64_t n, size_t vs)
{
    CHECK(tr[0].n > 1000 && !tr[0].overflow);
    int eq = obl_trace_equal(&tr[0], &tr[1]);
    CHECK(eq);
    if (!eq)
        fprintf(stderr, "  n %" PRIu64 " vs %zu: traces differ at event %zu\n", n, vs,
                obl_trace_first_diff(&tr[0], &tr[1]));
    printf("  build %s, n %" PRIu64 " vs %zu: %zu events, equal\n", what, n, vs, tr[0].n);
    obl_trace_free(&tr[0]);
    obl_trace_free(&tr[1]);
}

/*
 * Checks a fresh 64-bit build of blocks ids[0 .. n) with leaves lv and
 * values data: every real slot of the stash and the tree holds one of
 * them, each exactly once, with its leaf and value, and a tree slot lies
 * on its block's path.
 */
static void nr_check_built(const obl_nroram *o, uint64_t n, const uint64_t *ids, const uint32_t *lv,
                           const unsigned char *data, size_t vs)
{
    unsigned char *seen = (unsigned char *)calloc(n, 1), *v = (unsigned char *)xmalloc(vs);
    uint64_t count = 0;
    for (uint64_t s = 0; seen && s < o->P + o->nbuckets * NR_Z; s++) {
        const unsigned char *mp, *vp;
        uint64_t b = 0, k = 0;
        if (s < o->P) {
            mp = (const unsigned char *)o->bmeta + s * 2 * o->pb;
            vp = o->bdata + s * vs;
        } else {
            b = (s - o->P) / NR_Z;
            const unsigned char *bp = o->tree + b * o->bstride;
            mp = bp + (s - o->P) % NR_Z * 2 * o->pb;
            vp = bp + o->doff + (s - o->P) % NR_Z * vs;
            while ((((uint64_t)2 << k) - 1) <= b)
                k++;
        }
        nr_meta64 me;
        memcpy(&me, mp, sizeof(me));
        OBL_DECLASSIFY(&me, sizeof(me)); /* the test checks it */
        if (me.id == NR_DUMMY64)
            continue;
        uint64_t j = 0;
        while (j < n && ids[j] != me.id)
            j++;
        CHECK(j < n);
        if (j == n)
            continue;
        CHECK(!seen[j]);
        seen[j] = 1;
        count++;
        CHECK_EQ_U64(me.leaf, lv[j]);
        if (s >= o->P) /* bucket b of level k is on the path to its leaf */
            CHECK_EQ_U64(b - (((uint64_t)1 << k) - 1), lv[j] >> (o->logL - k));
        memcpy(v, vp, vs);
        OBL_DECLASSIFY(v, vs); /* the test compares it */
        CHECK_MEM(v, data + j * vs, vs);
    }
    CHECK_EQ_U64(count, n);
    free(v);
    free(seen);
}

/* The vector prefix maximum (nr_scan_max16) against a scalar loop: one
 * non-zero word at each position (it must reach every word above it, across
 * the 128-bit lanes), then random words. */
static void nroram_scan_max_agrees(void)
{
    uint16_t in[32], out[32];
    memset(in, 0, sizeof(in));
    if (!nr_test_scan_max16(in, out)) {
        test_skip("no AVX-512 metadata passes in this build");
        return;
    }
    for (int t = 0; t < 32 + 2000; t++) {
        for (int i = 0; i < 32; i++)
            in[i] = t < 32 ? (uint16_t)(i == t ? 0x1234 : 0) : (uint16_t)test_rng_next(&R);
        nr_test_scan_max16(in, out);
        uint16_t m = 0;
        for (int i = 0; i < 32; i++) {
            m = in[i] > m ? in[i] : m;
            CHECK_EQ_U64(out[i], m);
        }
    }
}

/* The eviction's metadata passes in vector form (AVX-512 builds: stashes of
 * at most 32 slots, paths of at most 31 levels, and for 8-byte values with
 * 32- or 64-byte buckets the whole-bucket data pass with its reaches read
 * in the tree) against the portable form (nr_set_plan_scalar on the second
 * tree: scalar
 * reaches, plan and stash count, metadata copied through the path buffer,
 * ReadAndRemove and the stash insertion slot by slot):
 * the same operations on two structures with the same seed give the same
 * outputs and, at the end, the same bytes in the tree, the stash's
 * metadata and the stash's data. In other builds both are the portable
 * form. */
/* The same crowded start (every id) and `ops` random reads and writes on
 * both forms, o[0] and o[1], checking each output and position. */
static void plan_forms_run(obl_nroram *o[2], uint64_t *pos[2], uint64_t cap, size_t vs, long ops)
{
    unsigned char in[64], out[2][64];
    uint64_t errs[2] = {0, 0};
    for (long i = 0; i < (long)cap + ops; i++) {
        uint64_t id = i < (long)cap ? (uint64_t)i : test_rng_next(&R) % cap;
        uint64_t op = test_rng_next(&R) & 1 ? OBL_ORAM_WRITE : OBL_ORAM_READ;
        for (size_t b = 0; b < vs; b++)
            in[b] = (unsigned char)(i * 13 + b);
        for (int f = 0; f < 2; f++) {
            uint64_t found = 0;
            obl_err e;
            memset(out[f], 0, sizeof(out[f]));
            if (i < (long)cap) {
                e = obl_nroram_insert(o[f], id, in, &pos[f][id]);
            } else {
                uint64_t np = obl_nroram_random_pos(o[f]);
                e = obl_nroram_access(o[f], id, pos[f][id], np, op, in, out[f], &found);
                pos[f][id] = np;
            }
            OBL_DECLASSIFY(&pos[f][id], sizeof(uint64_t));
            errs[f] += e != OBL_OK;
        }
        OBL_DECLASSIFY(out[0], sizeof(out[0]));
        OBL_DECLASSIFY(out[1], sizeof(out[1]));
        CHECK_MEM(out[0], out[1], vs);
        CHECK_EQ_U64(pos[0][id], pos[1][id]);
    }
    CHECK_EQ_U64(errs[0], errs[1]);
}

/* The two forms' trees, stash metadata and stash data hold the same bytes. */
static void plan_forms_same_bytes(obl_nroram *o[2], uint32_t pb)
{
    for (int f = 0; f < 2; f++) {
        OBL_DECLASSIFY(o[f]->tree, o[f]->tree_bytes);
        OBL_DECLASSIFY(o[f]->bmeta, o[f]->bmeta_bytes);
        OBL_DECLASSIFY(o[f]->bdata, o[f]->bdata_bytes);
    }
    CHECK_MEM(o[0]->tree, o[1]->tree, o[0]->tree_bytes);
    /* the stash's metadata (P entries of two position words); the path
     * part of the buffer is scratch, and whole-bucket evictions, which the
     * scalar form switches off, do not use it */
    CHECK_MEM(o[0]->bmeta, o[1]->bmeta, (size_t)o[0]->P * 2 * (size_t)pb);
    CHECK_MEM(o[0]->bdata, o[1]->bdata, o[0]->bdata_bytes);
}

/* One configuration: two structures of the same parameters, the second in
 * the portable form, through the same operations. */
static void plan_forms_pair(const obl_nroram_params *p, long ops)
{
    obl_nroram *o[2] = {NULL, NULL};
    uint64_t *pos[2];
    for (int f = 0; f < 2; f++) {
        CHECK_EQ_U64(obl_nroram_create(&o[f], p), OBL_OK);
        if (o[f])
            nr_set_plan_scalar(o[f], f);
        pos[f] = (uint64_t *)calloc((size_t)p->capacity, sizeof(uint64_t));
    }
    plan_forms_run(o, pos, p->capacity, p->value_size, ops);
    plan_forms_same_bytes(o, p->pos_bytes);
    for (int f = 0; f < 2; f++) {
        obl_nroram_destroy(o[f]);
        free(pos[f]);
    }
}

static void nroram_plan_forms_agree(int ct)
{
    static const size_t vss[] = {8, 56, 64};
    /* 2^17 blocks: 17 levels, so the vector prefix maxima cross from the
     * first 16 lanes into the second 16 (nr_scan_max16's cross-lane step) */
    static const uint64_t caps[] = {1000, 131072};
    /* stashes of every chunk remainder (P = S + 2: 4, 5, 7, 22, 32, 35,
     * 43, 65, 66), so the whole-chunk loads and stores meet slots past P
     * in the last chunk, and the stash scans run in vector form (P <= 64)
     * and slot by slot (P > 64) */
    static const uint32_t stashes[] = {20, 30, 2, 3, 5, 33, 41, 63, 64};
    const size_t nst = sizeof(stashes) / sizeof(stashes[0]);
    for (int pb = 4; pb <= 8; pb += 4)
        for (size_t v = 0; v < 3; v++)
            for (size_t c = 0; c < 2; c++)
                for (size_t si = 0; si < nst; si++) {
                    uint64_t cap = caps[c];
                    size_t vs = vss[v];
                    if ((cap > 1000 && (vs != 8 || si != 0)) || (ct && cap > 1000))
                        continue;
                    obl_nroram_params p;
                    memset(&p, 0, sizeof(p));
                    p.capacity = cap;
                    p.value_size = vs;
                    p.pos_bytes = (uint32_t)pb;
                    p.stash_size = stashes[si];
                    p.use_seed = 1;
                    p.seed = 77 + cap + vs + (uint64_t)pb * 1000 + si;
                    /* a crowded start (every id), then random reads and writes */
                    plan_forms_pair(&p, ct ? 40 : (long)cap * 3 / SAN_DIV);
                }
}

/*
 * Pairs of NRORAM builds of the same input that must agree byte for byte
 * (tree, stash, leaves), and the tree right (in 64-bit trees; block i has
 * id i when no ids are given): with `threads` 0, packed and two-word first
 * fit (the two-word form only builds of more than about 2^27 blocks take
 * by themselves); with `threads` 1, nr_build_par on one and on two
 * threads. Returns the number of pairs that differed (with a planted
 * fault, nr_build_set_par_fault, some must; check 0 then).
 */
static long nr_build_pairs_agree(int ct, int threads, int check)
{
    static const uint64_t ns[] = {1, 2, 7, 100, 1000, 5003, 40000};
    static const size_t vss[] = {8, 56, 64, 100};
    long differ = 0;
    for (size_t c = 0; c < sizeof(ns) / sizeof(ns[0]); c++)
        for (size_t v = 0; v < sizeof(vss) / sizeof(vss[0]); v++)
            for (int with_ids = 0; with_ids < 2; with_ids++) {
                uint64_t n = ns[c];
                size_t vs = vss[v];
                if ((ct && n > 100) || (n > 5003 && (!threads || vs != 56)))
                    continue;
                obl_nroram_params p;
                memset(&p, 0, sizeof(p));
                p.capacity = n + n / 3 + 1;
                p.value_size = vs;
                p.use_seed = 1;
                p.seed = 1000 + n * 7 + vs;
                p.pos_bytes = with_ids ? 8 : 4;
                unsigned char *data = (unsigned char *)xmalloc((size_t)n * vs);
                uint64_t *ids = (uint64_t *)xmalloc((size_t)n * sizeof(uint64_t));
                uint32_t *lv[2];
                obl_nroram *o[2] = {NULL, NULL};
                for (uint64_t i = 0; i < (uint64_t)n * vs; i++)
                    data[i] = (unsigned char)(i * 29 + n);
                for (uint64_t i = 0; i < n; i++)
                    ids[i] = i * 0x9e3779b97f4a7c15ULL + 5;
                for (int f = 0; f < 2; f++) {
                    lv[f] = (uint32_t *)xmalloc((size_t)n * sizeof(uint32_t));
                    nr_build_set_packing(threads || f == 0);
                    CHECK_EQ_U64(nr_create(&o[f], &p, 0), OBL_OK);
                    CHECK_EQ_U64(nr_build_par(o[f], n, data, vs, (size_t)n * vs,
                                              with_ids ? ids : NULL, NULL, NULL, lv[f],
                                              threads && f ? 2 : 1),
                                 OBL_OK);
                    OBL_DECLASSIFY(o[f]->tree, o[f]->tree_bytes);
                    OBL_DECLASSIFY(o[f]->bmeta, o[f]->bmeta_bytes);
                    OBL_DECLASSIFY(o[f]->bdata, o[f]->bdata_bytes);
                    OBL_DECLASSIFY(lv[f], n * sizeof(uint32_t));
                }
                nr_build_set_packing(1);
                int same = !memcmp(o[0]->tree, o[1]->tree, o[0]->tree_bytes) &&
                           !memcmp(o[0]->bmeta, o[1]->bmeta, o[0]->bmeta_bytes) &&
                           !memcmp(o[0]->bdata, o[1]->bdata, o[0]->bdata_bytes) &&
                           !memcmp(lv[0], lv[1], n * sizeof(uint32_t));
                differ += !same;
                if (check) {
                    CHECK(same);
                    if (with_ids)
                        nr_check_built(o[1], n, ids, lv[1], data, vs);
                }
                for (int f = 0; f < 2; f++) {
                    obl_nroram_destroy(o[f]);
                    free(lv[f]);
                }
                free(data);
                free(ids);
            }
    return differ;
}

/* Two-thread builds: with the default cache blocks (only the largest size
 * runs on two threads) and with small ones (every size from 64 elements
 * does); then the negative control, a compare-exchange left out of the
 * two-thread sort, which the comparison must catch. */
static void nr_build_two_threads(void)
{
    nr_build_pairs_agree(T.ct, 1, 1);
    nr_build_set_blocks(1024, 8192);
    nr_build_pairs_agree(T.ct, 1, 1);
    nr_build_set_par_fault(1);
    long bad = nr_build_pairs_agree(T.ct, 1, 0);
    nr_build_set_par_fault(0);
    nr_build_set_blocks(0, 0);
    CHECK(bad > 0);
    printf("  planted fault in the two-thread sort: %ld builds differ\n", bad);
}

/* the id of a block built with an id function: its first 8 bytes */
static uint64_t first_word_id(const void *ctx, const unsigned char *block)
{
    (void)ctx;
    uint64_t id;
    memcpy(&id, block, 8);
    return id;
}

/*
 * Builds with explicit ids (an array, or a function of the block's
 * content), where the build keeps each block's leaf in its sort key
 * instead of an aux word, with every leaf forced to 0 or 1 so that the
 * stash takes what paths 0 and 1 cannot: the stash and the tree must hold
 * every block once, with its leaf, and every block must then read back by
 * its id, with its own value. More blocks than the path and the stash
 * fail with OBL_ERR_STASH_OVERFLOW.
 */
static void nr_build_ids_crowded(int ct)
{
    static const size_t vss[] = {8, 56, 64, 100};
    for (uint64_t mask = 0; mask < 2; mask++) {
        nr_build_set_leaf_mask(mask);
        for (size_t v = 0; v < sizeof(vss) / sizeof(vss[0]); v++)
            for (int use_fn = 0; use_fn < 2; use_fn++)
                for (uint64_t n = 1; n <= (ct ? 30u : 45u); n++) {
                    size_t vs = vss[v];
                    obl_nroram_params p;
                    memset(&p, 0, sizeof(p));
                    p.capacity = n;
                    p.value_size = vs;
                    p.use_seed = 1;
                    p.seed = 77 + n * 3 + vs;
                    p.pos_bytes = 8;
                    unsigned char *data = (unsigned char *)xmalloc((size_t)n * vs);
                    uint64_t *ids = (uint64_t *)xmalloc((size_t)n * sizeof(uint64_t));
                    uint32_t *lv = (uint32_t *)xmalloc((size_t)n * sizeof(uint32_t));
                    unsigned char *out = (unsigned char *)xmalloc(vs);
                    for (uint64_t i = 0; i < n; i++) {
                        ids[i] = (i + 1) * 0x9e3779b97f4a7c15ULL >> 1; /* distinct, not the dummy */
                        for (size_t b = 0; b < vs; b++)
                            data[i * vs + b] = (unsigned char)(i * 131 + b * 7 + n);
                        memcpy(data + i * vs, &ids[i], 8); /* the id function's input */
                    }
                    obl_nroram *o = NULL;
                    CHECK_EQ_U64(nr_create(&o, &p, 0), OBL_OK);
                    uint64_t D = o ? o->logL + 1 : 0, S = o ? o->S : 0;
                    obl_err e = o ? nr_build(o, n, data, vs, (size_t)n * vs, use_fn ? NULL : ids,
                                             use_fn ? first_word_id : NULL, NULL, lv)
                                  : OBL_ERR_STATE;
                    /* paths 0 and 1 share all but their leaf buckets */
                    if (n > NR_Z * (D + mask) + S) {
                        CHECK_EQ_U64(e, OBL_ERR_STASH_OVERFLOW);
                    } else if (n <= NR_Z * D + S || e != OBL_ERR_STASH_OVERFLOW) {
                        CHECK_EQ_U64(e, OBL_OK);
                        OBL_DECLASSIFY(lv, n * sizeof(uint32_t)); /* the test checks them */
                        if (e == OBL_OK)
                            nr_check_built(o, n, ids, lv, data, vs);
                        for (uint64_t i = 0; e == OBL_OK && i < n; i++) {
                            CHECK(lv[i] <= mask);
                            uint64_t found = 0;
                            obl_err re = OBL_ERR_STATE;
                            for (int t = 0; t < 50 && re == OBL_ERR_STATE; t++)
                                re = obl_nroram_access(o, ids[i], lv[i], obl_nroram_random_pos(o),
                                                       OBL_ORAM_READ, NULL, out, &found);
                            CHECK(re == OBL_OK || re == OBL_ERR_STASH_OVERFLOW);
                            OBL_DECLASSIFY(out, vs); /* the test compares them */
                            OBL_DECLASSIFY(&found, sizeof(found));
                            CHECK_EQ_U64(found, 1);
                            CHECK_MEM(out, data + i * vs, vs);
                        }
                    }
                    obl_nroram_destroy(o);
                    free(out);
                    free(lv);
                    free(ids);
                    free(data);
                }
    }
    nr_build_set_leaf_mask(UINT64_MAX);
}

/*
 * The tree build with explicit ids (the map's value ORAM: ids from an
 * array or from the block's content, the payload sort without an aux
 * word, and payloads padded to whole lines) makes the same accesses for
 * different data, ids and leaves: two runs with different seeds and
 * contents, identical traces.
 */
static uint64_t nr_build_ids_trace(unsigned threads)
{
    if (!obl_trace_enabled())
        return 0;
    uint64_t events = 0;
    static const struct {
        uint64_t n;
        size_t vs;
        int use_fn;
    } cs[] = {{517, 8, 0}, {300, 56, 0}, {300, 56, 1}, {200, 64, 1}, {150, 368, 0}, {90, 200, 1}};
    for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
        uint64_t n = cs[c].n;
        size_t vs = cs[c].vs;
        if (T.ct && n * vs > 60000)
            continue; /* memcheck: the small ones */
        obl_trace tr[2];
        for (int run = 0; run < 2; run++) {
            obl_nroram_params p;
            memset(&p, 0, sizeof(p));
            p.capacity = n + n / 4;
            p.value_size = vs;
            p.use_seed = 1;
            p.seed = 611 + run;
            p.pos_bytes = 8;
            unsigned char *data = (unsigned char *)xmalloc((size_t)n * vs);
            uint64_t *ids = (uint64_t *)xmalloc((size_t)n * sizeof(uint64_t));
            uint32_t *lv = (uint32_t *)xmalloc((size_t)n * sizeof(uint32_t));
            test_rng sr;
            test_rng_seed(&sr, 7100 + run);
            test_rng_fill(&sr, data, (size_t)n * vs);
            for (uint64_t i = 0; i < n; i++) {
                ids[i] = (i + 1) * (run ? 0x9e3779b97f4a7c15ULL : 0xc2b2ae3d27d4eb4fULL) >> 1;
                memcpy(data + i * vs, &ids[i], 8); /* the id function's input */
            }
            obl_nroram *o = NULL;
            CHECK_EQ_U64(nr_create(&o, &p, 0), OBL_OK);
            CHECK(obl_trace_init(&tr[run], 1u << 22));
            obl_trace_begin(&tr[run]);
            obl_err e = o ? nr_build_par(o, n, data, vs, (size_t)n * vs,
                                         cs[c].use_fn ? NULL : ids,
                                         cs[c].use_fn ? first_word_id : NULL, NULL, lv, threads)
                          : OBL_ERR_STATE;
            obl_trace_end();
            CHECK_EQ_U64(e, OBL_OK);
            if (e == OBL_OK) {
                OBL_DECLASSIFY(lv, n * sizeof(uint32_t)); /* the test checks them */
                nr_check_built(o, n, ids, lv, data, vs);
            }
            obl_nroram_destroy(o);
            free(lv);
            free(ids);
            free(data);
        }
        for (size_t i = 0; i < tr[0].n; i++) /* the events in order, hashed */
            events = (events ^ (tr[0].ev[i].offset * 4 + tr[0].ev[i].kind)) * 0x100000001b3ULL;
        build_traces_done(tr, cs[c].use_fn ? "with an id function" : "with ids", n, vs);
    }
    return events;
}

static void roram_update(void)
{
    obl_roram_params p;
    memset(&p, 0, sizeof(p));
    p.n = 300;
    p.value_size = 3;
    p.scan_max = 4;
    p.use_seed = 1;
    p.seed = 3;
    obl_roram *r = NULL;
    CHECK_EQ_U64(obl_roram_create(&r, &p), OBL_OK);
    unsigned char model[300] = {0};
    for (int t = 0; t < (T.ct ? 100 : 2000); t++) {
        uint64_t i = test_rng_below(&R, 300);
        unsigned char add = (unsigned char)test_rng_next(&R);
        CHECK_EQ_U64(obl_roram_update(r, i, ro_add_fn, &add), OBL_OK);
        model[i] = (unsigned char)(model[i] + add);
    }
    for (uint64_t i = 0; i < 300; i++) {
        unsigned char v[3];
        CHECK_EQ_U64(obl_roram_read(r, i, v), OBL_OK);
        OBL_DECLASSIFY(v, 3);
        CHECK_EQ_U64(v[0], model[i]);
        CHECK_EQ_U64(v[1], 0);
    }
    obl_roram_destroy(r);
}

/*
 * Chi-square: the data level's revealed leaf when one fixed index is read
 * over and over must be uniform over the L leaves. The leaf is recovered
 * from the trace: the last tree read of the data level's accessed path.
 */
static void roram_chisq(void)
{
    if (!obl_trace_enabled()) {
        printf("  trace hook not compiled in: chi-square test skipped\n");
        return;
    }
    obl_roram_params p;
    memset(&p, 0, sizeof(p));
    p.n = 1024; /* 128 data blocks: L = 64 leaves */
    p.value_size = 8;
    p.scan_max = 8; /* levels: 128 and 4 blocks (16-bit leaves: fan-out 32); base of 4 */
    p.use_seed = 1;
    p.seed = test_rng_next(&R);
    obl_roram *r = NULL;
    CHECK_EQ_U64(obl_roram_create(&r, &p), OBL_OK);
    if (!r)
        return;
    CHECK_EQ_U64(obl_roram_levels(r), 2);
    const uint64_t L = 64, D0 = 7, D1 = 2; /* level 1: 4 blocks, L = 2 */
    (void)D1;
    const int reps = T.ct ? 640 : 6400;
    uint64_t counts[64] = {0};
    obl_trace tr;
    CHECK(obl_trace_init(&tr, 4096));
    uint64_t v;
    for (int t = 0; t < reps; t++) {
        obl_trace_reset(&tr);
        obl_trace_begin(&tr);
        CHECK_EQ_U64(obl_roram_read(r, 5, &v), OBL_OK);
        obl_trace_end();
        /* the in-place path scans of the accesses (kind RW): level 1's path
         * (D1 buckets), then level 0's; its last bucket is the leaf */
        uint64_t k = 0, want = D1 + D0, leaf = UINT64_MAX;
        for (size_t i = 0; i < tr.n; i++) {
            if (tr.ev[i].region != OBL_TRACE_REGION_ORAM_TREE || tr.ev[i].kind != OBL_TRACE_RW)
                continue;
            if (++k == want)
                leaf = tr.ev[i].offset - (L - 1);
        }
        CHECK_EQ_U64(k, D1 + D0);
        CHECK(leaf < L);
        if (leaf < L)
            counts[leaf]++;
    }
    double e = (double)reps / L, chi = 0;
    for (uint64_t i = 0; i < L; i++)
        chi += (counts[i] - e) * (counts[i] - e) / e;
    /* 63 degrees of freedom: P[chi2 > 113] < 1e-4, P[chi2 < 25] < 1e-4 */
    printf("  chi-square of %d revealed leaves over %" PRIu64 " leaves: %.1f (63 dof)\n", reps, L,
           chi);
    CHECK(chi < 113.0);
    CHECK(chi > 25.0);
    obl_trace_free(&tr);
    obl_roram_destroy(r);
}

/* ------------------------------------------------------------ bad input -- */

/* Tree ORAM create: every bad parameter refused, nothing returned; the
 * NULL arguments of create, access and destroy. */
static void nroram_bad_create(void)
{
    obl_nroram *o = (obl_nroram *)&R; /* must be overwritten with NULL */
    obl_nroram_params np;
    memset(&np, 0, sizeof(np));
    np.value_size = 8;
    np.use_seed = 1;
    CHECK_EQ_U64(obl_nroram_create(&o, &np), OBL_ERR_INVALID_ARG); /* capacity 0 */
    CHECK(o == NULL);
    np.capacity = 10;
    np.value_size = 0;
    CHECK_EQ_U64(obl_nroram_create(&o, &np), OBL_ERR_INVALID_ARG);
    np.value_size = OBL_ORAM_MAX_VALUE_SIZE + 1;
    CHECK_EQ_U64(obl_nroram_create(&o, &np), OBL_ERR_INVALID_ARG);
    np.value_size = 8;
    np.stash_size = 1;
    CHECK_EQ_U64(obl_nroram_create(&o, &np), OBL_ERR_INVALID_ARG);
    np.stash_size = 0;
    np.pos_bytes = 3;
    CHECK_EQ_U64(obl_nroram_create(&o, &np), OBL_ERR_INVALID_ARG);
    np.pos_bytes = 4;
    np.capacity = (uint64_t)1 << 33;
    CHECK_EQ_U64(obl_nroram_create(&o, &np), OBL_ERR_TOO_LARGE);
    np.pos_bytes = 8;
    np.capacity = (uint64_t)1 << 62;
    CHECK_EQ_U64(obl_nroram_create(&o, &np), OBL_ERR_TOO_LARGE);
    np.capacity = (uint64_t)1 << 50; /* fits the format, not the size limit */
    np.value_size = 4096;
    CHECK_EQ_U64(obl_nroram_create(&o, &np), OBL_ERR_TOO_LARGE);
    CHECK(o == NULL);
#ifndef __SANITIZE_ADDRESS__ /* ASan aborts on an allocation it cannot serve */
    np.capacity = (uint64_t)1 << 26; /* 2^26 buckets x 8 KiB = 512 GiB: no memory for it */
    obl_err e = obl_nroram_create(&o, &np);
    CHECK(e == OBL_ERR_NOMEM);
    CHECK(o == NULL);
#endif
    CHECK_EQ_U64(obl_nroram_create(NULL, &np), OBL_ERR_INVALID_ARG);
    CHECK_EQ_U64(obl_nroram_create(&o, NULL), OBL_ERR_INVALID_ARG);
    CHECK_EQ_U64(obl_nroram_access(NULL, 0, 0, 0, 0, NULL, NULL, NULL), OBL_ERR_INVALID_ARG);
    obl_nroram_destroy(NULL);
}

/* Tree ORAM calls out of range or with a missing callback or value. */
static void nroram_bad_calls(void)
{
    obl_nroram_params np;
    memset(&np, 0, sizeof(np));
    np.capacity = 10;
    np.value_size = 8;
    np.use_seed = 1;
    obl_nroram *o = NULL;
    CHECK_EQ_U64(obl_nroram_create(&o, &np), OBL_OK);
    uint64_t v = 0;
    CHECK_EQ_U64(obl_nroram_access(o, 1, obl_nroram_num_leaves(o), 0, 0, NULL, &v, NULL),
                 OBL_ERR_RANGE);
    CHECK_EQ_U64(obl_nroram_update(o, 1, 0, 0, NULL, NULL), OBL_ERR_INVALID_ARG);
    CHECK_EQ_U64(obl_nroram_insert(o, 1, &v, NULL), OBL_ERR_INVALID_ARG);
    obl_nroram_destroy(o);
}

/* Recursive ORAM create: every bad parameter refused, nothing returned;
 * the NULL arguments of create, create_from, read and destroy. */
static void roram_bad_create(void)
{
    obl_roram *r = (obl_roram *)&R;
    obl_roram_params rp;
    memset(&rp, 0, sizeof(rp));
    rp.value_size = 8;
    rp.use_seed = 1;
    CHECK_EQ_U64(obl_roram_create(&r, &rp), OBL_ERR_INVALID_ARG); /* n 0 */
    CHECK(r == NULL);
    rp.n = 5;
    rp.value_size = 0;
    CHECK_EQ_U64(obl_roram_create(&r, &rp), OBL_ERR_INVALID_ARG);
    rp.value_size = (size_t)1 << 40;
    CHECK_EQ_U64(obl_roram_create(&r, &rp), OBL_ERR_INVALID_ARG);
    rp.value_size = 8;
    rp.n = (uint64_t)1 << 62;
    CHECK_EQ_U64(obl_roram_create(&r, &rp), OBL_ERR_TOO_LARGE);
#ifndef __SANITIZE_ADDRESS__
    rp.n = (uint64_t)1 << 33; /* a 180 GiB tree: no memory for that */
    obl_err e = obl_roram_create(&r, &rp);
    CHECK_EQ_U64(e, OBL_ERR_NOMEM);
    CHECK(r == NULL);
#endif
    CHECK_EQ_U64(obl_roram_create(NULL, &rp), OBL_ERR_INVALID_ARG);
    CHECK_EQ_U64(obl_roram_create(&r, NULL), OBL_ERR_INVALID_ARG);
    rp.n = 5;
    CHECK_EQ_U64(obl_roram_create_from(&r, &rp, NULL), OBL_ERR_INVALID_ARG);
    uint64_t v = 0;
    CHECK_EQ_U64(obl_roram_read(NULL, 0, &v), OBL_ERR_INVALID_ARG);
    obl_roram_destroy(NULL);
}

/* Recursive ORAM out of range: a public error, the array unchanged (trees
 * forced by scan_max 2, then the scanned array of the default). */
static void roram_out_of_range(void)
{
    obl_roram *r = NULL;
    obl_roram_params rp;
    memset(&rp, 0, sizeof(rp));
    rp.value_size = 8;
    rp.use_seed = 1;
    for (int scan = 0; scan < 2; scan++) {
        rp.n = 100;
        rp.scan_max = scan ? 0 : 2;
        CHECK_EQ_U64(obl_roram_create(&r, &rp), OBL_OK);
        uint64_t one = 1, got = 9;
        CHECK_EQ_U64(obl_roram_write(r, 99, &one), OBL_OK);
        CHECK_EQ_U64(obl_roram_write(r, 100, &one), OBL_ERR_RANGE);
        CHECK_EQ_U64(obl_roram_read(r, UINT64_MAX, &got), OBL_ERR_RANGE);
        CHECK_EQ_U64(got, 9);
        CHECK_EQ_U64(obl_roram_write(r, 0, NULL), OBL_ERR_INVALID_ARG);
        CHECK_EQ_U64(obl_roram_update(r, 0, NULL, NULL), OBL_ERR_INVALID_ARG);
        CHECK_EQ_U64(obl_roram_read(r, 99, &got), OBL_OK);
        OBL_DECLASSIFY(&got, sizeof(got));
        CHECK_EQ_U64(got, 1);
        obl_roram_destroy(r);
    }
}

static void bad_input(void)
{
    nroram_bad_create();
    nroram_bad_calls();
    roram_bad_create();
    roram_out_of_range();
}

/* Allocation failure at every allocation point: a clean error, nothing
 * leaked; the first budget that succeeds ends the loop. */
static void alloc_failure(void)
{
    for (int kind = 0; kind < 3; kind++) {
        long budget = 0;
        for (;; budget++) {
            test_failing_alloc fa = {budget, 0, 0};
            obl_allocator a = {test_fa_alloc, test_fa_free, &fa};
            obl_err e;
            if (kind == 0) {
                obl_nroram_params p;
                memset(&p, 0, sizeof(p));
                p.capacity = 100;
                p.value_size = 16;
                p.use_seed = 1;
                p.alloc = &a;
                obl_nroram *o = NULL;
                e = obl_nroram_create(&o, &p);
                if (e == OBL_OK) {
                    CHECK(obl_nroram_memory_bytes(o) == fa.live_bytes);
                    obl_nroram_destroy(o);
                }
            } else {
                obl_roram_params p;
                memset(&p, 0, sizeof(p));
                p.n = 3000;
                p.value_size = 8;
                p.scan_max = 8;
                p.use_seed = 1;
                p.alloc = &a;
                obl_roram *r = NULL;
                uint64_t *vals = (uint64_t *)calloc(3000, 8);
                e = kind == 1 ? obl_roram_create(&r, &p) : obl_roram_create_from(&r, &p, vals);
                free(vals);
                if (e == OBL_OK) {
                    CHECK_EQ_U64(obl_roram_levels(r), 3);
                    CHECK(obl_roram_memory_bytes(r) == fa.live_bytes);
                    obl_roram_destroy(r);
                } else {
                    CHECK(r == NULL);
                }
            }
            CHECK_EQ_U64(fa.live, 0);
            CHECK_EQ_U64(fa.live_bytes, 0);
            if (e == OBL_OK)
                break;
            CHECK_EQ_U64(e, OBL_ERR_NOMEM);
            if (budget > 100) {
                CHECK(0);
                break;
            }
        }
        printf("  allocation failure: kind %d survived %ld failing allocation points\n", kind,
               budget);
        CHECK(budget >= 3);
    }
}

/* ------------------------------------------------------------ stash soak -- */

/*
 * `ops` accesses with random ids on one NRORAM of `cap` blocks, all stored
 * (the library's shape: nr_log_leaves, its evictions per access), stash
 * limit 64, printing the stash histogram, mean and tail (docs/oram.md,
 * "Stash size and overflow"). --long only: `test_oram --long [--soak N
 * OPS] [-s SEED]`, by default 10^8 accesses at N = 2^16.
 */
static void stash_soak(uint64_t cap, long ops)
{
    /* stash 64: measure the distribution, not the default's bound */
    obl_nroram *o = nr_tree8(cap, 64, T.seed, 1);
    if (!o)
        return;
    uint64_t *pos = (uint64_t *)xmalloc(cap * sizeof(uint64_t));
    for (uint64_t i = 0; i < cap; i++)
        CHECK_EQ_U64(obl_nroram_insert(o, i, &i, &pos[i]), OBL_OK);
    obl_oram_stats st;
    obl_nroram_stats(o, &st);
    const uint64_t a0 = st.accesses; /* the inserts' share of the histogram */
    uint64_t hin[65], max = 0;
    memcpy(hin, st.hist, sizeof(hin));
    time_t t0 = time(NULL);
    for (long t = 0; t < ops; t++) {
        uint64_t id = test_rng_below(&R, cap), v;
        uint64_t np = obl_nroram_random_pos(o);
        obl_err e = obl_nroram_access(o, id, pos[id], np, OBL_ORAM_READ, NULL, &v, NULL);
        if (e != OBL_OK || v != id) {
            CHECK(0);
            break;
        }
        pos[id] = np;
        if ((t + 1) % 10000000 == 0) {
            obl_nroram_stats(o, &st);
            printf("  %ld accesses (%lds): stash max %" PRIu64 "\n", t + 1,
                   (long)(time(NULL) - t0), st.stash_max);
            fflush(stdout);
        }
    }
    obl_nroram_stats(o, &st);
    double sum = 0, n = 0, ge10 = 0;
    for (int k = 0; k <= 64; k++) {
        double c = (double)(st.hist[k] - hin[k]);
        sum += k * c;
        n += c;
        ge10 += k >= 10 ? c : 0;
        max = c > 0 ? (uint64_t)k : max;
    }
    printf("  stash soak: N=%" PRIu64 " in %" PRIu64 " leaves (%.4f per leaf), %u evictions "
           "per access, %" PRIu64 " accesses after the inserts, seed %" PRIu64 ", %lds\n"
           "  mean %.5f, max %" PRIu64 ", P[>=10] %.2e\n"
           "  histogram (occupancy after an access: count):\n",
           cap, obl_nroram_num_leaves(o), (double)cap / (double)obl_nroram_num_leaves(o), o->ev,
           st.accesses - a0, T.seed, (long)(time(NULL) - t0), sum / n, max, ge10 / n);
    for (int k = 0; k <= 64; k++)
        if (st.hist[k] - hin[k])
            printf("    %2d: %" PRIu64 "\n", k, st.hist[k] - hin[k]);
    free(pos);
    obl_nroram_destroy(o);
}

/*
 * Trace equality of the oblivious builds (src/oram/build.c): two RORAMs
 * created with the same public parameters, different secret values and
 * different PRG seeds (so different leaves) must report the same sequence
 * of compare-exchange positions and slot writes. Zero-valued creation and
 * creation from an array, value sizes that take each network path
 * (8: packed keys only; 56 and 64: 64-byte payloads in registers; 100:
 * 128-byte payloads, 8 key decisions per vector; 200: element by element;
 * 4096 with 100 values: more elements than one cache block holds, so the
 * blocked stages run too), and sizes that are not powers of two.
 */
static void roram_build_trace(void)
{
    if (!obl_trace_enabled()) {
        printf("  trace hook not compiled in: trace test skipped\n");
        return;
    }
    static const struct {
        uint64_t n;
        size_t vs;
        int from;
    } cs[] = {{300, 8, 0},   {300, 8, 1},   {1000, 56, 1},  {517, 64, 1},
              {200, 100, 1}, {150, 200, 1}, {100, 4096, 1}};
    for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
        if (T.ct && cs[c].n * cs[c].vs > 60000)
            continue; /* memcheck: the small ones */
        obl_trace tr[2];
        for (int run = 0; run < 2; run++) {
            obl_roram_params p;
            memset(&p, 0, sizeof(p));
            p.n = cs[c].n;
            p.value_size = cs[c].vs;
            p.scan_max = 2; /* recursion: every level is built */
            p.use_seed = 1;
            p.seed = 501 + run;
            size_t bytes = (size_t)cs[c].n * cs[c].vs;
            unsigned char *vals = (unsigned char *)xmalloc(bytes);
            test_rng sr;
            test_rng_seed(&sr, 9000 + run);
            test_rng_fill(&sr, vals, bytes);
            CHECK(obl_trace_init(&tr[run], 1u << 22));
            obl_roram *r = NULL;
            obl_trace_begin(&tr[run]);
            obl_err e = cs[c].from ? obl_roram_create_from(&r, &p, vals) : obl_roram_create(&r, &p);
            obl_trace_end();
            CHECK_EQ_U64(e, OBL_OK);
            /* the build is correct too: one value read back (the given one,
             * or zeros) */
            static const unsigned char zeros[4096];
            unsigned char out[4096];
            memset(out, 0xa5, sizeof(out));
            uint64_t at = cs[c].n / 2;
            CHECK_EQ_U64(obl_roram_read(r, at, out), OBL_OK);
            OBL_DECLASSIFY(out, cs[c].vs); /* the test's own check */
            OBL_DECLASSIFY(vals + at * cs[c].vs, cs[c].vs);
            if (cs[c].from)
                CHECK(memcmp(out, vals + at * cs[c].vs, cs[c].vs) == 0);
            else
                CHECK_MEM(out, zeros, cs[c].vs);
            obl_roram_destroy(r);
            free(vals);
        }
        build_traces_done(tr, cs[c].from ? "from an array" : "of zeros", cs[c].n, cs[c].vs);
    }
}

/* ------------------------------------------------------------ sub-tests -- */

static const size_t vsz[] = {1, 4, 8, 32, 56, 64, 100, 4096};

/* NRORAM against its model at every capacity and value size. */
static void nroram_models(void)
{
    const int ct = T.ct;
    static const uint64_t caps[] = {1, 2, 3, 1000, 1024, 65536, 777};
    for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++)
        for (size_t v = 0; v < 8; v++) {
            uint64_t cap = caps[c];
            size_t vs = vsz[v];
            if (ct && (cap > 1024 || vs > 100))
                continue;
            if (cap * vs > ((size_t)16 << 20)) /* 2^16 x 4096: too big here */
                continue;
            long ops = ct ? 60 : (cap >= 65536 ? 30000 : 4000) / SAN_DIV;
            nroram_model(cap, vs, ops, 0, 0);
        }
    nroram_model(ct ? 100 : 3000, 8, ct ? 100 : 20000, 0, 8); /* 8-byte metadata */
    if (ct)
        nroram_model(3, 4096, 40, 0, 0);
}

/*
 * Tree shapes around the leaf-load limit (nr_log_leaves: capacity <=
 * 2.5 L; three evictions per access above 2 blocks per leaf): capacities
 * just below, at and above 2L and the limit, their leaves and eviction
 * counts, and each against the model; the leaves of large capacities.
 */
static void nroram_leaf_loads(void)
{
    const int ct = T.ct;
    const uint64_t L = ct ? 16 : 2048, top = NR_LEAF_LOAD_NUM * L / NR_LEAF_LOAD_DEN;
    const struct {
        uint64_t cap, L;
        uint32_t ev;
    } s[] = {{2 * L - 1, L, 2}, {2 * L, L, 2},       {2 * L + 1, L, 3},   {5 * L / 2, L, 3},
             {top, L, 3},       {top + 1, 2 * L, 2}, {top / 2, L / 2, 3}, {top / 2 + 1, L, 2}};
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
        CHECK_EQ_U64(nr_log_leaves(s[i].cap), (uint64_t)__builtin_ctzll(s[i].L));
        obl_nroram_params p;
        memset(&p, 0, sizeof(p));
        p.capacity = s[i].cap;
        p.value_size = 8;
        obl_nroram *o = NULL;
        CHECK_EQ_U64(obl_nroram_create(&o, &p), OBL_OK);
        if (o) {
            CHECK_EQ_U64(obl_nroram_num_leaves(o), s[i].L);
            CHECK_EQ_U64(o->ev, s[i].ev);
            CHECK_EQ_U64(o->pf_lead, s[i].ev);
            CHECK_EQ_U64(o->S, s[i].ev == 3 ? NR_STASH_LOADED : OBL_ORAM_DEFAULT_STASH);
        }
        obl_nroram_destroy(o);
        nroram_model(s[i].cap, 8, ct ? 60 : 8000 / SAN_DIV, 0, 0);
        nroram_model(s[i].cap, 56, ct ? 40 : 4000 / SAN_DIV, 0, 0);
    }
    /* large shapes (no tree built): at and just over the limit, powers of
     * two; the sharded map's per-shard omaps at N = 2^20, 5/4 N capacity,
     * S = 2 (659,449 with its routing margin) and S = 1 (1,310,721) take
     * twice the leaves of 5/4 N / S (docs/oram.md, "Stash size and
     * overflow": why the limit stays) */
    const uint64_t big = NR_LEAF_LOAD_NUM * ((uint64_t)1 << 50) / NR_LEAF_LOAD_DEN;
    const struct {
        uint64_t cap;
        uint32_t logL;
    } b[] = {{659449, 19},
             {1310721, 20},
             {1310720, 19},
             {1u << 20, 19},
             {(1u << 20) + 1, 19},
             {655360, 18},
             {655361, 19},
             {5u << 23, 24},
             {(uint64_t)1 << 40, 39},
             {(uint64_t)1 << 56, 55},
             {big, 50},
             {big + 1, 51}};
    for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++)
        CHECK_EQ_U64(nr_log_leaves(b[i].cap), b[i].logL);
}

/* A tree of `cap` blocks (dense if dense), every block stored, its
 * default stash (24; 36 dense above 2.5 per leaf), `ops` random reads with
 * ev evictions per access: the overflows, and the mean stash occupancy
 * after an access in *mean. */
static long full_load_stash(uint64_t cap, int dense, uint32_t ev, long ops, double *mean)
{
    obl_nroram_params p;
    memset(&p, 0, sizeof(p));
    p.capacity = cap;
    p.value_size = 8;
    p.dense = dense;
    p.track_histogram = 1;
    p.use_seed = 1;
    p.seed = 11;
    obl_nroram *o = NULL;
    CHECK_EQ_U64(obl_nroram_create(&o, &p), OBL_OK);
    *mean = -1;
    if (!o)
        return -1;
    nr_set_evictions(o, ev);
    uint64_t *pos = (uint64_t *)xmalloc(cap * sizeof(uint64_t));
    long over = 0;
    for (uint64_t i = 0; i < cap; i++) {
        obl_err e = obl_nroram_insert(o, i, &i, &pos[i]);
        over += e == OBL_ERR_STASH_OVERFLOW;
        CHECK(e == OBL_OK || e == OBL_ERR_STASH_OVERFLOW);
    }
    for (long t = 0; t < ops; t++) {
        uint64_t id = test_rng_below(&R, cap), v = 0, found = 0;
        uint64_t np = obl_nroram_random_pos(o);
        obl_err e = obl_nroram_access(o, id, pos[id], np, OBL_ORAM_READ, NULL, &v, &found);
        over += e == OBL_ERR_STASH_OVERFLOW;
        CHECK(e == OBL_OK || e == OBL_ERR_STASH_OVERFLOW);
        CHECK(found == 1 && v == id);
        pos[id] = np;
    }
    obl_oram_stats st;
    obl_nroram_stats(o, &st);
    CHECK_EQ_U64(st.overflows, (uint64_t)over);
    double sum = 0, cnt = 0;
    for (int k = 0; k < 65; k++) {
        sum += (double)k * (double)st.hist[k];
        cnt += (double)st.hist[k];
    }
    *mean = sum / cnt;
    free(pos);
    obl_nroram_destroy(o);
    return over;
}

/* 10^5 reads of a full tree of cap blocks (dense if dense) with three
 * evictions per access: no overflow and a mean stash under bound; the same
 * with two (the control) must fail that. */
static void full_load_check(uint64_t cap, int dense, double bound)
{
    const long ops = 100000 / SAN_DIV;
    double m3, m2;
    long o3 = full_load_stash(cap, dense, 3, ops, &m3);
    long o2 = full_load_stash(cap, dense, 2, ops, &m2);
    printf("  %s%ld accesses: 3 evictions: %ld overflows, mean stash %.4f; control, 2: %ld, "
           "%.4f\n",
           dense ? "dense, " : "", ops, o3, m3, o2, m2);
    CHECK(o3 == 0 && m3 >= 0 && m3 < bound);
    CHECK(!(o2 == 0 && m2 >= 0 && m2 < bound));
}

/*
 * The stash at 2.5 blocks per leaf and full load. Healthy: no overflow of
 * the default stash and a mean occupancy under 0.05 blocks (measured 0.004
 * with three evictions per access; docs/oram.md, "Stash size and
 * overflow"). The control, two evictions per access, must fail it (its
 * mean is about 1 block here and grows with time and N). Not under
 * memcheck (too slow there).
 */
static void nroram_leaf_load_stash(void)
{
    if (T.ct) {
        test_skip("10^5 accesses at full load: too slow under memcheck");
        return;
    }
    full_load_check(NR_LEAF_LOAD_NUM * 8192 / NR_LEAF_LOAD_DEN, 0, 0.05);
}

/*
 * Dense trees (obl_nroram_params.dense: up to 2.52 blocks per leaf, a
 * stash of 36 above 2.5): shapes around 2.5 L and 2.52 L against the
 * default shape, each against the model; the sharded map's per-shard omap
 * capacities at N = 2^20 (S = 2 and 1) keep half the leaves; and the stash
 * at 2.52 blocks per leaf and full load: no overflow and a mean under 0.1
 * blocks (0.0004-0.043 over seeds; docs/oram.md, "Stash size and
 * overflow"), which two evictions per access (the control) must fail.
 */
static void nroram_dense(void)
{
    const int ct = T.ct;
    const uint64_t L = ct ? 64 : 2048, top = NR_DENSE_LOAD_NUM * L / NR_DENSE_LOAD_DEN;
    const struct {
        uint64_t cap, L, S;
        int dense;
    } s[] = {{5 * L / 2, L, NR_STASH_LOADED, 1},         {5 * L / 2 + 1, L, NR_STASH_OVERFULL, 1},
             {top, L, NR_STASH_OVERFULL, 1},             {top + 1, 2 * L, OBL_ORAM_DEFAULT_STASH, 1},
             {5 * L / 2 + 1, 2 * L, OBL_ORAM_DEFAULT_STASH, 0}};
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
        CHECK_EQ_U64(nr_log_leaves_at(s[i].cap, s[i].dense), (uint64_t)__builtin_ctzll(s[i].L));
        obl_nroram_params p;
        memset(&p, 0, sizeof(p));
        p.capacity = s[i].cap;
        p.value_size = 8;
        p.dense = s[i].dense;
        obl_nroram *o = NULL;
        CHECK_EQ_U64(obl_nroram_create(&o, &p), OBL_OK);
        if (o) {
            CHECK_EQ_U64(obl_nroram_num_leaves(o), s[i].L);
            CHECK_EQ_U64(o->S, s[i].S);
        }
        obl_nroram_destroy(o);
        nroram_model_t(s[i].cap, 8, ct ? 60 : 8000 / SAN_DIV, 0, 0, 2 * s[i].dense);
        nroram_model_t(s[i].cap, 56, ct ? 40 : 4000 / SAN_DIV, 0, 0, 2 * s[i].dense + 1);
    }
    CHECK_EQ_U64(nr_log_leaves_at(659449, 1), 18);
    CHECK_EQ_U64(nr_log_leaves_at(659449, 0), 19);
    CHECK_EQ_U64(nr_log_leaves_at(1310721, 1), 19);
    CHECK_EQ_U64(nr_log_leaves_at(660602, 1), 18);
    CHECK_EQ_U64(nr_log_leaves_at(660603, 1), 19);
    if (ct)
        return; /* 10^5 accesses at full load: too slow under memcheck */
    full_load_check(NR_DENSE_LOAD_NUM * 8192 / NR_DENSE_LOAD_DEN, 1, 0.1);
}

/* NRORAM and RORAM models, block sizes moved in vector registers. */
static void register_block_models(void)
{
    const int ct = T.ct;
    /* AVX-512 builds hold blocks of 16 .. 512 bytes in
     * 1 .. 8 vectors, the last one partly (nr_reg_words); 520 takes
     * the other path. Capacities where the last bucket of the tree is
     * on many paths (its overhang reaches the slack). */
    static const size_t rs[] = {16, 24, 40, 48, 100, 120, 192, 264, 333, 384, 448, 512, 520};
    for (size_t v = 0; v < sizeof(rs) / sizeof(rs[0]); v++) {
        if (ct && v % 3 != 0)
            continue;
        nroram_model(ct ? 40 : 3, rs[v], ct ? 40 : 2000 / SAN_DIV, 0, 0);
        nroram_model(ct ? 40 : 1000, rs[v], ct ? 40 : 4000 / SAN_DIV, 0, (int)(v & 1) * 8);
        roram_model(ct ? 30 : 3000, rs[v], ct ? 30 : 3000 / SAN_DIV, 2, 1);
    }
}

/* One read of id at leaf pos in a tagged tree (retried while the tree
 * refuses); the leaf it moves to, found and the value into out. */
static uint64_t tagged_read(obl_nroram *o, uint64_t id, uint64_t pos, uint64_t *found,
                            unsigned char *out)
{
    uint64_t np = obl_nroram_random_pos(o);
    OBL_DECLASSIFY(&np, sizeof(np)); /* the test keeps it */
    obl_err e = OBL_ERR_STATE;
    for (int t = 0; t < 50 && e == OBL_ERR_STATE; t++)
        e = obl_nroram_access(o, id, pos, np, OBL_ORAM_READ, NULL, out, found);
    CHECK(e == OBL_OK || e == OBL_ERR_STASH_OVERFLOW);
    OBL_DECLASSIFY(found, sizeof(*found));
    OBL_DECLASSIFY(out, o->vs);
    return np;
}

/*
 * Tagged trees (the map's value ORAM, nroram_internal.h): streams against
 * the model with 64-bit ids that share their low words (model_id); builds
 * from such ids (nr_build) read back block by block, where an id that
 * differs from a stored one in its tag bits only, read on that block's
 * leaf, and a stored id read on another leaf (its sibling: the paths
 * share every bucket but the leaf's) find nothing and change nothing.
 */
static void nroram_tagged(void)
{
    const int ct = T.ct;
    nroram_model_t(ct ? 40 : 1000, 56, ct ? 60 : 6000 / SAN_DIV, 0, 0, 1);
    nroram_model_t(ct ? 40 : 1000, 8, ct ? 60 : 4000 / SAN_DIV, 0, 0, 1);
    nroram_model_t(ct ? 40 : 1000, 100, ct ? 40 : 3000 / SAN_DIV, 0, 0, 1);
    if (!ct)
        nroram_model_t(65536, 56, 30000 / SAN_DIV, 0, 0, 1);
    static const uint64_t ns[] = {1, 7, 64, 300};
    for (size_t c = 0; c < sizeof(ns) / sizeof(ns[0]); c++) {
        const uint64_t n = ct && ns[c] > 30 ? 30 : ns[c];
        const size_t vs = 56;
        obl_nroram_params p;
        memset(&p, 0, sizeof(p));
        p.capacity = n;
        p.value_size = vs;
        p.pos_bytes = NR_POS_TAGGED;
        p.use_seed = 1;
        p.seed = 91 + n;
        obl_nroram *o = NULL;
        CHECK_EQ_U64(nr_create(&o, &p, 0), OBL_OK);
        if (!o)
            continue;
        CHECK_EQ_U64(o->pb, 4);
        CHECK_EQ_U64(obl_nroram_id_limit(o), UINT64_MAX);
        unsigned char *data = (unsigned char *)xmalloc(n * vs), *out = (unsigned char *)xmalloc(vs);
        uint64_t *ids = (uint64_t *)xmalloc(n * sizeof(uint64_t));
        uint32_t *lv = (uint32_t *)xmalloc(n * sizeof(uint32_t));
        for (uint64_t i = 0; i < n; i++) {
            ids[i] = model_id(o, i);
            for (size_t b = 0; b < vs; b++)
                data[i * vs + b] = (unsigned char)(i * 29 + b * 3 + n);
        }
        CHECK_EQ_U64(nr_build(o, n, data, vs, n * vs, ids, NULL, NULL, lv), OBL_OK);
        OBL_DECLASSIFY(lv, n * sizeof(uint32_t)); /* the test keeps them */
        const uint64_t other = o->tag_mask << 32; /* tag bits no stored id has */
        CHECK((n >> 2) < o->tag_mask || o->L == 1);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t found = 7;
            if (o->L > 1) {
                tagged_read(o, ids[i] | other, lv[i], &found, out);
                CHECK_EQ_U64(found, 0);
                tagged_read(o, ids[i], lv[i] ^ 1, &found, out);
                CHECK_EQ_U64(found, 0);
            }
            lv[i] = (uint32_t)tagged_read(o, ids[i], lv[i], &found, out);
            CHECK_EQ_U64(found, 1);
            CHECK_MEM(out, data + i * vs, vs);
        }
        for (uint64_t i = 0; i < n; i++) { /* and again, after all those accesses */
            uint64_t found = 7;
            lv[i] = (uint32_t)tagged_read(o, ids[i], lv[i], &found, out);
            CHECK_EQ_U64(found, 1);
            CHECK_MEM(out, data + i * vs, vs);
        }
        obl_nroram_destroy(o);
        free(lv);
        free(ids);
        free(out);
        free(data);
    }
}

/* NRORAM evictions: vector and scalar metadata passes agree. */
static void nroram_plan_forms(void) { nroram_plan_forms_agree(T.ct); }

/* Trace equality of the builds. */
static void build_traces(void)
{
    roram_build_trace();
    nr_build_ids_trace(1);
}

/* RORAM against its model at every size and value size. */
static void roram_models(void)
{
    const int ct = T.ct;
    static const uint64_t ns[] = {1, 2, 3, 1000, 1024, 65536, 5003};
    for (size_t c = 0; c < sizeof(ns) / sizeof(ns[0]); c++)
        for (size_t v = 0; v < 8; v++) {
            uint64_t n = ns[c];
            size_t vs = vsz[v];
            if (ct && (n > 1024 || vs > 100))
                continue;
            if (n * vs > ((size_t)8 << 20))
                continue;
            long ops = ct ? 40 : (n >= 65536 ? 20000 : 3000) / SAN_DIV;
            /* the default crossover, and a tiny one forcing recursion */
            roram_model(n, vs, ops, 0, (int)(v & 1));
            roram_model(n, vs, ops, 2, (int)((v + 1) & 1));
        }
    if (ct)
        roram_model(20, 4096, 20, 2, 1);
}

/* RORAM models with 32-bit positions, alone and under 16-bit ones. */
static void roram_position_widths(void)
{
    const int ct = T.ct;
    /* every position 32 bits wide, the layout of trees of more than
     * 2^16 leaves (16-bit below: roram_models) */
    ro_set_pos16_max(-1);
    roram_model(ct ? 40 : 5003, 8, ct ? 40 : 3000 / SAN_DIV, 2, 1);
    roram_model(ct ? 40 : 65536, 56, ct ? 40 : 6000 / SAN_DIV, 2, 0);
    roram_model(ct ? 200 : 1000, 32, ct ? 40 : 3000 / SAN_DIV, 2, 1);
    /* the default crossover: a 32-bit base of 626 (ct: 125) leaves, whole
     * vectors and a tail in the AVX-512 scan */
    roram_model(ct ? 1000 : 5003, 8, ct ? 40 : 3000 / SAN_DIV, 0, 1);
    /* both widths in one structure: 16-bit leaves only for trees of
     * at most 2^5 leaves. 5003 x 8 bytes: data 626 blocks (32-bit
     * leaves), positions 40 (16-bit), 2, base; with scan_max 63: 626,
     * 40 and a 16-bit base under the 32-bit level */
    ro_set_pos16_max(5);
    roram_model(5003, 8, ct ? 40 : 3000 / SAN_DIV, 2, 1);
    roram_model(5003, 8, ct ? 40 : 3000 / SAN_DIV, 63, 0);
    ro_set_pos16_max(16);
    if (!ct) /* a 16-bit base of more than 2^16 leaves (ro_base_swap's
              * chunks of 2^16): 70001 data blocks of 8 x 8 bytes, one
              * tree of at most 2^16 leaves, scan_max above its count */
        roram_model(70001 * 8, 8, 2000 / SAN_DIV, 70001, 1);
    if (!ct) /* the library's rule: 131073 blocks of 56 bytes: levels
              * 131073 (32-bit leaves), 8193, 257 (16-bit), base of 9 */
        roram_model(131073, 56, 2000 / SAN_DIV, 64, 1);
}

/* RORAM models, builds with small sort blocks. */
static void roram_small_sort_blocks(void)
{
    const int ct = T.ct;
    /* blocks of 8 .. 64 elements, outer blocks of 32 .. 512: the
     * two-level blocked sort and its outer passes run at these sizes */
    nr_build_set_blocks(1024, 8192);
    static const uint64_t ns[] = {1000, 5003};
    /* 368: padded to 384 bytes in the build (the map's buckets) */
    static const size_t vss[] = {8, 56, 100, 200, 368};
    for (size_t c = 0; c < 2; c++)
        for (size_t v = 0; v < 5; v++)
            if (!ct || (ns[c] == 1000 && vss[v] <= 56))
                roram_model(ns[c], vss[v], ct ? 40 : 1000, 0, 1);
    nr_build_set_blocks(0, 0);
}

/* RORAM builds at every size up to 300 (12 under memcheck). */
static void roram_build_every_size(void) { roram_build_sizes(T.ct ? 12 : 300); }

/* NRORAM builds: packed and two-word first fit agree byte for byte (the
 * two-word form only builds of more than about 2^27 blocks take by
 * themselves), also with the blocked sorts' passes. */
static void nr_build_forms(void)
{
    nr_build_pairs_agree(T.ct, 0, 1);
    nr_build_set_blocks(1024, 8192);
    nr_build_pairs_agree(T.ct, 0, 1);
    nr_build_set_blocks(0, 0);
}

/* NRORAM builds with explicit ids, every block on one or two paths. */
static void nr_build_ids_on_few_paths(void) { nr_build_ids_crowded(T.ct); }

/* RORAM builds, first fit in two words. */
static void roram_build_two_words(void)
{
    nr_build_set_packing(0);
    roram_build_sizes(T.ct ? 12 : 100);
    roram_build_crowded();
    roram_model(1000, 56, T.ct ? 40 : 1000, 0, 1);
    nr_build_set_packing(1);
}

/* Two-thread builds recorded (their halves run one after the other on the
 * calling thread while a trace is recorded): two inputs give equal traces,
 * with the cache blocks shrunk so that the two-thread paths run, which
 * the order of the events shows (not the one-thread build's). */
static void nr_build_two_threads_trace(void)
{
    nr_build_set_blocks(1024, 8192);
    uint64_t one = nr_build_ids_trace(1), two = nr_build_ids_trace(2);
    nr_build_set_blocks(0, 0);
    CHECK(!obl_trace_enabled() || one != two);
}

/* The sub-tests, each its own ctest entry (tests/oram/tests.cmake reads
 * the TEST_CASE lines). Each restores any test switch it sets. */
static const test_case cases[] = {
    TEST_CASE(nroram_models),
    TEST_CASE(register_block_models),
    TEST_CASE(nroram_tagged),
    TEST_CASE(nroram_scan_max_agrees),
    TEST_CASE(nroram_plan_forms),
    TEST_CASE(nroram_overflow),
    TEST_CASE(nroram_update),
    TEST_CASE(nroram_leaf_loads),
    TEST_CASE(nroram_leaf_load_stash),
    TEST_CASE(nroram_dense),
    TEST_CASE(nroram_trace),
    TEST_CASE(build_traces),
    TEST_CASE(roram_models),
    TEST_CASE(roram_position_widths),
    TEST_CASE(roram_small_sort_blocks),
    TEST_CASE(roram_build_every_size),
    TEST_CASE(roram_build_crowded),
    TEST_CASE(nr_build_forms),
    TEST_CASE(nr_build_ids_on_few_paths),
    TEST_CASE(nr_build_two_threads),
    TEST_CASE(nr_build_two_threads_trace),
    TEST_CASE(roram_build_two_words),
    TEST_CASE(roram_update),
    TEST_CASE(roram_chisq),
    TEST_CASE(bad_input),
    TEST_CASE(alloc_failure),
};

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_oram");
    if (T.long_run) {
        uint64_t cap = (uint64_t)1 << 16;
        long ops = 100000000L;
        for (int i = 1; i + 2 < argc; i++)
            if (!strcmp(argv[i], "--soak")) {
                cap = strtoull(argv[i + 1], NULL, 0);
                ops = strtol(argv[i + 2], NULL, 0);
            }
        test_rng_seed(&R, T.seed);
        stash_soak(cap, ops);
        return test_done("test_oram");
    }
    return test_run("test_oram", cases, sizeof(cases) / sizeof(cases[0]), &R);
}
