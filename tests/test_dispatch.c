/* SPDX-License-Identifier: MIT */
/*
 * Run-time dispatch (src/common/cpu.h): every instruction-set variant that
 * this library holds and this CPU runs is forced in turn (OBL_CT_VARIANT)
 * and checked against plain reference models: NRORAM (32- and 64-bit
 * metadata, block sizes that take the register, whole-bucket and generic
 * paths), RORAM and the map (word and generic layouts), the sorts (record
 * and column networks, one- and two-word keys), the map's key functions
 * (against SipHash and Speck built once), compaction and the load
 * balancer (its answers, and its shard batches the same bytes in every
 * variant). Then the variants
 * are checked against each other: the same seed and operations must leave
 * the same bytes in every tree and stash, so that no variant computes
 * anything else. A bad OBL_CT_VARIANT must make every create return
 * OBL_ERR_UNSUPPORTED (dispatching builds; a native build ignores it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <obl/lb.h>
#include <obl/omap.h>
#include <obl/oram.h>
#include <obl/sort.h>

#include "common/cpu.h"
#include "common/secret.h"
#include "omap/omap_internal.h"
#include "omap/siphash.h"
#include "omap/speck.h"
#include "oram/nroram_internal.h"
#include "testutil.h"

static test_rng R;

__extension__ typedef unsigned __int128 test_u128;

/* Forces variant v (or, with name, that word) for the structures created next. */
static void force(const char *name) { setenv("OBL_CT_VARIANT", name, 1); }

/* NRORAM against a plain array: random reads, writes and removes. */
static obl_nroram *nroram_model(uint64_t cap, size_t vs, uint32_t pb, long ops, uint64_t seed,
                                const char *want)
{
    obl_nroram_params p = test_nroram_params(cap, vs, seed);
    p.pos_bytes = pb;
    obl_nroram *o = NULL;
    CHECK_EQ_U64(obl_nroram_create(&o, &p), OBL_OK);
    if (!o)
        return NULL;
    CHECK(!strcmp(obl_nroram_variant(o), want));
    unsigned char *ref = (unsigned char *)calloc((size_t)cap, vs);
    unsigned char *has = (unsigned char *)calloc((size_t)cap, 1);
    uint64_t *pos = (uint64_t *)calloc((size_t)cap, sizeof(uint64_t));
    unsigned char in[128], out[128];
    for (uint64_t i = 0; i < cap; i++)
        pos[i] = obl_nroram_random_pos(o);
    OBL_DECLASSIFY(pos, cap * sizeof(uint64_t));
    for (long t = 0; t < ops; t++) {
        uint64_t id = test_rng_below(&R, cap), r = test_rng_below(&R, 8);
        uint64_t op = r < 4 ? OBL_ORAM_READ : r < 7 ? OBL_ORAM_WRITE : OBL_ORAM_REMOVE;
        test_rng_fill(&R, in, vs);
        uint64_t np = obl_nroram_random_pos(o), found = 0;
        memset(out, 0, vs);
        obl_err e = obl_nroram_access(o, id, pos[id], np, op, in, out, &found);
        OBL_DECLASSIFY(&np, sizeof(np));
        OBL_DECLASSIFY(out, vs);
        OBL_DECLASSIFY(&found, sizeof(found));
        CHECK(e == OBL_OK);
        pos[id] = np;
        CHECK_EQ_U64(found, has[id]);
        if (has[id])
            CHECK_MEM(out, ref + id * vs, vs);
        if (op == OBL_ORAM_WRITE) {
            memcpy(ref + id * vs, in, vs);
            has[id] = 1;
        } else if (op == OBL_ORAM_REMOVE) {
            has[id] = 0;
        }
    }
    free(ref);
    free(has);
    free(pos);
    return o;
}

static void roram_model(uint64_t n, size_t vs, long ops, const char *want)
{
    obl_roram_params p = test_roram_params(n, vs, 5);
    p.scan_max = 2; /* trees at every level, also for small n */
    obl_roram *r = NULL;
    CHECK_EQ_U64(obl_roram_create(&r, &p), OBL_OK);
    if (!r)
        return;
    CHECK(!strcmp(obl_roram_variant(r), want));
    unsigned char *ref = (unsigned char *)calloc((size_t)n, vs);
    unsigned char in[64], out[64];
    for (long t = 0; t < ops; t++) {
        uint64_t i = test_rng_below(&R, n);
        if (test_rng_next(&R) & 1) {
            test_rng_fill(&R, in, vs);
            CHECK_EQ_U64(obl_roram_write(r, i, in), OBL_OK);
            memcpy(ref + i * vs, in, vs);
        } else {
            CHECK_EQ_U64(obl_roram_read(r, i, out), OBL_OK);
            OBL_DECLASSIFY(out, vs);
            CHECK_MEM(out, ref + i * vs, vs);
        }
    }
    free(ref);
    obl_roram_destroy(r);
}

