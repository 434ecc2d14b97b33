/* SPDX-License-Identifier: MIT */
/*
 * The cost model that picks a get batch's engine from public sizes alone:
 * per-request: ceil(S / T) rounds of b omap accesses (the shards run in
 * parallel, one thread each); scan: per shard, every entry hashed and
 * compared with z slots, plus three sorts of the table's records
 * (shard_scan_table_shape gives nb and z), the shards in parallel or, with
 * fewer shards than threads, each scan split over the threads; and for
 * the per-request engine whether a get batch is cut into T sub-batches
 * (parts.c), from the balancer's n lg^2 n work. Its constants are timed
 * (thread CPU time) at the first get batch on the map's own stores
 * (docs/shard.md, "Cost model").
 */
#include <math.h>
#include <string.h>
#include <time.h>

#include "shard/shard_map.h"

/* see shard_map.h */
double shard_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double rounds(const obl_shard *m)
{
    return ceil((double)m->S / (double)m->threads);
}

/* The balancer's work for n = B + S b records, n lg(n)^2 (its networks). */
static double bal_units(size_t B, size_t b, unsigned S)
{
    double n = (double)B + (double)S * (double)b, lg = log2(n + 1);
    return n * lg * lg;
}

/* see shard_map.h */
double shard_est_per_request(obl_shard *m, size_t B, size_t b, unsigned P)
{
    if (P > 1) /* the sub-batches, less the one balancer the scan's side has too */
        return shard_est_parts(m, B, P) - m->cost.bal_us * bal_units(B, b, m->S);
    return rounds(m) * (double)b * m->cost.access_us;
}

/* see shard_map.h */
double shard_est_scan(obl_shard *m, size_t b)
{
    if (m->shape_b != b) {
        shard_scan_table_shape(b, (size_t)m->cap_s, &m->shape_nb, &m->shape_z);
        m->shape_b = b;
    }
    size_t nb = m->shape_nb, z = m->shape_z;
    double n = (double)(b + nb * z), lg = ceil(log2(n + 1));
    double sorts = 3.0 * m->cost.ce_us * n * lg;
    double scan = (double)m->cap_s * (m->cost.entry_us + (double)z * m->cost.slot_us);
    if (m->S < m->threads) /* each scan split over the threads */
        return (double)m->S * (scan / (double)m->threads + sorts);
    return rounds(m) * (scan + sorts);
}

/*
 * The measured choice (docs/shard.md, "Cost model"). Per get batch size B:
 * the first batch takes the model's choice, the second the other engine
 * (unless the model puts it beyond SHARD_EXPLORE_RATIO times the first),
 * so that both have a wall time measured under about the same load; from
 * then on the faster is used and the other is measured again after gap
 * more batches of that size: gap starts at SHARD_RECHECK_FIRST, at least doubles
 * (up to SHARD_RECHECK_MAX) each time the measurement confirms the
 * choice and starts again when it does not. A re-measured engine is
 * compared with the engine in use's last two times (the least: other
 * processes only add to a time), not with a time of long ago. Public: the
 * sizes and the earlier batches' wall times.
 */
#define SHARD_RECHECK_FIRST 4u
#define SHARD_RECHECK_MAX 4096u
/* A confirmed choice waits at least (t_other / t_best - 1) * this many
 * batches: the re-measurements then cost at most 1/32 of the batches'
 * time (until the cap, a re-measurement per 4096 batches). */
#define SHARD_RECHECK_SHARE 32.0

/* The slot of B in m->seen, or -1. */
static int seen_slot(const obl_shard *m, size_t B)
{
    for (unsigned i = 0; i < SHARD_SEEN; i++)
        if (m->seen[i].B == B) /* public */
            return (int)i;
    return -1;
}

/* Engine e's time in slot sl: for the engine in use the least of its last
 * two, for the other its last; negative if none. */
