/* SPDX-License-Identifier: MIT */
/*
 * The ranks' work for obl_mpi (rank.h): payload layout, the balancer's
 * split, pack, unpack and join, and the shard rank's merged batches.
 * Everything a payload holds is secret; its size is public (lay_*_len).
 * Request entry: a flags byte (op in bits 0-1, dummy in bit 2), the key,
 * the value for a mixed epoch. Answer entry: a found byte, the old value.
 */
#include "mpi/rank.h"

#include <string.h>

#include "common/secret.h"
#include "ct.h"
#include "mpi/msg.h"

/* see rank.h */
unsigned lay_nloc(const mpi_layout *y, unsigned r)
{
    return r < y->S ? (y->S - r + y->R - 1) / y->R : 0;
}

static size_t req_ent(const mpi_layout *y, int writes)
{
    return 1 + y->ks + (writes ? y->vs : 0);
}
static size_t ans_ent(const mpi_layout *y)
{
    return 1 + y->vs;
}
static size_t build_slot(const mpi_layout *y)
{
    return 8 + (size_t)y->cap_s * (y->ks + y->vs);
}

/* see rank.h */
size_t lay_req_len(const mpi_layout *y, unsigned r, int kind)
{
    size_t n = lay_nloc(y, r);
    switch (kind) {
    case MSG_GET:
    case MSG_MIXED:
        return MPI_REQ_HDR + n * y->b * req_ent(y, kind == MSG_MIXED);
    case MSG_BUILD:
        return MPI_REQ_HDR + n * build_slot(y);
    default:
        return 0;
    }
}

/* see rank.h */
size_t lay_ans_len(const mpi_layout *y, unsigned r, int kind)
{
    return MPI_ANS_HDR + (kind == MSG_BUILD ? 0 : lay_nloc(y, r) * y->b * ans_ent(y));
}

/* ---- the balancer ---- */

/* see rank.h */
obl_err mpi_bal_init(mpi_bal *z, const mpi_layout *y, const unsigned char route_key[16],
                     uint64_t seed, int use_seed, unsigned threads)
{
    memset(z, 0, sizeof *z);
    z->y = *y;
    obl_alloc_init(&z->ac, NULL);
    if (use_seed)
        obl_prg_init_seed(&z->prg, seed);
    else if (obl_prg_init(&z->prg, NULL, NULL) != OBL_OK)
        return OBL_ERR_RANDOM;
    memcpy(&z->rt.k0, route_key, 8);
    memcpy(&z->rt.k1, route_key + 8, 8);
    z->rt.S = y->S;
    z->rt.ks = y->ks;
    z->rt.kw = (y->ks + 7) / 8;
    z->rt.vs = y->vs;
    z->rt.vs8 = (y->vs + 7) & ~(size_t)7;
    z->rt.ac = &z->ac;
    z->rt.prg = &z->prg;
    z->rt.threads = threads ? threads : 1;
    size_t sb, per = 24 + y->ks + 2 * y->vs;
    if (!obl_mul_ok(y->b, y->S, &sb) || !obl_mul_ok(sb, per, &z->mem_bytes))
        return OBL_ERR_TOO_LARGE;
    z->mem = (unsigned char *)obl_alloc(&z->ac, z->mem_bytes, 64);
    if (!z->mem)
        return OBL_ERR_NOMEM;
    z->bf.op = (uint64_t *)z->mem;
    z->bf.dummy = z->bf.op + sb;
    z->bf.found = z->bf.dummy + sb;
    z->bf.keys = z->mem + 24 * sb;
    z->bf.vout = z->bf.keys + sb * y->ks;
    z->bf.vin = z->bf.vout + sb * y->vs;
    z->bf.akeys = z->bf.keys; /* the ranks answer in shard-batch order */
    z->bf.adummy = z->bf.dummy;
    return OBL_OK;
}

/* see rank.h */
void mpi_bal_free(mpi_bal *z)
{
    if (z->mem)
        obl_free(&z->ac, z->mem, z->mem_bytes);
    shard_route_release(&z->rt);
    obl_prg_wipe(&z->prg);
    obl_wipe(&z->rt, sizeof z->rt);
    z->mem = NULL;
}

/* see rank.h */
obl_err mpi_bal_split(mpi_bal *z, const uint64_t *ops, const unsigned char *keys,
                      const unsigned char *vin)
{
    obl_err e = shard_route_split(&z->rt, z->y.B, z->y.b, ops, keys, vin, &z->bf);
    if (e != OBL_OK) { /* public: the epoch runs on with dummies only */
        size_t sb = (size_t)z->y.S * z->y.b;
        for (size_t i = 0; i < sb; i++)
            z->bf.dummy[i] = 1;
    }
    return e;
}

