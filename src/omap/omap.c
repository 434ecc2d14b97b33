/*
 * The oblivious map's operations (obl/omap.h): creation, sizing, the
 * combined access and its three wrappers, statistics.
 *
 * One-choice hashing into buckets of B slots with an overflow stash. The
 * balls-into-bins view: n keys thrown into M buckets; a bucket that gets
 * more than B keeps the excess in the stash. Every call of obl_omap_access,
 * whatever its op, key or outcome, runs:
 *   1. one ORAM read-modify-write of the key's bucket (obl_roram_update),
 *      whose callback (op_fn) scans the stash (reads), the bucket, applies
 *      the operation to whichever holds the key, puts a new key in the
 *      bucket's first free slot or else in the stash's first free entry,
 *      and when an erase frees a slot of the bucket, moves the bucket's
 *      first stash entry into it; then scans the stash again (writes);
 *   2. compact layout: one access of the value ORAM (omap_value_access).
 * Nothing is changed before every ORAM the call needs is known to accept
 * it (nr_ready, ro_ready); a FULL outcome changes nothing.
 *
 * The stash invariant (an entry of bucket b is in the stash only while b is
 * full) holds after every operation: only an erase from b frees a slot of
 * b, and that erase pulls one of b's stash entries back. So the stash holds
 * sum_b max(0, load_b - B) entries, a function of the keys held; its size
 * comes from a Chernoff bound on that sum (omap_overflow_bound), as the
 * per-shard padding of Snoopy (Dauterman et al., SOSP 2021, section 4) is
 * computed from the binomial tail rather than guessed.
 */
#include <math.h>
#include <string.h>

#include <obl/omap.h>

#include "ct.h"
#include "common/cpu.h"
#include "common/secret.h"
#include "omap/omap_internal.h"
#include "oram/nroram_internal.h"
#include "oram/roram_internal.h"
#include "omap/siphash.h"
#include "omap/speck.h"

OBL_VARIANT_DECLARE(const omap_access_t, omap_access_fn);

__extension__ typedef unsigned __int128 omap_u128;

/* see omap_internal.h */
uint64_t omap_hash(const obl_omap *m, const void *key)
{
    return obl_siphash24(m->sk[0], m->sk[1], key, m->iks);
}

/* see omap_internal.h */
uint64_t omap_fingerprint(const obl_omap *m, const void *key)
{
    uint64_t f = obl_siphash24(m->sk[2], m->sk[3], key, m->ks) & m->fpmask;
    return f - obl_ct_eq64(f, UINT64_MAX);
}

/* see omap_internal.h */
uint64_t omap_word(const obl_omap *m, const void *key)
{
    uint64_t k = 0;
    if (m->fp) /* public */
        k = omap_fingerprint(m, key);
    else
        memcpy(&k, key, m->ks); /* little-endian, zero-extended */
    uint64_t w = obl_speck_enc(&m->pk, k);
    return m->fp ? w - obl_ct_eq64(w, UINT64_MAX) : w;
}

/* see omap_internal.h */
uint64_t omap_bucket(const obl_omap *m, const void *key)
{
    /* Lemire's multiply-high range reduction: no division on a secret. */
    return (uint64_t)(((omap_u128)omap_hash(m, key) * m->M) >> 64);
}

/* ---------------------------------------------------------------- sizing -- */

/*
 * log E[exp(t * max(0, X - B))] for X ~ Poisson(lam), summed in the log
 * domain from k = 0 until the terms fall (they do once k + 1 > lam e^t)
 * below e^-60 of the largest. Public.
 */
static double omap_log_mgf(double lam, uint32_t B, double t)
{
    double llam = log(lam), lp = -lam, mx = -INFINITY, sum = 0;
    double turn = lam * exp(t) + 1.0;
    for (uint64_t k = 0; k < 1000000; k++) {
        if (k > 0)
            lp += llam - log((double)k);
        double x = lp + t * (k > B ? (double)(k - B) : 0.0);
        if (x > mx) {
            sum = sum * exp(mx - x) + 1.0;
            mx = x;
        } else {
            sum += exp(x - mx);
        }
        if ((double)k > turn && k > B && x < mx - 60.0)
            break;
    }
    return mx + log(sum);
}

/* M * E[max(0, X - B)] for X ~ Poisson(lam): the mean stash occupancy. */
static double omap_mean_overflow(double lam, uint32_t B, uint64_t M)
{
    double llam = log(lam), lp = -lam, e = 0;
    for (uint64_t k = 0; k < B + 10000; k++) {
        if (k > 0)
            lp += llam - log((double)k);
        if (k > B)
            e += exp(lp) * (double)(k - B);
        if (k > B && k > 2 * lam && lp < -80)
            break;
    }
    return e * (double)M;
}

