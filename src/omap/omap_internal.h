/* SPDX-License-Identifier: MIT */
/*
 * Private layout of the oblivious map (the units of src/omap).
 *
 * One RORAM of M buckets (M a power of two). A bucket is a header of 8
 * bytes (bit i set = slot i holds an entry) and B slots of an index entry
 * {key, sv}, iks bytes of key and svs bytes of slot value, stored as two
 * arrays: [header | B keys | B slot values] (so that the scans of 8-byte
 * keys vectorise); its size bsz is rounded up to a multiple of 8 (the ORAM
 * moves such blocks in vector registers). Key k lives in bucket h(k) =
 * mulhi(SipHash(k), M) (word maps, below: the top bits of its word), or,
 * when that bucket is full, in the overflow
 * stash: S entries of a header (bit 0: valid, bits 1..63: the entry's
 * bucket), a key and a slot value, in plain memory as three arrays (sh,
 * skey, ssv), always scanned whole. Invariant: the stash holds an entry of
 * bucket b only if b is full (an erase from b pulls one back), so the stash
 * holds sum_b max(0, load_b - B) entries (docs/omap.md, "Overflow stash").
 *
 * Quotiented index (word maps: index keys of 8 bytes, that is keys of at
 * most 8 bytes or fingerprints; docs/omap.md, "Quotiented index"). The
 * index key k is replaced by its word w = Speck64/128(k) under a per-map
 * secret key (a permutation), and the bucket is the top logM bits of w,
 * so a slot stores only the rest of w, the low 64 - logM bits, in rw
 * bytes, and its slot value in lw bytes: [header | B x rw | B x lw]. The
 * stash keeps whole words (skey, 8 bytes) and svs-byte slot values. The
 * passes of op_words_impl.h run on words: a bucket is unpacked into word arrays
 * (w = bucket << (64 - logM) | rest) and packed back. Other maps (inline,
 * keys of over 8 bytes) keep whole keys and slot values as described
 * above, and the SipHash bucket.
 *
 * Layouts (docs/omap.md, "Layouts"). INLINE: sv is the value (svs =
 * value_size, or 8 for values of at most 8 bytes). COMPACT: sv is the
 * leaf (32 bits in the stash, lw bytes in a bucket) of the value's block in the
 * value ORAM `vo`, a Circuit ORAM whose block id is the key's word
 * (omap_word). Every access remaps the
 * key's block to a fresh leaf, so every access that finds the key rewrites
 * its sv. The one key whose id would be the ORAM's dummy id (its word
 * all-ones; a key of any size up to 8 bytes may be it) keeps its value in
 * `ones` instead (zeros when absent). COMPACT with keys of more than 8 bytes (fingerprint mode,
 * `fp`): the index key is a 64-bit keyed fingerprint of the key instead of
 * the key (iks = 8; omap_fingerprint), its word (never all-ones) is the
 * value ORAM's block id and the block holds the key and the value, so that
 * a collision of words is detected by comparing the stored key.
 */
#ifndef OBL_SRC_OMAP_INTERNAL_H
#define OBL_SRC_OMAP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <obl/omap.h>
#include <obl/oram.h>

#include "common/alloc.h"
#include "common/cpu.h"
#include "common/prg.h"
#include "omap/speck.h"

/* bucket and stash entry header bytes */
#define OMAP_HS 8u

/* Compact layout: the largest capacity whose value ORAM is a tagged tree
 * (NR_POS_TAGGED): a false match, another block with the key's 64 - logL
 * tag bits on the key's leaf, has probability at most capacity * 2^-63 per
 * access, within the overflow stash's 2^-40 up to here (docs/oram.md,
 * "Tagged trees"). Public. */
#define OMAP_TAGGED_MAX ((uint64_t)1 << 23)

/* One access's buffers in the scratch (struct obl_omap): slot value in
 * and out, value in and out, rounded up to whole lines. Public. */