/* The map against a small table of keys k = 1 .. nk (key bytes: k's
 * little-endian bytes, zero-padded). */
static void omap_model(uint64_t cap, size_t ks, size_t vs, long ops, const char *want)
{
    obl_omap_params p = test_omap_params(cap, ks, vs, 9);
    obl_omap *m = NULL;
    CHECK_EQ_U64(obl_omap_create(&m, &p), OBL_OK);
    if (!m)
        return;
    CHECK(!strcmp(obl_omap_variant(m), want));
    const uint64_t nk = cap + cap / 2; /* some keys absent */
    unsigned char *ref = (unsigned char *)calloc((size_t)nk, vs);
    unsigned char *has = (unsigned char *)calloc((size_t)nk, 1);
    uint64_t held = 0;
    unsigned char key[32], in[64], out[64];
    for (long t = 0; t < ops; t++) {
        uint64_t k = test_rng_below(&R, nk), r = test_rng_below(&R, 4), f = 0;
        memset(key, 0, ks);
        memcpy(key, &k, ks < 8 ? ks : 8);
        if (r == 0 && (has[k] || held < cap)) {
            test_rng_fill(&R, in, vs);
            CHECK_EQ_U64(obl_omap_put(m, key, in, &f), OBL_OK);
            OBL_DECLASSIFY(&f, sizeof(f));
            CHECK_EQ_U64(f, has[k]);
            held += !has[k];
            has[k] = 1;
            memcpy(ref + k * vs, in, vs);
        } else if (r == 1) {
            CHECK_EQ_U64(obl_omap_erase(m, key, &f), OBL_OK);
            OBL_DECLASSIFY(&f, sizeof(f));
            CHECK_EQ_U64(f, has[k]);
            held -= has[k];
            has[k] = 0;
        } else {
            memset(out, 0, vs);
            CHECK_EQ_U64(obl_omap_get(m, key, out, &f), OBL_OK);
            OBL_DECLASSIFY(&f, sizeof(f));
            OBL_DECLASSIFY(out, vs);
            CHECK_EQ_U64(f, has[k]);
            if (has[k])
                CHECK_MEM(out, ref + k * vs, vs);
        }
    }
    free(ref);
    free(has);
    obl_omap_destroy(m);
}

/* The map's key functions in the map's variant (keys.c) against the hashes
 * built once: a word map's words (keys zero-extended, or fingerprints of
 * long keys), another map's buckets. */
static void keys_model(size_t ks, size_t vs, uint32_t layout, const char *want)
{
    obl_omap_params p = test_omap_params(1000, ks, vs, 11);
    p.layout = layout;
    obl_omap *m = NULL;
    CHECK_EQ_U64(obl_omap_create(&m, &p), OBL_OK);
    if (!m)
        return;
    CHECK(!strcmp(obl_omap_variant(m), want));
    unsigned char key[32];
    for (int t = 0; t < 500; t++) {
        test_rng_fill(&R, key, ks);
        uint64_t got, ref;
        if (m->words) {
            uint64_t k = 0;
            if (m->fp) {
                k = obl_siphash24(m->sk[2], m->sk[3], key, ks) & m->fpmask;
                k -= k == UINT64_MAX;
            } else {
                memcpy(&k, key, ks < 8 ? ks : 8);
            }
            ref = obl_speck_enc(&m->pk, k);
            ref -= m->fp && ref == UINT64_MAX;
            got = omap_word(m, key);
        } else {
            uint64_t h = obl_siphash24(m->sk[0], m->sk[1], key, m->iks);
            ref = (uint64_t)(((test_u128)h * m->M) >> 64);
            got = omap_bucket(m, key);
        }
        OBL_DECLASSIFY(&got, sizeof(got));
        OBL_DECLASSIFY(&ref, sizeof(ref));
        CHECK_EQ_U64(got, ref);
    }
    obl_omap_destroy(m);
}

