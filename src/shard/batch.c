/* SPDX-License-Identifier: MIT */
/*
 * The batch path of the sharded map: balance (route.c), answer on every
 * shard with the chosen engine, route the answers back, then apply the
 * batch's writes (the write-back, timed apart from the answers).
 * Every step's work depends on B, S, b and the sizes alone; a failure
 * before the write-back leaves every shard unchanged.
 */
#include <math.h>

#include "shard/shard_map.h"

#include "common/secret.h"
#include "ct.h"

typedef struct sb_job {
    obl_shard *m;
    size_t b;
    shard_bufs bf;
    int writes;      /* the requests carry values and ops to apply */
    int apply;       /* per-request: 0 answer with gets, 1 apply the ops */
    unsigned parts;  /* scan slices per shard */
    obl_pool *pool;  /* for a shard's split scan, else NULL */
    unsigned char *mem; /* bf's allocation (none for direct gets, sub-batches) */
    size_t mem_bytes;
} sb_job;

static shard_batch shard_view(const sb_job *j, size_t s)
{
    size_t o = s * j->b;
    const obl_shard *m = j->m;
    shard_batch bt = {j->b, j->bf.op + o, j->bf.dummy + o, j->bf.keys + o * m->p.key_size,
                      j->writes ? j->bf.vin + o * m->p.value_size : NULL,
                      j->bf.vout + o * m->p.value_size, j->bf.found + o,
                      j->bf.akeys + o * m->p.key_size, j->bf.adummy + o,
                      j->bf.aidx ? j->bf.aidx + o : NULL};
    return bt;
}

/* Requests a shard's omap takes in one batched access (the arrays live
 * on the stack). */
#define SHARD_OMAP_CHUNK 128

/* The omap op of request i in a pass: pass 0 answers (gets); a write-back
 * runs pass 1, the erases, then pass 2, the other ops, so that a full
 * shard frees its erased slots before it takes the batch's new keys (the
 * fit check counts them so). Every other request is a get. */
static uint64_t pass_op(const shard_batch *bt, size_t i, unsigned pass)
{
    uint64_t live = (bt->dummy[i] & 1) ^ 1;
    uint64_t erase = obl_ct_eq64(bt->op[i], OBL_OMAP_ERASE);
    uint64_t mine = pass == 1 ? erase : erase ^ 1;
    return pass == 0 ? OBL_OMAP_GET : obl_ct_select64(live & mine, bt->op[i], OBL_OMAP_GET);
}

/* One pass of shard s's requests through its omap, in chunks. */
static obl_err omap_pass(const obl_shard *m, size_t s, const shard_batch *bt, unsigned pass)
{
    size_t ks = m->p.key_size, vs = m->p.value_size;
    uint64_t ops[SHARD_OMAP_CHUNK], found[SHARD_OMAP_CHUNK];
    obl_err errs[SHARD_OMAP_CHUNK];
    obl_err first = OBL_OK;
    for (size_t i0 = 0; i0 < bt->b; i0 += SHARD_OMAP_CHUNK) {
        size_t c = bt->b - i0 < SHARD_OMAP_CHUNK ? bt->b - i0 : SHARD_OMAP_CHUNK;
        for (size_t j = 0; j < c; j++)
            ops[j] = pass_op(bt, i0 + j, pass);
        unsigned char *out = pass ? NULL : bt->vout + i0 * vs;
        obl_err e = obl_omap_access_batch(m->om[s], c, ops, bt->keys + i0 * ks,
                                          bt->vin ? bt->vin + i0 * vs : NULL, out, found, errs);
        /* A write-back goes on past a capacity event, so that no later
         * write of the batch is dropped; the first error is returned. */
        if (e != OBL_OK && first == OBL_OK)
            first = e;
        if (e != OBL_OK && !pass)
            return e;
        for (size_t j = 0; j < c && !pass; j++) {
            uint64_t d = bt->dummy[i0 + j] & 1;
            obl_ct_czero(d, out + j * vs, vs);
            bt->found[i0 + j] = found[j] & (d ^ 1);
        }
    }
    return first;
}

/* see shard_map.h */
obl_err shard_omap_requests(const obl_shard *m, size_t s, const shard_batch *bt, int apply)
{
    if (!apply)
        return omap_pass(m, s, bt, 0);
    obl_err e1 = omap_pass(m, s, bt, 1), e2 = omap_pass(m, s, bt, 2);
    return e1 != OBL_OK ? e1 : e2;
}

/* Shard s through its omap: b accesses, dummies as gets. */
static obl_err task_per_request(void *arg, size_t s)
{
    const sb_job *j = (const sb_job *)arg;
    shard_batch bt = shard_view(j, s);
    return shard_omap_requests(j->m, s, &bt, j->apply);
}