static double seen_time(const shard_seen *sl, unsigned e)
{
    if (!sl->cnt[e])
        return -1;
    if (e == sl->best && sl->cnt[e] > 1)
        return fmin(sl->us[e][0], sl->us[e][1]);
    return sl->us[e][0];
}

/* see shard_map.h */
double shard_observed(const obl_shard *m, size_t B, unsigned engine)
{
    int i = seen_slot(m, B);
    return i < 0 ? -1 : seen_time(&m->seen[i], engine == OBL_SHARD_ENGINE_SCAN);
}

/* An engine the model puts at more than this many times the other's cost
 * is never measured for a size (its one batch would cost more than the
 * choice can gain): the small batches of a server, where a scan of the
 * whole store takes tens of times the omaps' accesses. */
#define SHARD_EXPLORE_RATIO 2.0

/* see shard_map.h */
void shard_model_costs(obl_shard *m, size_t B, size_t b, unsigned P, double *pr, double *sc)
{
    if (sc)
        *sc = shard_est_scan(m, b) + (m->S == 1 ? shard_est_balance(m, B, b) : 0);
    if (pr)
        *pr = shard_est_per_request(m, B, b, P);
}

/* see shard_map.h */
int shard_pick_scan(obl_shard *m, size_t B, size_t b, unsigned P)
{
    int i = seen_slot(m, B);
    double pr, sc;
    if (i < 0 || (!m->seen[i].cnt[0] && !m->seen[i].cnt[1])) { /* the model's choice */
        shard_model_costs(m, B, b, P, &pr, &sc);
        return sc < pr;
    }
    const shard_seen *sl = &m->seen[i];
#ifdef OBL_TESTING
    if (m->recheck_off && sl->cnt[0] && sl->cnt[1])
        return (int)sl->best;
#endif
    if (sl->n < sl->next)
        return (int)sl->best;
    if (!sl->cnt[!sl->best]) { /* never measured: only if the model puts it near */
        shard_model_costs(m, B, b, P, &pr, &sc);
        double other = sl->best ? pr : sc, used = sl->best ? sc : pr;
        if (other > SHARD_EXPLORE_RATIO * used)
            return (int)sl->best;
    }
    return !sl->best; /* the other engine, measured again */
}

/* see shard_map.h */
void shard_observe(obl_shard *m, size_t B, unsigned engine, double us)
{
    int i = seen_slot(m, B);
    const unsigned e = engine == OBL_SHARD_ENGINE_SCAN;
    shard_seen *sl;
    if (i < 0) { /* a new size, in the oldest slot: its engine in use, the
                  * other measured at the next batch */
        sl = &m->seen[m->seen_next];
        m->seen_next = (m->seen_next + 1) % SHARD_SEEN;
        memset(sl, 0, sizeof *sl);
        sl->B = B;
        sl->best = e;
        sl->gap = SHARD_RECHECK_FIRST;
        sl->next = 1;
    } else {
        sl = &m->seen[i];
    }
    double ref = seen_time(sl, sl->best);
    const int first = sl->cnt[e] == 0; /* this engine's first time for B */
    sl->us[e][1] = sl->us[e][0];
    sl->us[e][0] = us;
    sl->cnt[e] = sl->cnt[e] < 2 ? sl->cnt[e] + 1 : 2;
    sl->n++;
    if (e == sl->best || ref < 0)
        return;
    if (us < ref) { /* the other engine was faster: use it, check again soon */
        sl->best = e;
        sl->cnt[e] = 1; /* its older time may be from another load */
        sl->gap = SHARD_RECHECK_FIRST;
    } else if (!first) { /* confirmed: check less often, and the slower the
                          * other engine, the less often (its batch costs
                          * us - ref more than one of the engine in use) */
        double want = ceil((us / ref - 1) * SHARD_RECHECK_SHARE);
        uint64_t g = (double)(sl->gap * 2) > want ? sl->gap * 2 : (uint64_t)want;
        sl->gap = g < SHARD_RECHECK_MAX ? g : SHARD_RECHECK_MAX;
    }
    sl->next = sl->n + sl->gap;
}

