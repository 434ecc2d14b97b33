/* SPDX-License-Identifier: MIT */
/*
 * Recursive ORAM: an oblivious array of n values (obl/oram.h), built from
 * Circuit ORAM trees (src/oram/nroram.c).
 *
 * Levels (Stefanov et al., Path ORAM, CCS 2013, section 5 "recursion";
 * Circuit ORAM, section 4):
 * - level 0, the data ORAM: values are packed k per block, k the largest
 *   power of two with k * value_size <= 64 (8 values of 8 bytes, 2 of 32,
 *   1 of 56 or more), so that one block is one cache line when values are
 *   small; index i lives in block i >> log2(k), slot i & (k - 1);
 * - level l >= 1, position-map ORAMs: one 64-byte block holds the leaves
 *   of 16 consecutive blocks of level l - 1 as 32-bit words (fan-out 16),
 *   or of 32 as 16-bit words when level l - 1 has at most 2^16 leaves
 *   (fan-out 32): the positions packed as densely as bytes allow, so the
 *   levels above and the base are half as large (docs/oram.md);
 * - the base: the leaves of the top ORAM level in a plain array that every
 *   access scans whole, once it holds at most scan_max entries (the
 *   crossover measured in docs/oram.md). Arrays small enough are kept as a
 *   scanned array of values without any tree.
 * An access draws every level's new leaf first, then walks from the base
 * down: each level is ONE ORAM access that reads the block holding the next
 * level's leaf, swaps in the pre-drawn new leaf, and remaps the block. The
 * access is in ro_access.c, compiled once per instruction-set variant
 * (common/cpu.h); this file holds creation and the entry points.
 */
#include <string.h>

#include <obl/oram.h>

#include "ct.h"
#include "common/cpu.h"
#include "common/secret.h"
#include "common/trace.h"
#include "oram/nroram_internal.h"
#include "oram/roram_internal.h"

OBL_VARIANT_DECLARE(const ro_access_t, ro_access_fn);

/* Trees of at most 2^ro_pos16_max leaves keep their leaves as 16-bit
 * words; 16, or a test's setting (ro_set_pos16_max, roram_internal.h). */
OBL_TEST_KNOB(int, ro_pos16_max, 16);

#ifdef OBL_TESTING
void ro_set_pos16_max(int k) { ro_pos16_max = k > 16 ? 16 : k; }
#endif

/* Whether the leaves of a tree of c blocks are kept as 16-bit words. */
static int ro_leaves16(uint64_t c) { return (int)nr_log_leaves(c) <= ro_pos16_max; }

static void ro_free(obl_roram *r)
{
    obl_alloc_ctx ac = r->ac;
    for (uint32_t l = 0; l < RO_MAX_LEVELS; l++)
        obl_nroram_destroy(r->lv[l]);
    obl_free(&ac, r->base, r->base_bytes);
    obl_free(&ac, r->scan, r->scan_bytes);
    obl_free(&ac, r->val, r->vs);
    obl_prg_wipe(&r->prg);
    obl_free(&ac, r, sizeof(*r));
}

/* The parameters' own checks (public). Stash sizes are checked here, not
 * only by the trees: an array small enough to be a scan has none, and its
 * parameters must not pass where a larger array's fail. */
static obl_err ro_check(const obl_roram_params *p, size_t *total)
{
    if (!p || p->n == 0 || p->value_size == 0 || p->value_size > OBL_ORAM_MAX_VALUE_SIZE)
        return OBL_ERR_INVALID_ARG;
    if (p->stash_size && (p->stash_size < 2 || p->stash_size > 64))
        return OBL_ERR_INVALID_ARG;
    if (!obl_mul_ok((size_t)p->n, p->value_size, total) || p->n > ((uint64_t)1 << 40))
        return OBL_ERR_TOO_LARGE;
    return OBL_OK;
}

/* Level sizes (public): cnt[0] = nb data blocks, then position maps of
 * fan-out 2^fl[l] until the base has at most scan_max entries; *T = 0 for a
 * scanned array of values. Arrays of at most RO_SCAN_VALUES_MAX bytes are
 * one (measured: a 4 KiB scan costs about one small tree access); tests
 * force trees with scan_max < 64. */
