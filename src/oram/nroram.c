/* SPDX-License-Identifier: MIT */
/*
 * Circuit ORAM (Wang, Chan, Shi, CCS 2015, eprint 2014/672): the
 * non-recursive tree ORAM of obl/oram.h. This file holds creation,
 * parameter checks and the public entry points; the access and eviction
 * code is in nr_access.c, compiled once per instruction-set variant, and a
 * tree calls the variant it picked when it was created (common/cpu.h).
 *
 * Parameters and their sources (docs/oram.md has the measurements):
 * - Z = 2 slots per bucket and L leaves, the smallest power of two with
 *   capacity <= 2.5 L (nr_log_leaves): the paper's Z (section 5, "Z = 2
 *   suffices"), 1.6 to 3.2 slots in the tree per block of capacity;
 * - two evictions per access on the next two paths in reverse-
 *   lexicographic order, three when the tree keeps more than 2 blocks per
 *   leaf, run when the next access's path is fetched (nr_settle)
 *   (section 3.2; measured: one eviction per access lets the stash grow
 *   without bound at Z = 2, two at 2.5 blocks per leaf let it reach 50,
 *   and evicting on the accessed path instead is much weaker,
 *   docs/oram.md);
 * - a dense tree (obl_nroram_params.dense) keeps up to 2.52 blocks per
 *   leaf, with a default stash of 36 above 2.5;
 * - stash 20 blocks by default (24 at more than 2 blocks per leaf): the
 *   paper's stash bound (P[stash > R] = e^-Omega(R)) and our measured
 *   histograms (docs/oram.md).
 */
#include <string.h>

#include <obl/oram.h>

#include "ct.h"
#include "common/cpu.h"
#include "common/secret.h"
#include "common/trace.h"
#include "oram/nroram_internal.h"

OBL_VARIANT_DECLARE(const nr_ops, nr_ops32);
OBL_VARIANT_DECLARE(const nr_ops, nr_ops64);

static void nr_free_all(obl_nroram *o)
{
    obl_alloc_ctx ac = o->ac;
    obl_free(&ac, o->tree, o->tree_bytes);
    obl_free(&ac, o->bmeta, o->bmeta_bytes);
    /* the stash's blocks and o->tmp start NR_SLACK bytes into their
     * allocations (nr_reg_front) */
    if (o->bdata)
        obl_free(&ac, o->bdata - NR_SLACK, o->bdata_bytes + NR_SLACK);
    if (o->tmp)
        obl_free(&ac, o->tmp - NR_SLACK, o->tmp_bytes + NR_SLACK);
    obl_prg_wipe(&o->prg);
    obl_free(&ac, o, sizeof(*o));
}

/* Marks every slot of the buffer (stash) empty, and with clear every slot
 * of the tree. */
static void nr_clear(obl_nroram *o, int clear)
{
    /* all-ones ids are the dummy id for both word sizes */
    if (clear)
        memset(o->tree, 0xff, o->tree_bytes); /* data of empty slots: any bytes */
    memset(o->bmeta, 0xff, o->bmeta_bytes);
}

/* The parameters' checks (public); the stash size S and the metadata width
 * pb they give. */
static obl_err nr_check(const obl_nroram_params *p, uint32_t *S, uint32_t *pb, int *tagged)
{
    *tagged = p->pos_bytes == NR_POS_TAGGED; /* nr_create only (obl_nroram_create) */
    *S = p->stash_size ? p->stash_size : OBL_ORAM_DEFAULT_STASH;
    if (*S < 2 || *S > 64)
        return OBL_ERR_INVALID_ARG;
    if (p->capacity == 0 || p->value_size == 0 || p->value_size > OBL_ORAM_MAX_VALUE_SIZE)
        return OBL_ERR_INVALID_ARG;
    *pb = *tagged ? 4 : p->pos_bytes;
    if (*pb == 0)
        *pb = p->capacity < UINT32_MAX ? 4 : 8;
    if (*pb != 4 && *pb != 8)
        return OBL_ERR_INVALID_ARG;
    if (*pb == 4 && p->capacity >= UINT32_MAX)
        return OBL_ERR_TOO_LARGE;
    if (p->capacity > ((uint64_t)1 << 56))
        return OBL_ERR_TOO_LARGE;
    if (*pb == 4 && nr_log_leaves_at(p->capacity, p->dense) > 31)
        return OBL_ERR_TOO_LARGE;
    return OBL_OK;
}

