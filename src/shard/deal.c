/* SPDX-License-Identifier: MIT */
/*
 * The bulk build's dealing (shard_deal): the n pairs move to their shards'
 * ranges of one array without revealing which shard any pair belongs to.
 * Each pair becomes a record (shard label, key, value); an MSD partition on
 * the label then splits the shards [lo, hi) of a range into [lo, mid) and
 * [mid, hi) with one compaction (obl_compact, flag: label < mid) of the
 * range, ceil(lg S) levels in all. The sizes of the ranges are sums of the
 * per-shard counts, which the dealing reveals (docs/shard.md, "Build"):
 * every address and branch is a function of n, S, the sizes and those
 * counts.
 */
#include <obl/sort.h>

#include "shard/shard_map.h"

#include "common/secret.h"
#include "common/trace.h"
#include "ct.h"

#ifdef OBL_TESTING
static int deal_plant; /* shard_deal_test_plant */
void shard_deal_test_plant(int on) { deal_plant = on; }
#endif

typedef struct deal_ctx {
    unsigned char *recs; /* n records of rs bytes: label, key, value */
    uint8_t *flags;      /* one per record, the compactions' flags */
    size_t rs;
    size_t *off;         /* off[s]: first position of shard s */
    obl_sort_params sp;
} deal_ctx;

/* Records at start .. start + len hold the shards lo .. hi - 1: leaves
 * them in shard order and sets off[lo + 1 .. hi]. Public: the ranges and
 * their sizes (sums of the revealed counts). Recursion depth ceil(lg S). */
static obl_err deal_range(deal_ctx *c, unsigned lo, unsigned hi, size_t start, size_t len)
{
    /* the range and its records' positions: public, as its size */
    OBL_TRACE_TOUCH(OBL_TRACE_REGION_MAP, OBL_TRACE_RW, start, len);
    if (hi - lo == 1) { /* public */
        c->off[hi] = start + len;
        return OBL_OK;
    }
    unsigned mid = lo + (hi - lo + 1) / 2;
    size_t lower = 0; /* records of shards below mid */
    if (len) {        /* public */
        unsigned char *r = c->recs + start * c->rs;
        for (size_t i = 0; i < len; i++) {
            uint64_t s;
            memcpy(&s, r + i * c->rs, 8);
#ifdef OBL_TEST_PLANT_LABEL_BRANCH
            /* tests only: the negative control of test_deal's memcheck
             * run (tests/shard/tests.cmake) branches on the label */
            if (s < mid)
                __asm__ volatile("" ::: "memory");
#endif
            c->flags[start + i] = (uint8_t)obl_ct_lt64(s, mid);
        }
        obl_err e = obl_compact(r, len, c->flags + start, &lower, &c->sp);
        if (e != OBL_OK)
            return e;
        OBL_DECLASSIFY(&lower, sizeof lower); /* a sum of counts: revealed */
    }
    obl_err e = deal_range(c, lo, mid, start, lower);
    return e != OBL_OK ? e : deal_range(c, mid, hi, start + lower, len - lower);
}

/* The job of the linear passes: packing the pairs into records and
 * unpacking them, in near-equal slices of positions on the pool. */
typedef struct deal_job {
    const shard_deal_env *v;
    const unsigned char *keys, *vals; /* the input pairs (pack) */
    unsigned char *dk, *dv;           /* the dealt pairs (unpack) */
    unsigned char *recs;
    size_t rs, n, slices;
} deal_job;

/* Slice t of the n positions. */
static void deal_slice(const deal_job *j, size_t t, size_t *lo, size_t *hi)
{
    *lo = j->n * t / j->slices;
    *hi = j->n * (t + 1) / j->slices;
}

