/* SPDX-License-Identifier: MIT */
/*
 * Private interface of the sharded map (obl/shard.h): one shard's padded
 * batch, the two shard engines that answer it and the sort they use.
 * Design and leakage: docs/shard.md.
 */
#ifndef OBL_SRC_SHARD_INTERNAL_H
#define OBL_SRC_SHARD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <obl/obl.h>

#include "common/alloc.h"
#include "common/cpu.h"
#include "common/prg.h"
#include "pool/pool.h"

/*
 * One shard's batch: exactly b requests (b public), as the load balancer
 * hands them out. Every real key occurs at most once; the rest are dummies
 * (dummy[i] = 1), whose key, op and value are ignored. Batch semantics: a
 * request sees the shard's state before the batch (vout = the old value,
 * found = whether the key was present); then puts (upsert) and erases are
 * applied. Secret: op, dummy, keys, values, vout, found.
 */
typedef struct shard_batch {
    size_t b;
    const uint64_t *op;         /* OBL_OMAP_GET / PUT / ERASE, b words */
    const uint64_t *dummy;      /* 0/1, b words */
    const unsigned char *keys;  /* b * key_size */
    const unsigned char *vin;   /* b * value_size (puts); NULL: get-only batch */
    unsigned char *vout;        /* b * value_size: old value, zeros if absent */
    uint64_t *found;            /* b words: 1 if present before the batch */
    /* NULL: answer i is request i's. Else (the scan engine) the b answers
     * may come in any order: answer i is that of key akeys[i], a dummy's
     * if adummy[i] = 1 (b * key_size bytes, b words; secret). With akeys,
     * aidx (if not NULL) gets answer i's request index instead of its key
     * (b words; secret; akeys is then not written). */
    unsigned char *akeys;
    uint64_t *adummy;
    uint64_t *aidx;
} shard_batch;

/* ---- the scan engine (scan.c): entries in fixed buckets, scanned ---- */

typedef struct shard_scan shard_scan;

/* An empty store for up to `capacity` keys (capacity < 2^32): buckets of
 * fixed capacity under a secret hash key drawn from seed_from and kept
 * (shard_scan_store_shape). Public: all arguments. */
obl_err shard_scan_create(shard_scan **out, uint64_t capacity, size_t key_size,
                          size_t value_size, obl_prg *seed_from, const obl_alloc_ctx *ac);

/* Fills an empty store with n distinct pairs: each into its bucket by an
 * oblivious sort and compaction. Errors: FULL (n > capacity), NOMEM,
 * TOO_LARGE, STASH_OVERFLOW (a bucket overflowed, probability <= 2^-40);
 * the store stays empty on error. Public: n, the error. */
obl_err shard_scan_load(shard_scan *s, const void *keys, const void *values, uint64_t n);

/*
 * Answers one batch: builds the batch's oblivious hash table, scans every
 * entry once (split into `parts` slices run on `pool`, or all on the
 * calling thread if pool is NULL), routes the answers back, and for a batch
 * with vin != NULL applies updates, erases and new-key puts.
 * Public: b, parts, whether vin is NULL, the capacity and the error.
 * Errors: NOMEM; STASH_OVERFLOW (a table bucket overflowed, or a store
 * bucket would after the writes, probability <= 2^-40 each; nothing
 * changed); FULL (more than capacity keys after the batch; nothing
 * changed).
 */
obl_err shard_scan_batch(shard_scan *s, const shard_batch *bt, obl_pool *pool, unsigned parts);

/* shard_scan_batch in two steps, so that a map of several shards changes
 * none when one fails: begin answers the batch and checks that its writes
 * fit (all errors come from here; on error nothing is pending); commit
 * applies the writes of a begun batch (never fails); abort drops them.
 * A get-only batch (vin NULL) leaves nothing pending. */
obl_err shard_scan_begin(shard_scan *s, const shard_batch *bt, obl_pool *pool, unsigned parts);
void shard_scan_commit(shard_scan *s, obl_pool *pool);
void shard_scan_abort(shard_scan *s);

/* Bytes held: the entries and the working memory kept between batches. */
size_t shard_scan_memory_bytes(const shard_scan *s);

void shard_scan_destroy(shard_scan *s);

/* The table's shape for b requests on a store for n keys: nb buckets (a
 * power of two, at most the store's buckets) of z slots, with P[some bucket holds more than z of b uniform balls]
 * <= 2^-40 (exact binomial tail in log space), the cheapest by a cost model
 * of the scan and the sorts. Public. */
