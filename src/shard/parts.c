/* SPDX-License-Identifier: MIT */
/*
 * Get batches through the omaps cut into P sub-batches by position: each
 * sub-batch goes through its own balancer (route.c), so that the P
 * balancers run on P threads, where one balancer of the whole batch would
 * leave the other threads idle. A shard then answers the P padded
 * sub-batches one after the other. Duplicates of a key in two sub-batches
 * reach its shard twice; gets do not interact, so that is harmless, and
 * each sub-batch's per-shard load bound holds on its own (with lambda
 * raised by lg P, so that the P bounds together keep 2^-lambda).
 * The cut, every b and the work depend on B, P, S and the sizes alone
 * (docs/shard.md, "Sub-batches").
 */
#include "shard/shard_map.h"

struct part {
    size_t lo, B, b; /* requests lo .. lo + B - 1; b per shard */
    shard_bufs bf;   /* S * b entries (shard_bufs_alloc) */
    unsigned char *mem;
    size_t mem_bytes;
    shard_route rt;   /* the map's balancer with this part's PRG and memory */
    obl_alloc_ctx ac; /* the balancer's working memory, freed by it */
    obl_prg prg;
};
typedef struct part part;

typedef struct parts_job {
    obl_shard *m;
    unsigned P;
    part *pt;
    const unsigned char *keys;
    unsigned char *vout;
    uint64_t *found;
} parts_job;

/* Part p of B cut into P: its first request and its size. Public. */
static size_t part_range(size_t B, unsigned P, unsigned p, size_t *lo)
{
    size_t q = B / P, r = B % P;
    *lo = p * q + (p < r ? p : r);
    return q + (p < r);
}

/* see shard_map.h */
size_t shard_part_b(obl_shard *m, size_t n, unsigned P)
{
    size_t i = (n * 0x9e37u + P) & 63;
    if (m->bmemo[i].n == n && m->bmemo[i].P == P && m->bmemo[i].b) /* public */
        return m->bmemo[i].b;
    unsigned extra = 0; /* a union bound over the P balancers */
    while ((1u << extra) < P)
        extra++;
    m->bmemo[i].n = n;
    m->bmemo[i].P = P;
    m->bmemo[i].b = shard_route_b(n, m->S, m->lambda + extra);
    return m->bmemo[i].b;
}

static obl_err part_split(void *arg, size_t p)
{
    const parts_job *j = (const parts_job *)arg;
    part *t = &j->pt[p];
    return shard_route_split(&t->rt, t->B, t->b, NULL, j->keys + t->lo * j->m->p.key_size, NULL,
                             &t->bf);
}

/* Shard s: its part of every sub-batch, in order. */
static obl_err part_shard(void *arg, size_t s)
{
    const parts_job *j = (const parts_job *)arg;
    size_t ks = j->m->p.key_size, vs = j->m->p.value_size;
    for (unsigned p = 0; p < j->P; p++) {
        const part *t = &j->pt[p];
        size_t o = s * t->b;
        shard_batch bt = {t->b, t->bf.op + o,        t->bf.dummy + o, t->bf.keys + o * ks,
                          NULL, t->bf.vout + o * vs, t->bf.found + o, NULL, NULL, NULL};
        obl_err e = shard_omap_requests(j->m, s, &bt, 0);
        if (e != OBL_OK)
            return e;
    }
    return OBL_OK;
}

static obl_err part_join(void *arg, size_t p)
{
    const parts_job *j = (const parts_job *)arg;
    part *t = &j->pt[p];
    size_t ks = j->m->p.key_size, vs = j->m->p.value_size;
    return shard_route_join(&t->rt, t->B, t->b, j->keys + t->lo * ks, &t->bf, j->vout + t->lo * vs,
                            j->found + t->lo);
}

