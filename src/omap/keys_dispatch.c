/* SPDX-License-Identifier: MIT */
/*
 * The map's key functions (keys.c) are compiled once per instruction-set
 * variant, their names suffixed on the command line (CMakeLists.txt,
 * OBL_VARIANT_RENAME): the operation (access.c) calls its own variant's.
 * These definitions of the unsuffixed omap_word and omap_bucket serve the
 * code built once (the bulk build, the tests) with the variant the map
 * picked when it was created (m->isa: the CPU's, never the data's;
 * docs/dispatch.md).
 */
#include "common/cpu.h"
#include "omap/omap_internal.h"

#define KD_DECLARE(v)                                                                        \
    uint64_t omap_word_##v(const obl_omap *m, const void *key);                             \
    uint64_t omap_bucket_##v(const obl_omap *m, const void *key);
OBL_VARIANT_EACH(KD_DECLARE)

/* see omap_internal.h */
uint64_t omap_word(const obl_omap *m, const void *key)
{
    return OBL_VARIANT_PICK(omap_word, m->isa)(m, key);
}

/* see omap_internal.h */
uint64_t omap_bucket(const obl_omap *m, const void *key)
{
    return OBL_VARIANT_PICK(omap_bucket, m->isa)(m, key);
}