/*
 * see omap_internal.h. The loads of M buckets under n balls are negatively
 * associated (Dubhashi, Ranjan, "Balls and bins: a study in negative
 * dependence", 1998), and x -> exp(t max(0, x - B)) is non-decreasing, so
 * E[exp(t sum)] <= prod_b E[exp(t max(0, load_b - B))]; each load is
 * Binomial(n, 1/M), a sum of Bernoulli(1/M), each smaller in the convex
 * order than Poisson(1/M), an order closed under independent sums (Shaked,
 * Shanthikumar, "Stochastic Orders", 2007, 3.A), and the function is
 * convex, so each factor is at most the Poisson one. Markov then gives,
 * for every t > 0, P[sum >= S] <= exp(M log E_Poisson[...] - t S); the
 * bound takes the best t found (a grid, then golden-section search: the
 * exponent is unimodal in t; every t gives a valid bound).
 */
uint64_t omap_overflow_bound(uint64_t capacity, uint64_t M, uint32_t B, unsigned bits)
{
    if (capacity <= B)
        return 0;
    double lam = (double)capacity / (double)M, c = (double)bits * log(2.0);
    double best = INFINITY, bt = 0.5;
#define OMAP_F(t) (((double)M * omap_log_mgf(lam, B, (t)) + c) / (t))
    for (int i = 1; i <= 24; i++) { /* t = 0.02 .. 4, geometric */
        double t = 0.02 * pow(200.0, (i - 1) / 23.0);
        double f = OMAP_F(t);
        if (f < best) {
            best = f;
            bt = t;
        }
    }
    double lo = bt / 1.26, hi = bt * 1.26, g = 0.6180339887498949;
    double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo), f1 = OMAP_F(x1), f2 = OMAP_F(x2);
    for (int i = 0; i < 40; i++) {
        if (f1 < f2) {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - g * (hi - lo);
            f1 = OMAP_F(x1);
        } else {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + g * (hi - lo);
            f2 = OMAP_F(x2);
        }
    }
#undef OMAP_F
    best = fmin(best, fmin(f1, f2));
    uint64_t worst = capacity - B; /* one bucket cannot hold more */
    if (!(best < (double)worst))
        return worst;
    return (uint64_t)ceil(best);
}

/*
 * Bucket count M (a power of two with capacity <= load * M), slots per
 * bucket *B and stash entries *S for p (checked). Automatic B: the fewest
 * slots (at least the mean load) whose bound needs at most `target`
 * entries (OBL_OMAP_OVERFLOW_TARGET, or _TARGET_COMPACT for the compact
 * layout), or OBL_OMAP_MAX_SLOTS. Automatic S: the
 * bound for B, rounded up to a multiple of 8, at least 8.
 * Returns 0 when the automatic S exceeds OBL_OMAP_MAX_OVERFLOW.
 * Public: every argument.
 */
static uint64_t omap_size(const obl_omap_params *p, uint64_t target, uint32_t *B, uint32_t *S,
                          uint32_t *logM)
{
    uint64_t load = p->bucket_load ? p->bucket_load : OBL_OMAP_DEFAULT_BUCKET_LOAD;
    uint32_t k = 0;
    while (((uint64_t)load << k) < p->capacity)
        k++;
    uint64_t M = (uint64_t)1 << k;
    *logM = k;
    double lam = (double)p->capacity / (double)M;
    const unsigned bits = OBL_OMAP_OVERFLOW_BITS;
    if (!p->slots_per_bucket) {
        uint32_t b = (uint32_t)ceil(lam);
        if (b < 1)
            b = 1;
        for (; b < OBL_OMAP_MAX_SLOTS; b++) {
            if (p->capacity <= b)
                break;
            if (omap_mean_overflow(lam, b, M) > (double)target)
                continue; /* the mean alone is over: skip the search */
            if (omap_overflow_bound(p->capacity, M, b, bits) <= target)
                break;
        }
        *B = b;
    } else {
        *B = p->slots_per_bucket;
    }
    if (p->overflow_size) {
        *S = p->overflow_size;
    } else {
        uint64_t s = omap_overflow_bound(p->capacity, M, *B, bits);
        s = (s + 7) & ~(uint64_t)7;
        if (s < 8)
            s = 8;
        if (s > OBL_OMAP_MAX_OVERFLOW)
            return 0;
        *S = (uint32_t)s;
    }
    return M;
}