static obl_err task_scan_begin(void *arg, size_t s)
{
    const sb_job *j = (const sb_job *)arg;
    shard_batch bt = shard_view(j, s);
    return shard_scan_begin(j->m->sc[s], &bt, j->pool, j->parts);
}

static obl_err task_scan_commit(void *arg, size_t s)
{
    const sb_job *j = (const sb_job *)arg;
    shard_scan_commit(j->m->sc[s], j->pool);
    return OBL_OK;
}

/* Runs fn on every shard: in parallel one thread per shard, or, with fewer
 * shards than threads and a split scan, shard after shard. */
static obl_err each_shard(sb_job *j, obl_pool_fn fn, int split)
{
    obl_shard *m = j->m;
    if (split && m->S < m->threads) {
        j->pool = m->pool;
        j->parts = m->threads;
        obl_err e = OBL_OK;
        for (size_t s = 0; s < m->S && e == OBL_OK; s++)
            e = fn(j, s);
        return e;
    }
    j->pool = NULL;
    j->parts = 1;
    return obl_pool_run(m->pool, m->S, fn, j);
}

static void scan_abort_all(obl_shard *m)
{
    for (unsigned s = 0; s < m->S; s++)
        shard_scan_abort(m->sc[s]);
}

/* Per-request mode: 1 if every shard's new keys fit (counts are secret;
 * only the verdict is public, as the omap's FULL). */
static uint64_t per_request_fits(const sb_job *j, uint64_t *next)
{
    const obl_shard *m = j->m;
    uint64_t ok = 1;
    for (size_t s = 0; s < m->S; s++) {
        uint64_t c = m->cnt[s];
        for (size_t i = s * j->b; i < (s + 1) * j->b; i++) {
            uint64_t real = (j->bf.dummy[i] & 1) ^ 1, f = j->bf.found[i] & 1;
            c += real & obl_ct_eq64(j->bf.op[i], OBL_OMAP_PUT) & (f ^ 1);
            c -= real & obl_ct_eq64(j->bf.op[i], OBL_OMAP_ERASE) & f;
        }
        ok &= obl_ct_le64(c, m->cap_s);
        next[s] = c;
    }
    return ok;
}

/* A get batch's cost with each engine (us), as the stats report it: the
 * measured answer time of earlier get batches of this B with that engine
 * where there was one (shard_observed), else the cost model's estimate
 * (with one shard the scan's side is charged the balancer). The choice
 * itself is shard_pick_scan's (cost.c). Public: times of batches of
 * public sizes. */
static void shard_estimates(obl_shard *m, size_t B, size_t b, unsigned P, double *per_request,
                            double *scan)
{
    *per_request = shard_observed(m, B, OBL_SHARD_ENGINE_PER_REQUEST);
    *scan = shard_observed(m, B, OBL_SHARD_ENGINE_SCAN);
    shard_model_costs(m, B, b, P, *per_request < 0 ? per_request : NULL,
                      *scan < 0 ? scan : NULL); /* only the unmeasured */
}

/* The engine of a batch and its sub-batch count: a writing batch uses the
 * scan store if kept; a get batch with both stores the cheaper by the cost
 * model, which also decides whether a get batch through the omaps of
 * several shards is cut into sub-batches. With one shard a get batch
 * through the omap needs no balancer (duplicates are harmless to gets), so
 * the scan's side is charged with it. Public. */
static obl_err choose_engine(obl_shard *m, size_t B, size_t b, int writes, unsigned *engine,
                             unsigned *parts)
{
    int both = m->keep_scan && m->keep_omap;
    int cut = !writes && m->keep_omap && m->S > 1 && (m->threads > 1 || shard_parts_force(m));
    if (!writes && (both || cut) && !m->calibrated) { /* the constants, at first use */
        obl_err c = shard_calibrate(m);
        if (c != OBL_OK)
            return c;
        m->calibrated = 1;
    }
    unsigned P = cut ? shard_choose_parts(m, B) : 1;
    int scan = m->keep_scan;
    if (!writes && both)
        scan = shard_pick_scan(m, B, b, P);
    *engine = scan ? OBL_SHARD_ENGINE_SCAN : OBL_SHARD_ENGINE_PER_REQUEST;
    *parts = scan ? 1 : P;
    return OBL_OK;
}

/* The shards' answers; for a writing batch with scan stores, the scans'
 * writes are left pending. */
