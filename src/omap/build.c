/*
 * Bulk build of the oblivious map (obl_omap_build, obl/omap.h).
 *
 * The buckets are filled in plain memory and the ORAM is built from them
 * with obl_roram_create_from, so the cost is O(n) hashing and placement
 * plus the ORAMs' own bulk builds, instead of n oblivious puts.
 *
 * What the build reveals (docs/omap.md): the memory trace of this file
 * depends on the keys only through their SipHash values under the map's
 * fresh secret key: the bucket h(k_i) of each input position i and the
 * order of the 64-bit hashes (duplicate detection). For distinct keys these
 * hashes are pseudo-random and independent of the keys (SipHash is a PRF),
 * and later operations go through the ORAM, which hides the bucket they
 * touch, so knowing the buckets does not link a later access to an input
 * position. Keys and values themselves are only copied, never compared
 * except with constant-time equality whose result is public only as the
 * OBL_ERR_DUPLICATE_KEY outcome.
 *
 * Placement: entry i goes to the next free slot of bucket h(k_i), in input
 * order; an entry whose bucket is full goes to the overflow stash, which
 * keeps the stash invariant of omap.c (a stash entry's bucket is full).
 */
#include <string.h>

#include <obl/omap.h>

#include "ct.h"
#include "common/secret.h"
#include "omap/omap_internal.h"
#include "oram/nroram_internal.h"

__extension__ typedef unsigned __int128 build_u128;

typedef struct {
    uint64_t h;   /* SipHash of the index key */
    uint64_t i;   /* input position */
} build_rec;

/* LSD radix sort of recs by h, 16 bits per pass; tmp has n records.
 * Vartime: the hashes are public at this point (see the top). */
static void radix_sort_vartime(build_rec *recs, build_rec *tmp, uint64_t n, uint32_t *cnt)
{
    for (unsigned sh = 0; sh < 64; sh += 16) {
        memset(cnt, 0, sizeof(uint32_t) << 16);
        for (uint64_t i = 0; i < n; i++)
            cnt[(recs[i].h >> sh) & 0xffff]++;
        uint32_t sum = 0;
        for (uint32_t d = 0; d < 65536; d++) {
            uint32_t c = cnt[d];
            cnt[d] = sum;
            sum += c;
        }
        for (uint64_t i = 0; i < n; i++)
            tmp[cnt[(recs[i].h >> sh) & 0xffff]++] = recs[i];
        build_rec *t = recs;
        recs = tmp;
        tmp = t;
    }
    /* four passes: the sorted data is back in the caller's recs */
}

/* Fingerprint mode: a value block's id, the fingerprint of the key it
 * starts with (nr_build calls it on every slot: SipHash takes the same
 * time for any key of ks bytes). Secret: the block. */
static uint64_t omap_block_id(const void *ctx, const unsigned char *block)
{
    return omap_fingerprint((const obl_omap *)ctx, block);
}

