/* SPDX-License-Identifier: MIT */
/*
 * The oblivious map's creation and life cycle (obl/omap.h): parameter
 * checks and the layout's sizes (omap_alloc), the ORAMs' parameters,
 * statistics, destruction. The map's design is described in omap_op.h's
 * units and docs/omap.md.
 */
#include <string.h>

#include <obl/omap.h>

#include "common/cpu.h"
#include "common/secret.h"
#include "omap/omap_internal.h"
#include "oram/nroram_internal.h"

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
    rp->build_threads = p->build_threads;
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
    /* ids: the keys' 64-bit words (omap_word); up to OMAP_TAGGED_MAX a
     * tagged tree, whose 4-byte metadata keep 64 of their bits with the
     * leaf (nroram_internal.h; docs/oram.md, "Tagged trees") */
    np->pos_bytes = m->capacity <= OMAP_TAGGED_MAX ? NR_POS_TAGGED : 8;
    np->dense = p->dense_values;
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

/* The parameters' ranges (obl/omap.h). Public: p. */
static obl_err omap_check_params(const obl_omap_params *p)
{
    if (!p || p->capacity == 0 || p->key_size == 0 || p->key_size > OBL_OMAP_MAX_KEY_SIZE ||
        p->value_size == 0 || p->value_size > OBL_OMAP_MAX_VALUE_SIZE)
        return OBL_ERR_INVALID_ARG;
    if (p->slots_per_bucket > OBL_OMAP_MAX_SLOTS || p->bucket_load > OBL_OMAP_MAX_BUCKET_LOAD ||
        p->overflow_size > OBL_OMAP_MAX_OVERFLOW || p->layout > OBL_OMAP_LAYOUT_COMPACT)
        return OBL_ERR_INVALID_ARG;
    if (p->capacity > ((uint64_t)1 << 40))
        return OBL_ERR_TOO_LARGE;
    return OBL_OK;
}

/*
 * The map's PRG (seeded from p) and its secret keys drawn from it: the
 * SipHash keys and the Speck key; then the secret state marked secret for
 * the ct build (which reports any branch or address on it), the stash
 * emptied. Errors: RANDOM.
 */