void shard_scan_table_shape(size_t b, size_t n, size_t *nb, size_t *z);

/* Tests only: the next batches of b requests take nb buckets (a power of
 * two) of z slots instead of shard_scan_table_shape's, so that a test can
 * make a bucket overflow (STASH_OVERFLOW) or fill one exactly. */
void shard_scan_force_shape(shard_scan *s, size_t b, size_t nb, size_t z);

/* The store's shape: nsb buckets (a power of two) of C slots each, C the
 * least with nsb P[Bin(capacity, 1/nsb) > C] <= 2^-40. Public. */
void shard_scan_store_shape(const shard_scan *s, size_t *nsb, size_t *C);

/* Tests only: the store bucket of a key (secret), so that a test can fill
 * one bucket beyond C. */
size_t shard_scan_bucket_of(const shard_scan *s, const void *key);

/* Limits of the scan engine's stack buffers. */
#define OBL_SHARD_SCAN_MAX_KEY8 64u     /* key bytes, rounded up to 8 */
#define OBL_SHARD_SCAN_MAX_VALUE8 1024u /* value bytes, rounded up to 8 */

/* ---- the balancer (route.c) ---- */

/* The S * b request and answer arrays of one batch; shard j's batch is
 * entries j * b .. (j + 1) * b - 1. */
typedef struct shard_bufs {
    uint64_t *op, *dummy, *found;
    unsigned char *keys, *vin, *vout;
    unsigned char *akeys; /* the answers' keys and dummy flags (shard_batch): */
    uint64_t *adummy;     /* keys and dummy themselves for answers in order */
    uint64_t *aidx;       /* answers in any order: their request indices */
} shard_bufs;

/* The balancer's parameters and its secret PRF key (SipHash-2-4). */
typedef struct shard_route {
    uint64_t k0, k1;
    unsigned S;
    size_t ks, kw, vs, vs8; /* key bytes, key words, value bytes, rounded */
    obl_alloc_ctx *ac;      /* working memory, freed before returning */
    obl_prg *prg;           /* randomness of the sorts' shuffles */
    unsigned threads;       /* threads the sorts may use */
    unsigned char *arena;   /* the split's and the join's records, kept from */
    size_t arena_bytes;     /* batch to batch (shard_route_release) */
    unsigned char *order;   /* the split's requests in its sorted order: */
    size_t order_bytes;     /* position << 1 | last of its key, kept for */
    size_t order_B;         /* the join of the same batch (B of them) */
    int test_fp;            /* tests: 1 zeroes the split's fingerprints of
                             * longer keys, 2 also ignores their collisions */
} shard_route;

/* b: the least n with P[Bin(B, 1/S) > n] <= 2^-lambda (B when S = 1),
 * obl_lb_shard_batch_size of obl/lb.h. */
size_t shard_route_b(size_t B, unsigned S, unsigned lambda);

/* The shard of a key: SipHash under the map's key, scaled to [0, S) by a
 * multiply. Secret: key and result. */
uint64_t shard_route_shard_of(const shard_route *r, const unsigned char *key);

/* What the bulk build's dealing needs (deal.c): a sharded map's fields, or
 * the MPI balancer's. */
typedef struct shard_deal_env {
    const shard_route *rt;      /* the PRF of the shards */
    unsigned S;
    uint64_t cap_s;             /* each shard's capacity */
    size_t ks, vs;              /* key and value bytes */
    unsigned threads;           /* the compactions' threads (and the pool's) */
    obl_pool *pool;             /* the linear passes' threads; NULL: the caller */
    obl_alloc_ctx *ac;          /* the record array */
    const obl_allocator *alloc; /* the compactions' scratch; NULL: default */
} shard_deal_env;

/*
 * Deals n pairs to their shards obliviously (docs/shard.md, "Build"): into
 * dk and dv, shard s's at off[s] .. off[s + 1] - 1 (off: S + 1 entries),
 * each shard's in an unspecified order. Secret: the keys, values and each
 * pair's shard. Public: n, S, the sizes, the per-shard counts.
 * Errors: TOO_LARGE, NOMEM, FULL (a shard over cap_s); dk, dv undefined.
 */
obl_err shard_deal_pairs(const shard_deal_env *v, const unsigned char *keys,
                         const unsigned char *vals, size_t n, unsigned char *dk,
                         unsigned char *dv, size_t *off);