static void parts_free(obl_shard *m, part *pt, unsigned P)
{
    if (!pt)
        return;
    for (unsigned p = 0; p < P; p++) {
        shard_route_release(&pt[p].rt);
        obl_free(&m->ac, pt[p].mem, pt[p].mem_bytes);
        obl_prg_wipe(&pt[p].prg);
    }
    obl_free(&m->ac, pt, P * sizeof(part));
}

/* The parts, each with its S * b arrays and its balancer. */
static obl_err parts_alloc(obl_shard *m, size_t B, unsigned P, part **out)
{
    part *pt = (part *)obl_alloc(&m->ac, P * sizeof(part), 64);
    if (!pt)
        return OBL_ERR_NOMEM;
    obl_err e = OBL_OK;
    for (unsigned p = 0; p < P; p++) {
        part *t = &pt[p];
        t->B = part_range(B, P, p, &t->lo);
        t->b = shard_part_b(m, t->B, P);
        size_t sb;
        if (e == OBL_OK && !obl_mul_ok(t->b, m->S, &sb))
            e = OBL_ERR_TOO_LARGE;
        if (e == OBL_OK && !(t->mem = shard_bufs_alloc(m, sb, 0, &t->bf, &t->mem_bytes)))
            e = t->mem_bytes ? OBL_ERR_NOMEM : OBL_ERR_TOO_LARGE;
        unsigned char seed[32];
        obl_prg_fill(&m->prg, seed, sizeof seed);
        obl_prg_init_bytes(&t->prg, seed);
        obl_wipe(seed, sizeof seed);
        obl_alloc_init(&t->ac, &m->locked);
        t->rt = m->rt;
        t->rt.arena = NULL; /* each part's own working memory */
        t->rt.arena_bytes = 0;
        t->rt.order = NULL;
        t->rt.order_bytes = 0;
        t->bf.akeys = t->bf.keys; /* the omaps answer in request order */
        t->bf.adummy = t->bf.dummy;
        t->rt.prg = &t->prg;
        t->rt.ac = &t->ac;
        t->rt.threads = 1;
    }
    if (e != OBL_OK)
        parts_free(m, pt, P);
    else
        *out = pt;
    return e;
}

/* see shard_map.h */
void shard_parts_release(obl_shard *m)
{
    parts_free(m, m->parts, m->parts_P);
    m->parts = NULL;
    m->parts_P = 0;
    m->parts_B = 0;
}

/* The parts of a batch of B in P: those of the last batch when B and P are
 * the same (public), else made anew; allocating them every batch cost page
 * faults and wiping (the balancers' arenas) at small B. */
static obl_err parts_get(obl_shard *m, size_t B, unsigned P, part **out)
{
    if (m->parts && m->parts_B == B && m->parts_P == P) { /* public */
        *out = m->parts;
        return OBL_OK;
    }
    shard_parts_release(m);
    obl_err e = parts_alloc(m, B, P, out);
    if (e != OBL_OK)
        return e;
    m->parts = *out;
    m->parts_B = B;
    m->parts_P = P;
    return OBL_OK;
}

/* see shard_map.h */
obl_err shard_parts_get(obl_shard *m, size_t B, unsigned P, const unsigned char *keys,
                        unsigned char *vout, uint64_t *found, double t[3])
{
    part *pt = NULL;
    obl_err e = parts_get(m, B, P, &pt);
    if (e != OBL_OK)
        return e;
    parts_job j = {m, P, pt, keys, vout, found};
    double t0 = shard_now_us();
    e = obl_pool_run(m->pool, P, part_split, &j);
    double t1 = shard_now_us();
    if (e == OBL_OK)
        e = obl_pool_run(m->pool, m->S, part_shard, &j);
    double t2 = shard_now_us();
    if (e == OBL_OK)
        e = obl_pool_run(m->pool, P, part_join, &j);
    t[0] = t1 - t0;
    t[1] = t2 - t1;
    t[2] = shard_now_us() - t2;
    return e;
}
