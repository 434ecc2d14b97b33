/* SPDX-License-Identifier: MIT */
/*
 * The sharded map's structure, shared by shard.c (creation, build),
 * batch.c (the batch path) and cost.c (the cost model).
 */
#ifndef OBL_SRC_SHARD_MAP_H
#define OBL_SRC_SHARD_MAP_H

#include <pthread.h>

#include <obl/omap.h>
#include <obl/shard.h>

#include "shard/shard_internal.h"

/* Constants of the cost model, measured at creation (cost.c). Public: they
 * are timings of fixed work on public sizes. */
typedef struct shard_costs {
    double access_us;  /* one obl_omap access on a shard */
    double entry_us;   /* the scan: per entry, hashing and loop */
    double slot_us;    /* the scan: per entry and table slot */
    double ce_us;      /* a sort of table records, per record and level */
} shard_costs;

struct obl_shard {
    obl_alloc_ctx raw;       /* the caller's allocator: the map itself */
    pthread_mutex_t alloc_mu;
    obl_allocator locked;    /* raw behind alloc_mu: everything else */
    obl_alloc_ctx ac;        /* through locked */
    obl_shard_params p;      /* p.alloc = &locked */
    unsigned S, lambda, threads;
    uint64_t cap_s;          /* each shard's capacity */
    int keep_omap, keep_scan;
    obl_pool *pool;
    obl_prg prg;
    shard_route rt;          /* the balancer's PRF key and sizes */
    obl_omap **om;           /* S per-request stores (NULL entries if not kept) */
    shard_scan **sc;         /* S scan stores */
    uint64_t *cnt;           /* per-request mode: entries per shard (secret) */
    shard_costs cost;
    int calibrated;          /* cost measured (at the first get batch) */
    size_t shape_b, shape_nb, shape_z; /* the scan table's shape for b */
    size_t last_B, last_b;   /* the balancer's b for B, reused */
    obl_shard_stats st;
};

/* Entries per shard: the least c with P[some shard gets more than c of
 * `capacity` keys] <= 2^-lambda. Public. */
uint64_t shard_capacity_each(uint64_t capacity, unsigned S, unsigned lambda);

/* INVALID_ARG or TOO_LARGE for bad parameters, else OBL_OK. */
obl_err shard_check_params(const obl_shard_params *p);

/* The map without its shards' stores (pool, PRG, balancer key, arrays). */
obl_err shard_alloc(obl_shard **out, const obl_shard_params *p);

/* Measures the cost model's constants on the map's own stores (both kept). */
obl_err shard_calibrate(obl_shard *m);

/* The model's estimates (us) for a get batch of b per shard. */
double shard_est_per_request(const obl_shard *m, size_t b);
double shard_est_scan(obl_shard *m, size_t b);

/* The balancer's estimate (us) for B requests, b per shard. */
double shard_est_balance(const obl_shard *m, size_t B, size_t b);

/* Microseconds since an arbitrary origin (CLOCK_MONOTONIC). */
double shard_now_us(void);

#endif /* OBL_SRC_SHARD_MAP_H */