/* The records of slice t: label, key and value, each padded to words. */
static obl_err deal_pack(void *arg, size_t t)
{
    const deal_job *j = (const deal_job *)arg;
    const shard_deal_env *v = j->v;
    size_t ks = v->ks, vs = v->vs, vo = 8 + 8 * v->rt->kw, lo, hi;
    deal_slice(j, t, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        unsigned char *r = j->recs + i * j->rs;
        uint64_t s = shard_route_shard_of(v->rt, j->keys + i * ks);
#ifdef OBL_TESTING
        if (deal_plant) { /* tests only: a declassified label's address */
            OBL_DECLASSIFY(&s, sizeof s);
            OBL_TRACE_TOUCH(OBL_TRACE_REGION_MAP, OBL_TRACE_READ, s, 0);
        }
#endif
        const uint64_t zero = 0; /* the pads: each field's last word first */
        memcpy(r, &s, 8);
        memcpy(r + vo - 8, &zero, 8);
        memcpy(r + 8, j->keys + i * ks, ks);
        memcpy(r + j->rs - 8, &zero, 8);
        memcpy(r + vo, j->vals + i * vs, vs);
    }
    return OBL_OK;
}

/* The keys and values of slice t's records. */
static obl_err deal_unpack(void *arg, size_t t)
{
    const deal_job *j = (const deal_job *)arg;
    size_t ks = j->v->ks, vs = j->v->vs, vo = 8 + 8 * j->v->rt->kw, lo, hi;
    deal_slice(j, t, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        memcpy(j->dk + i * ks, j->recs + i * j->rs + 8, ks);
        memcpy(j->dv + i * vs, j->recs + i * j->rs + vo, vs);
    }
    return OBL_OK;
}

/* A pass over the slices: on the pool, or on the calling thread. */
static obl_err deal_pass(const shard_deal_env *v, deal_job *j, obl_pool_fn fn)
{
    if (v->pool)
        return obl_pool_run(v->pool, j->slices, fn, j);
    for (size_t t = 0; t < j->slices; t++)
        (void)fn(j, t); /* the passes do not fail */
    return OBL_OK;
}

/* see shard_internal.h */
obl_err shard_deal_pairs(const shard_deal_env *v, const unsigned char *keys,
                         const unsigned char *vals, size_t n, unsigned char *dk,
                         unsigned char *dv, size_t *off)
{
    size_t ks = v->ks, vs = v->vs, rs = 8 + 8 * v->rt->kw + v->rt->vs8, bytes;
    unsigned S = v->S;
    memset(off, 0, (S + 1) * sizeof *off);
    off[S] = n;
    if (S == 1) { /* public: nothing to deal */
        if (n > v->cap_s)
            return OBL_ERR_FULL;
        if (n) {
            memcpy(dk, keys, n * ks);
            memcpy(dv, vals, n * vs);
        }
        return OBL_OK;
    }
    if (!obl_mul_ok(n, rs + 1, &bytes))
        return OBL_ERR_TOO_LARGE;
    unsigned char *recs = NULL;
    if (n && !(recs = (unsigned char *)obl_alloc(v->ac, bytes, 64)))
        return OBL_ERR_NOMEM;
    deal_ctx c = {recs, recs + n * rs, rs, off, {0}};
    c.sp.rec_size = rs;
    c.sp.key_size = 8;
    c.sp.threads = v->threads;
    c.sp.alloc = v->alloc;
    unsigned slices = v->pool && n >= 4096 ? v->threads : 1;
    deal_job j = {v, keys, vals, dk, dv, recs, rs, n, slices};
    obl_err e = deal_pass(v, &j, deal_pack);
    if (e == OBL_OK)
        e = deal_range(&c, 0, S, 0, n);
    for (unsigned s = 0; e == OBL_OK && s < S; s++)
        if (off[s + 1] - off[s] > v->cap_s) /* public: a capacity event */
            e = OBL_ERR_FULL;
    if (e == OBL_OK)
        e = deal_pass(v, &j, deal_unpack);
    if (recs)
        obl_free(v->ac, recs, bytes);
    return e;
}

/* see shard_map.h */
obl_err shard_deal(obl_shard *m, const unsigned char *keys, const unsigned char *vals, size_t n,
                   unsigned char *dk, unsigned char *dv, size_t *off)
{
    shard_deal_env v = {&m->rt,           m->S,    m->cap_s, m->p.key_size, m->p.value_size,
                        m->threads,       m->pool, &m->ac,   m->p.alloc};
    return shard_deal_pairs(&v, keys, vals, n, dk, dv, off);
}
