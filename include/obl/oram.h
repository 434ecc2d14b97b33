/* SPDX-License-Identifier: MIT */
/*
 * obl/oram.h: tree ORAMs.
 *
 * Two structures:
 *
 * - obl_nroram, a non-recursive Circuit ORAM (Wang, Chan, Shi, CCS 2015,
 *   eprint 2014/672). It stores up to `capacity` blocks of `value_size`
 *   bytes, each named by a block id; the CALLER keeps every block's position
 *   (a leaf label) and passes it to each access together with a fresh one.
 *   This is the building block of the recursive ORAM and of maps that keep
 *   positions in their own tables.
 *
 * - obl_roram, a recursive ORAM: an oblivious array of N values of
 *   `value_size` bytes, index -> value. Positions live in a recursive
 *   position map (32 packed 16-bit positions per 64-byte block for trees
 *   of at most 2^16 leaves, else 16 of 32 bits) over a linear-scan base
 *   level.
 *
 * Threat model (docs/oram.md): the adversary sees every memory address the
 * library touches and the time it takes, not the memory contents. Secret:
 * block ids, indices, values, the operation type and whether a block was
 * found. Public: capacity/N, value_size, the number of operations, the leaf
 * labels an access reveals (uniformly random and independent of the secrets
 * by the ORAM's design) and the error codes returned. Stash overflow is a
 * public event: measured over 10^8 accesses the stash never held more than
 * 14 blocks, and the measured tail extrapolates to about 2^-30 per access
 * at the default stash of 20 and 2^-40 at 29 (docs/oram.md; trees of more
 * than 2 blocks per leaf evict three times per access and default to 24);
 * callers who need the smaller figure set stash_size.
 *
 * Errors: OBL_ERR_INVALID_ARG (NULL, zero or absurd sizes), OBL_ERR_TOO_LARGE
 * (sizes overflow), OBL_ERR_NOMEM, OBL_ERR_RANDOM, OBL_ERR_RANGE (index >= N:
 * N is public, so the range check is a public check on a caller contract;
 * a caller who must hide an out-of-range index clamps it first),
 * OBL_ERR_STASH_OVERFLOW (see below), OBL_ERR_STATE.
 *
 * Evictions: the two evictions of each access (Circuit ORAM) run at the
 * start of the next access of the same tree, while that access's path is
 * fetched, so that its cache misses overlap them; the order of reads and
 * evictions is the paper's.
 *
 * Stash overflow: when the stash holds more than stash_size blocks after
 * an access's evictions, the call that ran them (the next access of that
 * tree) runs extra evictions, completes normally (its output is valid, its
 * write applied, no block is lost) and returns OBL_ERR_STASH_OVERFLOW to
 * report the event. If the extra evictions could not bring the stash back
 * to stash_size blocks the structure refuses further accesses with
 * OBL_ERR_STATE until a later call's extra evictions succeed; every stored
 * block stays readable through obl_*_read once they do. A tree that holds
 * more than `capacity` blocks (the caller broke the contract) may never
 * recover: obl_nroram_export still hands out every stored block (id and
 * value), so the caller can rebuild a larger structure, then destroy this
 * one (docs/oram.md, "After an overflow").
 *
 * Thread safety: none inside; one structure per thread or an outside lock.
 */
#ifndef OBL_ORAM_H
#define OBL_ORAM_H

#include <stddef.h>
#include <stdint.h>

#include <obl/obl.h>

