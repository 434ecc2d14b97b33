/* SPDX-License-Identifier: MIT */
/*
 * The recursive ORAM's access (src/oram/roram.c has the levels' layout,
 * creation and the entry points). Compiled once per instruction-set variant
 * (common/cpu.h): its only external name is ro_access_fn_<variant>, which a
 * structure picks when it is created.
 */
#include <string.h>

#include <obl/oram.h>

#include "ct.h"
#include "common/cpu.h"
#include "common/secret.h"
#include "common/trace.h"
#include "oram/nroram_internal.h"
#include "oram/roram_internal.h"

/*
 * Base level: returns base[i] and stores nv there, reading and writing the
 * whole array (r->nbase leaves of 16 or 32 bits). Secret: i, nv, the
 * array. Public: the size.
 */
static inline uint32_t ro_base_swap(obl_roram *r, uint64_t i, uint32_t nv)
{
    const uint32_t n = (uint32_t)r->nbase, ii = (uint32_t)i;
    OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_SCAN, OBL_TRACE_RW, 0, n);
    /* plain mask expressions that the compiler vectorises; the mask comes
     * from a comparison, never a branch */
    if (r->base16) { /* public */
        /* 16-bit lane counters (jj) compared with i's low half, so that
         * the loop stays in 16-bit lanes (a 32-bit counter made gcc
         * compare two vectors of 32-bit lanes and pack them per vector);
         * chunks of 2^16 entries, i's high half as a per-chunk mask */
        uint16_t *base = (uint16_t *)r->base, acc = 0, v16 = (uint16_t)nv;
        const uint16_t lo = (uint16_t)ii;
        for (uint32_t c = 0; c < n; c += 65536) { /* public */
            const uint32_t len = n - c < 65536 ? n - c : 65536;
            const uint16_t in = (uint16_t)obl_ct_mask(obl_ct_eq64(ii >> 16, c >> 16));
            uint16_t *b = base + c, jj = 0;
            for (uint32_t j = 0; j < len; j++, jj++) {
                uint16_t m = (uint16_t)((uint16_t)(0 - (uint16_t)(jj == lo)) & in);
                uint16_t v = b[j];
                acc |= v & m;
                b[j] = v ^ (m & (v ^ v16));
            }
        }
        return acc;
    }
    uint32_t *base = (uint32_t *)r->base, acc = 0, j = 0;
#if OBL_CT_AVX512
    /* whole vectors with the mask behind an empty asm, as in ro_leaf_swap:
     * the plain loop's compare mask was folded into masked loads */
    const __m512i tgt = _mm512_set1_epi32((int)ii), nvv = _mm512_set1_epi32((int)nv);
    __m512i idx = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    __m512i accv = _mm512_setzero_si512();
    for (; j + 16 <= n; j += 16) {
        __m512i m = _mm512_movm_epi32(_mm512_cmpeq_epi32_mask(idx, tgt));
        __asm__("" : "+v"(m));
        __m512i v = _mm512_loadu_si512((const void *)(base + j));
        accv = _mm512_ternarylogic_epi32(accv, v, m, 0xf8); /* accv | (v & m) */
        _mm512_storeu_si512((void *)(base + j), _mm512_ternarylogic_epi32(m, nvv, v, 0xca));
        idx = _mm512_add_epi32(idx, _mm512_set1_epi32(16));
    }
    acc = (uint32_t)_mm512_reduce_or_epi32(accv);
    /* the last n % 16 entries, one constant-time select each */
    for (; j < n; j++) {
        uint64_t c = obl_ct_eq64(j, ii);
        acc |= base[j] & (uint32_t)obl_ct_mask(c);
        base[j] = obl_ct_select32(c, nv, base[j]);
    }
#else
    for (; j < n; j++) {
        uint32_t m = (uint32_t)0 - (uint32_t)(j == ii);
        uint32_t v = base[j];
        acc |= v & m;
        base[j] = v ^ (m & (v ^ nv));
    }
#endif
    return acc;
}

/*
 * Level l >= 1: in the block just read (o->tmp), the leaf at `slot` is
 * returned and replaced by nv; every entry is read and written. Secret:
 * slot, nv, the block. Public: the width (r->fl[l]).
 */
