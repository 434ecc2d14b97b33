/* SPDX-License-Identifier: MIT */
/*
 * The compact layout's value ORAM (omap_internal.h, "Layouts"): the one
 * access of the value's block that follows the index update, and its
 * fingerprint-mode form, which stores and compares the key in the block.
 * An implementation file: included once, by access.c (omap_op.h says why).
 */
#ifndef OBL_SRC_OMAP_OP_VALUES_IMPL_H
#define OBL_SRC_OMAP_OP_VALUES_IMPL_H

#include <string.h>

#include <obl/omap.h>
#include <obl/oram.h>

#include "ct.h"
#include "common/secret.h"
#include "omap/omap_op.h"

/*
 * Compact layout: the value ORAM's path for the operation, once the index
 * has given the key's old leaf (c->out, if found): that leaf, or a fresh
 * one for an absent key (drawn either way). Secret: c. Public: the result.
 */
static uint64_t omap_value_pos(obl_omap *m, const op_ctx *c)
{
    uint64_t pos = obl_ct_select64(c->found, ld32(c->out), obl_nroram_random_pos(m->vo));
    /* LEAK: the path read, by design (Circuit ORAM): the leaf the key's
     * block was given at its last access, never revealed since, or a fresh
     * one for an absent key; uniform and independent of the secrets. */
    OBL_DECLASSIFY(&pos, sizeof(pos));
    return pos;
}

/*
 * Compact layout: the value ORAM's access for the operation on path pos
 * (omap_value_pos), after the index has stored the key's new leaf (nl).
 * vin, vout: the value in and out (vs bytes each).
 * Secret: everything but m's parameters and pos.
 */
static obl_err omap_value_access(obl_omap *m, const op_ctx *c, uint64_t pos, uint64_t nl,
                                 const unsigned char *vin, unsigned char *vout)
{
    uint64_t id = ld64(c->key); /* the key's word: its block's id */
    uint64_t is1 = m->ones ? obl_ct_eq64(id, UINT64_MAX) : 0;
    uint64_t nop = obl_ct_select64(c->is_erase, OBL_ORAM_REMOVE, OBL_ORAM_READ);
    nop = obl_ct_select64(c->is_put, OBL_ORAM_WRITE, nop);
    /* the all-ones key reads the dummy id: nothing is stored or removed */
    nop = obl_ct_select64(is1, OBL_ORAM_READ, nop);
    obl_err e = obl_nroram_access(m->vo, id, pos, nl, nop, vin, vout, NULL);
    if (e != OBL_OK && e != OBL_ERR_STASH_OVERFLOW)
        return e;
    if (m->ones) {
        obl_ct_cmov(is1, vout, m->ones, m->vs);
        obl_ct_cmov(is1 & c->is_put, m->ones, vin, m->vs);
        obl_ct_czero(is1 & c->is_erase, m->ones, m->vs);
    }
    return e;
}

/* Fingerprint mode: the value ORAM's read-modify-write of the block
 * {key, value} under the key's fingerprint. */
typedef struct {
    const obl_omap *m;
    const unsigned char *key, *vin;
    unsigned char *vout;
    uint64_t is_put, is_erase;
    uint64_t match;   /* out: the block holds this key */
    uint64_t collide; /* out: it holds another key (same fingerprint) */
} fpv_ctx;

/*
 * The block's update: a stored key equal to the operation's is read,
 * updated (put) or removed (erase); another key with the same fingerprint
 * is left as it is (a collision); an absent block is inserted by a put.
 * Secret: everything in c and the block. Public: sizes.
 */
static void fpv_fn(void *vctx, void *value, uint64_t found, uint64_t *keep)
{
    fpv_ctx *c = (fpv_ctx *)vctx;
    const obl_omap *m = c->m;
    unsigned char *b = (unsigned char *)value;
    uint64_t match = found & obl_ct_memeq(b, c->key, m->ks);
    uint64_t collide = found & (match ^ 1);
    obl_ct_cmov(match, c->vout, b + m->ks, m->vs);
    uint64_t wr = c->is_put & (collide ^ 1);
    obl_ct_cmov(wr, b, c->key, m->ks);
    obl_ct_cmov(wr, b + m->ks, c->vin, m->vs);
    *keep = (found & ((c->is_erase & match) ^ 1)) | ((found ^ 1) & c->is_put);
    c->match = match;
    c->collide = collide;
}

/*
 * Fingerprint mode: as omap_value_access, for the block whose id is `f`,
 * the word of the key's fingerprint. Sets *match and *collide (fpv_ctx).
 * Secret: everything but m's parameters and pos.
 */
static obl_err omap_value_fp(obl_omap *m, const op_ctx *c, const unsigned char *key,
                             uint64_t f, uint64_t pos, uint64_t nl, const unsigned char *vin,
                             unsigned char *vout, uint64_t *match, uint64_t *collide)
{
    fpv_ctx v = {m, key, vin, vout, c->is_put, c->is_erase, 0, 0};
    obl_err e = obl_nroram_update(m->vo, f, pos, nl, fpv_fn, &v);
    *match = v.match;
    *collide = v.collide;
    return e;
}

#endif /* OBL_SRC_OMAP_OP_VALUES_IMPL_H */