/* see omap_internal.h */
void omap_free(obl_omap *m)
{
    if (!m)
        return;
    obl_alloc_ctx ac = m->ac;
    obl_roram_destroy(m->oram);
    obl_nroram_destroy(m->vo);
    obl_free(&ac, m->ones, m->ones_bytes);
    obl_free(&ac, m->stash, m->stash_bytes);
    obl_free(&ac, m->scratch, m->scratch_bytes);
    obl_prg_wipe(&m->prg);
    obl_wipe(m->sk, sizeof(m->sk));
    obl_wipe(&m->pk, sizeof(m->pk));
    obl_free(&ac, m, sizeof(*m));
}

/* see omap_internal.h */
void omap_oram_params(obl_omap *m, obl_roram_params *rp, const obl_omap_params *p)
{
    memset(rp, 0, sizeof(*rp));
    rp->n = m->M;
    rp->value_size = m->bsz;
    rp->scan_max = m->scan_max;
    rp->alloc = p->alloc;
    /* Seeded runs derive the ORAM's seed from the map's PRG (reproducible);
     * otherwise the ORAM draws its own from the caller's source. */
    rp->random = p->random;
    rp->random_opaque = p->random_opaque;
    rp->use_seed = p->use_seed;
    rp->seed = obl_prg_u64(&m->prg);
}

/* see omap_internal.h */
void omap_values_params(obl_omap *m, obl_nroram_params *np, const obl_omap_params *p)
{
    memset(np, 0, sizeof(*np));
    np->capacity = m->capacity;
    np->value_size = m->fp ? m->ks + m->vs : m->vs; /* fingerprint mode: key, value */
    np->pos_bytes = 8; /* ids: the keys' 64-bit words (omap_word) */
    np->alloc = p->alloc;
    np->random = p->random;
    np->random_opaque = p->random_opaque;
    np->use_seed = p->use_seed;
    np->seed = obl_prg_u64(&m->prg);
}

/*
 * The layout for p (already checked): OBL_OMAP_LAYOUT_INLINE or _COMPACT,
 * or 0 when p asks for COMPACT where it cannot be used: more than 2^30
 * entries (the value ORAM's build takes below 2^31 leaves; leaves fit 32
 * bits). The keys' words are the block ids (of their fingerprints for
 * keys of more than 8 bytes; omap_internal.h).
 * AUTO picks COMPACT where it measured faster (docs/omap.md, "Layouts"):
 * everywhere but for keys and values of at most 8 bytes each.
 * Public: p.
 */
static uint32_t omap_layout(const obl_omap_params *p)
{
    int can = p->capacity <= ((uint64_t)1 << 30);
    if (p->layout == OBL_OMAP_LAYOUT_INLINE)
        return OBL_OMAP_LAYOUT_INLINE;
    if (p->layout == OBL_OMAP_LAYOUT_COMPACT)
        return can ? OBL_OMAP_LAYOUT_COMPACT : 0;
    int small = p->key_size <= OBL_OMAP_INLINE_MAX_KEY && p->value_size <= OBL_OMAP_INLINE_MAX_VALUE;
    return can && !small ? OBL_OMAP_LAYOUT_COMPACT : OBL_OMAP_LAYOUT_INLINE;
}

