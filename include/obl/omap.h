/* SPDX-License-Identifier: MIT */
/*
 * obl/omap.h: UMAP, an oblivious unordered map with fixed-size keys and
 * values.
 *
 * Design (docs/omap.md): one-choice hashing into buckets of several slots
 * with an overflow stash. In the compact layout (below), and in the inline
 * layout with values of at most 8 bytes, keys of at most 8 bytes (and, in
 * the compact layout, the fingerprints of longer keys) are permuted with
 * Speck64/128 (Beaulieu et al. 2013) under a per-map secret key, and the
 * top bits of the image pick one of M buckets, whose slots keep only the
 * image's other bits (a quotiented index). In the inline layout with keys
 * or values of more than 8 bytes the key is hashed with SipHash-2-4
 * (Aumasson, Bernstein 2012) under a per-map secret key to a bucket. The
 * buckets live in ONE recursive ORAM (obl/oram.h), so that which bucket an
 * access touches is hidden. A key whose bucket is full waits in the
 * overflow stash, a small array in plain memory that every operation scans
 * whole; an erase that frees a slot of a bucket pulls one of that bucket's
 * keys back from the stash in the same operation. So the stash holds
 * exactly sum over buckets of max(0, load - slots): a function of the set
 * of keys held, never of the history, and its size is chosen from a
 * Chernoff bound on that sum (failure probability at most 2^-40 per
 * operation at capacity; docs/omap.md, "Overflow stash").
 * Every operation, whatever its type, key or outcome, makes the same
 * accesses: two scans of the stash inside ONE ORAM read-modify-write of
 * the key's bucket, and in the compact layout (below) one access of the
 * value ORAM. There is no data-dependent loop and nothing is amortised.
 *
 * Threat model (as obl/oram.h): the adversary sees every address touched
 * and the time taken, not memory contents. Secret: keys, values, the
 * operation type, whether a key was present, the number of entries and the
 * stash's contents and occupancy. Public: the parameters, the number of
 * operations, the leaf labels the ORAM reveals (uniform by design), and the
 * error codes returned.
 *
 * Capacity events (public): OBL_ERR_FULL is returned by a put of a NEW key
 * when the map already holds `capacity` entries (the documented hard
 * limit: it reveals what any full container reveals), or when the key's
 * bucket and the overflow stash are both full (at or below capacity this
 * has probability at most 2^-40 per operation with the automatic sizing,
 * like an ORAM stash overflow; a caller who sets the sizes himself gets the
 * bound docs/omap.md gives for them). The map is then left unchanged.
 * Keys of more than 8 bytes in the compact layout are indexed by a 64-bit
 * fingerprint: a put of a new key whose fingerprint a stored key has also
 * reports FULL (probability about count / 2^64 per put).
 *
 * Thread safety: none inside; one map per thread or an outside lock.
 */
#ifndef OBL_OMAP_H
#define OBL_OMAP_H

#include <stddef.h>
#include <stdint.h>

#include <obl/obl.h>
#include <obl/oram.h>

