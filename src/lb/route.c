/* SPDX-License-Identifier: MIT */
/*
 * The load balancer's two directions (obl/lb.h, lb.c for the steps),
 * compiled once per instruction-set variant (docs/dispatch.md): the
 * balancer calls the copy it picked when it was created, and each copy
 * calls the same variant's sorts and compaction.
 */
#include <string.h>

#include "ct.h"
#include "common/secret.h"
#include "lb/lb_internal.h"
#include "sort/columns.h"
#include "sort/rec.h"

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

/* see lb_internal.h (obl_lb_route checked the arguments) */
obl_err OBL_V(lb_route)(obl_lb *lb, const obl_lb_req *reqs, obl_lb_entry *out)
{
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

/* see lb_internal.h (obl_lb_answer checked the arguments and the state) */
obl_err OBL_V(lb_answer)(obl_lb *lb, const obl_lb_entry *in, obl_lb_req *reqs)
{
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