/* Whether slot j of a metadata array of entries pb bytes wide is empty. */
static int slot_empty(const unsigned char *meta, uint32_t pb, size_t j)
{
    if (pb == 4)
        return ((const nr_meta32 *)meta)[j].id == NR_DUMMY32;
    return ((const nr_meta64 *)meta)[j].id == NR_DUMMY64;
}

/* Two trees hold the same state: the same metadata everywhere and the same
 * block in every occupied slot. An empty slot's data bytes are unspecified
 * (the AVX-512 moves clear them, the others leave old bytes). */
static void same_state(const obl_nroram *a, const obl_nroram *b)
{
    CHECK_EQ_U64(a->tree_bytes, b->tree_bytes);
    if (a->tree_bytes != b->tree_bytes)
        return;
    size_t tb = (size_t)a->nbuckets * a->bstride, mb = (size_t)a->P * (a->pb == 4 ? 8 : 16);
    OBL_DECLASSIFY(a->tree, tb);
    OBL_DECLASSIFY(b->tree, tb);
    OBL_DECLASSIFY(a->bmeta, mb);
    OBL_DECLASSIFY(b->bmeta, mb);
    OBL_DECLASSIFY(a->bdata, (size_t)a->P * a->vs);
    OBL_DECLASSIFY(b->bdata, (size_t)a->P * a->vs);
    long bad = 0;
    for (size_t k = 0; k < a->nbuckets; k++) {
        const unsigned char *x = a->tree + k * a->bstride, *y = b->tree + k * a->bstride;
        bad += memcmp(x, y, a->doff) != 0;
        for (size_t j = 0; j < NR_Z; j++)
            bad += !slot_empty(x, a->pb, j) &&
                   memcmp(x + a->doff + j * a->vs, y + a->doff + j * a->vs, a->vs) != 0;
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_MEM(a->bmeta, b->bmeta, mb);
    bad = 0;
    for (size_t j = 0; j < a->P; j++)
        bad += !slot_empty((const unsigned char *)a->bmeta, a->pb, j) &&
               memcmp((const unsigned char *)a->bdata + j * a->vs,
                      (const unsigned char *)b->bdata + j * a->vs, a->vs) != 0;
    CHECK_EQ_U64(bad, 0);
}

/* Records of w words, key first (kw words), compared as obl/sort.h does. */
static size_t cmp_words, cmp_kw;
static int rec_cmp(const void *a, const void *b)
{
    const uint64_t *x = (const uint64_t *)a, *y = (const uint64_t *)b;
    for (size_t k = 0; k < cmp_kw; k++)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

/* obl_sort (columns for a power of two, else the record network) and
 * obl_compact of n records of w words against qsort and stable filtering;
 * distinct keys, so that the sorted order is unique. */
static void sort_model(size_t n, size_t w, size_t kw)
{
    uint64_t *a = (uint64_t *)malloc(n * w * 8), *b = (uint64_t *)malloc(n * w * 8);
    uint8_t *fl = (uint8_t *)malloc(n);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < w; k++)
            a[i * w + k] = test_rng_next(&R);
        if (kw == 2)
            a[i * w] &= 7; /* equal first words: the second decides */
        a[i * w + kw - 1] = (a[i * w + kw - 1] & ~(uint64_t)0xFFFFF) | i; /* distinct */
        fl[i] = (uint8_t)(test_rng_next(&R) & 1);
    }
    obl_sort_params p;
    memset(&p, 0, sizeof(p));
    p.rec_size = w * 8;
    p.key_size = kw * 8;
    p.threads = 2;
    memcpy(b, a, n * w * 8);
    CHECK_EQ_U64(obl_sort(b, n, &p), OBL_OK);
    OBL_DECLASSIFY(b, n * w * 8);
    cmp_words = w;
    cmp_kw = kw;
    qsort(a, n, w * 8, rec_cmp);
    CHECK_MEM(a, b, n * w * 8);
    size_t cnt = 0, m = 0;
    memcpy(b, a, n * w * 8);
    CHECK_EQ_U64(obl_compact(b, n, fl, &cnt, &p), OBL_OK);
    OBL_DECLASSIFY(b, n * w * 8);
    OBL_DECLASSIFY(&cnt, sizeof(cnt));
    for (size_t i = 0; i < n; i++)
        if (fl[i])
            CHECK_MEM(b + m++ * w, a + i * w, w * 8);
    CHECK_EQ_U64(cnt, m);
    free(a);
    free(b);
    free(fl);
}