/* see shard_map.h: five sorts of B + S b records (route.c) */
double shard_est_balance(const obl_shard *m, size_t B, size_t b)
{
    double n = (double)(B + (size_t)m->S * b);
    return 5.0 * m->cost.ce_us * n * log2(n + 1);
}

/* see shard_map.h */
double shard_est_parts(obl_shard *m, size_t B, unsigned P)
{
    if (m->S == 1) /* one shard answers gets without a balancer */
        return (double)B * m->cost.access_us;
    size_t q = B / P, r = B % P, bq = shard_part_b(m, q, P);
    size_t bq1 = r ? shard_part_b(m, q + 1, P) : bq;
    double per_shard = (double)(P - r) * (double)bq + (double)r * (double)bq1;
    double bal = m->cost.bal_us * bal_units(q + (r != 0), bq1, m->S);
    return rounds(m) * per_shard * m->cost.access_us + ceil((double)P / m->threads) * bal;
}

/* see shard_map.h */
unsigned shard_choose_parts(obl_shard *m, size_t B)
{
    unsigned P = m->threads < SHARD_MAX_PARTS ? m->threads : SHARD_MAX_PARTS;
    if (shard_parts_force(m))
        P = shard_parts_force(m);
    else if (m->S == 1 || P < 2 || B < 2 * (size_t)P ||
             shard_est_parts(m, B, P) >= shard_est_parts(m, B, 1))
        P = 1;
    return P <= B ? P : (unsigned)B;
}

/* CPU time of the calling thread (us): the constants measure work, which
 * other processes on the machine would inflate in wall-clock time. */
static double cpu_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The least of three timings of a get batch of b dummies on store s. */
static double time_scan(shard_scan *s, size_t b, size_t ks, size_t vs, const obl_alloc_ctx *ac)
{
    obl_alloc_ctx c = *ac;
    size_t bytes = b * (16 + 8 + ks + vs);
    unsigned char *buf = (unsigned char *)obl_alloc(&c, bytes, 64);
    if (!buf)
        return -1;
    uint64_t *op = (uint64_t *)buf, *dummy = op + b, *found = dummy + b;
    for (size_t i = 0; i < b; i++)
        dummy[i] = 1;
    shard_batch bt = {b,     op,   dummy, buf + 24 * b, NULL, buf + 24 * b + b * ks,
                      found, NULL, NULL,  NULL};
    double best = INFINITY;
    for (int r = 0; r < 3; r++) {
        double t0 = cpu_now_us();
        if (shard_scan_batch(s, &bt, NULL, 1) != OBL_OK)
            best = -1;
        double t = cpu_now_us() - t0;
        best = best < 0 ? best : fmin(best, t);
    }
    obl_free(&c, buf, bytes);
    return best;
}

/* Scan constants from batches of 1 and 64 dummies on a store of 2^14
 * entries (a fixed size, so that creation stays cheap), and the sort's. */
static obl_err calibrate_scan(obl_shard *m)
{
    enum { CAL_N = 1 << 14, CAL_B = 64 };
    shard_scan *s = NULL;
    obl_err e = shard_scan_create(&s, CAL_N, m->p.key_size, m->p.value_size, &m->prg, &m->ac);
    if (e != OBL_OK)
        return e;
    double t1 = time_scan(s, 1, m->p.key_size, m->p.value_size, &m->ac);
    double t2 = time_scan(s, CAL_B, m->p.key_size, m->p.value_size, &m->ac);
    shard_scan_destroy(s);
    if (t1 < 0 || t2 < 0)
        return OBL_ERR_NOMEM;
    size_t nb, z;
    shard_scan_table_shape(CAL_B, CAL_N, &nb, &z);
    m->cost.entry_us = t1 / CAL_N;
    m->cost.slot_us = fmax(t2 - t1, 0) / ((double)CAL_N * (double)(z > 1 ? z - 1 : 1));
    /* the sort: 4096 table records, per record and level (n lg n) */
    size_t rs = 16 + 8 * m->rt.kw, n = 4096, bytes = n * rs;
    obl_alloc_ctx c = m->ac;
    unsigned char *r = (unsigned char *)obl_alloc(&c, bytes, 64);
    if (!r)
        return OBL_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        memcpy(r + i * rs, &(uint64_t){(i * 0x9e3779b97f4a7c15ull) >> 20}, 8);
    double t0 = cpu_now_us();
    shard_sort(r, n, rs, 1, 1, &m->prg, &m->ac.a);
    m->cost.ce_us = (cpu_now_us() - t0) / (4096.0 * 12.0);
    obl_free(&c, r, bytes);
    return OBL_OK;
}