/* The bucket stride (rounded up to 8 bytes, so that every bucket's
 * metadata is aligned) and the tree's bytes, for buckets of Z values of vs
 * bytes and Z metadata of msz. A bucket of 33 to 63 bytes (8-byte values
 * with 64-bit metadata: 48) is padded to one cache line: it then never
 * straddles two lines, so a path is one line per level and no load of a
 * bucket is split. Costs a third more memory for those sizes only, for
 * faster accesses (docs/oram.md, "Buckets of one line"). Larger buckets keep
 * their size (the RORAM's 144-byte ones would grow by a third too, past its
 * memory target). Public: the sizes. */
static obl_err nr_tree_size(size_t vs, size_t msz, uint64_t nbuckets, size_t *bstride,
                            size_t *tree_bytes)
{
    size_t bdat;
    if (!obl_mul_ok(vs, NR_Z, &bdat) || !obl_add_ok(bdat, NR_Z * msz + 7, bstride))
        return OBL_ERR_TOO_LARGE;
    *bstride &= ~(size_t)7;
    if (*bstride > 32 && *bstride < 64)
        *bstride = 64;
    if (!obl_mul_ok((size_t)nbuckets, *bstride, tree_bytes) || *tree_bytes > OBL_ORAM_MAX_BYTES)
        return OBL_ERR_TOO_LARGE;
    *tree_bytes += NR_SLACK; /* the register moves' overhang, see nr_reg_words */
    return OBL_OK;
}

/* The shape of the tree of p in o (public: sizes and the variant's
 * operations), every field but the allocator, the prg and the arrays; a
 * tree that nr_build fills next (!clear) also holds its working array. */
static obl_err nr_shape(obl_nroram *o, const obl_nroram_params *p, int clear, int isa)
{
    uint32_t S, pb;
    int tagged;
    obl_err err = nr_check(p, &S, &pb, &tagged);
    if (err != OBL_OK)
        return err;
    const uint32_t logL = nr_log_leaves_at(p->capacity, p->dense), D = logL + 1;
    /* over 2 blocks per leaf (up to NR_LEAF_LOAD_NUM / _DEN), two evictions per
     * access let the stash grow; three keep it small, with a longer tail
     * (docs/oram.md, "Stash size and overflow") */
    const uint32_t ev = nr_evictions(p->capacity, logL);
    if (!p->stash_size)
        S = nr_default_stash(p->capacity, logL);
    const uint32_t P = S + 2;
    const size_t vs = p->value_size, msz = pb == 4 ? sizeof(nr_meta32) : sizeof(nr_meta64);
    o->L = (uint64_t)1 << logL;
    o->nbuckets = 2 * o->L - 1;
    err = nr_tree_size(vs, msz, o->nbuckets, &o->bstride, &o->tree_bytes);
    if (err == OBL_OK && !clear &&
        !obl_add_ok(o->tree_bytes, nr_build_slack(P, vs), &o->tree_bytes))
        err = OBL_ERR_TOO_LARGE;
    if (err != OBL_OK)
        return err;
    o->ops = pb == 4 ? OBL_VARIANT_PICK(nr_ops32, isa) : OBL_VARIANT_PICK(nr_ops64, isa);
    o->isa = isa;
    o->capacity = p->capacity;
    o->vs = vs;
    o->pb = pb;
    o->tagged = tagged;
    o->tag_mask = tagged ? ((uint64_t)1 << (32 - logL)) - 1 : 0;
    o->S = S;
    o->P = P;
    o->D = D;
    o->logL = logL;
    o->nslots = P + NR_Z * D;
    o->track_hist = p->track_histogram != 0;
    o->st.stash_size = S;
    o->tree_zero = !clear; /* obl_alloc zeroes */
    o->doff = NR_Z * msz;
    o->pf_lines = (size_t)o->nbuckets * o->bstride > NR_PF_LINES_BYTES;
    o->ev = ev;
    o->pf_lead = 1; /* obl_nroram_create: o->ev */
    o->pf_k0 = 0;
    while (o->pf_k0 < D && ((((uint64_t)2 << o->pf_k0) - 1) * o->bstride) <= NR_PF_HOT_BYTES)
        o->pf_k0++;
    o->bmeta_bytes = (size_t)o->nslots * msz + NR_SLACK; /* whole-vector reads: nr_stash_count */
    /* from o->bdata and o->tmp on; each has NR_SLACK more bytes before it,
     * for blocks moved from before their start (nr_reg_front) */
    o->bdata_bytes = (size_t)P * vs + NR_SLACK;
    o->tmp_bytes = vs + NR_SLACK;
    return OBL_OK;
}

