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
 * keeps the stash invariant of omap.c (a stash entry's bucket is full).
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
    size_t h_bytes = 0, b_bytes = 0, st_bytes = 0, own_bytes = 0, fill_bytes = nb, arr_bytes = 0;
    size_t fp_bytes = 0, kvb_bytes = 0;
    int ok = obl_mul_ok((size_t)(n ? n : 1), sizeof(uint64_t), &h_bytes) &&
             obl_mul_ok((size_t)(n ? n : 1), sizeof(uint64_t), &b_bytes) &&
             obl_mul_ok((size_t)nb + 1, sizeof(uint64_t), &st_bytes) &&
             obl_mul_ok((size_t)(n ? n : 1), sizeof(uint64_t), &own_bytes) &&
             obl_mul_ok((size_t)nb, m->bsz, &arr_bytes) &&
             obl_mul_ok((size_t)(n ? n : 1), 8, &fp_bytes) &&
             obl_mul_ok((size_t)(n ? n : 1), ks + vs, &kvb_bytes);
    if (!ok) {
        omap_free(m);
        return OBL_ERR_TOO_LARGE;
    }
    uint64_t *hv = (uint64_t *)obl_alloc(&m->ac, h_bytes, 64);      /* hash per entry */
    uint64_t *bk = (uint64_t *)obl_alloc(&m->ac, b_bytes, 64);      /* bucket per entry */
    uint64_t *ord = (uint64_t *)obl_alloc(&m->ac, h_bytes, 64);     /* entries by bucket */
    uint64_t *start = (uint64_t *)obl_alloc(&m->ac, st_bytes, 64);  /* bucket b: ord[start[b]..] */
    /* per bucket position: the hashes (duplicate check); then per entry:
     * its slot b * B + s, or OMAP_IN_STASH */
    uint64_t *own = (uint64_t *)obl_alloc(&m->ac, own_bytes, 64);
    unsigned char *fill = (unsigned char *)obl_alloc(&m->ac, fill_bytes, 64);
    unsigned char *arr = NULL;
    /* the index keys (a word map's words, or short keys zero-extended);
     * fingerprint mode: the value ORAM's blocks {key, value} */
    const int words = m->words;
    uint64_t *fpk = words || ks < iks ? (uint64_t *)obl_alloc(&m->ac, fp_bytes, 64) : NULL;
    unsigned char *kvb = NULL;
    uint64_t *ids = NULL;
    uint32_t *leaves = NULL;
    size_t ids_bytes = 0, leaves_bytes = 0;
    const int compact = m->layout == OBL_OMAP_LAYOUT_COMPACT;
    uint64_t qn = 0;
    if (!hv || !bk || !ord || !start || !own || !fill || ((words || ks < iks) && !fpk)) {
        err = OBL_ERR_NOMEM;
        goto done;
    }
    /* the index keys, iks bytes each: the words of a word map (omap_word:
     * fingerprints or keys zero-extended, permuted), else keys of under 8
     * bytes zero-extended, or the keys */
    if (m->fp) { /* public */
        /* omap_fingerprint, eight keys at a time */
        obl_siphash24_many(m->sk[2], m->sk[3], K, ks, ks, n, fpk);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t f = fpk[i] & m->fpmask;
            fpk[i] = f - obl_ct_eq64(f, UINT64_MAX);
        }
    }
    for (uint64_t i = 0; i < n && !m->fp && ks < iks; i++) {
        fpk[i] = 0;
        memcpy(&fpk[i], K + i * ks, ks);
    }
    if (words) { /* public */
        if (!m->fp && ks == 8 && n) /* public */
            memcpy(fpk, K, (size_t)n * 8);
        obl_speck_enc_many(&m->pk, fpk, fpk, (size_t)n);
        for (uint64_t i = 0; i < n && m->fp; i++)
            fpk[i] -= obl_ct_eq64(fpk[i], UINT64_MAX);
    }
    const unsigned char *IK = words || ks < iks ? (const unsigned char *)fpk : K;

    /* Hashes: a word map's words (a pseudo-random permutation's images),
     * else SipHash. LEAK: the bucket of each input position, pseudo-random
     * for distinct keys (see the top of this file); the hash stays secret. */
    if (words) /* public */
        memcpy(hv, fpk, (size_t)n * 8);
    else
        obl_siphash24_many(m->sk[0], m->sk[1], IK, iks, iks, n, hv); /* omap_hash */
    for (uint64_t i = 0; i < n; i++) {
        bk[i] = words ? omap_word_bucket(m, hv[i]) : (uint64_t)(((build_u128)hv[i] * m->M) >> 64);
        OBL_DECLASSIFY(&bk[i], sizeof(uint64_t));
    }
    /* The entries grouped by bucket, in input order within each (a
     * counting sort on the public buckets). */
    memset(start, 0, st_bytes);
    for (uint64_t i = 0; i < n; i++)
        start[bk[i] + 1]++;
    for (uint64_t b = 0; b < nb; b++)
        start[b + 1] += start[b];
    for (uint64_t i = 0; i < n; i++) {
        uint64_t x = start[bk[i]]++;
        ord[x] = i;
        own[x] = hv[i]; /* the hashes in bucket order (secret), for the check below */
    }
    for (uint64_t b = nb; b > 0; b--) /* undo the cursor moves */
        start[b] = start[b - 1];
    start[0] = 0;

    /* Duplicates: equal keys have equal hashes and so one bucket. Every
     * pair of a bucket is checked, the same work whatever the keys (the
     * bucket sizes are public), and the outcomes ORed into one bit. A word
     * map without fingerprints hashes by a permutation: equal hashes are
     * equal keys. Else the keys are compared in constant time (an equal
     * hash of different keys is a PRF collision, probability ~ n^2 / 2^65);
     * in fingerprint mode equal hashes are equal fingerprints, and two
     * different keys with one fingerprint cannot both be held (fpc). */
    const int perm = words && !m->fp;
    uint64_t dup = 0, fpc = 0;
    for (uint64_t b = 0; b < nb; b++)
        for (uint64_t x = start[b]; x < start[b + 1]; x++)
            for (uint64_t y = x + 1; y < start[b + 1]; y++) {
#ifdef OBL_TEST_PLANT_HASH_BRANCH
                /* tests only: the negative control of the build's memcheck
                 * test (tests/audit) plants the branch on the hash */
                if (own[x] != own[y])
                    continue;
#endif
                uint64_t i = ord[x], j = ord[y];
                OBL_TRACE_TOUCH(OBL_TRACE_REGION_MAP, OBL_TRACE_READ, i, j);
                uint64_t eqh = obl_ct_eq64(own[x], own[y]);
                uint64_t eq = perm ? eqh : obl_ct_memeq(K + i * ks, K + j * ks, ks);
                dup |= eq;
                if (m->fp) /* public */
                    fpc |= eqh & (eq ^ 1);
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
    obl_free(&m->ac, hv, h_bytes);
    hv = NULL;

    /* Compact layout: the values go into their ORAM first, built directly
     * (nr_build, oblivious) with the keys' words as block ids; the index
     * entries then carry the leaves it drew. The key whose word is all
     * ones (the dummy id: nr_build leaves its slot empty) keeps its value
     * in m->ones, picked by a constant-time pass over the input. */
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

    /* Placement by the (public) buckets: the first B entries of a bucket
     * (in input order) take its slots, the rest go to the stash.
     * own[entry] = b * B + s. LEAK: the stash's fill after the build,
     * a function of the public buckets. */
    for (uint64_t b = 0; b < nb; b++)
        for (uint64_t x = start[b]; x < start[b + 1]; x++) {
            uint64_t i = ord[x];
            own[i] = OMAP_IN_STASH;
            if (fill[b] < B) {
                own[i] = b * B + fill[b]++;
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
    for (uint64_t b = 0; b < nb; b++) { /* obl_alloc zeroed the rest */
        uint64_t hdr = fill[b] >= 64 ? UINT64_MAX : ((uint64_t)1 << fill[b]) - 1;
        memcpy(arr + b * m->bsz, &hdr, OMAP_HS);
    }
    /* in input order: the reads in order, the writes where the slots are;
     * a word map's slots hold the low wshift bits of the word in rw bytes
     * and lw bytes of the slot value (omap_internal.h) */
    const uint64_t rmask = omap_rest_mask(m);
    for (uint64_t i = 0; i < n; i++) {
        if (own[i] == OMAP_IN_STASH) /* public */
            continue;
        uint64_t b = own[i] / B, s = own[i] % B;
        unsigned char *bp = arr + b * m->bsz;
        if (words) { /* public */
            uint64_t r = fpk[i] & rmask;
            memcpy(bp + OMAP_HS + s * m->rw, &r, m->rw); /* little-endian */
            memcpy(bp + OMAP_HS + B * m->rw + s * m->lw, OMAP_SV(i), m->lw);
        } else {
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
    obl_free(&m->ac, hv, h_bytes);
    obl_free(&m->ac, ord, h_bytes);
    obl_free(&m->ac, start, st_bytes);
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