static obl_err ro_levels(const obl_roram_params *p, size_t total, uint64_t nb,
                         uint64_t cnt[RO_MAX_LEVELS], uint8_t fl[RO_MAX_LEVELS], uint32_t *T)
{
    const uint64_t scan_max = p->scan_max ? p->scan_max : RO_SCAN_MAX_DEFAULT;
    uint32_t t = 0;
    if (total > RO_SCAN_VALUES_MAX || (p->scan_max && p->scan_max < 64 && p->n > 1)) {
        cnt[t++] = nb;
        while (cnt[t - 1] > scan_max) {
            if (t == RO_MAX_LEVELS)
                return OBL_ERR_TOO_LARGE;
            fl[t] = ro_leaves16(cnt[t - 1]) ? RO_FAN_LOG16 : RO_FAN_LOG;
            cnt[t] = (cnt[t - 1] + ((uint64_t)1 << fl[t]) - 1) >> fl[t];
            t++;
        }
    }
    if (t && nb > ((uint64_t)1 << 30))
        return OBL_ERR_TOO_LARGE;
    *T = t;
    return OBL_OK;
}

/* The tree parameters of level l (cnt blocks of vs bytes). */
static void ro_level_params(obl_nroram_params *np, const obl_roram_params *p, uint32_t l,
                            uint64_t cnt, size_t vs)
{
    memset(np, 0, sizeof(*np));
    np->capacity = cnt;
    np->value_size = vs;
    np->stash_size = p->stash_size;
    np->pos_bytes = 4;
    np->track_histogram = l == 0 ? p->track_histogram : 0;
    np->random = p->random;
    np->random_opaque = p->random_opaque;
    np->use_seed = p->use_seed;
    np->seed = p->seed + 0x9e3779b97f4a7c15ULL * (l + 1);
    np->alloc = p->alloc;
}

/* Level l's leaves (cnt 32-bit words, *bytes of them) as 16-bit words, in a
 * new array that replaces them; NULL (the old array kept) on no memory. */
static void *ro_leaves_to16(obl_roram *r, uint32_t *leaves, uint64_t cnt, size_t *bytes)
{
    size_t hb = (size_t)cnt * 2;
    uint16_t *h = (uint16_t *)obl_alloc(&r->ac, hb, 64);
    if (!h)
        return NULL;
    for (uint64_t i = 0; i < cnt; i++)
        h[i] = (uint16_t)leaves[i];
    obl_free(&r->ac, leaves, *bytes);
    *bytes = hb;
    return h;
}

/* Bottom-up: builds level l with the leaves of level l - 1 as content (level
 * 0: values, NULL for zeros, packed bpk bytes a block); the top level's
 * leaves become the base. On an error the levels built so far stay in r for
 * ro_free. */
static obl_err ro_build_levels(obl_roram *r, const obl_roram_params *p, const void *values,
                               const uint64_t cnt[RO_MAX_LEVELS], size_t total, size_t bpk)
{
    const unsigned char *content = (const unsigned char *)values;
    size_t content_len = values ? total : 0;
    void *prev = NULL;
    size_t prev_bytes = 0;
    for (uint32_t l = 0; l < r->T; l++) {
        obl_nroram_params np;
        ro_level_params(&np, p, l, cnt[l], l == 0 ? r->bsz : 64);
        obl_err err = nr_create(&r->lv[l], &np, 0);
        size_t lb = (size_t)cnt[l] * 4;
        uint32_t *leaves = err == OBL_OK ? (uint32_t *)obl_alloc(&r->ac, lb, 64) : NULL;
        if (err == OBL_OK && !leaves)
            err = OBL_ERR_NOMEM;
        if (err == OBL_OK)
            err = nr_build_par(r->lv[l], cnt[l], content, l == 0 ? bpk : 64, content_len,
                               NULL, NULL, NULL, leaves, nr_build_threads(p->build_threads));
        obl_free(&r->ac, prev, prev_bytes);
        prev = leaves;
        prev_bytes = lb;
        /* 16-bit positions for the level above (or the base) when these
         * leaves fit: packed into a new array, in place of the 32-bit one */
        int to16 = l + 1 < r->T ? r->fl[l + 1] == RO_FAN_LOG16 : r->base16;
        if (err == OBL_OK && to16) {
            void *h = ro_leaves_to16(r, leaves, cnt[l], &prev_bytes);
            err = h ? OBL_OK : OBL_ERR_NOMEM;
            prev = h ? h : prev;
        }
        if (err != OBL_OK) {
            obl_free(&r->ac, prev, prev_bytes);
            return err;
        }
        content = (const unsigned char *)prev;
        content_len = prev_bytes;
    }
    r->base = prev;
    r->base_bytes = prev_bytes;
    r->nbase = cnt[r->T - 1];
    OBL_SECRET(r->base, r->base_bytes);
    return OBL_OK;
}