/* see obl/omap.h */
obl_err obl_omap_build(obl_omap **out, const obl_omap_params *p, const void *keys,
                       const void *values, uint64_t n)
{
    /*
     * Secret: keys, values. Public: n, p, the error code, and the hash graph
     * described at the top of this file.
     */
    if (!out)
        return OBL_ERR_INVALID_ARG;
    *out = NULL;
    if (!p || (n && (!keys || !values)))
        return OBL_ERR_INVALID_ARG;
    if (n > p->capacity)
        return OBL_ERR_INVALID_ARG;
    obl_omap *m;
    obl_err err = omap_alloc(&m, p);
    if (err != OBL_OK)
        return err;
    const unsigned char *K = (const unsigned char *)keys, *V = (const unsigned char *)values;
    const size_t ks = m->ks, vs = m->vs, B = m->B, iks = m->iks;
    const uint64_t nb = m->M;
    size_t rec_bytes = 0, b_bytes = 0, own_bytes = 0, fill_bytes = nb, arr_bytes = 0;
    size_t fp_bytes = 0, kvb_bytes = 0;
    size_t cnt_bytes = sizeof(uint32_t) << 16;
    int ok = obl_mul_ok((size_t)(n ? n : 1), sizeof(build_rec), &rec_bytes) &&
             obl_mul_ok((size_t)(n ? n : 1), sizeof(uint64_t), &b_bytes) &&
             obl_mul_ok((size_t)nb * B, sizeof(uint64_t), &own_bytes) &&
             obl_mul_ok((size_t)nb, m->bsz, &arr_bytes) &&
             obl_mul_ok((size_t)(n ? n : 1), 8, &fp_bytes) &&
             obl_mul_ok((size_t)(n ? n : 1), ks + vs, &kvb_bytes);
    if (!ok) {
        omap_free(m);
        return OBL_ERR_TOO_LARGE;
    }
    build_rec *recs = (build_rec *)obl_alloc(&m->ac, rec_bytes, 64);
    build_rec *tmp = (build_rec *)obl_alloc(&m->ac, rec_bytes, 64);
    uint32_t *cnt = (uint32_t *)obl_alloc(&m->ac, cnt_bytes, 64);
    uint64_t *bk = (uint64_t *)obl_alloc(&m->ac, b_bytes, 64);       /* bucket per entry */
    uint64_t *own = (uint64_t *)obl_alloc(&m->ac, own_bytes, 64);    /* entry + 1 per slot */
    unsigned char *fill = (unsigned char *)obl_alloc(&m->ac, fill_bytes, 64);
    unsigned char *arr = NULL;
    /* fingerprint mode: the index keys (fingerprints) and the value
     * ORAM's blocks {key, value} */
    uint64_t *fpk = m->fp || ks < iks ? (uint64_t *)obl_alloc(&m->ac, fp_bytes, 64) : NULL;
    unsigned char *kvb = NULL;
    uint64_t *ids = NULL;
    uint32_t *leaves = NULL;
    size_t ids_bytes = 0, leaves_bytes = 0;
    const int compact = m->layout == OBL_OMAP_LAYOUT_COMPACT;
    uint64_t qn = 0;
    if (!recs || !tmp || !cnt || !bk || !own || !fill || ((m->fp || ks < iks) && !fpk)) {
        err = OBL_ERR_NOMEM;
        goto done;
    }
    /* the index keys, iks bytes each: fingerprints, keys of under 8 bytes
     * zero-extended, or the keys */
    for (uint64_t i = 0; i < n && (m->fp || ks < iks); i++) {
        fpk[i] = 0;
        if (m->fp)
            fpk[i] = omap_fingerprint(m, K + i * ks);
        else
            memcpy(&fpk[i], K + i * ks, ks);
    }
    const unsigned char *IK = m->fp || ks < iks ? (const unsigned char *)fpk : K;

    /* Hashes. LEAK: the bucket and 64-bit hash of each input position,
     * pseudo-random for distinct keys (see the top of this file). */
    for (uint64_t i = 0; i < n; i++) {
        const unsigned char *k = IK + i * iks;
        uint64_t h = omap_hash(m, k);
        recs[i].h = h;
        recs[i].i = i;
        bk[i] = (uint64_t)(((build_u128)h * m->M) >> 64);
        OBL_DECLASSIFY(&recs[i].h, sizeof(recs[i].h));
        OBL_DECLASSIFY(&bk[i], sizeof(uint64_t));
    }

    /* Duplicates: equal keys have equal hashes, so after sorting by hash a
     * duplicate pair sits inside a run of equal hashes; runs longer than one
     * (a duplicate, or a 64-bit PRF collision, probability ~ n^2 / 2^65) are
     * compared pairwise in constant time. In fingerprint mode equal
     * fingerprints hash equally too: two different keys with one
     * fingerprint cannot both be held (fpc). */
    radix_sort_vartime(recs, tmp, n, cnt);
    uint64_t dup = 0, fpc = 0;
    for (uint64_t s = 0; s < n;) {
        uint64_t e = s + 1;
        while (e < n && recs[e].h == recs[s].h)
            e++;
        for (uint64_t a = s; a < e; a++)
            for (uint64_t b = a + 1; b < e; b++) {
                uint64_t eq = obl_ct_memeq(K + recs[a].i * ks, K + recs[b].i * ks, ks);
                dup |= eq;
                if (m->fp) /* public */
                    fpc |= obl_ct_eq64(fpk[recs[a].i], fpk[recs[b].i]) & (eq ^ 1);
            }
        s = e;
    }
    /* LEAK: whether the input holds a duplicate key: the public error; and
     * whether two keys share a fingerprint (probability ~ n^2 / 2^65): the
     * capacity event OBL_ERR_FULL. */
    if (OBL_DECLASSIFY_VAL(dup)) {
        err = OBL_ERR_DUPLICATE_KEY;
        goto done;
    }
    if (OBL_DECLASSIFY_VAL(fpc)) {
        err = OBL_ERR_FULL;
        goto done;
    }
    obl_free(&m->ac, recs, rec_bytes);
    obl_free(&m->ac, tmp, rec_bytes);
    recs = tmp = NULL;

    /* Compact layout: the values go into their ORAM first, built directly
     * (nr_build, oblivious) with the keys as block ids; the index entries
     * then carry the leaves it drew. The all-ones 8-byte key (the dummy
     * id: nr_build leaves its slot empty) keeps its value in m->ones,
     * picked by a constant-time pass over the input. */
    if (compact) {
        obl_nroram_params np;
        omap_values_params(m, &np, p);
        ids_bytes = (size_t)(n ? n : 1) * sizeof(uint64_t);
        leaves_bytes = (size_t)(n ? n : 1) * sizeof(uint32_t);
        ids = (uint64_t *)obl_alloc(&m->ac, ids_bytes, 64);
        leaves = (uint32_t *)obl_alloc(&m->ac, leaves_bytes, 64);
        if (!ids || !leaves) {
            err = OBL_ERR_NOMEM;
            goto done;
        }
        for (uint64_t i = 0; i < n; i++) {
            uint64_t id = 0;
            memcpy(&id, IK + i * iks, iks);
            ids[i] = id;
            if (m->ones)
                obl_ct_cmov(obl_ct_eq64(id, UINT64_MAX), m->ones, V + i * vs, vs);
        }
        const unsigned char *blocks = V;
        size_t bs = vs;
        if (m->fp) { /* public */
            kvb = (unsigned char *)obl_alloc(&m->ac, kvb_bytes, 64);
            if (!kvb) {
                err = OBL_ERR_NOMEM;
                goto done;
            }
            for (uint64_t i = 0; i < n; i++) {
                memcpy(kvb + i * (ks + vs), K + i * ks, ks);
                memcpy(kvb + i * (ks + vs) + ks, V + i * vs, vs);
            }
            blocks = kvb;
            bs = ks + vs;
        }
        err = nr_create(&m->vo, &np, 0);
        if (err == OBL_OK)
            err = m->fp ? nr_build(m->vo, n, blocks, bs, (size_t)n * bs, NULL, omap_block_id, m,
                                   leaves)
                        : nr_build(m->vo, n, blocks, bs, (size_t)n * bs, ids, NULL, NULL, leaves);
        obl_free(&m->ac, kvb, kvb_bytes);
        kvb = NULL;
        obl_free(&m->ac, ids, ids_bytes);
        ids = NULL;
        if (err != OBL_OK)
            goto done;
    }
    const size_t svs = m->svs, svc = compact ? 4 : vs; /* svc: bytes of the source */
#define OMAP_SV(i) (compact ? (const unsigned char *)&leaves[i] : V + (i) * vs)

    /* Placement by the (public) buckets, in input order. own[b * B + s] =
     * entry + 1. LEAK: the stash's fill after the build, a function of the
     * public buckets. */
    for (uint64_t i = 0; i < n; i++) {
        uint64_t b = bk[i];
        if (fill[b] < B) {
            own[b * B + fill[b]++] = i + 1;
            continue;
        }
        if (qn == m->S) {
            err = OBL_ERR_FULL;
            goto done;
        }
        m->sh[qn] = 1 | (b << 1);
        memcpy(m->skey + qn * iks, IK + i * iks, iks);
        memcpy(m->ssv + qn * svs, OMAP_SV(i), svc); /* zero-extended: the stash was zeroed */
        OBL_SECRET(&m->sh[qn], OMAP_HS); /* the stash's content is secret again */
        qn++;
    }

    /* The buckets, then the ORAM over them. */
    arr = (unsigned char *)obl_alloc(&m->ac, arr_bytes, 64);
    if (!arr) {
        err = OBL_ERR_NOMEM;
        goto done;
    }
    memset(arr, 0, arr_bytes);
    for (uint64_t b = 0; b < nb; b++) {
        unsigned char *bp = arr + b * m->bsz;
        uint64_t hdr = fill[b] >= 64 ? UINT64_MAX : ((uint64_t)1 << fill[b]) - 1;
        memcpy(bp, &hdr, OMAP_HS);
        for (unsigned s = 0; s < fill[b]; s++) {
            uint64_t i = own[b * B + s] - 1;
            memcpy(bp + OMAP_HS + s * iks, IK + i * iks, iks);
            memcpy(bp + OMAP_HS + B * iks + s * svs, OMAP_SV(i), svc);
        }
    }
#undef OMAP_SV
    m->st.overflow_max = qn;
    m->count = n;
    {
        obl_roram_params rp;
        omap_oram_params(m, &rp, p);
        err = obl_roram_create_from(&m->oram, &rp, arr);
    }

done:
    obl_free(&m->ac, recs, rec_bytes);
    obl_free(&m->ac, tmp, rec_bytes);
    obl_free(&m->ac, cnt, cnt_bytes);
    obl_free(&m->ac, bk, b_bytes);
    obl_free(&m->ac, own, own_bytes);
    obl_free(&m->ac, fill, fill_bytes);
    obl_free(&m->ac, arr, arr_bytes);
    obl_free(&m->ac, ids, ids_bytes);
    obl_free(&m->ac, leaves, leaves_bytes);
    obl_free(&m->ac, fpk, fp_bytes);
    obl_free(&m->ac, kvb, kvb_bytes);
    if (err != OBL_OK) {
        omap_free(m);
        return err;
    }
    *out = m;
    return OBL_OK;
}
