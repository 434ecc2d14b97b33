/* SPDX-License-Identifier: MIT */
/*
 * The oblivious load balancer (obl/lb.h; Snoopy, Dauterman et al., SOSP
 * 2021, section 4). docs/lb.md describes the steps and what they reveal.
 *
 * Forward (obl_lb_route), on B rows {t, key, value, idx << 2 | op} held
 * as columns, t = Speck64/128(key) under the PRF key:
 *  1. sort the rows by t with the bitonic network on columns (columns.c);
 *     the shard is t scaled to [0, S), so the rows are grouped by shard,
 *     and within a shard by key (Speck is a permutation: equal images are
 *     equal keys);
 *  2. one scan: the last record of each key's run (its representative)
 *     takes the run's last write (the largest idx among its puts and
 *     erases); its rank among its shard's representatives decides whether
 *     it fits in the shard's b entries (overflow: a public error); the
 *     per-shard counts are summed for every shard at every record;
 *  3. compact the kept representatives to the front (ORCompact), then
 *     expand them to the S * b slots, slot j * b + r real iff r < count_j.
 * Backward (obl_lb_answer): the same compaction and expansion run the other
 * way (slots -> representatives), a backward scan copies each answer to its
 * key's run, and a bitonic sort on idx puts the answers in batch order.
 *
 * Secret: keys, values, ops, shards, counts, the duplicate pattern and the
 * answers. Public: B, S, b, the thread count and the overflow event. Every
 * loop bound and address depends on those only.
 */
#include <string.h>

#include <obl/lb.h>

#include "ct.h"
#include "lb/lb_internal.h"

/* Speck64/128 round keys from 16 key bytes (little-endian words). */
static void lb_speck(obl_speck *spk, const unsigned char key[16])
{
    uint32_t k[4];
    memcpy(k, key, 16);
    obl_speck_init(spk, k);
    memset(k, 0, sizeof k);
}

/* see obl/lb.h */
unsigned obl_lb_shard_of_key(const unsigned char prf_key[16], unsigned S, uint64_t key)
{
    obl_speck spk;
    lb_speck(&spk, prf_key);
    unsigned r = (unsigned)lb_shard(obl_speck_enc(&spk, key), S);
    memset(&spk, 0, sizeof spk);
    return r;
}

/* see obl/lb.h */
unsigned obl_lb_shard_of(const obl_lb *lb, uint64_t key)
{
    return (unsigned)lb_shard(obl_speck_enc(&lb->spk, key), lb->S);
}

/* see obl/lb.h */
size_t obl_lb_shard_batch(const obl_lb *lb)
{
    return lb ? lb->b : 0;
}

/* see obl/lb.h */
const char *obl_lb_variant(const obl_lb *lb)
{
    return lb ? obl_isa_name(lb->isa) : NULL;
}

/* see obl/lb.h */
size_t obl_lb_memory_bytes(const obl_lb *lb)
{
    return lb ? lb->ac.bytes + sizeof *lb : 0;
}

/* see obl/lb.h */
void obl_lb_destroy(obl_lb *lb)
{
    if (!lb)
        return;
    obl_alloc_ctx ac = lb->ac;
    for (int c = 0; c < 4; c++)
        obl_free(&ac, lb->col[c], lb->N * 8);
    obl_free(&ac, lb->y, lb->nmax * LB_W * 8);
    obl_free(&ac, lb->keep, lb->B);
    obl_free(&ac, lb->rep, lb->B);
    obl_free(&ac, lb->slot, lb->Sb);
    obl_free(&ac, lb->E, (lb->nmax + 1) * sizeof *lb->E);
    obl_free(&ac, lb->cnt, lb->S * sizeof *lb->cnt);
    obl_prg_wipe(&lb->prg);
    memset(lb->key, 0, sizeof lb->key);
    memset(&lb->spk, 0, sizeof lb->spk);
    obl_free(&ac, lb, sizeof *lb);
}

