/* SPDX-License-Identifier: MIT */
/*
 * Bulk build of the oblivious map (obl_omap_build, obl/omap.h).
 *
 * The buckets are filled in plain memory and the ORAM is built from them
 * with obl_roram_create_from, so the cost is O(n) hashing and placement
 * plus the ORAMs' own bulk builds, instead of n oblivious puts.
 *
 * What the build reveals (docs/omap.md): the memory trace of this file
 * depends on the keys only through the bucket h(k_i) of each input
 * position i, taken from their 64-bit hashes under the map's fresh secret
 * key (a word map's words, Speck64/128 images, else SipHash values). For
 * distinct keys these buckets are pseudo-random and independent of the
 * keys (a keyed pseudo-random permutation, or a PRF), and later
 * operations go through the ORAM, which hides the bucket they touch, so
 * knowing the buckets does not link a later access to an input position.
 * The hashes themselves stay secret: the duplicate check compares every
 * pair of a bucket without a branch, so only its one-bit outcome
 * (OBL_ERR_DUPLICATE_KEY, or FULL for a fingerprint collision) is public.
 * Keys and values are only copied and compared in constant time.
 *
 * Placement: entry i goes to the next free slot of bucket h(k_i), in input
 * order; an entry whose bucket is full goes to the overflow stash, which
 * keeps the stash invariant (omap_internal.h: a stash entry's bucket is
 * full).
 *
 * The steps (docs/omap.md, "Bulk build"), one function each: the index
 * keys and their hashes (bld_hash), the entries grouped by bucket
 * (bld_group), the duplicate check (bld_duplicates), in the compact
 * layout the value ORAM (bld_values), the placement (bld_place) and the
 * bucket array with the index ORAM built over it (bld_buckets). The two
 * ORAMs' tree builds run their sorts on two threads unless the caller
 * asks for one (build_threads; docs/omap.md, "On two threads").
 */
#include <string.h>

#include <obl/omap.h>

#include "ct.h"
#include "common/secret.h"
#include "common/trace.h"
#include "omap/omap_internal.h"
#include "omap/siphash.h"
#include "omap/speck.h"
#include "oram/nroram_internal.h"
#include "sort/par.h"

__extension__ typedef unsigned __int128 build_u128;

/* own[] of an entry placed in the overflow stash */
#define OMAP_IN_STASH UINT64_MAX

/* Fingerprint mode: a value block's id, the word of the fingerprint of
 * the key it starts with (nr_build calls it on every slot: SipHash and
 * Speck take the same time for any key of ks bytes). Secret: the block. */
static uint64_t omap_block_id(const void *ctx, const unsigned char *block)
{
    return omap_word((const obl_omap *)ctx, block);
}

/* The build's working state: the input, the per-entry arrays and their
 * sizes (bytes, for obl_free). */
typedef struct {
    obl_omap *m;
    const obl_omap_params *p;
    const unsigned char *K, *V; /* the input: n keys, n values */
    const unsigned char *IK;    /* the index keys, iks bytes each */
    uint64_t n;
    uint64_t *hv;    /* hash per entry */
    uint64_t *bk;    /* bucket per entry (public) */
    uint64_t *ord;   /* entries by bucket */
    uint64_t *start; /* bucket b: ord[start[b]..start[b + 1]] */
    /* per bucket position: the hashes (duplicate check); then per entry:
     * its slot b * B + s, or OMAP_IN_STASH */
    uint64_t *own;
    unsigned char *fill; /* entries placed per bucket */
    /* the index keys (a word map's words, or short keys zero-extended) */
    uint64_t *fpk;
    uint32_t *leaves; /* compact: the value blocks' leaves */
    size_t h_bytes, b_bytes, st_bytes, own_bytes, fill_bytes, fp_bytes, kvb_bytes, arr_bytes;
    size_t leaves_bytes;
} omap_bld;

/*
 * Fresh memory on two threads. A fresh page is cleared by the kernel on
 * the thread that first writes it, and obl_alloc zeroes every block on
 * the calling thread: at 2^20 entries the value tree alone is 288 MiB,
 * whose clearing took about as long as its build's sorts on two threads.
 * With two build threads the ORAMs get the map's allocator through
 * bld_alloc_two, which first rewrites one byte of each 4 KiB page of a
 * large block with its own value, on two threads (the content is
 * unchanged; the pages touched are a function of the size). The trees
 * keep it as their allocator: opaque is the map's copy of the caller's
 * (m->ac.a), which outlives them (omap_free destroys the trees first).
 */