static obl_err answer(sb_job *j, unsigned engine, uint64_t *next)
{
    obl_shard *m = j->m;
    obl_err e;
    if (engine == OBL_SHARD_ENGINE_SCAN) {
        e = each_shard(j, task_scan_begin, 1);
        if (e != OBL_OK)
            scan_abort_all(m);
        return e;
    }
    j->apply = 0;
    j->bf.akeys = j->bf.keys; /* answers in request order */
    j->bf.adummy = j->bf.dummy;
    e = each_shard(j, task_per_request, 0);
    if (e == OBL_OK && j->writes && !m->keep_scan) {
        uint64_t ok = per_request_fits(j, next);
        if (!OBL_DECLASSIFY_VAL(ok)) /* public: a shard is full */
            e = OBL_ERR_FULL;
    }
    return e;
}

/* One shard, gets through its omap: the B requests as they are. */
static obl_err direct_gets(obl_shard *m, size_t B, const unsigned char *keys,
                           unsigned char *vout, uint64_t *found)
{
    size_t ks = m->p.key_size, vs = m->p.value_size;
    obl_err errs[SHARD_OMAP_CHUNK];
    for (size_t i0 = 0; i0 < B; i0 += SHARD_OMAP_CHUNK) {
        size_t c = B - i0 < SHARD_OMAP_CHUNK ? B - i0 : SHARD_OMAP_CHUNK;
        obl_err e = obl_omap_access_batch(m->om[0], c, NULL, keys + i0 * ks, NULL,
                                          vout + i0 * vs, found + i0, errs);
        if (e != OBL_OK)
            return e;
    }
    return OBL_OK;
}

/* The writes after the answers: pending scans, then the omaps. */
static obl_err write_back(sb_job *j, const uint64_t *next)
{
    obl_shard *m = j->m;
    if (m->keep_scan)
        (void)each_shard(j, task_scan_commit, 1);
    if (!m->keep_omap)
        return OBL_OK;
    j->apply = 1;
    obl_err e = each_shard(j, task_per_request, 0);
    if (!m->keep_scan)
        memcpy(m->cnt, next, m->S * sizeof(uint64_t));
    return e;
}

/* see shard_map.h */
unsigned char *shard_bufs_alloc(obl_shard *m, size_t sb, int writes, shard_bufs *bf,
                                size_t *bytes)
{
    size_t ks = m->p.key_size, vs = m->p.value_size;
    size_t per = 40 + 2 * ks + vs + (writes ? vs : 0);
    if (!obl_mul_ok(sb, per, bytes)) {
        *bytes = 0;
        return NULL;
    }
    unsigned char *a = (unsigned char *)obl_alloc(&m->ac, *bytes, 64);
    if (!a)
        return NULL;
    bf->op = (uint64_t *)a;
    bf->dummy = bf->op + sb;
    bf->found = bf->dummy + sb;
    bf->adummy = bf->found + sb;
    bf->aidx = bf->adummy + sb;
    bf->akeys = a + 40 * sb;
    bf->keys = bf->akeys + sb * ks;
    bf->vout = bf->keys + sb * ks;
    bf->vin = writes ? bf->vout + sb * vs : NULL;
    return a;
}

/* The answers of a batch: the sub-batches, the one shard's direct gets,
 * or balancer, shards, balancer back; t (3 doubles): the phases' times. */
static obl_err answers(obl_shard *m, sb_job *j, size_t B, unsigned engine, unsigned parts,
                       const uint64_t *ops, const unsigned char *keys,
                       const unsigned char *vin, unsigned char *vout, uint64_t *found,
                       uint64_t *next, double t[3])
{
    if (parts > 1)
        return shard_parts_get(m, B, parts, keys, vout, found, t);
    int direct = m->S == 1 && !j->writes && engine == OBL_SHARD_ENGINE_PER_REQUEST;
    size_t sb;
    if (!direct && !obl_mul_ok(j->b, m->S, &sb))
        return OBL_ERR_TOO_LARGE;
    if (!direct && !(j->mem = shard_bufs_alloc(m, sb, j->writes, &j->bf, &j->mem_bytes)))
        return j->mem_bytes ? OBL_ERR_NOMEM : OBL_ERR_TOO_LARGE;
    double t0 = shard_now_us();
    obl_err e = direct ? OBL_OK : shard_route_split(&m->rt, B, j->b, ops, keys, vin, &j->bf);
    double t1 = shard_now_us();
    if (e == OBL_OK)
        e = direct ? direct_gets(m, B, keys, vout, found) : answer(j, engine, next);
    double t2 = shard_now_us();
    if (e == OBL_OK && !direct)
        e = shard_route_join(&m->rt, B, j->b, keys, &j->bf, vout, found);
    t[0] = t1 - t0;
    t[1] = t2 - t1;
    t[2] = shard_now_us() - t2;
    return e;
}