/* see rank.h */
void mpi_bal_pack(const mpi_bal *z, unsigned r, int writes, uint64_t status, unsigned char *out)
{
    const mpi_layout *y = &z->y;
    size_t ent = req_ent(y, writes), ks = y->ks, vs = y->vs;
    memcpy(out, &status, 8);
    unsigned char *q = out + MPI_REQ_HDR;
    for (unsigned j = r; j < y->S; j += y->R) {
        for (size_t i = (size_t)j * y->b; i < (size_t)(j + 1) * y->b; i++, q += ent) {
            q[0] = (unsigned char)((z->bf.op[i] & 3) | (z->bf.dummy[i] & 1) << 2);
            memcpy(q + 1, z->bf.keys + i * ks, ks);
            if (writes)
                memcpy(q + 1 + ks, z->bf.vin + i * vs, vs);
        }
    }
}

/* see rank.h */
uint64_t mpi_bal_unpack(mpi_bal *z, unsigned r, const unsigned char *in)
{
    const mpi_layout *y = &z->y;
    size_t ent = ans_ent(y), vs = y->vs;
    uint64_t status;
    memcpy(&status, in, 8);
    const unsigned char *q = in + MPI_ANS_HDR;
    for (unsigned j = r; j < y->S; j += y->R) {
        for (size_t i = (size_t)j * y->b; i < (size_t)(j + 1) * y->b; i++, q += ent) {
            z->bf.found[i] = q[0] & 1;
            memcpy(z->bf.vout + i * vs, q + 1, vs);
        }
    }
    return status;
}

/* see rank.h */
obl_err mpi_bal_join(mpi_bal *z, const unsigned char *keys, unsigned char *vout, uint64_t *found)
{
    return shard_route_join(&z->rt, z->y.B, z->y.b, keys, &z->bf, vout, found);
}

/* see rank.h */
obl_err mpi_bal_build_pack(const mpi_bal *z, const unsigned char *keys, const unsigned char *vals,
                           uint64_t n, unsigned char *const *out)
{
    const mpi_layout *y = &z->y;
    size_t slot = build_slot(y), pair = y->ks + y->vs, head = (y->S + 1) * sizeof(size_t), bytes;
    for (unsigned r = 0; r < y->R; r++)
        memset(out[r], 0, lay_req_len(y, r, MSG_BUILD));
    if ((uint64_t)(size_t)n != n || !obl_mul_ok((size_t)n, pair, &bytes) ||
        !obl_add_ok(bytes, head, &bytes))
        return OBL_ERR_TOO_LARGE;
    obl_alloc_ctx ac = z->ac;
    unsigned char *mem = (unsigned char *)obl_alloc(&ac, bytes, 64);
    if (!mem)
        return OBL_ERR_NOMEM;
    size_t *off = (size_t *)mem;
    unsigned char *dk = mem + head, *dv = dk + (size_t)n * y->ks;
    /* as obl_shard_build: reveals the per-shard counts, not which pair
     * goes where (docs/shard.md, "Build") */
    shard_deal_env v = {&z->rt, y->S, y->cap_s, y->ks, y->vs, z->rt.threads, NULL, &ac, &ac.a};
    obl_err e = shard_deal_pairs(&v, keys, vals, (size_t)n, dk, dv, off);
    for (unsigned j = 0; e == OBL_OK && j < y->S; j++) { /* public: the counts */
        unsigned char *s = out[j % y->R] + MPI_REQ_HDR + (j / y->R) * slot;
        uint64_t c = off[j + 1] - off[j];
        memcpy(s, &c, 8);
        for (size_t i = 0; i < c; i++) {
            memcpy(s + 8 + i * pair, dk + (off[j] + i) * y->ks, y->ks);
            memcpy(s + 8 + i * pair + y->ks, dv + (off[j] + i) * y->vs, y->vs);
        }
    }
    obl_free(&ac, mem, bytes);
    return e;
}

/* ---- the shard rank ---- */

/* see rank.h */
obl_err mpi_srv_init(mpi_srv *v, const mpi_layout *y, unsigned r, const obl_shard_params *sp)
{
    memset(v, 0, sizeof *v);
    v->y = *y;
    v->r = r;
    v->nloc = lay_nloc(y, r);
    v->sp = *sp;
    v->sp.capacity = y->cap_s;
    v->sp.shards = 1;
    size_t n = (size_t)y->L * y->b;
    v->sh = (obl_shard **)calloc(v->nloc, sizeof *v->sh);
    v->ops = (uint64_t *)calloc(n, 24);
    v->keys = (unsigned char *)calloc(n, y->ks + 2 * y->vs);
    if (!v->sh || !v->ops || !v->keys)
        return OBL_ERR_NOMEM;
    v->dummy = v->ops + n;
    v->found = v->dummy + n;
    v->vin = v->keys + n * y->ks;
    v->vout = v->vin + n * y->vs;
    obl_err e = OBL_OK;
    for (unsigned i = 0; i < v->nloc && e == OBL_OK; i++) {
        v->sp.seed = sp->seed ^ (0x9e3779b97f4a7c15ull * ((uint64_t)r * 4096u + i + 1));
        e = obl_shard_create(&v->sh[i], &v->sp);
    }
    return e;
}