#define BLD_PREFAULT_MIN ((size_t)4 << 20)

static void bld_touch_pages(void *ctx, size_t lo, size_t hi)
{
    volatile unsigned char *q = (unsigned char *)ctx;
    for (size_t i = lo; i < hi; i++)
        q[i * 4096] = q[i * 4096];
}

static void *bld_alloc_two(void *opaque, size_t size, size_t align)
{
    const obl_allocator *a = (const obl_allocator *)opaque;
    void *p = a->alloc(a->opaque, size, align);
    if (p && size >= BLD_PREFAULT_MIN) /* public */
        obl_par_for(2, (size + 4095) / 4096, 64, bld_touch_pages, p);
    return p;
}

static void bld_free_two(void *opaque, void *p, size_t size)
{
    const obl_allocator *a = (const obl_allocator *)opaque;
    a->free(a->opaque, p, size);
}

/* The allocator the ORAMs of a build on th threads get (public: th). */
static obl_allocator bld_allocator(obl_omap *m, unsigned th)
{
    obl_allocator w = {bld_alloc_two, bld_free_two, &m->ac.a};
    return th > 1 ? w : m->ac.a;
}

/* Sizes and the per-entry arrays. Public: n and the map's sizes. */
static obl_err bld_alloc(omap_bld *b)
{
    obl_omap *m = b->m;
    const uint64_t n = b->n, nb = m->M;
    const size_t ks = m->ks, vs = m->vs, iks = m->iks;
    b->fill_bytes = nb;
    int ok = obl_mul_ok((size_t)(n ? n : 1), sizeof(uint64_t), &b->h_bytes) &&
             obl_mul_ok((size_t)(n ? n : 1), sizeof(uint64_t), &b->b_bytes) &&
             obl_mul_ok((size_t)nb + 1, sizeof(uint64_t), &b->st_bytes) &&
             obl_mul_ok((size_t)(n ? n : 1), sizeof(uint64_t), &b->own_bytes) &&
             obl_mul_ok((size_t)nb, m->bsz, &b->arr_bytes) &&
             obl_mul_ok((size_t)(n ? n : 1), 8, &b->fp_bytes) &&
             obl_mul_ok((size_t)(n ? n : 1), ks + vs, &b->kvb_bytes);
    if (!ok)
        return OBL_ERR_TOO_LARGE;
    b->hv = (uint64_t *)obl_alloc(&m->ac, b->h_bytes, 64);
    b->bk = (uint64_t *)obl_alloc(&m->ac, b->b_bytes, 64);
    b->ord = (uint64_t *)obl_alloc(&m->ac, b->h_bytes, 64);
    b->start = (uint64_t *)obl_alloc(&m->ac, b->st_bytes, 64);
    b->own = (uint64_t *)obl_alloc(&m->ac, b->own_bytes, 64);
    b->fill = (unsigned char *)obl_alloc(&m->ac, b->fill_bytes, 64);
    const int need_fpk = m->words || ks < iks;
    b->fpk = need_fpk ? (uint64_t *)obl_alloc(&m->ac, b->fp_bytes, 64) : NULL;
    if (!b->hv || !b->bk || !b->ord || !b->start || !b->own || !b->fill || (need_fpk && !b->fpk))
        return OBL_ERR_NOMEM;
    return OBL_OK;
}

static void bld_free(omap_bld *b)
{
    obl_alloc_ctx *ac = &b->m->ac;
    obl_free(ac, b->hv, b->h_bytes);
    obl_free(ac, b->ord, b->h_bytes);
    obl_free(ac, b->start, b->st_bytes);
    obl_free(ac, b->bk, b->b_bytes);
    obl_free(ac, b->own, b->own_bytes);
    obl_free(ac, b->fill, b->fill_bytes);
    obl_free(ac, b->leaves, b->leaves_bytes);
    obl_free(ac, b->fpk, b->fp_bytes);
}

/*
 * The index keys, iks bytes each: the words of a word map (omap_word:
 * fingerprints or keys zero-extended, permuted), else keys of under 8
 * bytes zero-extended, or the keys; then their hashes (a word map's words,
 * a pseudo-random permutation's images, else SipHash) and buckets.
 * LEAK: the bucket of each input position, pseudo-random for distinct keys
 * (see the top of this file); the hash stays secret.
 */
