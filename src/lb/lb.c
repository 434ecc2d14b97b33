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
#include "common/alloc.h"
#include "common/prg.h"
#include "common/secret.h"
#include "omap/speck.h"
#include "sort/columns.h"
#include "sort/rec.h"

#define LB_W 4 /* words of a working record */
#define LB_MAX_B ((size_t)1 << 24)
#define LB_MAX_S 1024u

struct obl_lb {
    obl_alloc_ctx ac;
    size_t B, b, Sb, nmax, N; /* N: B rounded up to a power of two */
    unsigned S, threads;
    unsigned char key[16]; /* the PRF key */
    obl_speck spk;      /* its round keys */
    int ct, ck, cv, cm; /* which column holds t, key, value, idx << 2 | op */
    size_t kw;          /* key words of the forward sort: 1, or 2 when padded */
    obl_prg prg;        /* the shuffles' randomness */
    uint64_t *col[4];   /* N rows {t, key, value, idx << 2 | op} as columns,
                           sorted by t = PRP(key); the padding rows last */
    uint64_t *y;        /* nmax records of LB_W words: the slots */
    uint8_t *keep;      /* B: representative that fits (secret) */
    uint8_t *rep;       /* B: last of its key's run (secret) */
    uint8_t *slot;      /* Sb: real slot (secret) */
    uint32_t *E;        /* nmax + 1 prefix counts */
    uint32_t *cnt;      /* S per-shard counts */
    int routed;         /* public: a batch awaits obl_lb_answer */
};

/* Speck64/128 round keys from 16 key bytes (little-endian words). */
static void lb_speck(obl_speck *spk, const unsigned char key[16])
{
    uint32_t k[4];
    memcpy(k, key, 16);
    obl_speck_init(spk, k);
    memset(k, 0, sizeof k);
}