static inline uint32_t ro_leaf_swap(const obl_roram *r, uint32_t l, unsigned char *blk,
                                    uint64_t slot, uint32_t nv)
{
    const int w16 = r->fl[l] == RO_FAN_LOG16; /* public */
#if OBL_CT_AVX512
    /* the block is one vector: the slot's lane as a mask from a comparison,
     * turned into a lane mask behind an empty asm before it meets the
     * loaded block, so that no load or store is masked by it (the
     * masked-operand audit, docs/oram.md; a plain loop let gcc fold the
     * secret compare mask into the loads) */
    __m512i v = _mm512_loadu_si512((const void *)blk), m, nvv;
    if (w16) { /* public */
        const __m512i idx = _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19,
                                             18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5,
                                             4, 3, 2, 1, 0);
        m = _mm512_movm_epi16(_mm512_cmpeq_epi16_mask(idx, _mm512_set1_epi16((short)slot)));
        nvv = _mm512_set1_epi16((short)nv);
    } else {
        const __m512i idx = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1,
                                             0);
        m = _mm512_movm_epi32(_mm512_cmpeq_epi32_mask(idx, _mm512_set1_epi32((int)slot)));
        nvv = _mm512_set1_epi32((int)nv);
    }
    __asm__("" : "+v"(m));
    /* at most one lane survives the AND: OR-ing the halves gives it */
    uint32_t t = (uint32_t)_mm512_reduce_or_epi32(_mm512_and_si512(v, m));
    _mm512_storeu_si512((void *)blk, _mm512_ternarylogic_epi32(m, nvv, v, 0xca));
    return w16 ? (t | t >> 16) & 0xffff : t;
#else
    uint32_t next = 0;
    if (w16) { /* public */
        ro_w16 *q = (ro_w16 *)(void *)blk;
        for (uint32_t j = 0; j < 32; j++) {
            uint16_t m = (uint16_t)obl_ct_mask(obl_ct_eq64(j, slot));
            next |= q[j] & m;
            q[j] = (uint16_t)(q[j] ^ (m & (q[j] ^ (uint16_t)nv)));
        }
        return next;
    }
    ro_w32 *q = (ro_w32 *)(void *)blk;
    for (uint32_t j = 0; j < 16; j++) {
        uint64_t m = obl_ct_eq64(j, slot);
        next |= q[j] & (uint32_t)obl_ct_mask(m);
        q[j] = obl_ct_select32(m, nv, q[j]);
    }
    return next;
#endif
}

/*
 * The new value in val: fn's result, or `in` under w (zeros when in is
 * NULL), else val unchanged. Secret: w, the contents. Public: vs, fn, in.
 */
static void ro_apply(unsigned char *val, size_t vs, uint64_t w, const void *in,
                     obl_oram_update_fn fn, void *ctx)
{
    if (fn) {
        uint64_t keep = 1;
        fn(ctx, val, 1, &keep);
    } else if (in) {
        obl_ct_cmov(w, val, in, vs);
    } else {
        obl_ct_czero(w, val, vs);
    }
}

/*
 * Entry `slot` of the k entries of vs bytes at blk: copied to val (and to
 * out), updated by ro_apply, written back. Secret: slot, w, the contents.
 * Public: k, vs.
 */
static void ro_slot_rmw(unsigned char *blk, uint64_t k, size_t vs, uint64_t slot,
                        unsigned char *val, void *out, uint64_t w, const void *in,
                        obl_oram_update_fn fn, void *ctx)
{
    if (k == 1) { /* public: one value per block, slot 0; no copies */
        if (out)
            memcpy(out, blk, vs);
        ro_apply(blk, vs, w, in, fn, ctx);
        return;
    }
#if OBL_CT_AVX512
    if (vs == 8 && k == 8) { /* public: eight 8-byte values, one vector */
        /* the slot's lane mask behind an empty asm, as in ro_leaf_swap */
        __m512i v = _mm512_loadu_si512((const void *)blk);
        __m512i m = _mm512_movm_epi64(
            _mm512_cmpeq_epi64_mask(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0),
                                    _mm512_set1_epi64((long long)slot)));
        __asm__("" : "+v"(m));
        uint64_t x = (uint64_t)_mm512_reduce_or_epi64(_mm512_and_si512(v, m));
        memcpy(val, &x, 8);
        if (out)
            memcpy(out, val, 8);
        ro_apply(val, vs, w, in, fn, ctx);
        memcpy(&x, val, 8);
        _mm512_storeu_si512((void *)blk,
                            _mm512_ternarylogic_epi64(m, _mm512_set1_epi64((long long)x), v, 0xca));
        return;
    }