#ifdef __cplusplus
extern "C" {
#endif

OBL_API_BEGIN

#define OBL_OMAP_MAX_KEY_SIZE 1024u
#define OBL_OMAP_MAX_VALUE_SIZE 65536u

/* Sizing (docs/omap.md, "Sizing"). */
#define OBL_OMAP_MAX_SLOTS 64u           /* slots per bucket */
#define OBL_OMAP_DEFAULT_BUCKET_LOAD 16u /* mean entries per bucket at capacity */
#define OBL_OMAP_MAX_BUCKET_LOAD 64u
#define OBL_OMAP_MAX_OVERFLOW (1u << 20) /* overflow stash entries */
/* The automatic sizing: the fewest slots per bucket whose overflow bound
 * (2^-OBL_OMAP_OVERFLOW_BITS) needs at most this many stash entries: in
 * the inline layout, and in the compact one, whose slots are smaller (a
 * word's rest and a leaf), so that two more slots per bucket for less than
 * half the stash measured faster (docs/omap.md, "Sizing"). */
#define OBL_OMAP_OVERFLOW_TARGET 256u
#define OBL_OMAP_OVERFLOW_TARGET_COMPACT 128u
#define OBL_OMAP_OVERFLOW_BITS 40u

/* Layouts (docs/omap.md, "Layouts"), obl_omap_params.layout:
 * INLINE: the buckets hold key and value;
 * COMPACT: the buckets hold key and a leaf label; the values live in one
 *   Circuit ORAM (obl_nroram) under the key's permuted image as block id, so the bucket
 *   access moves small index entries only, and a get costs one more
 *   (non-recursive) ORAM access. Keys of more than 8 bytes are
 *   replaced in the index by a 64-bit keyed fingerprint, whose image is the
 *   block id; the block holds key and value, and the stored key is
 *   compared on every access. Capacity at most 2^30.
 * AUTO: INLINE for keys of at most OBL_OMAP_INLINE_MAX_KEY and values of
 *   at most OBL_OMAP_INLINE_MAX_VALUE bytes, else COMPACT (measured,
 *   docs/omap.md). Keys and inline values of at most 8 bytes are stored as
 *   8-byte words. */
#define OBL_OMAP_LAYOUT_AUTO 0u
#define OBL_OMAP_LAYOUT_INLINE 1u
#define OBL_OMAP_LAYOUT_COMPACT 2u
#define OBL_OMAP_INLINE_MAX_KEY 8u
#define OBL_OMAP_INLINE_MAX_VALUE 8u

/* Operation codes for obl_omap_access. The code is SECRET: all codes make
 * the same accesses. Any other value behaves as OBL_OMAP_GET. */
#define OBL_OMAP_GET 0u
#define OBL_OMAP_PUT 1u
#define OBL_OMAP_ERASE 2u

typedef struct obl_omap obl_omap;

typedef struct obl_omap_params {
    uint64_t capacity;          /* public: most entries held at once, >= 1 */
    size_t key_size;            /* public: 1 .. OBL_OMAP_MAX_KEY_SIZE */
    size_t value_size;          /* public: 1 .. OBL_OMAP_MAX_VALUE_SIZE */
    uint32_t slots_per_bucket;  /* 0 = automatic (the fewest whose overflow
                                   bound fits OBL_OMAP_OVERFLOW_TARGET, or
                                   _TARGET_COMPACT in the compact layout);
                                   1 .. OBL_OMAP_MAX_SLOTS */
    uint32_t bucket_load;       /* 0 = OBL_OMAP_DEFAULT_BUCKET_LOAD; 1 ..
                                   OBL_OMAP_MAX_BUCKET_LOAD: the bucket
                                   count M is the smallest power of two with
                                   capacity <= bucket_load * M */
    uint32_t overflow_size;     /* 0 = automatic: the Chernoff bound for
                                   2^-OBL_OMAP_OVERFLOW_BITS (at least 8);
                                   else 1 .. OBL_OMAP_MAX_OVERFLOW */
    uint32_t oram_scan_max;     /* passed to the RORAM (0 = its default) */
    uint32_t layout;            /* OBL_OMAP_LAYOUT_*; 0 = automatic */
    int dense_values;           /* public: nonzero = the compact layout's value
                                   ORAM is a dense tree (obl_nroram_params.dense):
                                   less memory for a capacity just above 2.5 x
                                   a power of two, slower accesses there */
    obl_random_fn random;       /* NULL: getrandom(2); seeds the map's PRG */
    void *random_opaque;
    uint64_t seed;              /* used instead of random when use_seed != 0 */
    int use_seed;               /* tests and reproducible benchmarks only */
    const obl_allocator *alloc; /* NULL: the C library */
    unsigned build_threads;     /* the builds' threads (the ORAMs' trees):
                                   0 = the CPUs this process may run on,
                                   1 = the calling thread only; two at
                                   most. The map built is the same for
                                   every value. */
} obl_omap_params;

/*
 * Creates an empty map. Public: all parameters.
 * Errors: INVALID_ARG, TOO_LARGE, NOMEM, RANDOM, STASH_OVERFLOW (the index
 * ORAM's build: as obl_roram_create; nothing is created).
 */
obl_err obl_omap_create(obl_omap **out, const obl_omap_params *p) OBL_WARN_UNUSED;

/*
 * Bulk build from n pairs (keys: n * key_size bytes, values: n * value_size
 * bytes), n <= capacity, far faster than n puts: the buckets are filled in
 * plain memory and the ORAMs are built from them directly.
 * Secret: the keys and values. Public: n, the parameters, the error code;
 * and, by design, the bucket h(k_i) of each input position i, which for
 * DISTINCT keys is a list of pseudo-random values independent of the keys
 * (docs/omap.md, "Bulk build and what it reveals").
 * Errors: INVALID_ARG, TOO_LARGE, NOMEM, RANDOM, DUPLICATE_KEY (the input
 * holds some key twice; nothing is created), FULL (the entries did not fit
 * in the buckets and the overflow stash; nothing is created),
 * STASH_OVERFLOW (an ORAM's build: as obl_roram_create; nothing is
 * created). With p->build_threads != 1 the value ORAM's sorts run on a
 * second thread too (the same map, byte for byte; docs/omap.md, "Bulk
 * build").
 */
obl_err obl_omap_build(obl_omap **out, const obl_omap_params *p, const void *keys,
                       const void *values, uint64_t n) OBL_WARN_UNUSED;

/*
 * The combined operation, one fixed sequence of accesses for every op:
 *   GET:   *value_out = the value (zeros if absent);
 *   PUT:   *value_out = the old value (zeros if absent); value := value_in
 *          (inserted if absent: upsert);
 *   ERASE: *value_out = the old value; the key is removed.
 * *found = 1 if the key was present before the call, else 0.
 * Secret: op, the key, the contents of value_in and value_out, *found.
 * Public: the NULL-ness of value_in (NULL = zeros), value_out and found;
 *         the error code.
 * On FULL, and on the STATE of a fingerprint map's erase, *value_out is
 * zeroed and *found = 0 (when given).
 * Errors: INVALID_ARG (m or key NULL), FULL (see top; map unchanged),
 *         STASH_OVERFLOW (an ORAM stash event; the operation was applied;
 *         FULL and STATE take precedence, the event still counts in
 *         stash_overflows), STATE (the ORAM refused an access; see
 *         docs/omap.md).
 */
obl_err obl_omap_access(obl_omap *m, uint64_t op, const void *key, const void *value_in,
                        void *value_out, uint64_t *found);

/*
 * n operations with the results of n calls of obl_omap_access in order
 * (request i sees the effects of requests 0 .. i-1; a key may repeat):
 * request i is op ops[i] (ops NULL: every request a GET) on the key at
 * keys + i * key_size, with the value at values_in + i * value_size
 * (values_in NULL: zeros), its old value to values_out + i * value_size
 * and its found bit to found[i] (either NULL: not written), and the error
 * obl_omap_access would return to errs[i]. Each request makes exactly the
 * ORAM accesses of one obl_omap_access, in the same order per ORAM; the
 * accesses of consecutive requests are interleaved so that their memory
 * latencies overlap (docs/omap.md, "Batched access"): faster per request
 * than single calls, and the map ends in the same state (after a refusal
 * mid-batch, OBL_ERR_STATE, with the same entries; docs/omap.md).
 * Secret: ops, the keys, the values, found. Public: n, the pointers'
 * NULL-ness, errs.
 * Returns the first error of errs (OBL_OK if none); INVALID_ARG (m, keys
 * or errs NULL) before any request, errs untouched. It allocates nothing.
 */
obl_err obl_omap_access_batch(obl_omap *m, size_t n, const uint64_t *ops, const void *keys,
                              const void *values_in, void *values_out, uint64_t *found,
                              obl_err *errs);

/* obl_omap_access(m, OBL_OMAP_GET, key, NULL, value_out, found). */
obl_err obl_omap_get(obl_omap *m, const void *key, void *value_out, uint64_t *found);

/* obl_omap_access(m, OBL_OMAP_PUT, key, value, NULL, existed). */
obl_err obl_omap_put(obl_omap *m, const void *key, const void *value, uint64_t *existed);

/* obl_omap_access(m, OBL_OMAP_ERASE, key, NULL, NULL, existed). */
obl_err obl_omap_erase(obl_omap *m, const void *key, uint64_t *existed);

typedef struct obl_omap_stats {
    uint64_t operations;      /* obl_omap_access calls that ran */
    uint64_t full_errors;     /* OBL_ERR_FULL events */
    uint64_t buckets;         /* M */
    uint32_t slots_per_bucket;
    uint32_t overflow_size;   /* overflow stash entries */
    uint64_t overflow_max;    /* largest overflow stash occupancy after an
                                 operation (or the build) */
    uint64_t oram_accesses;   /* ORAM accesses made: 1 per op, + 1 in the
                                 compact layout (not on the FULL of a full
                                 map or stash; yes on a fingerprint
                                 collision's) */
    uint32_t layout;          /* the layout in use: OBL_OMAP_LAYOUT_INLINE or
                                 OBL_OMAP_LAYOUT_COMPACT */
    uint64_t stash_max;       /* largest stash occupancy seen in the index
                                 ORAM's data level and the value ORAM */
    uint64_t stash_overflows; /* their OBL_ERR_STASH_OVERFLOW events */
} obl_omap_stats;

/* Reading overflow_max and stash_max reveals the stashes' history to the
 * caller, who decides whether that is public; the library never branches
 * on them. */
void obl_omap_get_stats(const obl_omap *m, obl_omap_stats *st);

uint64_t obl_omap_capacity(const obl_omap *m);

/* Bytes the map holds (ORAMs, overflow stash, buffers). Public. */
size_t obl_omap_memory_bytes(const obl_omap *m);

/* The instruction-set variant this structure runs, chosen when it was
 * created: "avx512", "avx2" or "portable" (docs/dispatch.md); NULL for
 * NULL. Public. */
const char *obl_omap_variant(const obl_omap *m);

/* Frees and wipes everything; NULL is fine. */
void obl_omap_destroy(obl_omap *m);

OBL_API_END

#ifdef __cplusplus
}
#endif

#endif /* OBL_OMAP_H */
