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
    double bal_us;     /* the balancer (split and join of a get batch), per
                        * record n and lg(n)^2, n = B + S b */
} shard_costs;

/* Batch sizes whose engines' measured times a map keeps (shard_observed). */
#define SHARD_SEEN 16u

/* What a map measured of its get batches of one size B (cost.c): each
 * engine's last two answer times (wall, us; cnt of them valid), the
 * engine in use (best), the batches so far (n) and the batch at which the
 * other engine is measured again (next, after gap more). All public. */
typedef struct shard_seen {
    size_t B;
    double us[2][2];
    unsigned cnt[2];
    unsigned best;
    uint64_t n, next, gap;
} shard_seen;

/* Most sub-batches a get batch is cut into (shard_parts_get). */
#define SHARD_MAX_PARTS 16u

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
#ifdef OBL_TESTING
    unsigned parts_force;    /* this many sub-batches (0: the model's choice) */
    int recheck_off;         /* 1: no engine measured again after a size's
                                first two batches (a negative control) */
#endif
    /* b of recent (n, P), a tail sum of tens of us that a server's varying
     * batch sizes would pay per batch (shard_part_b) */
    struct { size_t n, b; unsigned P; } bmemo[64];
    /* per get batch size B (0: a free slot), the measured answer times (us,
     * wall) of its batches with each engine (cost.c, shard_pick_scan) */
    shard_seen seen[SHARD_SEEN];
    unsigned seen_next;      /* the slot to reuse next */
    struct part *parts;      /* the last sub-batched get's parts, kept */
    size_t parts_B;          /* (shard_parts_get; public sizes) */
    unsigned parts_P;
    obl_shard_stats st;
};

/* The test build's forced sub-batch count, 0 (the model's choice) elsewhere
 * (src/common/testing.h). */
static inline unsigned shard_parts_force(const obl_shard *m)
{
#ifdef OBL_TESTING
    return m->parts_force;
#else
    (void)m;
    return 0;
#endif
}

/* Entries per shard: the least c with P[some shard gets more than c of
 * `capacity` keys] <= 2^-lambda. Public. */
uint64_t shard_capacity_each(uint64_t capacity, unsigned S, unsigned lambda);

/* INVALID_ARG or TOO_LARGE for bad parameters, else OBL_OK. */
obl_err shard_check_params(const obl_shard_params *p);

/* The map without its shards' stores (pool, PRG, balancer key, arrays). */
obl_err shard_alloc(obl_shard **out, const obl_shard_params *p);

/* Measures the cost model's constants on the map's own stores (both kept). */
obl_err shard_calibrate(obl_shard *m);

/* The AUTO policy with a hint (obl/shard.h; nothing for other maps):
 * times the constants on scratch stores (a scan store of 2^14 entries, an
 * omap of shard 0's parameters at 2^14 entries and, unless the scan wins
 * against that lower bound, at the shard's capacity) and keeps the store
 * whose engine the model puts cheaper for get batches of p.expected_batch
 * (keep_omap, keep_scan; the map calibrated). Before the shards' stores
 * exist; the scratch omap of the shard's capacity goes to *om0 if the
 * omaps are kept and om0 is not NULL, else it is freed. Public: sizes,
 * timings. Errors: NOMEM, as obl_omap_create. */
obl_err shard_pick_stores(obl_shard *m, obl_omap **om0);

#ifdef OBL_TESTING
/* Tests only: the next maps' AUTO choice uses these constants and times
 * nothing (no scratch stores); NULL undoes it. */
void shard_test_pick_costs(const shard_costs *c);
#endif

/* Nonzero for a map made for its expected batch size (AUTO with a hint):
 * it keeps one store, and omaps kept that way have dense value trees,
 * memory before per-request speed (docs/shard.md, "Store policy"). Maps
 * whose caller named the stores (PER_REQUEST, BOTH) keep the faster shape. */
int shard_dense_omaps(const obl_shard *m);

/* The parameters of a shard's omap with the given seed and build threads. */
obl_omap_params shard_omap_params_seeded(const obl_shard *m, uint64_t seed, unsigned threads);

/* The parameters of shard j's omap (a seed drawn from the map's PRG). */
obl_omap_params shard_omap_params(obl_shard *m, unsigned j);