#define OMAP_REQ_BYTES(svs, vs) ((2 * (size_t)(svs) + 2 * (size_t)(vs) + 63) & ~(size_t)63)

/* Leaves: 32-bit words; headers: 64-bit words. */
static inline uint64_t ld32(const unsigned char *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}

static inline void st32(unsigned char *p, uint64_t w)
{
    uint32_t v = (uint32_t)w;
    memcpy(p, &v, 4);
}

static inline uint64_t ld64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline void st64(unsigned char *p, uint64_t w) { memcpy(p, &w, 8); }

struct obl_omap {
    int isa;              /* public: the variant its ORAMs took (common/cpu.h) */
    obl_alloc_ctx ac;
    obl_prg prg;
    uint64_t sk[4];       /* SipHash keys: (sk[0], sk[1]) buckets, (sk[2], sk[3])
                             fingerprints */
    obl_speck pk;         /* word maps: the index keys' permutation */
    int words;            /* word map: quotiented index (above) */
    uint32_t wshift;      /* word map: 64 - logM, the rest's bits */
    uint32_t rw, lw;      /* word map: bytes of a slot's rest and value */
    uint64_t capacity;
    uint64_t M;           /* buckets, a power of two */
    uint32_t logM;
    size_t ks, vs;        /* key, value bytes */
    size_t iks;           /* index key bytes: 8 for keys of at most 8 bytes
                             and in fingerprint mode, else ks */
    int fp;               /* fingerprint mode (compact, keys over 8 bytes) */
    uint64_t fpmask;      /* fingerprints are masked with it: all ones; tests
                             narrow it (right after create) to force collisions */
    size_t svs;           /* slot value bytes (stash, passes): 4 (compact),
                             8 (inline values of at most 8 bytes), else vs */
    size_t kv;            /* index entry bytes: iks + svs */
    size_t bsz;           /* bucket bytes: OMAP_HS + B * kv (word maps:
                             B * (rw + lw)), rounded up to 8 */
    size_t ses;           /* stash entry bytes: OMAP_HS + kv */
    uint32_t B;           /* slots per bucket */
    uint32_t S;           /* overflow stash entries new keys may take */
    uint32_t Sa;          /* stash entries scanned: S, and in fingerprint
                             mode one more, reserved for putting back the
                             index entry an erase took out on a fingerprint
                             collision (obl_omap_access), so that it always
                             finds room */
    uint32_t scan_max;
    uint32_t layout;      /* OBL_OMAP_LAYOUT_INLINE or _COMPACT */
    obl_roram *oram;      /* M buckets */
    obl_nroram *vo;       /* compact: the values, capacity blocks; else NULL */
    unsigned char *ones;  /* compact, not fp: the value of the key whose word
                             is all ones */
    unsigned char *stash; /* Sa * ses: the three arrays below */
    uint64_t *sh;         /* Sa headers */
    unsigned char *skey;  /* Sa * iks */
    unsigned char *ssv;   /* Sa * svs */
    unsigned char *scratch; /* ses (the entry pulled back: key, slot value),
                               then three requests' buffers of
                               OMAP_REQ_BYTES: 2 * svs (slot value in, out),
                               2 * vs (value in, out); the first for
                               obl_omap_access, two for the batched access */
    size_t stash_bytes, scratch_bytes, ones_bytes;
    uint64_t count;       /* entries held (secret) */
    obl_omap_stats st;    /* secret fields: overflow_max */
#ifdef OBL_TESTING
    int test_stale_prefetch; /* tests only: the batched access prefetches
                                a stale index path (access_batch_impl.h),
                                the leak its trace test must catch */
#endif
};

/* Validates p and allocates everything but the ORAMs (m->oram, m->vo stay
 * NULL). Public: p. */
obl_err omap_alloc(obl_omap **out, const obl_omap_params *p);

/* The index ORAM's parameters for map m. */
void omap_oram_params(obl_omap *m, obl_roram_params *rp, const obl_omap_params *p);