/* The balancer's constant: one split and join of a get batch of 512 on
 * the map's balancer, per bal_units, with the answers in request order as
 * the omaps give them (the sub-batches' balancers, its one use). */
static obl_err calibrate_balance(obl_shard *m)
{
    enum { CAL_B = 512 };
    size_t b = shard_part_b(m, CAL_B, 1), ks = m->p.key_size, vs = m->p.value_size;
    size_t bytes = CAL_B * (ks + vs + 8), bb = 0;
    shard_bufs bf = {0};
    unsigned char *mem = shard_bufs_alloc(m, (size_t)m->S * b, 0, &bf, &bb);
    bf.akeys = bf.keys;
    bf.adummy = bf.dummy;
    obl_alloc_ctx c = m->ac;
    unsigned char *keys = (unsigned char *)obl_alloc(&c, bytes, 64);
    obl_err e = mem && keys ? OBL_OK : OBL_ERR_NOMEM;
    if (e == OBL_OK) { /* a batch of one key: the balancer's work is the same */
        unsigned char *vout = keys + CAL_B * ks;
        uint64_t *found = (uint64_t *)(vout + CAL_B * vs);
        double t0 = cpu_now_us();
        e = shard_route_split(&m->rt, CAL_B, b, NULL, keys, NULL, &bf);
        if (e == OBL_OK)
            e = shard_route_join(&m->rt, CAL_B, b, keys, &bf, vout, found);
        m->cost.bal_us = (cpu_now_us() - t0) / bal_units(CAL_B, b, m->S);
    }
    obl_free(&c, keys, bytes);
    obl_free(&m->ac, mem, bb);
    return e;
}

/* The omap access constant on om (a shard's omap, or a scratch one of the
 * same capacity: an access's work does not depend on what it holds), as
 * the engine runs them (shard_omap_requests): 16 single gets to warm the
 * caches, then 32 in one batched access, timed. */
static obl_err calibrate_access(obl_shard *m, obl_omap *om)
{
    unsigned char keys[32 * OBL_SHARD_MAX_KEY_SIZE] = {0}, val[OBL_SHARD_MAX_VALUE_SIZE];
    uint64_t found[32];
    obl_err errs[32];
    obl_err e = OBL_OK;
    for (int i = 0; i < 16 && e == OBL_OK; i++)
        e = obl_omap_get(om, keys, val, found);
    double t0 = cpu_now_us();
    if (e == OBL_OK)
        e = obl_omap_access_batch(om, 32, NULL, keys, NULL, NULL, found, errs);
    m->cost.access_us = (cpu_now_us() - t0) / 32;
    return e;
}

static void costs_unknown(obl_shard *m)
{
    m->cost.access_us = INFINITY;
    m->cost.entry_us = m->cost.slot_us = m->cost.ce_us = m->cost.bal_us = INFINITY;
}

/* see shard_map.h */
obl_err shard_calibrate(obl_shard *m)
{
    costs_unknown(m);
    if (m->S > 1) {
        obl_err e = calibrate_balance(m);
        if (e != OBL_OK)
            return e;
    }
    if (m->keep_omap) {
        obl_err e = calibrate_access(m, m->om[0]);
        if (e != OBL_OK)
            return e;
    }
    return m->keep_scan && m->keep_omap ? calibrate_scan(m) : OBL_OK;
}