static void bld_hash(omap_bld *b)
{
    obl_omap *m = b->m;
    const uint64_t n = b->n;
    const size_t ks = m->ks, iks = m->iks;
    const int words = m->words;
    uint64_t *fpk = b->fpk, *hv = b->hv;
    if (m->fp) { /* public */
        /* omap_fingerprint, eight keys at a time */
        obl_siphash24_many(m->sk[2], m->sk[3], b->K, ks, ks, n, fpk);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t f = fpk[i] & m->fpmask;
            fpk[i] = f - obl_ct_eq64(f, UINT64_MAX);
        }
    }
    for (uint64_t i = 0; i < n && !m->fp && ks < iks; i++) {
        fpk[i] = 0;
        memcpy(&fpk[i], b->K + i * ks, ks);
    }
    if (words) { /* public */
        if (!m->fp && ks == 8 && n) /* public */
            memcpy(fpk, b->K, (size_t)n * 8);
        obl_speck_enc_many(&m->pk, fpk, fpk, (size_t)n);
        for (uint64_t i = 0; i < n && m->fp; i++)
            fpk[i] -= obl_ct_eq64(fpk[i], UINT64_MAX);
    }
    b->IK = words || ks < iks ? (const unsigned char *)fpk : b->K;

    if (words) /* public */
        memcpy(hv, fpk, (size_t)n * 8);
    else
        obl_siphash24_many(m->sk[0], m->sk[1], b->IK, iks, iks, n, hv); /* omap_hash */
    for (uint64_t i = 0; i < n; i++) {
        b->bk[i] = words ? omap_word_bucket(m, hv[i]) : (uint64_t)(((build_u128)hv[i] * m->M) >> 64);
        OBL_DECLASSIFY(&b->bk[i], sizeof(uint64_t));
    }
}

/* The entries grouped by bucket, in input order within each (a counting
 * sort on the public buckets); own[] gets their hashes in that order. */
static void bld_group(omap_bld *b)
{
    const uint64_t n = b->n, nb = b->m->M, *bk = b->bk, *hv = b->hv;
    uint64_t *start = b->start, *ord = b->ord, *own = b->own;
    memset(start, 0, b->st_bytes);
    for (uint64_t i = 0; i < n; i++)
        start[bk[i] + 1]++;
    for (uint64_t k = 0; k < nb; k++)
        start[k + 1] += start[k];
    for (uint64_t i = 0; i < n; i++) {
        uint64_t x = start[bk[i]]++;
        ord[x] = i;
        own[x] = hv[i]; /* the hashes in bucket order (secret), for the check below */
    }
    for (uint64_t k = nb; k > 0; k--) /* undo the cursor moves */
        start[k] = start[k - 1];
    start[0] = 0;
}

/*
 * Duplicates: equal keys have equal hashes and so one bucket. Every pair
 * of a bucket is checked, the same work whatever the keys (the bucket
 * sizes are public), and the outcomes ORed into one bit. A word map
 * without fingerprints hashes by a permutation: equal hashes are equal
 * keys. Else the keys are compared in constant time (an equal hash of
 * different keys is a PRF collision, probability ~ n^2 / 2^65); in
 * fingerprint mode equal hashes are equal fingerprints, and two different
 * keys with one fingerprint cannot both be held (fpc).
 * LEAK: whether the input holds a duplicate key: the public error; and
 * whether two keys share a fingerprint (probability ~ n^2 / 2^65): the
 * capacity event OBL_ERR_FULL.
 */
static obl_err bld_duplicates(omap_bld *b)
{
    const obl_omap *m = b->m;
    const uint64_t nb = m->M, *start = b->start, *ord = b->ord, *own = b->own;
    const size_t ks = m->ks;
    const int perm = m->words && !m->fp;
    uint64_t dup = 0, fpc = 0;
    for (uint64_t k = 0; k < nb; k++)
        for (uint64_t x = start[k]; x < start[k + 1]; x++)
            for (uint64_t y = x + 1; y < start[k + 1]; y++) {
#ifdef OBL_TEST_PLANT_HASH_BRANCH
                /* tests only: the negative control of the build's memcheck
                 * test (tests/audit) plants the branch on the hash */
                if (own[x] != own[y])
                    continue;
#endif
                uint64_t i = ord[x], j = ord[y];
                OBL_TRACE_TOUCH(OBL_TRACE_REGION_MAP, OBL_TRACE_READ, i, j);
                uint64_t eqh = obl_ct_eq64(own[x], own[y]);
                uint64_t eq = perm ? eqh : obl_ct_memeq(b->K + i * ks, b->K + j * ks, ks);
                dup |= eq;
                if (m->fp) /* public */
                    fpc |= eqh & (eq ^ 1);
            }
    if (OBL_DECLASSIFY_VAL(dup))
        return OBL_ERR_DUPLICATE_KEY;
    if (OBL_DECLASSIFY_VAL(fpc))
        return OBL_ERR_FULL;
    return OBL_OK;
}