#ifdef __cplusplus
extern "C" {
#endif

OBL_API_BEGIN

/* Largest value size the ORAMs accept. */
#define OBL_ORAM_MAX_VALUE_SIZE ((size_t)1 << 20)

/* Largest tree one structure allocates (1 TiB): larger sizes are
 * OBL_ERR_TOO_LARGE before any allocation. */
#define OBL_ORAM_MAX_BYTES ((size_t)1 << 40)

/* Default stash size in blocks (Circuit ORAM, Z = 2; see docs/oram.md for
 * the measured histogram and the overflow probability it implies). */
#define OBL_ORAM_DEFAULT_STASH 20

/*
 * Operation codes for obl_nroram_access and obl_roram_access. The code is a
 * SECRET: every code performs the same memory accesses.
 *   OBL_ORAM_READ:   out = value; the block stays (remapped to new_pos).
 *   OBL_ORAM_WRITE:  out = old value (zeros if absent); value = in. For the
 *                    NRORAM, writing an absent id inserts it.
 *   OBL_ORAM_REMOVE: out = old value; the block is removed (NRORAM only:
 *                    the RORAM takes a 0/1 is_write flag instead).
 * Any other code behaves as OBL_ORAM_READ.
 */
#define OBL_ORAM_READ 0u
#define OBL_ORAM_WRITE 1u
#define OBL_ORAM_REMOVE 2u

/*
 * Read-modify-write callback for the update calls: called exactly once per
 * access with the block's current value (zeros when absent) in `value`,
 * which it may modify in place; `found` is 1 if the block was present, else
 * 0 (a secret). It MUST itself be oblivious: no branch or address on value
 * or found. The modified value is written back (NRORAM: the block is stored,
 * or inserted when absent, iff *keep is left 1 or set to 1; *keep arrives as
 * `found`).
 */
typedef void (*obl_oram_update_fn)(void *ctx, void *value, uint64_t found, uint64_t *keep);

/* Statistics. Reading them reveals the stash history to the caller, who
 * decides whether that is public; the library never branches on them. */
typedef struct obl_oram_stats {
    uint64_t accesses;           /* oblivious accesses performed */
    uint64_t evictions;          /* eviction passes */
    uint64_t stash_max;          /* largest stash occupancy after an access */
    uint64_t overflows;          /* OBL_ERR_STASH_OVERFLOW reports */
    uint32_t stash_size;         /* stash slots */
    /* hist[k]: accesses that ended with k blocks in the stash, k <= stash
     * size; filled only if the structure was created with track_histogram. */
    uint64_t hist[65];
} obl_oram_stats;

/* ------------------------------------------------------------------ NRORAM */

typedef struct obl_nroram obl_nroram;

typedef struct obl_nroram_params {
    uint64_t capacity;        /* public: most blocks stored at once, >= 1 */
    size_t value_size;        /* public: bytes per block, 1 .. OBL_ORAM_MAX_VALUE_SIZE */
    uint32_t stash_size;      /* public: 0 = OBL_ORAM_DEFAULT_STASH (24 when
                                 capacity > 2 x num_leaves); 2 .. 64 */
    uint32_t pos_bytes;       /* 0 = 4 when capacity < 2^32 - 1, else 8; or 4 or 8 */
    int track_histogram;      /* keep the stash histogram (costs a scan of 65 words) */
    int dense;                /* public: nonzero = up to 2.52 blocks per leaf
                                 instead of 2.5 (fewer leaves for a capacity
                                 just above 2.5 x a power of two; there a
                                 default stash of 36 and slower accesses:
                                 docs/oram.md, "Tree and buckets") */
    obl_random_fn random;     /* NULL: getrandom(2); seeds the structure's PRG */
    void *random_opaque;
    uint64_t seed;            /* used instead of random when use_seed != 0 */
    int use_seed;             /* tests and reproducible benchmarks only */
    const obl_allocator *alloc; /* NULL: the C library */
} obl_nroram_params;

/*
 * Creates an empty NRORAM.
 * Public: all parameters. Errors: INVALID_ARG, TOO_LARGE, NOMEM, RANDOM,
 * UNSUPPORTED (the CPU lacks AES-NI or x86-64-v2, or OBL_CT_VARIANT names
 * no variant: docs/dispatch.md; every create of obl/oram.h and obl/omap.h).
 */
obl_err obl_nroram_create(obl_nroram **out, const obl_nroram_params *p) OBL_WARN_UNUSED;

/* Number of leaves: positions are in [0, num_leaves). A power of two. Public. */
uint64_t obl_nroram_num_leaves(const obl_nroram *o);

/* The instruction-set variant this structure runs, chosen when it was
 * created: "avx512", "avx2" or "portable" (docs/dispatch.md); NULL for
 * NULL. Public. */
const char *obl_nroram_variant(const obl_nroram *o);

/*
 * A fresh uniform leaf from the structure's PRG.
 * Secret: the result (until the caller passes it as `pos` to an access).
 */
uint64_t obl_nroram_random_pos(obl_nroram *o);

/*
 * One oblivious access (Circuit ORAM, section 3): reads the path to leaf
 * `pos`, removes block `id` from it or from the stash, applies `op`, stores
 * the block with position `new_pos` and evicts on the next two paths in
 * reverse-lexicographic order.
 * Secret: id, new_pos, op, the contents of in and out, whether id was found
 *         (*found, if found != NULL).
 * Public: pos (revealed: it is the path read; it must be the position the
 *         block was given at its last access, or a fresh random leaf when
 *         the block is absent, so that it is uniform and independent of the
 *         secrets), the pointers' NULL-ness.
 * id: any value below obl_nroram_id_limit(o) (2^32 - 1 with 4-byte
 *     positions, else 2^64 - 1); at most `capacity` distinct ids may be
 *     stored at once (more fill the stash). An id at or above the limit
 *     (secret, so not rejected) is never stored and matches no block: the
 *     access runs as for an absent id, *found = 0, out gets zeros, a write
 *     stores nothing (it cannot alias another id).
 * pos, new_pos: < num_leaves (new_pos is masked to that range).
 * in: value_size bytes, or NULL for zeros. out: value_size bytes or NULL.
 * Errors: INVALID_ARG (o NULL), RANGE (pos >= num_leaves), STASH_OVERFLOW
 *         (access done, see top), STATE.
 */
obl_err obl_nroram_access(obl_nroram *o, uint64_t id, uint64_t pos, uint64_t new_pos,
                          uint64_t op, const void *in, void *out, uint64_t *found);

/*
 * Like obl_nroram_access, with a read-modify-write callback instead of op:
 * one ORAM access. Secret/Public as for obl_nroram_access; fn and ctx are
 * public (the callback's code is fixed; what it computes is secret).
 */
obl_err obl_nroram_update(obl_nroram *o, uint64_t id, uint64_t pos, uint64_t new_pos,
                          obl_oram_update_fn fn, void *ctx);

/*
 * Inserts a new block with a fresh random position, written to *pos_out.
 * Equivalent to an access with op WRITE on a random path. The id must not
 * be present (and below obl_nroram_id_limit: else nothing is stored).
 * Secret: id, value, *pos_out. Errors as obl_nroram_access, and
 * INVALID_ARG for value NULL (an access takes in NULL as zeros).
 */
obl_err obl_nroram_insert(obl_nroram *o, uint64_t id, const void *value, uint64_t *pos_out);

/* The first id outside the id space: 2^32 - 1 with 4-byte positions, else
 * 2^64 - 1 (all ones marks an empty slot). Public. 0 for o NULL. */
uint64_t obl_nroram_id_limit(const obl_nroram *o);

/*
 * Export callback: called once per slot of the tree and the stash, in a
 * fixed order; present = 1 (secret) if the slot holds a block, then id and
 * the value_size bytes at value are that block's, else id is all ones and
 * value unspecified bytes (passing such an id to obl_nroram_insert stores
 * nothing: a rebuild can insert every slot). It MUST be oblivious (no
 * branch or address on its arguments but ctx).
 */
typedef void (*obl_nroram_export_fn)(void *ctx, uint64_t id, const void *value,
                                     uint64_t present);

/*
 * Hands every stored block to fn: the stash's slots, then the tree's in
 * heap order, obl_nroram_export_slots(o) calls in all, whatever the
 * structure holds. Works in every state, OBL_ERR_STATE included (the way
 * out of an overflow, see the top); changes nothing.
 * Secret: the ids, values and present flags. Public: the number of calls.
 * Errors: INVALID_ARG (o or fn NULL).
 */
obl_err obl_nroram_export(const obl_nroram *o, obl_nroram_export_fn fn, void *ctx);

/* Number of calls obl_nroram_export makes: (stash_size + 2) + 2 * (2L - 1)
 * for L leaves. Public. 0 for o NULL. */
uint64_t obl_nroram_export_slots(const obl_nroram *o);

void obl_nroram_stats(const obl_nroram *o, obl_oram_stats *st);

/* Bytes the structure holds (tree, stash, buffers). Public. */
size_t obl_nroram_memory_bytes(const obl_nroram *o);

/* Frees and wipes everything; NULL is fine. */
void obl_nroram_destroy(obl_nroram *o);

/* ------------------------------------------------------------------- RORAM */

typedef struct obl_roram obl_roram;

typedef struct obl_roram_params {
    uint64_t n;               /* public: number of values, >= 1 */
    size_t value_size;        /* public: 1 .. OBL_ORAM_MAX_VALUE_SIZE */
    uint32_t stash_size;      /* 0 = default, per level; else 2 .. 64, checked
                                 for every n (small arrays have no tree) */
    uint32_t scan_max;        /* 0 = the measured crossover (8192): largest
                                 number of base-level positions kept in a
                                 linear scan (entries, of 16 or 32 bits:
                                 docs/oram.md). Arrays of at most 4 KiB are a
                                 scanned array of values, unless scan_max is
                                 below 64 (tests: it forces the trees) */
    int track_histogram;      /* histogram of the data level's stash */
    obl_random_fn random;
    void *random_opaque;
    uint64_t seed;
    int use_seed;
    const obl_allocator *alloc;
    unsigned build_threads;   /* the trees' builds: 0 = the CPUs this
                                 process may run on, 1 = the calling thread
                                 only; two at most. The array built is the
                                 same for every value. */
} obl_roram_params;

/*
 * Creates an array of n values, all zero. The trees are built directly
 * (oblivious placement by sorting, docs/oram.md), not by n writes.
 * Public: the parameters. Errors: INVALID_ARG, TOO_LARGE, NOMEM, RANDOM,
 * STASH_OVERFLOW (a tree's placement overflowed the tree and the stash in
 * 4 tries, each with fresh leaves: a public event, never observed;
 * nothing is created).
 */
obl_err obl_roram_create(obl_roram **out, const obl_roram_params *p) OBL_WARN_UNUSED;

/*
 * Creates an array holding the caller's n * value_size bytes `values`.
 * Secret: the contents of values. Public: the parameters.
 * Errors: as obl_roram_create (INVALID_ARG also for values NULL).
 */
obl_err obl_roram_create_from(obl_roram **out, const obl_roram_params *p,
                              const void *values) OBL_WARN_UNUSED;

/*
 * Combined access, ONE pass through every level: out = old value (if out
 * is not NULL); then, if is_write, value = in.
 * Secret: index, is_write (0 or 1; other values count as 1), the contents
 *         of in and out. Public: the NULL-ness of in and out (in NULL means
 *         zeros), and that index < n (else OBL_ERR_RANGE, a public error).
 * Errors: INVALID_ARG, RANGE, STASH_OVERFLOW (done, see top), STATE.
 */
obl_err obl_roram_access(obl_roram *o, uint64_t index, uint64_t is_write, const void *in,
                         void *out);

/* obl_roram_access(o, index, 0, NULL, value_out). */
obl_err obl_roram_read(obl_roram *o, uint64_t index, void *value_out);

/* obl_roram_access(o, index, 1, value, NULL), except that value NULL
 * returns OBL_ERR_INVALID_ARG (obl_roram_access takes in NULL as zeros). */
obl_err obl_roram_write(obl_roram *o, uint64_t index, const void *value);

/*
 * Read-modify-write in one access: fn(ctx, value, 1, &keep) on the value at
 * index (keep is ignored). Secret: index, the value; fn must be oblivious.
 */
obl_err obl_roram_update(obl_roram *o, uint64_t index, obl_oram_update_fn fn, void *ctx);

uint64_t obl_roram_size(const obl_roram *o);

/* Number of tree levels (data ORAM + position-map ORAMs), excluding the
 * linear-scan base. Public. */
uint32_t obl_roram_levels(const obl_roram *o);

/* Statistics of the data level (level 0). */
void obl_roram_stats(const obl_roram *o, obl_oram_stats *st);

size_t obl_roram_memory_bytes(const obl_roram *o);

/* The instruction-set variant this structure runs, chosen when it was
 * created: "avx512", "avx2" or "portable" (docs/dispatch.md); NULL for
 * NULL. Public. */
const char *obl_roram_variant(const obl_roram *o);

void obl_roram_destroy(obl_roram *o);

OBL_API_END

#ifdef __cplusplus
}
#endif

#endif /* OBL_ORAM_H */