static obl_err omap_init_secrets(obl_omap *m, const obl_omap_params *p)
{
    if (p->use_seed) {
        obl_prg_init_seed(&m->prg, p->seed);
    } else if (obl_prg_init(&m->prg, p->random, p->random_opaque) != OBL_OK) {
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
    OBL_SECRET(m->sk, sizeof(m->sk));
    OBL_SECRET(&m->pk, sizeof(m->pk));
    memset(m->stash, 0, m->stash_bytes); /* every entry invalid */
    OBL_SECRET(m->stash, m->stash_bytes);
    OBL_SECRET(&m->count, sizeof(m->count));
    OBL_SECRET(&m->st.overflow_max, sizeof(m->st.overflow_max));
    if (m->ones) {
        memset(m->ones, 0, m->ones_bytes);
        OBL_SECRET(m->ones, m->ones_bytes);
    }
    return OBL_OK;
}

/* The slot layout of the map of p in m (public: sizes only): index keys
 * of iks bytes, slot values of svs, and for word maps the quotiented
 * slot's widths. Keys of at most 8 bytes (and fingerprints) are 8-byte
 * words in the index, zero-extended, and so are inline values of at most 8
 * bytes: op_words then serves them (docs/omap.md, "Layouts"). Word maps keep
 * quotiented slots: the rest of the word (64 - logM bits) and the slot
 * value in as few bytes as hold them: a leaf below the capacity (compact),
 * or the value. */
static void omap_slots(obl_omap *m, const obl_omap_params *p)
{
    const int compact = m->layout == OBL_OMAP_LAYOUT_COMPACT;
    m->fp = compact && p->key_size > 8;
    m->iks = m->fp || p->key_size <= 8 ? 8 : p->key_size;
    m->svs = compact ? 4 : p->value_size <= 8 ? 8 : p->value_size;
    m->kv = m->iks + m->svs;
    m->words = m->iks == 8 && m->svs <= 8;
    m->rw = (64 - m->logM + 7) / 8;
    m->lw = 0;
    if (m->words && compact) {
        /* the value ORAM's leaves are below its L leaves (nr_create) */
        const uint32_t logL = nr_log_leaves_at(p->capacity, p->dense_values);
        m->lw = 1;
        while (m->lw < 4 && 8 * m->lw < logL)
            m->lw++;
    } else if (m->words) {
        m->lw = (uint32_t)p->value_size;
    }
}

/* The shape of the map of p in m: layout, table size, slots and the
 * sizes of its arrays; everything public, nothing allocated. */
static obl_err omap_shape(obl_omap *m, const obl_omap_params *p, int isa)
{
    m->layout = omap_layout(p);
    if (!m->layout)
        return OBL_ERR_TOO_LARGE;
    const int compact = m->layout == OBL_OMAP_LAYOUT_COMPACT;
    m->M = omap_size(p, compact ? OBL_OMAP_OVERFLOW_TARGET_COMPACT : OBL_OMAP_OVERFLOW_TARGET,
                     &m->B, &m->S, &m->logM);
    if (!m->M)
        return OBL_ERR_TOO_LARGE;
    omap_slots(m, p);
    m->ses = OMAP_HS + m->kv;
    size_t slot = m->words ? (size_t)m->rw + m->lw : m->kv;
    /* fingerprint mode keeps one more stash entry that only the restore of
     * a collision may take (omap_internal.h) */
    m->Sa = m->S + (m->fp ? 1u : 0u);
    if (!obl_mul_ok(slot, m->B, &m->bsz) || !obl_add_ok(m->bsz, OMAP_HS + 7, &m->bsz) ||
        (m->bsz &= ~(size_t)7) > OBL_ORAM_MAX_VALUE_SIZE ||
        !obl_mul_ok(m->ses, m->Sa, &m->stash_bytes))
        return OBL_ERR_TOO_LARGE;
    m->isa = isa;
    m->capacity = p->capacity;
    m->ks = p->key_size;
    m->vs = p->value_size;
    m->fpmask = UINT64_MAX;
    m->wshift = 64 - m->logM;
    m->scan_max = p->oram_scan_max;
    /* the entry pulled back, then three requests' buffers: a single
     * access's and the batched access's two (omap_internal.h) */
    m->scratch_bytes = m->ses + 3 * OMAP_REQ_BYTES(m->svs, p->value_size);
    /* any key of up to 8 bytes may have the all-ones word (a key of ks
     * bytes with probability 2^(8 ks - 64) per map) */
    m->ones_bytes = compact && !m->fp ? p->value_size : 0;
    m->st.buckets = m->M;
    m->st.slots_per_bucket = m->B;
    m->st.overflow_size = m->S;
    m->st.layout = m->layout;
    return OBL_OK;
}

/* The stash, the scratch and the all-ones value of m, whose shape is set,
 * and its secrets; on an error, m is freed. */
static obl_err omap_fill(obl_omap *m, const obl_omap_params *p)
{
    m->stash = (unsigned char *)obl_alloc(&m->ac, m->stash_bytes, 64);
    if (m->stash) {
        m->sh = (uint64_t *)m->stash;
        m->skey = m->stash + (size_t)m->Sa * OMAP_HS;
        m->ssv = m->skey + (size_t)m->Sa * m->iks;
    }
    m->scratch = (unsigned char *)obl_alloc(&m->ac, m->scratch_bytes, 64);
    m->ones = m->ones_bytes ? (unsigned char *)obl_alloc(&m->ac, m->ones_bytes, 64) : NULL;
    obl_err err = OBL_OK;
    if (!m->stash || !m->scratch || (m->ones_bytes && !m->ones))
        err = OBL_ERR_NOMEM;
    else if (omap_init_secrets(m, p) != OBL_OK)
        err = OBL_ERR_RANDOM;
    if (err != OBL_OK)
        omap_free(m);
    return err;
}

/* see omap_internal.h */
obl_err omap_alloc(obl_omap **out, const obl_omap_params *p)
{
    if (!out)
        return OBL_ERR_INVALID_ARG;
    *out = NULL;
    obl_err e = omap_check_params(p);
    if (e != OBL_OK)
        return e;
    const int isa = obl_isa_pick(); /* its ORAMs pick the same */
    if (isa < 0)
        return OBL_ERR_UNSUPPORTED;
    obl_omap sh; /* the shape, checked before anything is allocated */
    memset(&sh, 0, sizeof(sh));
    e = omap_shape(&sh, p, isa);
    if (e != OBL_OK)
        return e;
    obl_alloc_ctx ac;
    obl_alloc_init(&ac, p->alloc);
    obl_omap *m = (obl_omap *)obl_alloc(&ac, sizeof(*m), 64);
    if (!m)
        return OBL_ERR_NOMEM;
    *m = sh;
    m->ac = ac;
    e = omap_fill(m, p);
    if (e == OBL_OK)
        *out = m;
    return e;
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
const char *obl_omap_variant(const obl_omap *m) { return m ? obl_isa_name(m->isa) : NULL; }

/* see obl/omap.h */
size_t obl_omap_memory_bytes(const obl_omap *m)
{
    if (!m)
        return 0;
    return m->ac.bytes + obl_roram_memory_bytes(m->oram) + obl_nroram_memory_bytes(m->vo);
}

/* see obl/omap.h */
void obl_omap_destroy(obl_omap *m) { omap_free(m); }
