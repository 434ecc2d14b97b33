/* SPDX-License-Identifier: MIT */
/*
 * The map's operation on a bucket and the stash for any key and slot
 * value size: the layout of omap_internal.h, scanned with constant-time
 * compares and moves. An implementation file: included once, by access.c
 * (omap_op.h says why).
 */
#ifndef OBL_SRC_OMAP_OP_GENERIC_IMPL_H
#define OBL_SRC_OMAP_OP_GENERIC_IMPL_H

#include <string.h>

#include "ct.h"
#include "omap/omap_op.h"

/*
 * The operation on the key's bucket (bk, in the layout of omap_internal.h)
 * and on the stash, for any key and slot value size. In four passes: the
 * stash (reads: the key's entry, the first free entry, the first entry of
 * this bucket, which an erase from the bucket pulls back), the bucket
 * (reads: the key's slot, the first free slot), the stash (writes, and the
 * pulled entry's copy), the bucket (writes).
 * Secret: everything in c, the bucket and the stash. Public: B, S, sizes.
 */
static void op_generic(op_ctx *c, unsigned char *bk)
{
    const obl_omap *m = c->m;
    const size_t iks = m->iks, svs = m->svs;
    const uint32_t B = m->B, S = m->S, Sa = m->Sa;
    unsigned char *pk = m->scratch, *psv = pk + iks; /* the pulled entry */
    unsigned char *bkey = bk + OMAP_HS, *bsv = bkey + (size_t)B * iks;

    uint64_t fs = 0, msel = 0, hfs = 0, fsel = 0, cand = 0, csel = 0;
    for (uint32_t j = 0; j < Sa; j++) {
        uint64_t h = m->sh[j], valid = h & 1;
        uint64_t match = valid & obl_ct_memeq(m->skey + (size_t)j * iks, c->key, iks);
        obl_ct_cmov(match, c->out, m->ssv + (size_t)j * svs, svs);
        msel = obl_ct_select64(match, j, msel);
        fs |= match;
        /* a new key never takes the reserved entry (omap_internal.h) */
        uint64_t fr = (valid ^ 1) & (hfs ^ 1) & (uint64_t)(j < S);
        fsel = obl_ct_select64(fr, j, fsel);
        hfs |= fr;
        /* the entry to pull back: this bucket's first, not the key's own
         * if the key is being erased */
        uint64_t cb = obl_ct_eq64(h, c->tag) & ((match & c->is_erase) ^ 1) & (cand ^ 1);
        csel = obl_ct_select64(cb, j, csel);
        cand |= cb;
    }
    uint64_t hdr = ld64(bk), fb = 0, bsel = 0, hfb = 0, esel = 0;
    for (uint32_t i = 0; i < B; i++) {
        uint64_t v = (hdr >> i) & 1;
        uint64_t match = v & obl_ct_memeq(bkey + (size_t)i * iks, c->key, iks);
        obl_ct_cmov(match, c->out, bsv + (size_t)i * svs, svs);
        bsel = obl_ct_select64(match, i, bsel);
        fb |= match;
        uint64_t fr = (v ^ 1) & (hfb ^ 1);
        esel = obl_ct_select64(fr, i, esel);
        hfb |= fr;
    }
    uint64_t found = fb | fs, newkey = c->is_put & (found ^ 1);
    uint64_t ins_b = newkey & c->room & hfb;
    uint64_t ins_s = newkey & c->room & (hfb ^ 1) & hfs;
    uint64_t del_b = c->is_erase & fb, del_s = c->is_erase & fs;
    /* A stash entry of this bucket moves into it when the operation leaves
     * a slot free: into the key's slot after an erase, else into the first
     * free slot if the operation put no new key there. After an erase
     * this keeps the stash invariant; otherwise the bucket has no stash
     * entries but after a fingerprint collision's restore (see
     * obl_omap_access), which this heals. */
    uint64_t pull_b = cand & (del_b | (hfb & (ins_b ^ 1)));
    uint64_t pslot = obl_ct_select64(del_b, bsel, esel);

    uint64_t occ = 0;
    for (uint32_t j = 0; j < Sa; j++) {
        unsigned char *ek = m->skey + (size_t)j * iks, *ev = m->ssv + (size_t)j * svs;
        uint64_t h = m->sh[j];
        uint64_t mj = fs & obl_ct_eq64(j, msel), fj = ins_s & obl_ct_eq64(j, fsel);
        uint64_t cj = obl_ct_eq64(j, csel);
        obl_ct_cmov((mj & c->upd) | fj, ev, c->in, svs);
        obl_ct_cmov(fj, ek, c->key, iks);
        /* after the update: the pulled entry may be the key's own */
        obl_ct_cmov(cj, pk, ek, iks);
        obl_ct_cmov(cj, psv, ev, svs);
        h = obl_ct_select64((mj & del_s) | (cj & pull_b), 0, h);
        h = obl_ct_select64(fj, c->tag, h);
        m->sh[j] = h;
        occ += h & 1;
    }
    for (uint32_t i = 0; i < B; i++) {
        unsigned char *k = bkey + (size_t)i * iks, *v = bsv + (size_t)i * svs;
        uint64_t mi = fb & obl_ct_eq64(i, bsel), ei = ins_b & obl_ct_eq64(i, esel);
        uint64_t pi = pull_b & obl_ct_eq64(i, pslot);
        obl_ct_cmov((mi & c->upd) | ei, v, c->in, svs);
        obl_ct_cmov(ei, k, c->key, iks);
        obl_ct_cmov(pi, k, pk, iks);
        obl_ct_cmov(pi, v, psv, svs);
        uint64_t clear = mi & del_b & (pi ^ 1);
        hdr = (hdr & ~(clear << i)) | ((ei | pi) << i);
    }
    st64(bk, hdr);
    c->found = found;
    c->full = newkey & ((c->room & (hfb | hfs)) ^ 1);
    c->added = ins_b | ins_s;
    c->removed = del_b | del_s;
    c->occ = occ;
}

#endif /* OBL_SRC_OMAP_OP_GENERIC_IMPL_H */