/* The prg and the arrays of o, whose shape is set; on an error, o is
 * freed. */
static obl_err nr_fill(obl_nroram *o, const obl_nroram_params *p, obl_alloc_ctx *ac, int clear)
{
    obl_err err = OBL_OK;
    if (p->use_seed)
        obl_prg_init_seed(&o->prg, p->seed);
    else
        err = obl_prg_init(&o->prg, p->random, p->random_opaque);
    if (err != OBL_OK) {
        o->ac = *ac;
        nr_free_all(o);
        return err;
    }
    o->tree = (unsigned char *)obl_alloc(ac, o->tree_bytes, OBL_ALIGN_RANDOM);
    o->bmeta = o->tree ? obl_alloc(ac, o->bmeta_bytes, 64) : NULL;
    o->bdata = o->bmeta ? (unsigned char *)obl_alloc(ac, o->bdata_bytes + NR_SLACK, 64) : NULL;
    if (o->bdata)
        o->bdata += NR_SLACK;
    o->tmp = o->bdata ? (unsigned char *)obl_alloc(ac, o->tmp_bytes + NR_SLACK, 64) : NULL;
    if (o->tmp)
        o->tmp += NR_SLACK;
    o->ac = *ac;
    if (!o->tmp) {
        nr_free_all(o);
        return OBL_ERR_NOMEM;
    }
    nr_clear(o, clear);
    /* The tree, the buffer (stash) and the scratch hold secrets from here
     * on: ids, leaves and values. */
    OBL_SECRET(o->tree, o->tree_bytes);
    OBL_SECRET(o->bmeta, o->bmeta_bytes);
    OBL_SECRET(o->bdata - NR_SLACK, o->bdata_bytes + NR_SLACK);
    OBL_SECRET(o->tmp, o->vs);
    OBL_SECRET(&o->st.stash_max, sizeof(o->st.stash_max));
    OBL_SECRET(o->st.hist, sizeof(o->st.hist));
    return OBL_OK;
}

/* see nroram_internal.h */
obl_err nr_create(obl_nroram **out, const obl_nroram_params *p, int clear)
{
    *out = NULL;
    const int isa = obl_isa_pick();
    if (isa < 0)
        return OBL_ERR_UNSUPPORTED;
    obl_nroram sh; /* the shape, checked before anything is allocated */
    memset(&sh, 0, sizeof(sh));
    obl_err err = nr_shape(&sh, p, clear, isa);
    if (err != OBL_OK)
        return err;
    obl_alloc_ctx ac;
    obl_alloc_init(&ac, p->alloc);
    obl_nroram *o = (obl_nroram *)obl_alloc(&ac, sizeof(*o), 64);
    if (!o)
        return OBL_ERR_NOMEM;
    *o = sh;
    err = nr_fill(o, p, &ac, clear);
    if (err == OBL_OK)
        *out = o;
    return err;
}

/* see obl/oram.h */
obl_err obl_nroram_create(obl_nroram **out, const obl_nroram_params *p)
{
    if (!out)
        return OBL_ERR_INVALID_ARG;
    *out = NULL;
    if (!p || p->pos_bytes == NR_POS_TAGGED) /* tagged trees: the map's only */
        return OBL_ERR_INVALID_ARG;
    obl_err e = nr_create(out, p, 1);
    /* A tree used alone has its accesses back to back: an access's last
     * eviction prefetches the path of the next access's last eviction (a
     * lead of o->ev), not of its first, which would start after only the
     * caller's work and a ReadAndRemove. The trees of a RORAM or a map
     * keep a lead of one: their next access comes after the other trees',
     * and two ahead gained nothing there (docs/oram.md, "NRORAM: Circuit ORAM"). */
    if (e == OBL_OK)
        (*out)->pf_lead = (*out)->ev;
    return e;
}