#endif
    memset(val, 0, vs);
    for (uint64_t j = 0; j < k; j++)
        obl_ct_cmov(obl_ct_eq64(j, slot), val, blk + j * vs, vs);
    if (out)
        memcpy(out, val, vs);
    ro_apply(val, vs, w, in, fn, ctx);
    for (uint64_t j = 0; j < k; j++)
        obl_ct_cmov(obl_ct_eq64(j, slot), blk + j * vs, val, vs);
}

/* see roram_internal.h: the range check, the new leaves and the levels
 * above the data level */
obl_err OBL_V(ro_walk)(obl_roram *r, uint64_t index, ro_walk_state *ws)
{
    /* Public range check: n is public and index < n is the caller's
     * contract (oram.h). LEAK: whether the index is in range. */
    uint64_t oor = obl_ct_ge64(index, r->n);
    if (OBL_DECLASSIFY_VAL(oor))
        return OBL_ERR_RANGE;
    ws->err = OBL_OK;
    ws->leaf = 0;
    if (r->T == 0)
        return OBL_OK;
    obl_err re = ro_ready(r);
    if (re != OBL_OK)
        return re;
    /* new leaves for every level, drawn before the walk */
    uint64_t np[RO_MAX_LEVELS];
    for (uint32_t l = 0; l < r->T; l++)
        np[l] = obl_prg_bits(&r->prg, r->lv[l]->logL);
    OBL_SECRET(np, sizeof(np[0]) * r->T); /* the new leaves stay secret until used */
    uint64_t bi = index >> r->lk;
    uint32_t top = r->T - 1;
    uint64_t p = ro_base_swap(r, bi >> r->sh[top], (uint32_t)np[top]);
    for (uint32_t l = top; l >= 1; l--) {
        obl_nroram *o = r->lv[l];
        uint64_t b = bi >> r->sh[l];
        uint64_t pub = p;
        OBL_DECLASSIFY(&pub, sizeof(pub)); /* LEAK: the leaf label, revealed by design */
        nr_fetch(o, b, pub);
        uint64_t slot = (bi >> r->sh[l - 1]) & (((uint64_t)1 << r->fl[l]) - 1);
        uint32_t next = ro_leaf_swap(r, l, o->tmp, slot, (uint32_t)np[l - 1]);
        obl_err e = nr_put(o, 1, b, np[l]);
        if (e != OBL_OK)
            ws->err = e;
        p = next;
    }
    ws->np0 = np[0];
    ws->leaf = p;
    /* LEAK: the data level's leaf label, revealed by design (its fetch,
     * ro_finish, reads this path; a caller may prefetch it first) */
    OBL_DECLASSIFY(&ws->leaf, sizeof(ws->leaf));
    return OBL_OK;
}

/* see roram_internal.h: the data level after ro_walk */
obl_err OBL_V(ro_finish)(obl_roram *r, const ro_walk_state *ws, uint64_t index,
                         uint64_t is_write, const void *in, void *out, obl_oram_update_fn fn,
                         void *ctx)
{
    const size_t vs = r->vs;
    uint64_t w = obl_ct_nonzero64(is_write);
    if (r->T == 0) {
        OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_SCAN, OBL_TRACE_RW, 0, r->n);
        /* a scanned array: one pass to read, one to write */
        ro_slot_rmw(r->scan, r->n, vs, index, r->val, out, w, in, fn, ctx);
        return OBL_OK;
    }
    obl_nroram *o = r->lv[0];
    uint64_t bi = index >> r->lk;
    nr_fetch(o, bi, ws->leaf);
    uint64_t slot = index & (((uint64_t)1 << r->lk) - 1);
    ro_slot_rmw(o->tmp, (uint64_t)1 << r->lk, vs, slot, r->val, out, w, in, fn, ctx);
    obl_err e = nr_put(o, 1, bi, ws->np0);
    return e != OBL_OK ? e : ws->err;
}

/*
 * The access: the walk, then the data level. Secret: index, is_write,
 * in/out contents, the callback's work. Public: the pointers' NULL-ness,
 * the error returned.
 */
static obl_err ro_access(obl_roram *r, uint64_t index, uint64_t is_write, const void *in,
                         void *out, obl_oram_update_fn fn, void *ctx)
{
    if (!r)
        return OBL_ERR_INVALID_ARG;
    ro_walk_state ws;
    obl_err e = OBL_V(ro_walk)(r, index, &ws);
    if (e != OBL_OK)
        return e;
    return OBL_V(ro_finish)(r, &ws, index, is_write, in, out, fn, ctx);
}

OBL_VARIANT_DECLARE(const ro_access_t, ro_access_fn);
const ro_access_t OBL_V(ro_access_fn) = ro_access;
