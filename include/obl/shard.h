/* SPDX-License-Identifier: MIT */
/*
 * obl/shard.h: a sharded oblivious map answering batches of requests
 * (Sharded-UMAP), and with one shard a batched map (Batched-UMAP).
 *
 * Design (docs/shard.md): S shards; a secret PRF key of the map sends each
 * key to one shard. A batch of B requests goes through the load balancer,
 * which deduplicates it and gives every shard exactly b requests (real ones
 * padded with dummies; b depends on B and S alone). A fixed pool of worker
 * threads serves the shards in parallel, each with one of two engines chosen
 * per batch by a cost model of public sizes only (B, S, b, the shard
 * capacity, key and value sizes) and constants measured at creation:
 *   per-request: the shard's obl_omap answers its b requests one by one;
 *   scan: the shard's entries, in buckets of fixed capacity under a secret
 *         hash key of the shard, are scanned once in storage order against
 *         an oblivious hash table of its b requests (Snoopy's subORAM).
 * With one shard the scan is split over all threads.
 *
 * Batch semantics: every request sees the map as it was before the batch
 * (a get, put or erase returns the old value and whether the key was
 * present); then the batch's writes are applied, and of several writes of
 * one key the last in batch order wins.
 *
 * Threat model (as obl/omap.h): secret are the keys, values, operations,
 * whether keys are present, which shard a key belongs to and the number of
 * entries. Public: the parameters, B, b, the stores kept and the engine
 * chosen (functions of public sizes and timings), the thread count and the
 * error codes. Capacity events
 * (public, each of probability at most 2^-40 while the map holds at most
 * `capacity` entries): a shard receiving more than b distinct keys of a batch
 * (the balancer's overflow), a scan table overflow, a scan store bucket
 * overflow (new keys beyond a bucket's capacity), a shard full.
 * A call that fails before its write phase leaves the map unchanged. One
 * exception: a capacity event of a shard's map during the write-back of a
 * map that keeps both engines' stores comes after the scan stores have
 * committed; every write of the batch is still applied where it can be,
 * and the first error is returned (docs/shard.md).
 *
 * Thread safety: one call at a time per map; the map runs its own threads.
 */
#ifndef OBL_SHARD_H
#define OBL_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include <obl/obl.h>
#include <obl/omap.h>