/*
 * Compact layout: the values go into their ORAM first, built directly
 * (nr_build, oblivious) with the keys' words as block ids; the index
 * entries then carry the leaves it drew (b->leaves). The key whose word is
 * all ones (the dummy id: nr_build leaves its slot empty) keeps its value
 * in m->ones, picked by a constant-time pass over the input.
 */
static obl_err bld_values(omap_bld *b)
{
    obl_omap *m = b->m;
    const uint64_t n = b->n;
    const size_t ks = m->ks, vs = m->vs, iks = m->iks;
    obl_nroram_params np;
    omap_values_params(m, &np, b->p);
    size_t ids_bytes = (size_t)(n ? n : 1) * sizeof(uint64_t);
    b->leaves_bytes = (size_t)(n ? n : 1) * sizeof(uint32_t);
    uint64_t *ids = (uint64_t *)obl_alloc(&m->ac, ids_bytes, 64);
    b->leaves = (uint32_t *)obl_alloc(&m->ac, b->leaves_bytes, 64);
    unsigned char *kvb = NULL;
    obl_err err = OBL_OK;
    if (!ids || !b->leaves) {
        err = OBL_ERR_NOMEM;
        goto done;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t id = 0;
        memcpy(&id, b->IK + i * iks, iks);
        ids[i] = id;
        if (m->ones)
            obl_ct_cmov(obl_ct_eq64(id, UINT64_MAX), m->ones, b->V + i * vs, vs);
    }
    const unsigned char *blocks = b->V;
    size_t bs = vs;
    if (m->fp) { /* public */
        kvb = (unsigned char *)obl_alloc(&m->ac, b->kvb_bytes, 64);
        if (!kvb) {
            err = OBL_ERR_NOMEM;
            goto done;
        }
        for (uint64_t i = 0; i < n; i++) {
            memcpy(kvb + i * (ks + vs), b->K + i * ks, ks);
            memcpy(kvb + i * (ks + vs) + ks, b->V + i * vs, vs);
        }
        blocks = kvb;
        bs = ks + vs;
    }
    /* the sorts on two threads unless the caller asked for one (public) */
    unsigned th = nr_build_threads(b->p->build_threads);
    obl_allocator wa = bld_allocator(m, th);
    np.alloc = &wa;
    err = nr_create(&m->vo, &np, 0);
    if (err == OBL_OK)
        err = m->fp ? nr_build_par(m->vo, n, blocks, bs, (size_t)n * bs, NULL, omap_block_id, m,
                                   b->leaves, th)
                    : nr_build_par(m->vo, n, blocks, bs, (size_t)n * bs, ids, NULL, NULL,
                                   b->leaves, th);
done:
    obl_free(&m->ac, kvb, b->kvb_bytes);
    obl_free(&m->ac, ids, ids_bytes);
    return err;
}

/* An entry's slot value: the value (inline) or its block's leaf (compact). */
static const unsigned char *bld_sv(const omap_bld *b, uint64_t i)
{
    return b->leaves ? (const unsigned char *)&b->leaves[i] : b->V + i * b->m->vs;
}

/*
 * Placement by the (public) buckets: the first B entries of a bucket (in
 * input order) take its slots, the rest go to the stash. own[entry] =
 * bucket * B + slot, or OMAP_IN_STASH. LEAK: the stash's fill after the
 * build, a function of the public buckets. FULL when the stash cannot
 * take them.
 */
static obl_err bld_place(omap_bld *b)
{
    obl_omap *m = b->m;
    const uint64_t nb = m->M, B = m->B;
    const size_t iks = m->iks, svs = m->svs, svc = b->leaves ? 4 : m->vs; /* svc: source bytes */
    const uint64_t *start = b->start, *ord = b->ord;
    uint64_t *own = b->own, qn = 0;
    unsigned char *fill = b->fill;
    for (uint64_t k = 0; k < nb; k++)
        for (uint64_t x = start[k]; x < start[k + 1]; x++) {
            uint64_t i = ord[x];
            own[i] = OMAP_IN_STASH;
            if (fill[k] < B) {
                own[i] = k * B + fill[k]++;
                continue;
            }
            if (qn == m->S)
                return OBL_ERR_FULL;
            m->sh[qn] = 1 | (k << 1);
            memcpy(m->skey + qn * iks, b->IK + i * iks, iks);
            memcpy(m->ssv + qn * svs, bld_sv(b, i), svc); /* zero-extended: the stash was zeroed */
            OBL_SECRET(&m->sh[qn], OMAP_HS); /* the stash's content is secret again */
            qn++;
        }
    m->st.overflow_max = qn;
    return OBL_OK;
}