/* see rank.h */
void mpi_srv_free(mpi_srv *v)
{
    for (unsigned i = 0; v->sh && i < v->nloc; i++)
        obl_shard_destroy(v->sh[i]);
    free(v->sh);
    if (v->keys)
        obl_wipe(v->keys, (size_t)v->y.L * v->y.b * (v->y.ks + 2 * v->y.vs));
    free(v->ops);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

/* Local shard i's entries from every balancer, in balancer order; a
 * dummy becomes a get (it changes nothing; its answer is dropped). */
static void srv_gather(mpi_srv *v, unsigned i, int writes, const unsigned char *const *in)
{
    const mpi_layout *y = &v->y;
    size_t ent = req_ent(y, writes), k = 0;
    for (unsigned l = 0; l < y->L; l++) {
        const unsigned char *q = in[l] + MPI_REQ_HDR + (size_t)i * y->b * ent;
        for (size_t e = 0; e < y->b; e++, k++, q += ent) {
            uint64_t d = (q[0] >> 2) & 1;
            v->dummy[k] = d;
            v->ops[k] = obl_ct_select64(d, OBL_OMAP_GET, q[0] & 3);
            memcpy(v->keys + k * y->ks, q + 1, y->ks);
            if (writes)
                memcpy(v->vin + k * y->vs, q + 1 + y->ks, y->vs);
        }
    }
}

/* The answers back into each balancer's payload, dummies' zeroed. */
static void srv_scatter(mpi_srv *v, unsigned i, unsigned char *const *out)
{
    const mpi_layout *y = &v->y;
    size_t ent = ans_ent(y), k = 0;
    for (unsigned l = 0; l < y->L; l++) {
        unsigned char *q = out[l] + MPI_ANS_HDR + (size_t)i * y->b * ent;
        for (size_t e = 0; e < y->b; e++, k++, q += ent) {
            uint64_t d = v->dummy[k];
            q[0] = (unsigned char)(v->found[k] & 1 & (d ^ 1));
            memcpy(q + 1, v->vout + k * y->vs, y->vs);
            obl_ct_czero(d, q + 1, y->vs);
        }
    }
}

/* see rank.h */
obl_err mpi_srv_epoch(mpi_srv *v, int writes, const unsigned char *const *in,
                      unsigned char *const *out)
{
    size_t n = (size_t)v->y.L * v->y.b;
    for (unsigned i = 0; i < v->nloc; i++) {
        srv_gather(v, i, writes, in);
        obl_err e = writes
                        ? obl_shard_batch(v->sh[i], n, v->ops, v->keys, v->vin, v->vout, v->found)
                        : obl_shard_get(v->sh[i], n, v->keys, v->vout, v->found);
        if (e != OBL_OK)
            return e;
        srv_scatter(v, i, out);
    }
    return OBL_OK;
}

/* see rank.h */
obl_err mpi_srv_build(mpi_srv *v, const unsigned char *in)
{
    const mpi_layout *y = &v->y;
    size_t slot = build_slot(y), pair = y->ks + y->vs;
    obl_shard **nw = (obl_shard **)calloc(v->nloc ? v->nloc : 1, sizeof *nw);
    unsigned char *k = (unsigned char *)malloc(y->cap_s * y->ks + 1);
    unsigned char *val = (unsigned char *)malloc(y->cap_s * y->vs + 1);
    obl_err e = nw && k && val ? OBL_OK : OBL_ERR_NOMEM;
    for (unsigned i = 0; i < v->nloc && e == OBL_OK; i++) {
        const unsigned char *s = in + MPI_REQ_HDR + i * slot;
        uint64_t c;
        memcpy(&c, s, 8); /* public by design (the build's shard sizes) */
        c = OBL_DECLASSIFY_VAL(c);
        if (c > y->cap_s) {
            e = OBL_ERR_INVALID_ARG;
            break;
        }
        for (uint64_t p = 0; p < c; p++) {
            memcpy(k + p * y->ks, s + 8 + p * pair, y->ks);
            memcpy(val + p * y->vs, s + 8 + p * pair + y->ks, y->vs);
        }
        v->sp.seed ^= 0xa5a5a5a5u + i;
        e = obl_shard_build(&nw[i], &v->sp, k, val, c);
    }
    for (unsigned i = 0; nw && i < v->nloc; i++) {
        obl_shard *old = e == OBL_OK ? v->sh[i] : nw[i];
        if (e == OBL_OK)
            v->sh[i] = nw[i];
        obl_shard_destroy(old);
    }
    if (k)
        obl_wipe(k, y->cap_s * y->ks + 1);
    if (val)
        obl_wipe(val, y->cap_s * y->vs + 1);
    free(nw);
    free(k);
    free(val);
    return e;
}