/*
 * Forward: B requests (ops, keys, vin or NULL for a get batch) into the S * b
 * entries of out (op, dummy, keys, vin): every distinct key once, with the
 * batch's last write of it (or GET). Public: B, b, S, sizes, the error.
 * Errors: NOMEM, TOO_LARGE, FULL (a shard got more than b distinct keys).
 */
obl_err shard_route_split(shard_route *r, size_t B, size_t b, const uint64_t *ops,
                          const unsigned char *keys, const unsigned char *vin, shard_bufs *out);

/* Backward: the shards' answers (in: adummy, akeys, found, vout; answers
 * in any order need their request indices, aidx, for keys over 8 bytes) to
 * the B requests (the same keys as the split), duplicates included. It
 * must follow the split of the same batch on r: it takes the requests'
 * order from it. Errors: INVALID_ARG (no split of B before), NOMEM,
 * TOO_LARGE. */
obl_err shard_route_join(shard_route *r, size_t B, size_t b, const unsigned char *keys,
                         const shard_bufs *in, unsigned char *vout, uint64_t *found);

/* Frees the balancer's kept working memory. */
void shard_route_release(shard_route *r);

/* ---- the sort (bitonic.c) ---- */

/*
 * Sorts n records of rec_size bytes ascending by the uint64_t at the start
 * of each record (Batcher's bitonic network for any n, in the recursive
 * form of Lang's notes): a fixed sequence of compare-exchanges, so the
 * trace depends on n and rec_size alone. Equal keys end in any order.
 * Secret: the records. Public: n, rec_size.
 */
void shard_bitonic_sort(unsigned char *recs, size_t n, size_t rec_size);

/*
 * Sorts by the first kw words: for kw = 1, records of at most 7 words and
 * n >= 64, Batcher's network on columns (obl_sort_columns of obl/sort.h,
 * padded to a power of two); else for kw <= 2 and n >= 2^13 obl_sort; else
 * the network here. Never fails: without scratch memory
 * it runs a record network. g: randomness for obl_sort's parameters.
 * Secret: the records. Public: n, rec_size, kw, threads.
 */
void shard_sort(unsigned char *recs, size_t n, size_t rec_size, size_t kw, unsigned threads,
                obl_prg *g, const obl_allocator *alloc);

/* The same for keys whose first word is below UINT64_MAX in every record
 * (the pads take that word, no pad flag column): records of up to 8 words,
 * and keys of two words too, go to the column network. */
void shard_sort_bounded(unsigned char *recs, size_t n, size_t rec_size, size_t kw,
                        unsigned threads, obl_prg *g, const obl_allocator *alloc);

/* shard_sort_bounded with the column network's buffer in scratch when it
 * fits (a caller's kept memory, so that a batch's sorts allocate nothing);
 * shard_sort_scratch(n) bytes always fit for n records. Public: sizes. */
void shard_sort_bounded_in(unsigned char *recs, size_t n, size_t rec_size, size_t kw,
                           unsigned threads, obl_prg *g, const obl_allocator *alloc,
                           uint64_t *scratch, size_t scratch_bytes);
size_t shard_sort_scratch(size_t n);

/*
 * Moves the records with keep[i] = 1 to the front in their order: ORCompact
 * (obl_compact of obl/sort.h) for n >= 2^13, else (or without memory, or
 * keep NULL) a shard_sort_bounded by the first word, which the caller has
 * set to order the kept records first and as they are. Never fails.
 * Secret: records, keep. Public: n, rec_size, threads.
 */
void shard_keep_first(unsigned char *recs, size_t n, size_t rec_size, const uint8_t *keep,
                      unsigned threads, obl_prg *g, const obl_allocator *alloc);

/* The same, by the first kw words of each record compared in order
 * (lexicographically, as numbers). Public: kw too. */
void shard_bitonic_sort_words(unsigned char *recs, size_t n, size_t rec_size, size_t kw);

/* The network's merge: n even, the first n/2 records sorted descending and
 * the rest ascending by their first kw words, into ascending order
 * (n/2 lg n compare-exchanges). Public: n, rec_size, kw. */
void shard_bitonic_merge_words(unsigned char *recs, size_t n, size_t rec_size, size_t kw);

/* The record network behind the two above, one copy per instruction-set
 * variant (net.c): a sort, or (merge = 1) the merge. Public: all but the
 * records. */
#define SHARD_NET_DECLARE(v) \
    void shard_net_##v(unsigned char *recs, size_t n, size_t rec_size, size_t kw, int merge);
OBL_VARIANT_EACH(SHARD_NET_DECLARE)

#endif /* OBL_SRC_SHARD_INTERNAL_H */