#ifdef OBL_TESTING
static shard_costs pick_costs; /* shard_test_pick_costs */
static int pick_forced;
void shard_test_pick_costs(const shard_costs *c)
{
    pick_forced = c != NULL;
    if (c)
        pick_costs = *c;
}
#endif

/* The model's estimates for a get batch of B, with the b and the
 * sub-batch count P the batch would take (choose_engine, batch.c): 1 if
 * the scan's is lower. */
static int scan_cheaper(obl_shard *m, size_t B, double *pr, double *sc)
{
    size_t b = shard_part_b(m, B, 1);
    unsigned P = m->S > 1 && m->threads > 1 ? shard_choose_parts(m, B) : 1;
    shard_model_costs(m, B, b, P, pr, sc);
    return *sc < *pr;
}

/* The access constant on a scratch omap of shard 0's parameters and
 * capacity cap; *keep (if not NULL) receives the omap, else it is freed. */
static obl_err time_scratch_omap(obl_shard *m, uint64_t cap, obl_omap **keep)
{
    obl_omap_params op = shard_omap_params(m, 0);
    op.capacity = cap;
    obl_omap *om = NULL;
    obl_err e = obl_omap_create(&om, &op);
    if (e == OBL_OK)
        e = calibrate_access(m, om);
    if (e == OBL_OK && keep)
        *keep = om;
    else
        obl_omap_destroy(om);
    return e;
}

/* The small scratch omap's capacity (shard_pick_stores). */
#define SHARD_PICK_SMALL ((uint64_t)1 << 14)

/* The timed constants of the store policy. An access costs no less on an
 * omap of more capacity (a deeper tree, more cache misses), so a small
 * scratch omap's time is a lower bound: when the scan wins against it, no
 * omap of the shard's capacity (hundreds of MB to zero) is made. */
static obl_err pick_timed(obl_shard *m, size_t B, obl_omap **om, int *scan, double *pr,
                          double *sc)
{
    costs_unknown(m);
    obl_err e = m->S > 1 ? calibrate_balance(m) : OBL_OK;
    if (e == OBL_OK)
        e = calibrate_scan(m);
    uint64_t small = m->cap_s < SHARD_PICK_SMALL ? m->cap_s : SHARD_PICK_SMALL;
    if (e == OBL_OK)
        e = time_scratch_omap(m, small, small == m->cap_s ? om : NULL);
    if (e != OBL_OK)
        return e;
    *scan = scan_cheaper(m, B, pr, sc);
    if (*scan || small == m->cap_s)
        return OBL_OK;
    e = time_scratch_omap(m, m->cap_s, om);
    if (e == OBL_OK)
        *scan = scan_cheaper(m, B, pr, sc);
    return e;
}

/* see shard_map.h */
obl_err shard_pick_stores(obl_shard *m, obl_omap **om0)
{
    if (m->p.engines != OBL_SHARD_ENGINES_AUTO || !m->p.expected_batch)
        return OBL_OK;
    size_t B = (size_t)m->p.expected_batch; /* <= OBL_SHARD_MAX_BATCH */
    obl_omap *om = NULL;
    int scan = 0;
    double pr = 0, sc = 0;
#ifdef OBL_TESTING
    if (pick_forced) {
        m->cost = pick_costs;
        scan = scan_cheaper(m, B, &pr, &sc);
    } else
#endif
    {
        obl_err e = pick_timed(m, B, &om, &scan, &pr, &sc);
        if (e != OBL_OK) {
            obl_omap_destroy(om);
            return e;
        }
    }
    m->calibrated = 1;
    m->keep_scan = scan;
    m->keep_omap = !scan;
    if (m->keep_omap && om0)
        *om0 = om;
    else
        obl_omap_destroy(om);
    m->st.est_per_request_us = pr; /* reported until the first batch */
    m->st.est_scan_us = sc;
    return OBL_OK;
}