/* Sizes and the working arrays. */
static obl_err lb_alloc(obl_lb *lb)
{
    obl_alloc_ctx *ac = &lb->ac;
    for (int c = 0; c < 4; c++)
        lb->col[c] = obl_alloc(ac, lb->N * 8, 64);
    lb->y = obl_alloc(ac, lb->nmax * LB_W * 8, 64);
    lb->keep = obl_alloc(ac, lb->B, 64);
    lb->rep = obl_alloc(ac, lb->B, 64);
    lb->slot = obl_alloc(ac, lb->Sb, 64);
    lb->E = obl_alloc(ac, (lb->nmax + 1) * sizeof *lb->E, 64);
    lb->cnt = obl_alloc(ac, lb->S * sizeof *lb->cnt, 64);
    if (!lb->col[0] || !lb->col[1] || !lb->col[2] || !lb->col[3] || !lb->y || !lb->keep ||
        !lb->rep || !lb->slot || !lb->E || !lb->cnt)
        return OBL_ERR_NOMEM;
    return OBL_OK;
}

/* see obl/lb.h */
obl_err obl_lb_create(obl_lb **out, const obl_lb_params *p)
{
    if (!out || !p)
        return OBL_ERR_INVALID_ARG;
    *out = NULL;
    unsigned lambda = p->lambda ? p->lambda : 40;
    if (p->batch == 0 || p->shards == 0 || lambda > 200)
        return OBL_ERR_INVALID_ARG;
    if (p->batch > LB_MAX_B || p->shards > LB_MAX_S)
        return OBL_ERR_TOO_LARGE;
    const int isa = obl_isa_pick(); /* route.c's variant */
    if (isa < 0)
        return OBL_ERR_UNSUPPORTED;
    obl_alloc_ctx ac;
    obl_alloc_init(&ac, p->alloc);
    obl_lb *lb = obl_alloc(&ac, sizeof *lb, 64);
    if (!lb)
        return OBL_ERR_NOMEM;
    lb->ac = ac;
    lb->isa = isa;
    lb->B = p->batch;
    lb->S = p->shards;
    lb->threads = p->threads ? p->threads : 1;
    lb->b = obl_lb_shard_batch_size(lb->B, lb->S, lambda);
    lb->Sb = lb->b * lb->S;
    lb->nmax = lb->Sb > lb->B ? lb->Sb : lb->B;
    lb->N = 1;
    while (lb->N < lb->B)
        lb->N *= 2;
    obl_err e = obl_prg_init(&lb->prg, p->random, p->random_opaque);
    if (e == OBL_OK && p->prf_key)
        memcpy(lb->key, p->prf_key, 16);
    else if (e == OBL_OK)
        obl_prg_fill(&lb->prg, lb->key, 16);
    lb_speck(&lb->spk, lb->key);
    /* Without padding rows t alone is the key (PRP images are distinct);
     * with them the sort key is (t, idx): a padding row (t and idx all
     * ones) then sorts after every real row, even one with t all ones. */
    lb->kw = lb->N > lb->B ? 2 : 1;
    lb->ct = 0;
    lb->cm = lb->kw == 2 ? 1 : 3;
    lb->ck = lb->kw == 2 ? 2 : 1;
    lb->cv = lb->kw == 2 ? 3 : 2;
    if (e == OBL_OK)
        e = lb_alloc(lb);
    if (e != OBL_OK) {
        obl_lb_destroy(lb);
        return e;
    }
    *out = lb;
    return OBL_OK;
}


/* see obl/lb.h */
obl_err obl_lb_route(obl_lb *lb, const obl_lb_req *reqs, obl_lb_entry *out)
{
    if (!lb || !reqs || !out)
        return OBL_ERR_INVALID_ARG;
    return OBL_VARIANT_PICK(lb_route, lb->isa)(lb, reqs, out);
}

/* see obl/lb.h */
obl_err obl_lb_answer(obl_lb *lb, const obl_lb_entry *in, obl_lb_req *reqs)
{
    if (!lb || !in || !reqs)
        return OBL_ERR_INVALID_ARG;
    if (!lb->routed)
        return OBL_ERR_STATE;
    return OBL_VARIANT_PICK(lb_answer, lb->isa)(lb, in, reqs);
}
