/* SPDX-License-Identifier: MIT */
/*
 * The map's batched access (obl_omap_access_batch): n accesses in order,
 * each exactly the ORAM accesses of obl_omap_access, with the phases of
 * consecutive requests interleaved so that memory of one overlaps the work
 * of the other (docs/omap.md, "Batched access"). An implementation file:
 * included once, by access.c, whose phases it runs.
 *
 * Request t's phases: S(t) = omap_req_start (the index RORAM's position
 * levels), I(t) = omap_req_index (the index's data level), F(t) =
 * omap_req_finish (the value ORAM, outputs). The order is
 *     S(0) I(0) | S(1) F(0) I(1) | S(2) F(1) I(2) | ... | F(n-1)
 * with the index data path of t + 1 prefetched right after S(t + 1), a
 * value access (F(t)) ahead of its use, and the value path of t prefetched
 * right after I(t), S(t + 1) ahead. Each ORAM sees its accesses in the
 * sequential order (the index: S(t) I(t) S(t + 1) ..., the value ORAM:
 * F(t) F(t + 1) ...), and each generator its draws, so the map ends in
 * the state n calls of obl_omap_access leave, byte for byte. S(t + 1)
 * runs after I(t), so a request that repeats the previous one's bucket
 * finds the leaf I(t) gave it; a prefetch asks for the path the next access
 * of that tree reads anyway, and nothing else.
 */
#ifndef OBL_SRC_OMAP_ACCESS_BATCH_IMPL_H
#define OBL_SRC_OMAP_ACCESS_BATCH_IMPL_H

#include <string.h>

#include <obl/omap.h>

#include "omap/omap_internal.h"
#include "oram/nroram_internal.h"
#include "oram/roram_internal.h"

/* Whether every ORAM of m accepts accesses without recovering first (the
 * public `full` flags that nr_ready and ro_ready test). Public. */
static int omap_orams_ready(const obl_omap *m)
{
    if (m->vo && m->vo->full)
        return 0;
    for (uint32_t l = 0; l < m->oram->T; l++)
        if (m->oram->lv[l]->full)
            return 0;
    return 1;
}

/* The requests' arguments (obl_omap_access_batch). */
typedef struct {
    const uint64_t *ops;
    const unsigned char *keys, *vin;
    unsigned char *vout;
    uint64_t *found;
} omap_batch_io;

#define OMAP_B_OP(io, t) ((io)->ops ? (io)->ops[t] : OBL_OMAP_GET)
#define OMAP_B_KEY(m, io, t) ((io)->keys + (t) * (m)->ks)
#define OMAP_B_VIN(m, io, t) ((io)->vin ? (io)->vin + (t) * (m)->vs : NULL)
#define OMAP_B_VOUT(m, io, t) ((io)->vout ? (io)->vout + (t) * (m)->vs : NULL)
#define OMAP_B_FOUND(io, t) ((io)->found ? (io)->found + (t) : NULL)

/* The index data path of r (after omap_req_start) prefetched, and the
 * second eviction path its tree owes (nr_prefetch_evict). A test
 * switch (omap_internal.h) plants the leak the order above avoids: the
 * path `prev` read, as a stale position map would give a repeated
 * bucket. Public: the paths. */
static void omap_batch_prefetch_index(const obl_omap *m, const omap_req *r, const omap_req *prev)
{
    if (!m->oram->T) /* public: a scanned index has no path */
        return;
    uint64_t leaf = r->ws.leaf;
#ifdef OBL_TESTING
    if (m->test_stale_prefetch)
        leaf = prev->ws.leaf;
#else
    (void)prev;
#endif
    nr_prefetch_path(m->oram->lv[0], leaf, 0);
    nr_prefetch_evict(m->oram->lv[0]);
}

/* Request t + 1 may not run its index phase: the value ORAM went into the
 * `full` state during F(t) and recovering failed. Its walk is completed
 * with an access that changes no bucket, so the index stays consistent,
 * and it is refused as obl_omap_access would refuse it. Public: the
 * state. */