/* The shard of the image t: its top bits scaled to [0, S), a multiply. */
static inline uint64_t lb_shard(uint64_t t, unsigned S)
{
    __extension__ typedef unsigned __int128 u128;
    return (uint64_t)(((u128)t * S) >> 64);
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
    obl_alloc_ctx ac;
    obl_alloc_init(&ac, p->alloc);
    obl_lb *lb = obl_alloc(&ac, sizeof *lb, 64);
    if (!lb)
        return OBL_ERR_NOMEM;
    lb->ac = ac;
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

/* Step 1: the rows {t = PRP(key), key, value, idx << 2 | op}, then the
 * bitonic sort of the columns by t (by (t, idx) when padded). */
static void lb_load_sort(obl_lb *lb, const obl_lb_req *reqs)
{
    const size_t B = lb->B;
    uint64_t *tt = lb->col[lb->ct], *ky = lb->col[lb->ck], *va = lb->col[lb->cv];
    uint64_t *me = lb->col[lb->cm];
    for (size_t i = 0; i < B; i++) {
        uint64_t op = reqs[i].op;
        uint64_t isput = obl_ct_eq64(op, OBL_LB_PUT), iser = obl_ct_eq64(op, OBL_LB_ERASE);
        ky[i] = reqs[i].key;
        va[i] = reqs[i].value & obl_ct_mask(isput);
        me[i] = (uint64_t)i << 2 | isput * OBL_LB_PUT | iser * OBL_LB_ERASE;
    }
    obl_speck_enc_many(&lb->spk, ky, tt, B);
    for (size_t i = B; i < lb->N; i++)
        tt[i] = ky[i] = va[i] = me[i] = UINT64_MAX;
    col_arr a = {lb->col, 4, lb->kw, lb->N, lb->threads};
    col_sort(&a);
}

/* The scan's carry: the run's last write so far. */
typedef struct lb_carry {
    uint64_t has, idx, op, val;
    uint64_t rank; /* representatives before this record in its shard */
} lb_carry;

/* Step 2: representatives, their last writes, ranks, counts; returns the
 * overflow bit (secret until the caller declassifies it). */
static uint64_t lb_scan(obl_lb *lb)
{
    const size_t B = lb->B, b = lb->b;
    const unsigned S = lb->S;
    const uint64_t *tt = lb->col[lb->ct];
    uint64_t *va = lb->col[lb->cv], *me = lb->col[lb->cm];
    uint64_t over = 0, prev_rep = 0, shp = 0;
    uint32_t *cnt = lb->cnt;
    memset(cnt, 0, S * sizeof *cnt);
    lb_carry c = {0, 0, 0, 0, 0};
    for (size_t i = 0; i < B; i++) {
        /* same key as the previous row, same shard, same key as the next:
         * equal images are equal keys (a permutation) */
        const uint64_t sh = lb_shard(tt[i], S);
        uint64_t sp = 0, ssp = 0, sn = 0;
        if (i > 0) { /* public */
            ssp = obl_ct_eq64(sh, shp);
            sp = obl_ct_eq64(tt[i], tt[i - 1]);
        }
        if (i + 1 < B) /* public */
            sn = obl_ct_eq64(tt[i], tt[i + 1]);
        shp = sh;
        uint64_t idx = me[i] >> 2, op = me[i] & 3, isw = obl_ct_nonzero64(op);
        uint64_t keepc = obl_ct_mask(sp);
        c.has &= keepc;
        uint64_t better = isw & ((c.has ^ 1) | obl_ct_gt64(idx, c.idx));
        c.idx = obl_ct_select64(better, idx, c.idx);
        c.op = obl_ct_select64(better, op, c.op);
        c.val = obl_ct_select64(better, va[i], c.val);
        c.has |= better;
        c.rank = obl_ct_select64(ssp, c.rank + prev_rep, 0);
        uint64_t rep = sn ^ 1;
        uint64_t fits = obl_ct_lt64(c.rank, b);
        over |= rep & (fits ^ 1);
        lb->keep[i] = (uint8_t)(rep & fits);
        lb->rep[i] = (uint8_t)rep;
        va[i] = c.val & obl_ct_mask(c.has);
        me[i] = idx << 2 | (c.op & obl_ct_mask(c.has));
        const uint32_t s32 = (uint32_t)sh, rp = (uint32_t)rep;
        for (unsigned j = 0; j < S; j++) /* every shard: the address is public */
            cnt[j] += (uint32_t)(s32 == j) & rp;
        prev_rep = rep;
    }
    return over;
}

/* E[i] = flags set in [0, i). */
static void lb_prefix(const uint8_t *f, size_t n, uint32_t *E)
{
    uint32_t c = 0;
    for (size_t i = 0; i < n; i++) {
        E[i] = c;
        c += f[i];
    }
    E[n] = c;
}

/* see obl/lb.h */
obl_err obl_lb_route(obl_lb *lb, const obl_lb_req *reqs, obl_lb_entry *out)
{
    if (!lb || !reqs || !out)
        return OBL_ERR_INVALID_ARG;
    lb->routed = 0;
    lb_load_sort(lb, reqs);
    uint64_t over = lb_scan(lb);
    /* LEAK: the overflow event is public (obl/lb.h): probability at most
     * S * 2^-lambda per batch, like a stash overflow */
    if (OBL_DECLASSIFY_VAL(over))
        return OBL_ERR_FULL;
    const size_t B = lb->B, b = lb->b, Sb = lb->Sb;
    /* the columns stay in sorted order for obl_lb_answer: compact rows */
    const int order[LB_W] = {lb->ct, lb->ck, lb->cv, lb->cm}; /* y: {t, key, value, meta} */
    for (size_t i = 0; i < B; i++)
        for (int c = 0; c < LB_W; c++)
            lb->y[i * LB_W + c] = lb->col[order[c]][i];
    rec_arr ka = {lb->y, B, LB_W, 2, lb->threads};
    lb_prefix(lb->keep, B, lb->E);
    rec_compact(&ka, lb->E);
    if (Sb > B) /* public */
        memset(lb->y + B * LB_W, 0, (Sb - B) * LB_W * 8);
    for (size_t j = 0; j < lb->S; j++)
        for (size_t r = 0; r < b; r++)
            lb->slot[j * b + r] = (uint8_t)obl_ct_lt64(r, lb->cnt[j]);
    rec_arr ya = {lb->y, Sb, LB_W, 2, lb->threads};
    lb_prefix(lb->slot, Sb, lb->E);
    rec_expand(&ya, lb->E);
    for (size_t t = 0; t < Sb; t++) {
        const uint64_t *r = lb->y + t * LB_W, m = obl_ct_mask(lb->slot[t]);
        out[t].key = r[1] & m;
        out[t].value = r[2] & m;
        out[t].op = (uint32_t)(r[3] & 3 & m);
        out[t].flags = (uint32_t)(lb->slot[t] * OBL_LB_REAL);
    }
    lb->routed = 1;
    return OBL_OK;
}

/* see obl/lb.h */
obl_err obl_lb_answer(obl_lb *lb, const obl_lb_entry *in, obl_lb_req *reqs)
{
    if (!lb || !in || !reqs)
        return OBL_ERR_INVALID_ARG;
    if (!lb->routed)
        return OBL_ERR_STATE;
    const size_t B = lb->B, Sb = lb->Sb, nb = B < Sb ? B : Sb;
    /* the answers as records {value, found} at the slots, back to the
     * representatives: the forward compaction and expansion undone */
    uint64_t *x = lb->y;
    for (size_t t = 0; t < Sb; t++) {
        x[2 * t] = in[t].value;
        x[2 * t + 1] = (in[t].flags >> 1) & 1;
    }
    rec_arr xa = {x, Sb, 2, 1, lb->threads};
    lb_prefix(lb->slot, Sb, lb->E);
    rec_compact(&xa, lb->E);
    uint64_t *z = x + 2 * Sb; /* y holds nmax * LB_W words: room for Sb + B records of 2 */
    memcpy(z, x, nb * 16);
    memset(z + 2 * nb, 0, (B - nb) * 16);
    rec_arr za = {z, B, 2, 1, lb->threads};
    lb_prefix(lb->keep, B, lb->E);
    rec_expand(&za, lb->E);
    /* each run's answer from its representative (its last row), then rows
     * {idx << 1 | found, value} sorted back to batch order */
    uint64_t cv = 0, cf = 0, *k0 = lb->col[0], *k1 = lb->col[1];
    for (size_t i = B; i-- > 0;) {
        uint64_t rep = lb->rep[i];
        cv = obl_ct_select64(rep, z[2 * i], cv);
        cf = obl_ct_select64(rep, z[2 * i + 1], cf);
        k0[i] = (lb->col[lb->cm][i] >> 2) << 1 | cf; /* read before k1[i] is written */
        k1[i] = cv;
    }
    for (size_t i = B; i < lb->N; i++)
        k0[i] = k1[i] = UINT64_MAX;
    col_arr a = {lb->col, 2, 1, lb->N, lb->threads};
    col_sort(&a);
    for (size_t i = 0; i < B; i++) {
        reqs[i].found = (uint32_t)(k0[i] & 1);
        reqs[i].value = k1[i];
    }
    lb->routed = 0;
    return OBL_OK;
}