/* A batch of B requests (keys from a small range: duplicates) routed, answered
 * by a model engine (key k held with value 3k when k is odd) and routed back;
 * the shard batches are copied to *ent (S * b entries) for the comparison of
 * the variants. */
static void lb_model(size_t B, unsigned S, obl_lb_entry **ent, size_t *nent, const char *want)
{
    static const unsigned char key[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    obl_lb_params p;
    memset(&p, 0, sizeof(p));
    p.batch = B;
    p.shards = S;
    p.threads = 2;
    p.prf_key = key;
    obl_lb *lb = NULL;
    CHECK_EQ_U64(obl_lb_create(&lb, &p), OBL_OK);
    if (!lb)
        return;
    CHECK(!strcmp(obl_lb_variant(lb), want));
    size_t b = obl_lb_shard_batch(lb);
    obl_lb_req *r = (obl_lb_req *)calloc(B, sizeof(*r));
    obl_lb_entry *e = (obl_lb_entry *)calloc(S * b, sizeof(*e));
    test_rng L; /* the same batch in every variant */
    test_rng_seed(&L, 5);
    for (size_t i = 0; i < B; i++) {
        r[i].key = test_rng_below(&L, B);
        r[i].op = (uint32_t)test_rng_below(&L, 3);
        r[i].value = test_rng_next(&L);
    }
    obl_lb_req *q = (obl_lb_req *)malloc(B * sizeof(*q));
    memcpy(q, r, B * sizeof(*q));
    CHECK_EQ_U64(obl_lb_route(lb, r, e), OBL_OK);
    OBL_DECLASSIFY(e, S * b * sizeof(*e));
    *ent = (obl_lb_entry *)malloc(S * b * sizeof(*e));
    memcpy(*ent, e, S * b * sizeof(*e));
    *nent = S * b;
    for (size_t t = 0; t < S * b; t++) {
        uint64_t k = e[t].key, held = (e[t].flags & OBL_LB_REAL) && (k & 1);
        e[t].value = held ? 3 * k : 0;
        e[t].flags |= held ? OBL_LB_FOUND : 0;
    }
    CHECK_EQ_U64(obl_lb_answer(lb, e, r), OBL_OK);
    OBL_DECLASSIFY(r, B * sizeof(*r));
    for (size_t i = 0; i < B; i++) {
        CHECK_EQ_U64(r[i].key, q[i].key);
        CHECK_EQ_U64(r[i].found, q[i].key & 1);
        CHECK_EQ_U64(r[i].value, (q[i].key & 1) ? 3 * q[i].key : 0);
    }
    free(q);
    free(r);
    free(e);
    obl_lb_destroy(lb);
}

#if defined(OBL_DISPATCH)
/* A bad OBL_CT_VARIANT makes every create refuse; a cap above the CPU's
 * best variant (named best) gives the best. */
static void bad_variant_refuses(const char *best)
{
    printf("a bad OBL_CT_VARIANT: every create refuses\n");
    force("avx3");
    CHECK(!strcmp(obl_ct_variant(), "unsupported"));
    obl_nroram_params np = test_nroram_params(10, 8, 1);
    obl_nroram *o = NULL;
    CHECK_EQ_U64(obl_nroram_create(&o, &np), OBL_ERR_UNSUPPORTED);
    CHECK(o == NULL);
    obl_roram_params rp = test_roram_params(10, 8, 1);
    obl_roram *r = NULL;
    CHECK_EQ_U64(obl_roram_create(&r, &rp), OBL_ERR_UNSUPPORTED);
    CHECK(r == NULL);
    obl_omap_params mp = test_omap_params(10, 8, 8, 1);
    obl_omap *m = NULL;
    CHECK_EQ_U64(obl_omap_create(&m, &mp), OBL_ERR_UNSUPPORTED);
    CHECK(m == NULL);
    uint64_t key = 1;
    CHECK_EQ_U64(obl_omap_build(&m, &mp, &key, &key, 1), OBL_ERR_UNSUPPORTED);
    CHECK(m == NULL);
    /* a cap above the CPU's best: the best */
    force("avx512");
    CHECK(!strcmp(obl_ct_variant(), best));
}
#endif

/* sizes: 8 (whole buckets with AVX-512), 56 and 64 (registers), 100 (the
 * generic block moves) */
static const size_t VSS[] = {8, 56, 64, 100};
/* the NRORAMs' capacity and operations (few under --ct) */
#define NR_CAP ((uint64_t)(T.ct ? 60 : 3000))
#define NR_OPS ((long)(T.ct ? 60 : 6000))

/* Each runnable variant (vars, nv of them) against the reference models;
 * the load balancer's shard batches equal across variants. */
static void each_variant_models(const int *vars, int nv)
{
    const int ct = T.ct;
    const uint64_t cap = NR_CAP;
    const long ops = NR_OPS;
    obl_lb_entry *lb_ent = NULL; /* the first variant's shard batches */
    size_t lb_n = 0;
    for (int i = 0; i < nv; i++) {
        const char *name = obl_isa_name(vars[i]);
        printf("variant %s: NRORAM, RORAM and map models\n", name);
        force(name);
        CHECK(!strcmp(obl_ct_variant(), name));
        for (uint32_t pb = 4; pb <= 8; pb += 4)
            for (size_t v = 0; v < 4; v++)
                obl_nroram_destroy(nroram_model(cap, VSS[v], pb, ops, 1, name));
        roram_model(ct ? 100 : 5000, 8, ops, name);
        roram_model(ct ? 100 : 5000, 56, ops, name);
        omap_model(ct ? 40 : 2000, 8, 8, ops, name);
        omap_model(ct ? 40 : 2000, 8, 56, ops, name);
        omap_model(ct ? 40 : 2000, 16, 8, ops, name);
        keys_model(8, 8, OBL_OMAP_LAYOUT_INLINE, name);    /* words */
        keys_model(16, 8, OBL_OMAP_LAYOUT_COMPACT, name);  /* fingerprint words */
        keys_model(16, 56, OBL_OMAP_LAYOUT_INLINE, name);  /* buckets of whole keys */
        printf("variant %s: sorts, compaction, load balancer\n", name);
        sort_model(ct ? 64 : 4096, 4, 1);  /* columns, one-word key */
        sort_model(ct ? 64 : 1024, 3, 2);  /* columns, two-word key */
        sort_model(ct ? 45 : 3001, 2, 1);  /* the record network */
        obl_lb_entry *e = NULL;
        size_t ne = 0;
        lb_model(ct ? 50 : 3000, 3, &e, &ne, name);
        if (i == 0) {
            lb_ent = e;
            lb_n = ne;
        } else {
            CHECK_EQ_U64(ne, lb_n);
            if (e && lb_ent && ne == lb_n)
                CHECK_MEM(e, lb_ent, ne * sizeof(*e));
            free(e);
        }
    }
    free(lb_ent);
}

/* The same operations on each variant's NRORAM leave the same trees and
 * stashes. */
static void variants_same_trees(const int *vars, int nv)
{
    const uint64_t cap = NR_CAP;
    const long ops = NR_OPS;
    printf("variants leave the same trees and stashes\n");
    for (uint32_t pb = 4; pb <= 8; pb += 4)
        for (size_t v = 0; v < 4; v++) {
            obl_nroram *o[OBL_ISA_COUNT] = {NULL};
            test_rng saved = R;
            for (int i = 0; i < nv; i++) {
                R = saved; /* the same operations */
                force(obl_isa_name(vars[i]));
                o[i] = nroram_model(cap, VSS[v], pb, ops, 7, obl_isa_name(vars[i]));
            }
            for (int i = 1; i < nv; i++)
                if (o[0] && o[i])
                    same_state(o[0], o[i]);
            for (int i = 0; i < nv; i++)
                obl_nroram_destroy(o[i]);
        }
}

int main(int argc, char **argv)
{
    test_start(argc, argv, "test_dispatch", &R);
    printf("variant for new structures: %s; runnable:", obl_ct_variant());
    int nv = 0, vars[OBL_ISA_COUNT];
    for (int v = 0; v < OBL_ISA_COUNT; v++)
        if (obl_isa_runs(v)) {
            vars[nv++] = v;
            printf(" %s", obl_isa_name(v));
        }
    printf("\n");
    CHECK(nv >= 1);
    CHECK(!strcmp(obl_ct_variant(), obl_isa_name(vars[nv - 1])));

#if defined(OBL_DISPATCH)
    bad_variant_refuses(obl_isa_name(vars[nv - 1]));
#endif
    each_variant_models(vars, nv);
    variants_same_trees(vars, nv);
    unsetenv("OBL_CT_VARIANT");
    return test_done("test_dispatch");
}
