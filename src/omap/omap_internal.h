/*
 * Private layout of the oblivious map (src/omap/omap.c, src/omap/build.c).
 *
 * One RORAM of 2M buckets holds both cuckoo tables: table t's bucket b is
 * ORAM index t * M + b, so the ORAM hides which table an access touches.
 * A bucket is a header of hs bytes (bit i set = slot i holds an entry) and
 * B slots of an index entry {key, sv}: key_size bytes of key and svs bytes
 * of slot value. The queue (stash) is Q entries of a header (bit 0:
 * valid, bit 1: the table its next kick tries) and an index entry; it lives
 * in plain memory and is always scanned whole.
 *
 * Layouts (docs/omap.md, "Layouts"). INLINE: sv is the value (svs =
 * value_size). COMPACT: sv is the 32-bit leaf of the value's block in the
 * value ORAM `vo`, a Circuit ORAM whose block id is the key read as a
 * little-endian integer (keys of at most 8 bytes). Every access remaps the
 * key's block to a fresh leaf, so every access that finds the key rewrites
 * its sv. The one key whose id would be the ORAM's dummy id (all-ones,
 * 8-byte keys) keeps its value in `ones` instead (zeros when absent).
 * COMPACT with keys of more than 8 bytes (fingerprint mode, `fp`): the
 * index holds a 64-bit keyed fingerprint of the key instead of the key
 * (iks = 8; omap_fingerprint, never all-ones), the value ORAM's block id
 * is that fingerprint and its block holds the key and the value, so that a
 * fingerprint collision is detected by comparing the stored key.
 */
#ifndef OBL_SRC_OMAP_INTERNAL_H
#define OBL_SRC_OMAP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <obl/omap.h>
#include <obl/oram.h>

#include "common/alloc.h"
#include "common/prg.h"

struct obl_omap {
    obl_alloc_ctx ac;
    obl_prg prg;
    uint64_t sk[6];       /* SipHash keys: (sk[0], sk[1]) table 0, (sk[2], sk[3]) table 1,
                             (sk[4], sk[5]) fingerprints */
    uint64_t capacity;
    uint64_t M;           /* buckets per table */
    size_t ks, vs;        /* key, value bytes */
    size_t iks;           /* index key bytes: ks, or 8 in fingerprint mode */
    int fp;               /* fingerprint mode (compact, keys over 8 bytes) */
    uint64_t fpmask;      /* fingerprints are masked with it: all ones; tests
                             narrow it (right after create) to force collisions */
    size_t svs;           /* slot value bytes: vs (inline) or 4 (compact) */
    size_t kv;            /* index entry bytes: iks + svs */
    size_t hs;            /* header bytes: 8 (inline) or 4 (compact); only
                             the low 32 bits are used */
    size_t bsz;           /* bucket bytes: hs + B * kv */
    size_t qes;           /* queue entry bytes: hs + kv */
    uint32_t B, Q, kicks;
    uint32_t kint;        /* kick_interval */
    uint32_t kphase;      /* operations since the last kick round, mod kint (public) */
    uint32_t scan_max;
    uint32_t layout;      /* OBL_OMAP_LAYOUT_INLINE or _COMPACT */
    obl_roram *oram;      /* 2M buckets */
    obl_nroram *vo;       /* compact: the values, capacity blocks; else NULL */
    unsigned char *ones;  /* compact, 8-byte keys: the all-ones key's value */
    unsigned char *queue; /* Q * qes */
    unsigned char *scratch; /* qes (kick entry), 2 * svs (slot value in,
                               out), compact: 2 * vs (value in, out) */
    size_t queue_bytes, scratch_bytes, ones_bytes;
    uint64_t count;       /* entries held (secret) */
    obl_omap_stats st;
};

/* Validates p and allocates everything but the ORAM (m->oram stays NULL).
 * Public: p. */
obl_err omap_alloc(obl_omap **out, const obl_omap_params *p);

/* The ORAM's parameters for map m. */
void omap_oram_params(obl_omap *m, obl_roram_params *rp, const obl_omap_params *p);

/* Compact layout: the value ORAM's parameters for map m (its capacity is
 * the map's; 8-byte ids). */
void omap_values_params(obl_omap *m, obl_nroram_params *np, const obl_omap_params *p);

/* Bucket index of an index key (iks bytes) in table t (0 or 1), in
 * [t * M, (t + 1) * M). Secret: key and the result. Public: t. */
uint64_t omap_bucket(const obl_omap *m, unsigned t, const void *key);

/* Full 64-bit SipHash of an index key (iks bytes) under table t's key.
 * Secret. */
uint64_t omap_hash(const obl_omap *m, unsigned t, const void *key);

/* Fingerprint mode: the index key of `key` (ks bytes): its SipHash under
 * sk[4], sk[5], masked by fpmask, all-ones replaced by all-ones - 1 (the
 * value ORAM's dummy id). Secret: key and the result. */
uint64_t omap_fingerprint(const obl_omap *m, const void *key);

/* Frees everything; NULL is fine. */
void omap_free(obl_omap *m);

#endif /* OBL_SRC_OMAP_INTERNAL_H */