/* see omap_internal.h */
obl_err omap_alloc(obl_omap **out, const obl_omap_params *p)
{
    if (!out)
        return OBL_ERR_INVALID_ARG;
    *out = NULL;
    if (!p || p->capacity == 0 || p->key_size == 0 || p->key_size > OBL_OMAP_MAX_KEY_SIZE ||
        p->value_size == 0 || p->value_size > OBL_OMAP_MAX_VALUE_SIZE)
        return OBL_ERR_INVALID_ARG;
    if (p->slots_per_bucket > OBL_OMAP_MAX_SLOTS || p->bucket_load > OBL_OMAP_MAX_BUCKET_LOAD ||
        p->overflow_size > OBL_OMAP_MAX_OVERFLOW || p->layout > OBL_OMAP_LAYOUT_COMPACT)
        return OBL_ERR_INVALID_ARG;
    if (p->capacity > ((uint64_t)1 << 40))
        return OBL_ERR_TOO_LARGE;
    const int isa = obl_isa_pick(); /* its ORAMs pick the same */
    if (isa < 0)
        return OBL_ERR_UNSUPPORTED;
    uint32_t layout = omap_layout(p);
    if (!layout)
        return OBL_ERR_TOO_LARGE;
    int compact = layout == OBL_OMAP_LAYOUT_COMPACT;
    int fp = compact && p->key_size > 8;
    /* keys of at most 8 bytes (and fingerprints) are 8-byte words in the
     * index, zero-extended, and so are inline values of at most 8 bytes:
     * op_words then serves them (docs/omap.md, "Layouts") */
    size_t iks = fp || p->key_size <= 8 ? 8 : p->key_size;
    size_t svs = compact ? 4 : p->value_size <= 8 ? 8 : p->value_size;
    size_t kv = iks + svs, bsz, ses = OMAP_HS + kv, sb;
    uint32_t B, S, logM;
    uint64_t M = omap_size(p, compact ? OBL_OMAP_OVERFLOW_TARGET_COMPACT : OBL_OMAP_OVERFLOW_TARGET,
                           &B, &S, &logM);
    if (!M)
        return OBL_ERR_TOO_LARGE;
    /* Word maps (those op_words serves) keep quotiented slots: the rest of
     * the word (64 - logM bits) and the slot value in as few bytes as hold
     * them: a leaf below the capacity (compact), or the value. */
    const int words = iks == 8 && svs <= 8;
    uint32_t rw = (64 - logM + 7) / 8, lw = 0;
    if (words && compact) {
        /* the value ORAM's leaves are below its L leaves (nr_create) */
        const uint32_t logL = nr_log_leaves(p->capacity);
        lw = 1;
        while (lw < 4 && 8 * lw < logL)
            lw++;
    } else if (words) {
        lw = (uint32_t)p->value_size;
    }
    size_t slot = words ? (size_t)rw + lw : kv;
    /* fingerprint mode keeps one more stash entry that only the restore of
     * a collision may take (omap_internal.h) */
    uint32_t Sa = S + (fp ? 1u : 0u);
    if (!obl_mul_ok(slot, B, &bsz) || !obl_add_ok(bsz, OMAP_HS + 7, &bsz) ||
        (bsz &= ~(size_t)7) > OBL_ORAM_MAX_VALUE_SIZE || !obl_mul_ok(ses, Sa, &sb))
        return OBL_ERR_TOO_LARGE;

    obl_alloc_ctx ac;
    obl_alloc_init(&ac, p->alloc);
    obl_omap *m = (obl_omap *)obl_alloc(&ac, sizeof(*m), 64);
    if (!m)
        return OBL_ERR_NOMEM;
    m->isa = isa;
    m->access = *OBL_VARIANT_PICK(omap_access_fn, isa);
    m->ac = ac;
    m->capacity = p->capacity;
    m->M = M;
    m->logM = logM;
    m->ks = p->key_size;
    m->vs = p->value_size;
    m->iks = iks;
    m->fp = fp;
    m->fpmask = UINT64_MAX;
    m->words = words;
    m->wshift = 64 - logM;
    m->rw = rw;
    m->lw = lw;
    m->svs = svs;
    m->kv = kv;
    m->layout = layout;
    m->bsz = bsz;
    m->ses = ses;
    m->B = B;
    m->S = S;
    m->Sa = Sa;
    m->scan_max = p->oram_scan_max;
    m->stash_bytes = sb;
    m->scratch_bytes = ses + 2 * svs + 2 * p->value_size;
    /* any key of up to 8 bytes may have the all-ones word (a key of ks
     * bytes with probability 2^(8 ks - 64) per map) */
    m->ones_bytes = compact && !fp ? p->value_size : 0;
    m->stash = (unsigned char *)obl_alloc(&m->ac, sb, 64);
    if (m->stash) {
        m->sh = (uint64_t *)m->stash;
        m->skey = m->stash + (size_t)Sa * OMAP_HS;
        m->ssv = m->skey + (size_t)Sa * iks;
    }
    m->scratch = (unsigned char *)obl_alloc(&m->ac, m->scratch_bytes, 64);
    m->ones = m->ones_bytes ? (unsigned char *)obl_alloc(&m->ac, m->ones_bytes, 64) : NULL;
    if (!m->stash || !m->scratch || (m->ones_bytes && !m->ones)) {
        omap_free(m);
        return OBL_ERR_NOMEM;
    }
    if (p->use_seed) {
        obl_prg_init_seed(&m->prg, p->seed);
    } else if (obl_prg_init(&m->prg, p->random, p->random_opaque) != OBL_OK) {
        omap_free(m);
        return OBL_ERR_RANDOM;
    }
    for (int i = 0; i < 4; i++)
        m->sk[i] = obl_prg_u64(&m->prg);
    {
        uint32_t k[4];
        for (int i = 0; i < 4; i++)
            k[i] = (uint32_t)obl_prg_u64(&m->prg);
        obl_speck_init(&m->pk, k);
        obl_wipe(k, sizeof(k));
    }
    /* the map's hash and permutation keys are secret: the ct build then
     * reports any branch or address that depends on them */
    OBL_SECRET(m->sk, sizeof(m->sk));
    OBL_SECRET(&m->pk, sizeof(m->pk));
    memset(m->stash, 0, sb); /* every entry invalid */
    OBL_SECRET(m->stash, sb);
    OBL_SECRET(&m->count, sizeof(m->count));
    OBL_SECRET(&m->st.overflow_max, sizeof(m->st.overflow_max));
    m->st.buckets = M;
    m->st.slots_per_bucket = B;
    m->st.overflow_size = S;
    m->st.layout = layout;
    if (m->ones) {
        memset(m->ones, 0, m->ones_bytes);
        OBL_SECRET(m->ones, m->ones_bytes);
    }
    *out = m;
    return OBL_OK;
}