#ifdef __cplusplus
extern "C" {
#endif

OBL_API_BEGIN

#define OBL_SHARD_MAX_KEY_SIZE 64u
#define OBL_SHARD_MAX_VALUE_SIZE 1024u
#define OBL_SHARD_MAX_SHARDS 4096u
#define OBL_SHARD_MAX_BATCH ((size_t)1 << 24)

/*
 * Stores a map keeps (obl_shard_params.engines; docs/shard.md, "Store
 * policy"). BOTH keeps the omap and the entry array of every shard (a write
 * updates both) and chooses per get batch; PER_REQUEST and SCAN keep one
 * store and always use its engine, which answers batches of every size.
 * AUTO (0, the default): with expected_batch = 0 both stores, as BOTH;
 * with expected_batch = E > 0 the one store whose engine the cost model
 * (constants timed at creation on this machine, on scratch stores of the
 * map's sizes) puts cheaper for get batches of E. Batches far from E are
 * still answered, at the kept engine's cost for their size (the other
 * engine's figures in docs/shard.md: a scan store is several times slower
 * than the omaps at small batches, the omaps half the scan's rate at large
 * ones); BOTH serves every size at its cheaper engine, for the memory of
 * both stores. The choice is public (sizes and timings).
 */
#define OBL_SHARD_ENGINES_AUTO 0u
#define OBL_SHARD_ENGINES_PER_REQUEST 1u
#define OBL_SHARD_ENGINES_SCAN 2u
#define OBL_SHARD_ENGINES_BOTH 3u

/* The engine a batch used (obl_shard_stats.last_engine). */
#define OBL_SHARD_ENGINE_PER_REQUEST 1u
#define OBL_SHARD_ENGINE_SCAN 2u

typedef struct obl_shard obl_shard;

typedef struct obl_shard_params {
    uint64_t capacity;          /* public: most entries, >= shards */
    size_t key_size;            /* 1 .. OBL_SHARD_MAX_KEY_SIZE */
    size_t value_size;          /* 1 .. OBL_SHARD_MAX_VALUE_SIZE */
    uint32_t shards;            /* S, 1 .. OBL_SHARD_MAX_SHARDS */
    uint32_t threads;           /* T; 0 = the CPUs of the process's affinity mask */
    uint32_t engines;           /* OBL_SHARD_ENGINES_*; 0 = AUTO */
    uint64_t expected_batch;    /* public: the usual B, the AUTO policy's hint;
                                 * 0 = not given; <= OBL_SHARD_MAX_BATCH */
    uint32_t lambda;            /* overflow bounds 2^-lambda; 0 = 40 */
    obl_random_fn random;       /* NULL: getrandom(2) */
    void *random_opaque;
    uint64_t seed;              /* used instead of random when use_seed != 0 */
    int use_seed;               /* tests and reproducible benchmarks only */
    const obl_allocator *alloc; /* NULL: the C library */
} obl_shard_params;

/* An empty map. With AUTO and a hint, the store's cost constants are timed
 * here (a few ms; docs/shard.md). Errors: INVALID_ARG (also a hint above
 * OBL_SHARD_MAX_BATCH), TOO_LARGE, NOMEM, RANDOM, IO (threads). */
obl_err obl_shard_create(obl_shard **out, const obl_shard_params *p) OBL_WARN_UNUSED;

/*
 * Bulk build from n distinct pairs, n <= capacity, the shards built in
 * parallel. Secret: keys and values. Public: n and the parameters; and by
 * design the number of keys each shard receives (docs/shard.md, "Build").
 * With AUTO and a hint the store is picked first, as by create.
 * Errors: as create, DUPLICATE_KEY, FULL (a shard's share exceeded its
 * capacity; probability <= 2^-lambda for n <= capacity).
 */
obl_err obl_shard_build(obl_shard **out, const obl_shard_params *p, const void *keys,
                        const void *values, uint64_t n) OBL_WARN_UNUSED;

/*
 * A mixed batch of B requests: ops[i] is OBL_OMAP_GET, PUT or ERASE
 * (secret), keys B * key_size bytes, values_in B * value_size (the puts'
 * values; read for every request), values_out B * value_size (the old
 * values, zeros if absent), found B words (1 if present before the batch).
 * Public: B. Errors: INVALID_ARG (NULL, B = 0 or > OBL_SHARD_MAX_BATCH),
 * NOMEM, FULL, STASH_OVERFLOW (a capacity event above). The map is
 * unchanged on error, but for the write-back exception above.
 */
obl_err obl_shard_batch(obl_shard *m, size_t B, const uint64_t *ops, const void *keys,
                        const void *values_in, void *values_out, uint64_t *found);

/* A batch of B gets: cheaper than obl_shard_batch (nothing to write). */
obl_err obl_shard_get(obl_shard *m, size_t B, const void *keys, void *values_out,
                      uint64_t *found);

/* B puts (upserts); found may be NULL. */
obl_err obl_shard_put(obl_shard *m, size_t B, const void *keys, const void *values,
                      uint64_t *found);

/* B erases; found may be NULL. */
obl_err obl_shard_erase(obl_shard *m, size_t B, const void *keys, uint64_t *found);

typedef struct obl_shard_stats {
    uint32_t shards, threads;
    uint32_t engines;          /* the stores kept: OBL_SHARD_ENGINES_PER_REQUEST,
                                * SCAN or BOTH (AUTO resolved at creation) */
    uint64_t shard_capacity;   /* entries each shard holds at most */
    uint64_t batches;          /* batches answered */
    uint32_t last_engine;      /* OBL_SHARD_ENGINE_* of the last batch */
    size_t last_b;             /* per-shard batch size of the last batch */
    double est_per_request_us; /* the costs the last get batch's engine was chosen
                                * by: measured times of earlier batches of its
                                * size, else the cost model's estimates */
    double est_scan_us;
    /* Time of the last batch in its parts: the balancer (both directions),
     * the shards' answers, and the writes applied after the answers. */
    double last_balance_us, last_shard_us, last_writeback_us;
    /* Sub-batches of the last batch: a get batch through the omaps may be
     * cut by position into this many parts, balanced in parallel (public:
     * chosen from the sizes and the cost model's timings). */
    uint32_t last_parts;
} obl_shard_stats;

void obl_shard_get_stats(const obl_shard *m, obl_shard_stats *st);

/* Bytes held (shards, balancer buffers). Public. */
size_t obl_shard_memory_bytes(const obl_shard *m);

/* Stops the threads, frees and wipes everything; NULL is fine. */
void obl_shard_destroy(obl_shard *m);

OBL_API_END

#ifdef __cplusplus
}
#endif

#endif /* OBL_SHARD_H */