/* The batch, timed in its parts. */
static obl_err run_batch(obl_shard *m, sb_job *j, size_t B, const uint64_t *ops,
                         const unsigned char *keys, const unsigned char *vin,
                         unsigned char *vout, uint64_t *found)
{
    uint64_t next[OBL_SHARD_MAX_SHARDS];
    unsigned engine = 0, parts = 1;
    obl_err e = choose_engine(m, B, j->b, j->writes, &engine, &parts);
    if (e != OBL_OK)
        return e;
    double t[3];
    e = answers(m, j, B, engine, parts, ops, keys, vin, vout, found, next, t);
    if (e != OBL_OK) {
        if (m->keep_scan)
            scan_abort_all(m);
        return e;
    }
    double t3 = shard_now_us();
    if (j->writes)
        e = write_back(j, next);
    double t4 = shard_now_us();
    m->st.batches++;
    m->st.last_engine = engine;
    m->st.last_b = j->b;
    m->st.last_parts = parts;
    int both = m->keep_scan && m->keep_omap;
    if (both && !j->writes) { /* the estimates it was chosen by, then its time */
        shard_estimates(m, B, j->b, parts, &m->st.est_per_request_us, &m->st.est_scan_us);
        shard_observe(m, B, engine, t[0] + t[1] + t[2]);
    } else { /* the model's, of each engine whose constants were timed */
        int pr = m->calibrated && isfinite(m->cost.access_us);
        int sc = m->calibrated && isfinite(m->cost.entry_us);
        m->st.est_per_request_us = 0;
        m->st.est_scan_us = 0;
        shard_model_costs(m, B, j->b, parts, pr ? &m->st.est_per_request_us : NULL,
                          sc ? &m->st.est_scan_us : NULL);
    }
    m->st.last_balance_us = t[0] + t[2];
    m->st.last_shard_us = t[1];
    m->st.last_writeback_us = t4 - t3;
    return e;
}

/* see obl/shard.h */
obl_err obl_shard_batch(obl_shard *m, size_t B, const uint64_t *ops, const void *keys,
                        const void *values_in, void *values_out, uint64_t *found)
{
    if (!m || !keys || !values_out || !found || B == 0 || B > OBL_SHARD_MAX_BATCH ||
        (values_in && !ops))
        return OBL_ERR_INVALID_ARG;
    sb_job j = {m, shard_part_b(m, B, 1), {0}, values_in != NULL, 0, 1, NULL, NULL, 0};
    obl_err e = run_batch(m, &j, B, ops, (const unsigned char *)keys,
                          (const unsigned char *)values_in, (unsigned char *)values_out, found);
    obl_free(&m->ac, j.mem, j.mem_bytes);
    return e;
}

/* see obl/shard.h */
obl_err obl_shard_get(obl_shard *m, size_t B, const void *keys, void *values_out,
                      uint64_t *found)
{
    return obl_shard_batch(m, B, NULL, keys, NULL, values_out, found);
}

/* Puts or erases: the mixed batch with one op, answers discarded. */
static obl_err write_all(obl_shard *m, size_t B, uint64_t op, const void *keys,
                         const void *values, uint64_t *found)
{
    if (!m || !keys || B == 0 || B > OBL_SHARD_MAX_BATCH || (op == OBL_OMAP_PUT && !values))
        return OBL_ERR_INVALID_ARG;
    size_t vs = m->p.value_size, bytes, vb;
    if (!obl_mul_ok(B, 16 + vs, &bytes) || !obl_mul_ok(B, vs, &vb))
        return OBL_ERR_TOO_LARGE;
    unsigned char *a = (unsigned char *)obl_alloc(&m->ac, bytes + vb, 64);
    if (!a)
        return OBL_ERR_NOMEM;
    uint64_t *ops = (uint64_t *)a, *fnd = ops + B;
    for (size_t i = 0; i < B; i++)
        ops[i] = op;
    unsigned char *vin = values ? (unsigned char *)values : a + bytes; /* zeros */
    obl_err e = obl_shard_batch(m, B, ops, keys, vin, a + 16 * B, fnd);
    if (e == OBL_OK && found)
        memcpy(found, fnd, B * 8);
    obl_free(&m->ac, a, bytes + vb);
    return e;
}

/* see obl/shard.h */
obl_err obl_shard_put(obl_shard *m, size_t B, const void *keys, const void *values,
                      uint64_t *found)
{
    return write_all(m, B, OBL_OMAP_PUT, keys, values, found);
}

/* see obl/shard.h */
obl_err obl_shard_erase(obl_shard *m, size_t B, const void *keys, uint64_t *found)
{
    return write_all(m, B, OBL_OMAP_ERASE, keys, NULL, found);
}