/* Compact layout: the value ORAM's parameters for map m (its capacity is
 * the map's; 8-byte ids). */
void omap_values_params(obl_omap *m, obl_nroram_params *np, const obl_omap_params *p);

/* The key functions below are compiled once per variant (keys.c): code
 * built once may call omap_word and omap_bucket only (keys_dispatch.c). */

/* Bucket of an index key (iks bytes), in [0, M). Secret: key and the
 * result. */
uint64_t omap_bucket(const obl_omap *m, const void *key);

/* Word map: the word of a key (ks bytes): the permutation of the key
 * zero-extended, or of its fingerprint (fingerprint mode; then never all
 * ones, the value ORAM's dummy id: all-ones becomes all-ones - 1). It is
 * the key's index key and, in the compact layout, its value block's id.
 * Secret: key and the result. */
uint64_t omap_word(const obl_omap *m, const void *key);

/* Word map: the bucket of word w, in [0, M). Secret: w and the result. */
static inline uint64_t omap_word_bucket(const obl_omap *m, uint64_t w)
{
    return m->logM ? w >> m->wshift : 0;
}

/* Word map: the mask of a word's rest, the low wshift bits a slot keeps
 * (the bucket's are the top logM). Public. */
static inline uint64_t omap_rest_mask(const obl_omap *m)
{
    return m->wshift == 64 ? UINT64_MAX : ((uint64_t)1 << m->wshift) - 1;
}

/* Full 64-bit SipHash of an index key (iks bytes) under the bucket key.
 * Secret. */
uint64_t omap_hash(const obl_omap *m, const void *key);

/* Fingerprint mode: the fingerprint of `key` (ks bytes), whose word
 * (omap_word) is its index key and block id: its SipHash under sk[2],
 * sk[3], masked by fpmask, all-ones replaced by all-ones - 1. Secret: key
 * and the result. */
uint64_t omap_fingerprint(const obl_omap *m, const void *key);

/* Chernoff bound on the overflow stash (docs/omap.md, "Overflow stash"):
 * the smallest S such that, for n <= capacity keys hashed uniformly into M
 * buckets of B slots, P[sum_b max(0, load_b - B) > S] <= 2^-bits; capped at
 * capacity. Public: all arguments. */
uint64_t omap_overflow_bound(uint64_t capacity, uint64_t M, uint32_t B, unsigned bits);

/*
 * Bucket count M (a power of two with capacity <= load * M), slots per
 * bucket *B and stash entries *S for p (checked), *logM = log2 M; target:
 * OBL_OMAP_OVERFLOW_TARGET or _TARGET_COMPACT. 0 when the automatic S
 * exceeds OBL_OMAP_MAX_OVERFLOW (sizing.c). Public: every argument.
 */
uint64_t omap_size(const obl_omap_params *p, uint64_t target, uint32_t *B, uint32_t *S,
                   uint32_t *logM);

/* Frees everything; NULL is fine. */
void omap_free(obl_omap *m);

/* obl_omap_access in each variant (access.c, compiled once per variant);
 * obl_omap_access calls the map's (access_dispatch.c). */
#define OMAP_ACCESS_DECLARE(v)                                                               \
    obl_err omap_access_##v(obl_omap *m, uint64_t op, const void *key, const void *value_in, \
                            void *value_out, uint64_t *found);
OBL_VARIANT_EACH(OMAP_ACCESS_DECLARE)

/* obl_omap_access_batch in each variant (access_batch_impl.h, compiled
 * with access.c). */
#define OMAP_ACCESS_BATCH_DECLARE(v)                                                         \
    obl_err omap_access_batch_##v(obl_omap *m, size_t n, const uint64_t *ops,                \
                                  const void *keys, const void *values_in, void *values_out, \
                                  uint64_t *found, obl_err *errs);
OBL_VARIANT_EACH(OMAP_ACCESS_BATCH_DECLARE)

#endif /* OBL_SRC_OMAP_INTERNAL_H */