/* The scanned array of values (T = 0): total bytes of values, or zeros. */
static obl_err ro_fill_scan(obl_roram *r, const void *values, size_t total)
{
    r->scan_bytes = total;
    r->scan = (unsigned char *)obl_alloc(&r->ac, total, 64);
    if (!r->scan)
        return OBL_ERR_NOMEM;
    if (values)
        memcpy(r->scan, values, total);
    OBL_SECRET(r->scan, total);
    return OBL_OK;
}

/* A new structure with its shape (lk, bsz, the levels' fan-outs), its prg
 * and its scratch value; NULL in *out and an error if any step failed. */
static obl_err ro_new(obl_roram **out, const obl_roram_params *p, int isa, uint32_t lk,
                      size_t bsz, uint32_t T, const uint64_t cnt[RO_MAX_LEVELS],
                      const uint8_t fl[RO_MAX_LEVELS])
{
    obl_alloc_ctx ac;
    obl_alloc_init(&ac, p->alloc);
    obl_roram *r = (obl_roram *)obl_alloc(&ac, sizeof(*r), 64);
    if (!r)
        return OBL_ERR_NOMEM;
    r->isa = isa;
    r->access = *OBL_VARIANT_PICK(ro_access_fn, isa);
    r->n = p->n;
    r->vs = p->value_size;
    r->lk = lk;
    r->bsz = bsz;
    r->T = T;
    for (uint32_t l = 1; l < T; l++) {
        r->fl[l] = fl[l];
        r->sh[l] = (uint8_t)(r->sh[l - 1] + fl[l]);
    }
    r->base16 = T && ro_leaves16(cnt[T - 1]);
    obl_err err = OBL_OK;
    if (p->use_seed)
        obl_prg_init_seed(&r->prg, p->seed);
    else
        err = obl_prg_init(&r->prg, p->random, p->random_opaque);
    r->ac = ac;
    r->val = err == OBL_OK ? (unsigned char *)obl_alloc(&r->ac, r->vs, 64) : NULL;
    if (err == OBL_OK && !r->val)
        err = OBL_ERR_NOMEM;
    if (err != OBL_OK) {
        ro_free(r);
        return err;
    }
    OBL_SECRET(r->val, r->vs);
    *out = r;
    return OBL_OK;
}

/*
 * Shared creation. values: NULL (all zero) or n * vs bytes.
 * Secret: the contents of values. Public: the parameters.
 */
static obl_err ro_create(obl_roram **out, const obl_roram_params *p, const void *values)
{
    if (!out)
        return OBL_ERR_INVALID_ARG;
    *out = NULL;
    size_t total;
    obl_err err = ro_check(p, &total);
    if (err != OBL_OK)
        return err;
    const int isa = obl_isa_pick(); /* its trees pick the same (nr_create) */
    if (isa < 0)
        return OBL_ERR_UNSUPPORTED;
    const size_t vs = p->value_size;
    uint32_t lk = 0;
    while (lk < 6 && (vs << (lk + 1)) <= 64)
        lk++;
    /* Data blocks: k = 2^lk values, the most that fit in 64 bytes; a block
     * of 33 to 63 bytes is padded to 64 (one cache line, and the ORAM's
     * block moves then have no tail): faster accesses for about a tenth
     * more memory per entry of 56 bytes (docs/oram.md, "RORAM: recursive
     * ORAM"). */
    const size_t bpk = vs << lk; /* bytes of the k packed values */
    const size_t bsz = bpk > 32 && bpk < 64 ? 64 : bpk;
    const uint64_t nb = (p->n + ((uint64_t)1 << lk) - 1) >> lk;
    uint64_t cnt[RO_MAX_LEVELS];
    uint8_t fl[RO_MAX_LEVELS] = {0};
    uint32_t T = 0;
    err = ro_levels(p, total, nb, cnt, fl, &T);
    obl_roram *r = NULL;
    if (err == OBL_OK)
        err = ro_new(&r, p, isa, lk, bsz, T, cnt, fl);
    if (err != OBL_OK)
        return err;
    err = T == 0 ? ro_fill_scan(r, values, total)
                 : ro_build_levels(r, p, values, cnt, total, bpk);
    if (err != OBL_OK) {
        ro_free(r);
        return err;
    }
    *out = r;
    return OBL_OK;
}