/* see obl/omap.h */
obl_err obl_omap_create(obl_omap **out, const obl_omap_params *p)
{
    if (!out)
        return OBL_ERR_INVALID_ARG;
    *out = NULL;
    obl_omap *m;
    obl_err e = omap_alloc(&m, p);
    if (e != OBL_OK)
        return e;
    obl_roram_params rp;
    omap_oram_params(m, &rp, p);
    e = obl_roram_create(&m->oram, &rp); /* all buckets zero: all slots empty */
    if (e == OBL_OK && m->layout == OBL_OMAP_LAYOUT_COMPACT) {
        obl_nroram_params np;
        omap_values_params(m, &np, p);
        e = nr_create(&m->vo, &np, 1);
    }
    if (e != OBL_OK) {
        omap_free(m);
        return e;
    }
    *out = m;
    return OBL_OK;
}

/* see obl/omap.h */
obl_err obl_omap_access(obl_omap *m, uint64_t op, const void *key, const void *value_in,
                        void *value_out, uint64_t *found)
{
    if (!m || !key)
        return OBL_ERR_INVALID_ARG;
    return m->access(m, op, key, value_in, value_out, found); /* omap_op.c */
}

/* see obl/omap.h */
obl_err obl_omap_get(obl_omap *m, const void *key, void *value_out, uint64_t *found)
{
    return obl_omap_access(m, OBL_OMAP_GET, key, NULL, value_out, found);
}

/* see obl/omap.h */
obl_err obl_omap_put(obl_omap *m, const void *key, const void *value, uint64_t *existed)
{
    return obl_omap_access(m, OBL_OMAP_PUT, key, value, NULL, existed);
}

/* see obl/omap.h */
obl_err obl_omap_erase(obl_omap *m, const void *key, uint64_t *existed)
{
    return obl_omap_access(m, OBL_OMAP_ERASE, key, NULL, NULL, existed);
}

/* see obl/omap.h */
void obl_omap_get_stats(const obl_omap *m, obl_omap_stats *st)
{
    if (!st)
        return;
    memset(st, 0, sizeof(*st));
    if (!m)
        return;
    *st = m->st;
    /* The caller asked for the statistics: they become public here. */
    OBL_DECLASSIFY(&st->overflow_max, sizeof(st->overflow_max));
    obl_oram_stats os;
    obl_roram_stats(m->oram, &os);
    st->stash_max = os.stash_max;
    st->stash_overflows = os.overflows;
    if (m->vo) {
        obl_nroram_stats(m->vo, &os);
        st->stash_max = st->stash_max > os.stash_max ? st->stash_max : os.stash_max;
        st->stash_overflows += os.overflows;
    }
}

/* see obl/omap.h */
uint64_t obl_omap_capacity(const obl_omap *m) { return m ? m->capacity : 0; }

/* see obl/omap.h */
size_t obl_omap_memory_bytes(const obl_omap *m)
{
    if (!m)
        return 0;
    return m->ac.bytes + obl_roram_memory_bytes(m->oram) + obl_nroram_memory_bytes(m->vo);
}

/* see obl/omap.h */
const char *obl_omap_variant(const obl_omap *m) { return m ? obl_isa_name(m->isa) : NULL; }

/* see obl/omap.h */
void obl_omap_destroy(obl_omap *m) { omap_free(m); }