static obl_err omap_batch_value_refused(obl_omap *m, omap_req *r)
{
    if (!m->vo || !m->vo->full || nr_ready(m->vo) == OBL_OK) /* public */
        return OBL_OK;
    (void)OBL_V(ro_finish)(m->oram, &r->ws, r->b, 0, NULL, NULL, NULL, NULL);
    return OBL_ERR_STATE;
}

/*
 * The pipelined order above over requests 0..n-1, rq: two requests'
 * buffers. Returns the number of requests answered (errs set); the caller
 * runs the rest one by one. It stops early only after a refusal (STATE),
 * so that what follows takes obl_omap_access's own checks.
 */
static size_t omap_batch_pipe(obl_omap *m, size_t n, omap_req rq[2], const omap_batch_io *io,
                              obl_err *errs)
{
    if (omap_req_start(m, &rq[0], OMAP_B_KEY(m, io, 0)) != OBL_OK)
        return 0; /* public: refused; obl_omap_access says so */
    omap_batch_prefetch_index(m, &rq[0], &rq[0]);
    for (size_t t = 0; t < n; t++) {
        omap_req *r = &rq[t & 1], *nx = &rq[(t + 1) & 1];
        obl_err e = omap_req_index(m, r, OMAP_B_OP(io, t), OMAP_B_VIN(m, io, t));
        int ok = e == OBL_OK || e == OBL_ERR_STASH_OVERFLOW; /* public */
        if (ok && m->vo) { /* public */
            nr_prefetch_path(m->vo, r->vpos, 0);
            nr_prefetch_evict(m->vo);
        }
        if (e == OBL_ERR_FULL)
            omap_fail_outputs(m, OMAP_B_VOUT(m, io, t), OMAP_B_FOUND(io, t));
        obl_err en = OBL_OK;
        if (t + 1 < n) {
            en = omap_req_start(m, nx, OMAP_B_KEY(m, io, t + 1));
            if (en == OBL_OK)
                omap_batch_prefetch_index(m, nx, r);
        }
        errs[t] = ok ? omap_req_finish(m, r, OMAP_B_KEY(m, io, t), e, OMAP_B_VOUT(m, io, t),
                                       OMAP_B_FOUND(io, t))
                     : e;
        if (t + 1 < n && en == OBL_OK)
            en = omap_batch_value_refused(m, nx);
        if (en != OBL_OK) {
            errs[t + 1] = en;
            return t + 2;
        }
    }
    return n;
}

/* see omap_internal.h: obl_omap_access_batch in the map's variant */
obl_err OBL_V(omap_access_batch)(obl_omap *m, size_t n, const uint64_t *ops, const void *keys,
                                 const void *values_in, void *values_out, uint64_t *found,
                                 obl_err *errs)
{
    if (!m || !keys || !errs)
        return OBL_ERR_INVALID_ARG;
    if (n == 0)
        return OBL_OK;
    /* two requests' buffers in the scratch, after the single access's */
    size_t per = OMAP_REQ_BYTES(m->svs, m->vs);
    omap_req rq[2];
    omap_req_bind(m, &rq[0], m->scratch + m->ses + per);
    omap_req_bind(m, &rq[1], m->scratch + m->ses + 2 * per);
    omap_batch_io io = {ops, (const unsigned char *)keys, (const unsigned char *)values_in,
                        (unsigned char *)values_out, found};
    size_t t = omap_orams_ready(m) ? omap_batch_pipe(m, n, rq, &io, errs) : 0;
    for (; t < n; t++)
        errs[t] = OBL_V(omap_access)(m, OMAP_B_OP(&io, t), OMAP_B_KEY(m, &io, t),
                                     OMAP_B_VIN(m, &io, t), OMAP_B_VOUT(m, &io, t),
                                     OMAP_B_FOUND(&io, t));
    obl_err first = OBL_OK;
    for (size_t i = 0; i < n && first == OBL_OK; i++)
        first = errs[i];
    return first;
}

#undef OMAP_B_OP
#undef OMAP_B_KEY
#undef OMAP_B_VIN
#undef OMAP_B_VOUT
#undef OMAP_B_FOUND

#endif /* OBL_SRC_OMAP_ACCESS_BATCH_IMPL_H */