/* The model's estimates (us) for a get batch of B, b per shard: the
 * omaps' in P sub-batches (P = 1: the shards' work alone; P > 1: plus the
 * difference of the P balancers from one), and the scan's. */
double shard_est_per_request(obl_shard *m, size_t B, size_t b, unsigned P);
double shard_est_scan(obl_shard *m, size_t b);
/* The model's estimates of the two engines for a get batch (us): the
 * omaps' (P sub-batches) and the scan's, which with one shard is charged
 * the balancer (the omaps' get batch needs none). Either pointer may be
 * NULL: that estimate is not computed. */
void shard_model_costs(obl_shard *m, size_t B, size_t b, unsigned P, double *per_request,
                       double *scan);

/* The least answer time (us) measured for a get batch of B with engine
 * (OBL_SHARD_ENGINE_*), or a negative value if none was. Public. */
double shard_observed(const obl_shard *m, size_t B, unsigned engine);

/* 1 if a get batch of B (b per shard, P sub-batches through the omaps)
 * takes the scan (both stores kept): the model's choice for a size not
 * measured yet, then the other engine once, then the faster by measured
 * wall time, the slower measured again at a public schedule (cost.c). */
int shard_pick_scan(obl_shard *m, size_t B, size_t b, unsigned P);

/* Records a get batch of B answered by engine in us (wall time). */
void shard_observe(obl_shard *m, size_t B, unsigned engine, double us);

/* The balancer's estimate (us) for B requests, b per shard. */
double shard_est_balance(const obl_shard *m, size_t B, size_t b);

/* The S * b arrays of one batch (sb = S * b entries; vin only if writes)
 * in one allocation through m->ac, every field of bf set; bytes: its size,
 * 0 if it overflows. NULL: NOMEM, or TOO_LARGE with bytes 0. */
unsigned char *shard_bufs_alloc(obl_shard *m, size_t sb, int writes, shard_bufs *bf,
                                size_t *bytes);

/* Answers shard s's batch bt through its omap: b accesses, dummies as
 * gets; apply = 0 answers with gets (vout, found), 1 applies the ops in
 * two passes of b, the erases first (the write-back, which goes on past a
 * capacity event and returns the first). */
obl_err shard_omap_requests(const obl_shard *m, size_t s, const shard_batch *bt, int apply);

/*
 * A get batch of B through the omaps, cut by position into P near-equal
 * sub-batches (2 <= P <= SHARD_MAX_PARTS, P <= B), each balanced on its
 * own (docs/shard.md, "Sub-batches"): the P balancers run in parallel,
 * then every shard answers its P padded sub-batches, then the P joins.
 * t (3 doubles) receives the phases' wall times in us.
 * Public: B, P, the sizes, the error. Errors: NOMEM, FULL (a sub-batch's
 * balancer overflowed); the map is unchanged either way.
 */
obl_err shard_parts_get(obl_shard *m, size_t B, unsigned P, const unsigned char *keys,
                        unsigned char *vout, uint64_t *found, double t[3]);

/* Frees the sub-batches' memory kept between batches. */
void shard_parts_release(obl_shard *m);

/* The per-shard batch size of a sub-batch of n requests, one of P: the
 * balancer's b with lambda + ceil(lg P). Public. */
size_t shard_part_b(obl_shard *m, size_t n, unsigned P);

/* The cost model's estimate (us) of a get batch of B through the omaps in
 * P sub-batches: the shards' accesses plus the P balancers (none for one
 * shard). */
double shard_est_parts(obl_shard *m, size_t B, unsigned P);

/* The sub-batch count of a get batch of B through the omaps: 1, or the
 * thread count when the model finds it cheaper. Needs the calibration. */
unsigned shard_choose_parts(obl_shard *m, size_t B);

/* shard_deal_pairs (shard_internal.h) with the map's fields. */
obl_err shard_deal(obl_shard *m, const unsigned char *keys, const unsigned char *vals, size_t n,
                   unsigned char *dk, unsigned char *dv, size_t *off);

#ifdef OBL_TESTING
/* Tests only: 1 makes the dealing declassify each label and touch an
 * address by it (the trace test's negative control); 0 undoes it. */
void shard_deal_test_plant(int on);
#endif

/* Microseconds since an arbitrary origin (CLOCK_MONOTONIC). */
double shard_now_us(void);

#endif /* OBL_SRC_SHARD_MAP_H */
