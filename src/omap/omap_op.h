/* SPDX-License-Identifier: MIT */
/*
 * The bucket operation of the oblivious map, shared by its units: the
 * context one obl_omap_access hands to the index ORAM's read-modify-write
 * (op_ctx), the two implementations of the operation on a bucket and the
 * stash (bucket_generic.c for any sizes, bucket_words.c for word maps) and
 * the compact layout's value ORAM access (values.c).
 */
#ifndef OBL_SRC_OMAP_OP_H
#define OBL_SRC_OMAP_OP_H

#include <stddef.h>
#include <stdint.h>

#include <obl/omap.h>

#include "omap/omap_internal.h"

typedef struct {
    const obl_omap *m;
    const unsigned char *key; /* the index key, iks bytes */
    const unsigned char *in;  /* the slot value to store: the value (inline)
                                 or the new leaf (compact) */
    unsigned char *out;       /* the old slot value (left as is if absent) */
    uint64_t tag;             /* stash header of an entry of this bucket:
                                 1 | bucket << 1 */
    uint64_t is_put, is_erase;
    uint64_t upd;             /* a match takes `in` as its slot value: a put,
                                 or any op in the compact layout (new leaf) */
    uint64_t room;            /* a new key may be stored: fewer than capacity
                                 entries */
    uint64_t found;           /* out: the key was held (bucket or stash) */
    uint64_t full;            /* out: a put of a new key found no room */
    uint64_t added, removed;  /* out: an entry was added / removed */
    uint64_t occ;             /* out: stash entries after the operation */
} op_ctx;

/* The operation on bucket bk and the stash, any key and slot value size
 * (bucket_generic.c). Secret: everything in c, the bucket and the stash. */
void omap_op_generic(op_ctx *c, unsigned char *bk);

/* The same for word maps with 4- or 8-byte slot values (bucket_words.c). */
void omap_op_words4(op_ctx *c, unsigned char *bk);
void omap_op_words8(op_ctx *c, unsigned char *bk);

/* Compact layout: the value ORAM's access of the operation (values.c). */
obl_err omap_value_access(obl_omap *m, const op_ctx *c, uint64_t nl, const unsigned char *vin,
                          unsigned char *vout);

/* Fingerprint mode: the same, for the block of fingerprint word f (values.c). */
obl_err omap_value_fp(obl_omap *m, const op_ctx *c, const unsigned char *key, uint64_t f,
                      uint64_t nl, const unsigned char *vin, unsigned char *vout,
                      uint64_t *match, uint64_t *collide);

#endif /* OBL_SRC_OMAP_OP_H */