/* see obl/oram.h */
obl_err obl_roram_create(obl_roram **out, const obl_roram_params *p)
{
    return ro_create(out, p, NULL);
}

/* see obl/oram.h */
obl_err obl_roram_create_from(obl_roram **out, const obl_roram_params *p, const void *values)
{
    if (!values) {
        if (out)
            *out = NULL;
        return OBL_ERR_INVALID_ARG;
    }
    return ro_create(out, p, values);
}

/* see roram_internal.h */
obl_err ro_ready(obl_roram *r)
{
    for (uint32_t l = 0; l < r->T; l++) {
        obl_err e = nr_ready(r->lv[l]);
        if (e != OBL_OK)
            return e;
    }
    return OBL_OK;
}

/* The access (ro_access.c, ro_access), in the variant the structure picked. */
static obl_err ro_run(obl_roram *r, uint64_t index, uint64_t is_write, const void *in,
                         void *out, obl_oram_update_fn fn, void *ctx)
{
    if (!r)
        return OBL_ERR_INVALID_ARG;
    return r->access(r, index, is_write, in, out, fn, ctx);
}

/* see obl/oram.h */
obl_err obl_roram_access(obl_roram *o, uint64_t index, uint64_t is_write, const void *in,
                         void *out)
{
    return ro_run(o, index, is_write, in, out, NULL, NULL);
}

/* see obl/oram.h */
obl_err obl_roram_read(obl_roram *o, uint64_t index, void *value_out)
{
    return ro_run(o, index, 0, NULL, value_out, NULL, NULL);
}

/* see obl/oram.h */
obl_err obl_roram_write(obl_roram *o, uint64_t index, const void *value)
{
    if (!value)
        return OBL_ERR_INVALID_ARG;
    return ro_run(o, index, 1, value, NULL, NULL, NULL);
}

/* see obl/oram.h */
obl_err obl_roram_update(obl_roram *o, uint64_t index, obl_oram_update_fn fn, void *ctx)
{
    if (!fn)
        return OBL_ERR_INVALID_ARG;
    return ro_run(o, index, 0, NULL, NULL, fn, ctx);
}

/* see obl/oram.h */
uint64_t obl_roram_size(const obl_roram *o) { return o ? o->n : 0; }

/* see obl/oram.h */
uint32_t obl_roram_levels(const obl_roram *o) { return o ? o->T : 0; }

/* see obl/oram.h */
void obl_roram_stats(const obl_roram *o, obl_oram_stats *st)
{
    if (!st)
        return;
    memset(st, 0, sizeof(*st));
    if (o && o->T)
        obl_nroram_stats(o->lv[0], st);
}

/* see obl/oram.h */
size_t obl_roram_memory_bytes(const obl_roram *o)
{
    if (!o)
        return 0;
    size_t b = o->ac.bytes;
    for (uint32_t l = 0; l < o->T; l++)
        b += obl_nroram_memory_bytes(o->lv[l]);
    return b;
}

/* see obl/oram.h */
const char *obl_roram_variant(const obl_roram *o) { return o ? obl_isa_name(o->isa) : NULL; }

/* see obl/oram.h */
void obl_roram_destroy(obl_roram *o)
{
    if (o)
        ro_free(o);
}