/*
 * The buckets in plain memory, written in input order (the reads in
 * order, the writes where the slots are; a word map's slots hold the low
 * wshift bits of the word in rw bytes and lw bytes of the slot value,
 * omap_internal.h), then the index ORAM over them.
 */
static obl_err bld_buckets(omap_bld *b)
{
    obl_omap *m = b->m;
    const uint64_t n = b->n, nb = m->M, B = m->B;
    const size_t iks = m->iks, svs = m->svs, svc = b->leaves ? 4 : m->vs;
    unsigned char *arr = (unsigned char *)obl_alloc(&m->ac, b->arr_bytes, 64);
    if (!arr)
        return OBL_ERR_NOMEM;
    for (uint64_t k = 0; k < nb; k++) { /* obl_alloc zeroed the rest */
        uint64_t hdr = b->fill[k] >= 64 ? UINT64_MAX : ((uint64_t)1 << b->fill[k]) - 1;
        memcpy(arr + k * m->bsz, &hdr, OMAP_HS);
    }
    const uint64_t rmask = omap_rest_mask(m), *own = b->own;
    for (uint64_t i = 0; i < n; i++) {
        if (own[i] == OMAP_IN_STASH) /* public */
            continue;
        uint64_t k = own[i] / B, s = own[i] % B;
        unsigned char *bp = arr + k * m->bsz;
        if (m->words) { /* public */
            uint64_t r = b->fpk[i] & rmask;
            memcpy(bp + OMAP_HS + s * m->rw, &r, m->rw); /* little-endian */
            memcpy(bp + OMAP_HS + B * m->rw + s * m->lw, bld_sv(b, i), m->lw);
        } else {
            memcpy(bp + OMAP_HS + s * iks, b->IK + i * iks, iks);
            memcpy(bp + OMAP_HS + B * iks + s * svs, bld_sv(b, i), svc);
        }
    }
    m->count = n;
    obl_roram_params rp;
    omap_oram_params(m, &rp, b->p);
    rp.build_threads = nr_build_threads(b->p->build_threads);
    obl_allocator wa = bld_allocator(m, rp.build_threads);
    rp.alloc = &wa;
    obl_err err = obl_roram_create_from(&m->oram, &rp, arr);
    obl_free(&m->ac, arr, b->arr_bytes);
    return err;
}

/* see obl/omap.h */
obl_err obl_omap_build(obl_omap **out, const obl_omap_params *p, const void *keys,
                       const void *values, uint64_t n)
{
    /*
     * Secret: keys, values. Public: n, p, the error code, and the buckets
     * (the top of this file).
     */
    if (!out)
        return OBL_ERR_INVALID_ARG;
    *out = NULL;
    if (!p || (n && (!keys || !values)))
        return OBL_ERR_INVALID_ARG;
    if (n > p->capacity)
        return OBL_ERR_INVALID_ARG;
    omap_bld b;
    memset(&b, 0, sizeof(b));
    obl_err err = omap_alloc(&b.m, p);
    if (err != OBL_OK)
        return err;
    b.p = p;
    b.K = (const unsigned char *)keys;
    b.V = (const unsigned char *)values;
    b.n = n;
    err = bld_alloc(&b);
    if (err == OBL_OK) {
        bld_hash(&b);
        bld_group(&b);
        err = bld_duplicates(&b);
    }
    if (err == OBL_OK) {
        obl_free(&b.m->ac, b.hv, b.h_bytes); /* the hashes are not needed past here */
        b.hv = NULL;
        if (b.m->layout == OBL_OMAP_LAYOUT_COMPACT) /* public */
            err = bld_values(&b);
    }
    if (err == OBL_OK)
        err = bld_place(&b);
    if (err == OBL_OK)
        err = bld_buckets(&b);
    bld_free(&b);
    if (err != OBL_OK) {
        omap_free(b.m);
        return err;
    }
    *out = b.m;
    return OBL_OK;
}