/* see obl/oram.h */
const char *obl_nroram_variant(const obl_nroram *o) { return o ? obl_isa_name(o->isa) : NULL; }

#ifdef OBL_TESTING
/* see nroram_internal.h */
void nr_set_plan_scalar(obl_nroram *o, int on) { o->plan_scalar = on != 0; }

/* see nroram_internal.h */
void nr_set_evictions(obl_nroram *o, uint32_t ev)
{
    o->pf_lead = o->pf_lead > 1 ? ev : 1;
    o->ev = ev;
}

/* see nroram_internal.h */
int nr_test_scan_max16(const uint16_t in[32], uint16_t out[32])
{
    const int isa = obl_isa_pick();
    return isa >= 0 && OBL_VARIANT_PICK(nr_ops32, isa)->scan_max16(in, out);
}
#endif

/* see obl/oram.h */
uint64_t obl_nroram_num_leaves(const obl_nroram *o) { return o ? o->L : 0; }

/* see obl/oram.h */
uint64_t obl_nroram_random_pos(obl_nroram *o)
{
    /* Secret: the result, until the caller reveals it as a path. */
    return o ? obl_prg_bits(&o->prg, o->logL) : 0;
}

/*
 * The shared access body. Secret: id, new_pos, op, in/out contents, the
 * callback's work. Public: pos (checked < L), fn, the pointers.
 */
static obl_err nr_access_common(obl_nroram *o, uint64_t id, uint64_t pos, uint64_t new_pos,
                                uint64_t op, const void *in, void *out, uint64_t *found_out,
                                obl_oram_update_fn fn, void *ctx)
{
    if (!o)
        return OBL_ERR_INVALID_ARG;
    if (pos >= o->L) /* public: pos is revealed anyway */
        return OBL_ERR_RANGE;
    obl_err err = nr_ready(o);
    if (err != OBL_OK)
        return err;
    const size_t vs = o->vs;
    /* An id outside the id space (secret: no branch) becomes the dummy id,
     * which matches only empty slots (nr_fetch): its "found" and the bytes
     * it took are dropped below and nothing is stored, so it can neither
     * alias a stored id (4-byte ids) nor read an empty slot as a block. */
    uint64_t bad = obl_ct_ge64(id, obl_nroram_id_limit(o));
    id = obl_ct_select64(bad, UINT64_MAX, id);
    uint64_t found = nr_fetch(o, id, pos);
    found &= bad ^ 1;
    obl_ct_czero(bad, o->tmp, vs);
    uint64_t keep;
    if (fn) {
        keep = found;
        fn(ctx, o->tmp, found, &keep);
        keep &= 1;
    } else {
        if (out)
            memcpy(out, o->tmp, vs);
        uint64_t is_write = obl_ct_eq64(op, OBL_ORAM_WRITE);
        uint64_t is_remove = obl_ct_eq64(op, OBL_ORAM_REMOVE);
        if (in) {
            obl_ct_cmov(is_write, o->tmp, in, vs);
        } else {
            obl_ct_czero(is_write, o->tmp, vs); /* in == NULL: writes zeros */
        }
        /* kept if present (read/write) or written; removed on REMOVE */
        keep = (found | is_write) & (is_remove ^ 1);
    }
    keep &= bad ^ 1;
    if (found_out)
        *found_out = found;
    return nr_put(o, keep, id, new_pos);
}

/* see obl/oram.h */
obl_err obl_nroram_access(obl_nroram *o, uint64_t id, uint64_t pos, uint64_t new_pos,
                          uint64_t op, const void *in, void *out, uint64_t *found)
{
    return nr_access_common(o, id, pos, new_pos, op, in, out, found, NULL, NULL);
}

