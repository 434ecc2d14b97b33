/* SPDX-License-Identifier: MIT */
/*
 * The map's operation, in units: the context one obl_omap_access hands to
 * the index ORAM's read-modify-write (op_ctx, here), the two
 * implementations of the operation on a bucket and the stash
 * (op_generic_impl.h for any sizes, op_words_impl.h for word maps) and the
 * compact layout's value ORAM access (op_values_impl.h). The units are
 * implementation files that access.c includes, so that the operation stays
 * one translation unit: the compiler inlines the passes into the ORAM
 * callback as before, and a build that compiles the operation once per
 * instruction set compiles one file.
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

#endif /* OBL_SRC_OMAP_OP_H */
