/* SPDX-License-Identifier: MIT */
/*
 * The map's keyed functions of a key: the bucket hash (SipHash-2-4), the
 * fingerprint of a long key, a word map's word (Speck64/128) and the
 * bucket of an index key (omap_internal.h). Compiled once per
 * instruction-set variant with the hashes inlined, like the operation that
 * calls them (access.c; CMakeLists.txt, OBL_VARIANT_SOURCES): each copy's
 * names take the variant's suffix, and omap_word, which the bulk build
 * calls too, has a dispatching definition (keys_dispatch.c).
 */
#include <string.h>

#include <obl/omap.h>

#include "ct.h"
#include "omap/omap_internal.h"
#include "omap/siphash.h"
#include "omap/speck.h"

__extension__ typedef unsigned __int128 omap_u128;

/* see omap_internal.h */
uint64_t omap_hash(const obl_omap *m, const void *key)
{
    return obl_siphash24_inline(m->sk[0], m->sk[1], key, m->iks);
}

/* see omap_internal.h */
uint64_t omap_fingerprint(const obl_omap *m, const void *key)
{
    uint64_t f = obl_siphash24_inline(m->sk[2], m->sk[3], key, m->ks) & m->fpmask;
    return f - obl_ct_eq64(f, UINT64_MAX);
}

/* see omap_internal.h */
uint64_t omap_word(const obl_omap *m, const void *key)
{
    uint64_t k = 0;
    if (m->fp) /* public */
        k = omap_fingerprint(m, key);
    else
        memcpy(&k, key, m->ks); /* little-endian, zero-extended */
    uint64_t w = obl_speck_enc_inline(&m->pk, k);
    return m->fp ? w - obl_ct_eq64(w, UINT64_MAX) : w;
}

/* see omap_internal.h */
uint64_t omap_bucket(const obl_omap *m, const void *key)
{
    /* Lemire's multiply-high range reduction: no division on a secret. */
    return (uint64_t)(((omap_u128)omap_hash(m, key) * m->M) >> 64);
}