/* see obl/oram.h */
obl_err obl_nroram_update(obl_nroram *o, uint64_t id, uint64_t pos, uint64_t new_pos,
                          obl_oram_update_fn fn, void *ctx)
{
    if (!fn)
        return OBL_ERR_INVALID_ARG;
    return nr_access_common(o, id, pos, new_pos, OBL_ORAM_READ, NULL, NULL, NULL, fn, ctx);
}

/* see obl/oram.h */
obl_err obl_nroram_insert(obl_nroram *o, uint64_t id, const void *value, uint64_t *pos_out)
{
    if (!o || !value || !pos_out)
        return OBL_ERR_INVALID_ARG;
    /* A random path: pos is public and uniform, independent of id. */
    uint64_t pos = obl_prg_bits(&o->prg, o->logL);
    OBL_DECLASSIFY(&pos, sizeof(pos)); /* LEAK: a fresh uniform leaf, by design */
    uint64_t np = obl_prg_bits(&o->prg, o->logL);
    obl_err err = nr_access_common(o, id, pos, np, OBL_ORAM_WRITE, value, NULL, NULL, NULL, NULL);
    if (err == OBL_OK || err == OBL_ERR_STASH_OVERFLOW)
        *pos_out = np;
    return err;
}

/* see obl/oram.h */
uint64_t obl_nroram_id_limit(const obl_nroram *o)
{
    if (!o)
        return 0;
    return o->pb == 4 && !o->tagged ? NR_DUMMY32 : NR_DUMMY64;
}

/* see obl/oram.h */
uint64_t obl_nroram_export_slots(const obl_nroram *o)
{
    return o ? o->P + NR_Z * o->nbuckets : 0;
}

/* One slot's id, either width; all ones for an empty slot. Secret. */
static uint64_t nr_slot_id(const obl_nroram *o, const void *meta)
{
    if (o->pb == 4) { /* public */
        const nr_meta32 *m = (const nr_meta32 *)meta;
        /* a tagged tree's id: its tag, the bits it keeps (nroram_internal.h) */
        uint64_t id = m->id | (o->tagged ? (uint64_t)(m->leaf >> o->logL) << 32 : 0);
        return obl_ct_select64(obl_ct_eq64(m->id, NR_DUMMY32), UINT64_MAX, id);
    }
    return ((const nr_meta64 *)meta)->id;
}

static void nr_export_slot(uint64_t id, const void *value, obl_nroram_export_fn fn, void *ctx)
{
    fn(ctx, id, value, obl_ct_neq64(id, UINT64_MAX));
}

/* see obl/oram.h: the stash (metadata in bmeta, data in bdata), then
 * every bucket (Z metadata entries, then Z blocks at doff). */
obl_err obl_nroram_export(const obl_nroram *o, obl_nroram_export_fn fn, void *ctx)
{
    if (!o || !fn)
        return OBL_ERR_INVALID_ARG;
    const size_t msz = o->pb == 4 ? sizeof(nr_meta32) : sizeof(nr_meta64);
    const unsigned char *bm = (const unsigned char *)o->bmeta;
    for (uint32_t s = 0; s < o->P; s++)
        nr_export_slot(nr_slot_id(o, bm + s * msz), o->bdata + (size_t)s * o->vs, fn, ctx);
    for (uint64_t b = 0; b < o->nbuckets; b++) {
        const unsigned char *bp = o->tree + b * o->bstride;
        for (uint32_t z = 0; z < NR_Z; z++)
            nr_export_slot(nr_slot_id(o, bp + z * msz), bp + o->doff + z * o->vs, fn, ctx);
    }
    return OBL_OK;
}

/* see obl/oram.h */
void obl_nroram_stats(const obl_nroram *o, obl_oram_stats *st)
{
    if (!st)
        return;
    memset(st, 0, sizeof(*st));
    if (!o)
        return;
    *st = o->st;
    /* The caller asked for the statistics: they become public here. */
    OBL_DECLASSIFY(st, sizeof(*st));
}

/* see obl/oram.h */
size_t obl_nroram_memory_bytes(const obl_nroram *o) { return o ? o->ac.bytes : 0; }

/* see obl/oram.h */
void obl_nroram_destroy(obl_nroram *o)
{
    if (o)
        nr_free_all(o);
}
