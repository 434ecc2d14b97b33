/*
 * The oblivious map's operations (obl/omap.h): creation, the combined
 * access and its three wrappers, statistics.
 *
 * Every call of obl_omap_access, whatever its op, key or outcome, runs:
 *   1. on every kick_interval-th call (a public count): kicks_per_op
 *      kick-out steps: select the first valid queue entry (full
 *      scan), one ORAM access to the bucket of its current table (a random
 *      bucket when the queue is empty), place it in a free slot or swap it
 *      with a random occupant (random-walk cuckoo insertion, Fotakis et al.,
 *      "Space efficient hash tables with worst case constant access time",
 *      STACS 2003, section 3), write it back (full scan);
 *   2. a full scan of the queue for the key (read only);
 *   3. one ORAM read-modify-write of the key's bucket in table 0, then one of
 *      its bucket in table 1 (obl_roram_update);
 *   4. a full scan of the queue: its entry for the key is updated or erased
 *      here, and the key appended when a put found no slot;
 *   5. compact layout: one access of the value ORAM (omap_value_access).
 * Nothing is changed before every ORAM the call needs is known to accept
 * it (nr_ready, ro_ready), and the queue is changed only after both bucket
 * accesses, so that a refused access (OBL_ERR_STATE) leaves the map as it
 * was, but for the rare case in docs/omap.md ("ORAM errors").
 * The de-amortisation follows Arbitman, Naor, Segev, "De-amortized cuckoo
 * hashing" (ICALP 2009), section 3: a queue of pending entries and a fixed
 * number of moves per operation, here with every move oblivious.
 */
#include <string.h>

#include <obl/omap.h>

#include "ct.h"
#include "common/secret.h"
#include "omap/omap_internal.h"
#include "oram/nroram_internal.h"
#include "oram/roram_internal.h"
#include "omap/siphash.h"

__extension__ typedef unsigned __int128 omap_u128;

/* Headers and leaves: 32-bit words, widened to 64 for the ct helpers. */
static inline uint64_t ld32(const unsigned char *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}

static inline void st32(unsigned char *p, uint64_t w)
{
    uint32_t v = (uint32_t)w;
    memcpy(p, &v, 4);
}

/* see omap_internal.h */
uint64_t omap_hash(const obl_omap *m, unsigned t, const void *key)
{
    return obl_siphash24(m->sk[2 * t], m->sk[2 * t + 1], key, m->iks);
}

/* see omap_internal.h */
uint64_t omap_fingerprint(const obl_omap *m, const void *key)
{
    uint64_t f = obl_siphash24(m->sk[4], m->sk[5], key, m->ks) & m->fpmask;
    return f - obl_ct_eq64(f, UINT64_MAX);
}

/* see omap_internal.h */
uint64_t omap_bucket(const obl_omap *m, unsigned t, const void *key)
{
    /* Lemire's multiply-high range reduction: no division on a secret. */
    uint64_t h = omap_hash(m, t, key);
    return (uint64_t)t * m->M + (uint64_t)(((omap_u128)h * m->M) >> 64);
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
    obl_free(&ac, m->queue, m->queue_bytes);
    obl_free(&ac, m->scratch, m->scratch_bytes);
    obl_prg_wipe(&m->prg);
    obl_wipe(m->sk, sizeof(m->sk));
    obl_free(&ac, m, sizeof(*m));
}

/* see omap_internal.h */
void omap_oram_params(obl_omap *m, obl_roram_params *rp, const obl_omap_params *p)
{
    memset(rp, 0, sizeof(*rp));
    rp->n = 2 * m->M;
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
    np->pos_bytes = 8; /* ids: keys of up to 8 bytes, or fingerprints */
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
 * bits). Keys of at most 8 bytes are block ids; longer keys use
 * fingerprints (omap_internal.h).
 * AUTO picks COMPACT where it measured faster (docs/omap.md, "Layouts"):
 * keys of at most 8 bytes with values of at least
 * OBL_OMAP_COMPACT_MIN_VALUE bytes, longer keys when key and value take at
 * least OBL_OMAP_COMPACT_MIN_ENTRY bytes.
 * Public: p.
 */
static uint32_t omap_layout(const obl_omap_params *p)
{
    int can = p->capacity <= ((uint64_t)1 << 30);
    if (p->layout == OBL_OMAP_LAYOUT_INLINE)
        return OBL_OMAP_LAYOUT_INLINE;
    if (p->layout == OBL_OMAP_LAYOUT_COMPACT)
        return can ? OBL_OMAP_LAYOUT_COMPACT : 0;
    int pays = p->key_size <= 8 ? p->value_size >= OBL_OMAP_COMPACT_MIN_VALUE
                                : p->key_size + p->value_size >= OBL_OMAP_COMPACT_MIN_ENTRY;
    return can && pays ? OBL_OMAP_LAYOUT_COMPACT : OBL_OMAP_LAYOUT_INLINE;
}

/*
 * Buckets per table M and slots per bucket *B for `capacity` entries at
 * load percent `load` of the 2 * M * B slots. With *B given (non-zero) M is
 * the smallest that fits. With *B = 0 (automatic), 2M is a power of two and
 * B in 4 .. OBL_OMAP_MAX_SLOTS the one that needs the fewest bucket bytes:
 * the ORAM of 2M buckets then fills its tree (a Circuit ORAM tree is sized
 * to a power of two, so 2M just above one would leave almost half of it
 * unused), and B >= 4 keeps the queue analysis of docs/omap.md valid.
 * Public: every argument.
 */
static uint64_t omap_size(uint64_t capacity, uint32_t load, size_t hs, size_t kv, uint32_t *B)
{
    uint64_t need = (capacity * 100 + load - 1) / load; /* slots */
    if (*B) {
        uint64_t M = (need + 2 * (uint64_t)*B - 1) / (2 * (uint64_t)*B);
        return M ? M : 1;
    }
    uint64_t bestM = 1, bestcost = UINT64_MAX;
    uint32_t bestB = OBL_OMAP_DEFAULT_SLOTS;
    for (uint32_t k = 1; k < 48; k++) {
        uint64_t nb = (uint64_t)1 << k; /* 2M */
        uint64_t b = (need + nb - 1) / nb;
        if (b > OBL_OMAP_MAX_SLOTS)
            continue;
        if (b < OBL_OMAP_DEFAULT_SLOTS)
            b = OBL_OMAP_DEFAULT_SLOTS;
        uint64_t cost = nb * (hs + b * (uint64_t)kv);
        if (cost < bestcost) {
            bestcost = cost;
            bestM = nb / 2;
            bestB = (uint32_t)b;
        }
        if (b == OBL_OMAP_DEFAULT_SLOTS)
            break; /* more buckets only cost more */
    }
    *B = bestB;
    return bestM;
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
    uint32_t B = p->slots_per_bucket;
    uint32_t load = p->load_percent ? p->load_percent : OBL_OMAP_DEFAULT_LOAD;
    uint32_t Q = p->queue_size ? p->queue_size : OBL_OMAP_DEFAULT_QUEUE;
    uint32_t kicks = p->kicks_per_op ? p->kicks_per_op : OBL_OMAP_DEFAULT_KICKS;
    if (B > OBL_OMAP_MAX_SLOTS || load < 10 || load > 95 || Q > 1024 || kicks > 8 ||
        p->kick_interval > OBL_OMAP_MAX_KICK_INTERVAL || p->layout > OBL_OMAP_LAYOUT_COMPACT)
        return OBL_ERR_INVALID_ARG;
    if (p->capacity > ((uint64_t)1 << 40))
        return OBL_ERR_TOO_LARGE;
    uint32_t layout = omap_layout(p);
    if (!layout)
        return OBL_ERR_TOO_LARGE;
    int compact = layout == OBL_OMAP_LAYOUT_COMPACT;
    int fp = compact && p->key_size > 8;
    size_t iks = fp ? 8 : p->key_size;
    size_t svs = compact ? 4 : p->value_size;
    /* headers: 8 bytes inline, so that slots of 8-byte multiples stay
     * 8-byte aligned and buckets a multiple of 8 (in-process A/B at 2^20,
     * 8/8: 4-byte headers made gets 12% slower); 4 bytes compact, so that
     * an 8/56 bucket is one cache line (4 + 5 * 12) */
    size_t hs = compact ? 4 : 8;
    size_t kv = iks + svs, bsz, qes = hs + kv, qb;
    uint64_t M = omap_size(p->capacity, load, hs, kv, &B);
    uint32_t kint = p->kick_interval ? p->kick_interval : OBL_OMAP_DEFAULT_KICK_INTERVAL;
    if (!obl_mul_ok(kv, B, &bsz) || !obl_add_ok(bsz, hs, &bsz) ||
        bsz > OBL_ORAM_MAX_VALUE_SIZE || !obl_mul_ok(qes, Q, &qb))
        return OBL_ERR_TOO_LARGE;

    obl_alloc_ctx ac;
    obl_alloc_init(&ac, p->alloc);
    obl_omap *m = (obl_omap *)obl_alloc(&ac, sizeof(*m), 64);
    if (!m)
        return OBL_ERR_NOMEM;
    m->ac = ac;
    m->capacity = p->capacity;
    m->M = M;
    m->ks = p->key_size;
    m->vs = p->value_size;
    m->iks = iks;
    m->fp = fp;
    m->fpmask = UINT64_MAX;
    m->hs = hs;
    m->svs = svs;
    m->kv = kv;
    m->layout = layout;
    m->bsz = bsz;
    m->qes = qes;
    m->B = B;
    m->Q = Q;
    m->kicks = kicks;
    m->kint = kint;
    m->kphase = 0;
    m->scan_max = p->oram_scan_max;
    m->queue_bytes = qb;
    /* inline: the slot values are the values, so no separate pair */
    m->scratch_bytes = qes + 2 * svs + (compact ? 2 * p->value_size : 0);
    m->ones_bytes = compact && p->key_size == 8 ? p->value_size : 0; /* not fp */
    m->queue = (unsigned char *)obl_alloc(&m->ac, qb, 64);
    m->scratch = (unsigned char *)obl_alloc(&m->ac, m->scratch_bytes, 64);
    m->ones = m->ones_bytes ? (unsigned char *)obl_alloc(&m->ac, m->ones_bytes, 64) : NULL;
    if (!m->queue || !m->scratch || (m->ones_bytes && !m->ones)) {
        omap_free(m);
        return OBL_ERR_NOMEM;
    }
    if (p->use_seed) {
        obl_prg_init_seed(&m->prg, p->seed);
    } else if (obl_prg_init(&m->prg, p->random, p->random_opaque) != OBL_OK) {
        omap_free(m);
        return OBL_ERR_RANDOM;
    }
    for (int i = 0; i < 6; i++)
        m->sk[i] = obl_prg_u64(&m->prg);
    m->st.queue_size = Q;
    m->st.buckets = 2 * M;
    m->st.slots_per_bucket = B;
    m->st.kicks_per_op = kicks;
    m->st.kick_interval = kint;
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
        e = nr_create(&m->vo, &np);
    }
    if (e != OBL_OK) {
        omap_free(m);
        return e;
    }
    *out = m;
    return OBL_OK;
}

/* ------------------------------------------------------------ kick step -- */

typedef struct {
    const obl_omap *m;
    unsigned char *e;   /* the queue entry being moved (qes bytes) */
    uint64_t victim;    /* slot swapped out when the bucket is full */
} kick_ctx;

/*
 * The kick step's read-modify-write of one bucket.
 * Secret: the bucket, the entry, the victim slot, whether the entry is
 * valid, whether the bucket had room. Public: B, sizes.
 */
static void kick_fn(void *vctx, void *value, uint64_t found, uint64_t *keep)
{
    (void)found;
    (void)keep;
    kick_ctx *c = (kick_ctx *)vctx;
    const obl_omap *m = c->m;
    unsigned char *b = (unsigned char *)value;
    uint64_t eh = ld32(c->e);
    uint64_t valid = eh & 1, hdr = ld32(b);
    uint64_t got = 0;
    for (uint32_t i = 0; i < m->B; i++) { /* first free slot takes the entry */
        uint64_t fr = (((hdr >> i) & 1) ^ 1) & (got ^ 1) & valid;
        obl_ct_cmov(fr, b + m->hs + i * m->kv, c->e + m->hs, m->kv);
        hdr |= fr << i;
        got |= fr;
    }
    uint64_t swap = valid & (got ^ 1);
    for (uint32_t i = 0; i < m->B; i++) /* full: swap with the random victim */
        obl_ct_cswap(swap & obl_ct_eq64(i, c->victim), b + m->hs + i * m->kv,
                     c->e + m->hs, m->kv);
    st32(b, hdr);
    /* placed: the entry leaves the queue; swapped: the victim, evicted from
     * table t, tries table 1 - t next. */
    uint64_t nt = ((eh >> 1) & 1) ^ 1;
    st32(c->e, obl_ct_select64(swap, 1 | (nt << 1), 0));
}

/*
 * One kick-out step. Secret: the queue, which entry moves and where.
 * Public: one ORAM access and two full queue scans, always.
 */
static obl_err omap_kick(obl_omap *m)
{
    unsigned char *e = m->scratch;
    memset(e, 0, m->qes);
    uint64_t taken = 0, sel = 0;
    for (uint32_t j = 0; j < m->Q; j++) {
        unsigned char *q = m->queue + (size_t)j * m->qes;
        uint64_t pick = (ld32(q) & 1) & (taken ^ 1);
        obl_ct_cmov(pick, e, q, m->qes);
        sel = obl_ct_select64(pick, j, sel);
        taken |= pick;
    }
    uint64_t t = (ld32(e) >> 1) & 1;
    uint64_t b0 = omap_bucket(m, 0, e + m->hs), b1 = omap_bucket(m, 1, e + m->hs);
    uint64_t idx = obl_ct_select64(t, b1, b0);
    /* An empty queue still makes the access, to a random bucket. */
    idx = obl_ct_select64(taken, idx, obl_prg_below(&m->prg, 2 * m->M));
    kick_ctx c = {m, e, obl_prg_below(&m->prg, m->B)};
    obl_err err = obl_roram_update(m->oram, idx, kick_fn, &c);
    if (err != OBL_OK && err != OBL_ERR_STASH_OVERFLOW)
        return err;
    for (uint32_t j = 0; j < m->Q; j++)
        obl_ct_cmov(taken & obl_ct_eq64(j, sel), m->queue + (size_t)j * m->qes, e, m->qes);
    return err;
}

/* ------------------------------------------------------------ main step -- */

typedef struct {
    const obl_omap *m;
    const unsigned char *key, *in;
    unsigned char *out;
    uint64_t is_put, is_erase;
    uint64_t upd;       /* a match takes `in` as its slot value: a put, or
                           any op in the compact layout (the new leaf) */
    uint64_t room;      /* a new key may take a slot (compact: fewer than
                           capacity entries; inline: always) */
    uint64_t found;     /* the key was seen (queue or an earlier bucket) */
    uint64_t placed;    /* a put stored the key in a new slot */
} op_ctx;

/*
 * The operation's read-modify-write of one of the key's buckets.
 * Secret: everything in c and the bucket. Public: B, sizes.
 */
static void op_fn(void *vctx, void *value, uint64_t found_unused, uint64_t *keep)
{
    (void)found_unused;
    (void)keep;
    op_ctx *c = (op_ctx *)vctx;
    const obl_omap *m = c->m;
    unsigned char *b = (unsigned char *)value;
    uint64_t hdr = ld32(b);
    for (uint32_t i = 0; i < m->B; i++) {
        unsigned char *s = b + m->hs + i * m->kv;
        uint64_t match = ((hdr >> i) & 1) & obl_ct_memeq(s, c->key, m->iks);
        obl_ct_cmov(match, c->out, s + m->iks, m->svs);
        obl_ct_cmov(match & c->upd & (c->placed ^ 1), s + m->iks, c->in, m->svs);
        /* A put that already stored the key in table 0 drops the old copy. */
        uint64_t del = match & (c->is_erase | (c->is_put & c->placed));
        hdr &= ~(del << i);
        c->found |= match;
    }
    uint64_t need = c->is_put & (c->found ^ 1) & (c->placed ^ 1) & c->room, got = 0;
    for (uint32_t i = 0; i < m->B; i++) {
        unsigned char *s = b + m->hs + i * m->kv;
        uint64_t fr = (((hdr >> i) & 1) ^ 1) & (got ^ 1) & need;
        obl_ct_cmov(fr, s, c->key, m->iks);
        obl_ct_cmov(fr, s + m->iks, c->in, m->svs);
        hdr |= fr << i;
        got |= fr;
    }
    c->placed |= got;
    st32(b, hdr);
}

/*
 * Compact layout: the value ORAM's access for the operation, after the
 * index has given the key's old leaf (out, if found) and stored the new one
 * (nl). vin, vout: the value in and out (vs bytes each).
 * Secret: everything but m's parameters. Public: the revealed path.
 */
static obl_err omap_value_access(obl_omap *m, const op_ctx *c, const unsigned char *key,
                                 uint64_t nl, const unsigned char *vin, unsigned char *vout)
{
    uint64_t pos = obl_ct_select64(c->found, ld32(c->out), obl_nroram_random_pos(m->vo));
    /* LEAK: the path read, by design (Circuit ORAM): the leaf the key's
     * block was given at its last access, never revealed since, or a fresh
     * one for an absent key; uniform and independent of the secrets. */
    OBL_DECLASSIFY(&pos, sizeof(pos));
    uint64_t id = 0;
    memcpy(&id, key, m->ks); /* little-endian, zero-extended */
    uint64_t is1 = m->ones ? obl_ct_eq64(id, UINT64_MAX) : 0;
    uint64_t nop = obl_ct_select64(c->is_erase, OBL_ORAM_REMOVE, OBL_ORAM_READ);
    nop = obl_ct_select64(c->is_put, OBL_ORAM_WRITE, nop);
    /* the all-ones key reads the dummy id: nothing is stored or removed */
    nop = obl_ct_select64(is1, OBL_ORAM_READ, nop);
    obl_err e = obl_nroram_access(m->vo, id, pos, nl, nop, vin, vout, NULL);
    if (e != OBL_OK && e != OBL_ERR_STASH_OVERFLOW)
        return e;
    if (m->ones) {
        obl_ct_cmov(is1, vout, m->ones, m->vs);
        obl_ct_cmov(is1 & c->is_put, m->ones, vin, m->vs);
        obl_ct_czero(is1 & c->is_erase, m->ones, m->vs);
    }
    return e;
}

/* Fingerprint mode: the value ORAM's read-modify-write of the block
 * {key, value} under the key's fingerprint. */
typedef struct {
    const obl_omap *m;
    const unsigned char *key, *vin;
    unsigned char *vout;
    uint64_t is_put, is_erase;
    uint64_t match;   /* out: the block holds this key */
    uint64_t collide; /* out: it holds another key (same fingerprint) */
} fpv_ctx;

/*
 * The block's update: a stored key equal to the operation's is read,
 * updated (put) or removed (erase); another key with the same fingerprint
 * is left as it is (a collision); an absent block is inserted by a put.
 * Secret: everything in c and the block. Public: sizes.
 */
static void fpv_fn(void *vctx, void *value, uint64_t found, uint64_t *keep)
{
    fpv_ctx *c = (fpv_ctx *)vctx;
    const obl_omap *m = c->m;
    unsigned char *b = (unsigned char *)value;
    uint64_t match = found & obl_ct_memeq(b, c->key, m->ks);
    uint64_t collide = found & (match ^ 1);
    obl_ct_cmov(match, c->vout, b + m->ks, m->vs);
    uint64_t wr = c->is_put & (collide ^ 1);
    obl_ct_cmov(wr, b, c->key, m->ks);
    obl_ct_cmov(wr, b + m->ks, c->vin, m->vs);
    *keep = (found & ((c->is_erase & match) ^ 1)) | ((found ^ 1) & c->is_put);
    c->match = match;
    c->collide = collide;
}

/*
 * Fingerprint mode: as omap_value_access, for the block of fingerprint
 * `f`. Sets *match and *collide (fpv_ctx). Secret: everything but m's
 * parameters. Public: the revealed path.
 */
static obl_err omap_value_fp(obl_omap *m, const op_ctx *c, const unsigned char *key,
                             uint64_t f, uint64_t nl, const unsigned char *vin,
                             unsigned char *vout, uint64_t *match, uint64_t *collide)
{
    uint64_t pos = obl_ct_select64(c->found, ld32(c->out), obl_nroram_random_pos(m->vo));
    /* LEAK: the path read, as in omap_value_access */
    OBL_DECLASSIFY(&pos, sizeof(pos));
    fpv_ctx v = {m, key, vin, vout, c->is_put, c->is_erase, 0, 0};
    obl_err e = obl_nroram_update(m->vo, f, pos, nl, fpv_fn, &v);
    *match = v.match;
    *collide = v.collide;
    return e;
}

/* A call has run (it is counted in st.operations): the next kick round is
 * kint such calls after the last. A call that fails before it is counted
 * leaves the phase, so its retry kicks again. Public. */
static void omap_next_phase(obl_omap *m)
{
    m->kphase = m->kphase + 1 == m->kint ? 0 : m->kphase + 1;
}

/* see obl/omap.h */
obl_err obl_omap_access(obl_omap *m, uint64_t op, const void *key, const void *value_in,
                        void *value_out, uint64_t *found)
{
    /*
     * Secret: op, key, the values, the outcome. Public: the parameters, the
     * pointers' NULL-ness, the error code, the number of operations made.
     * The access sequence is fixed: kicks_per_op kick steps if this is a
     * kicking operation (every kick_interval-th, counted by kphase), a
     * queue scan, bucket h0(key), bucket h1(key), a queue scan; in the
     * compact layout then one access of the value ORAM.
     */
    if (!m || !key)
        return OBL_ERR_INVALID_ARG;
    const int compact = m->vo != NULL;
    if (compact) {
        /* refuse before the index changes (public state, see oram.h) */
        obl_err e = nr_ready(m->vo);
        if (e != OBL_OK)
            return e;
    }
    obl_err err = OBL_OK;
    const uint32_t nk = m->kphase == 0 ? m->kicks : 0; /* public */
    for (uint32_t k = 0; k < nk; k++) {
        obl_err e = omap_kick(m); /* each kick step is complete or not begun */
        if (e == OBL_ERR_STASH_OVERFLOW)
            err = e;
        else if (e != OBL_OK)
            return e;
    }
    {
        /* a kick's stash overflow may leave the index ORAM refusing */
        obl_err e = ro_ready(m->oram);
        if (e != OBL_OK)
            return e;
    }
    /* in, out: the slot value given to and taken from the index: the value
     * itself (inline: in and out are vin and vout), or the new and the old
     * leaf (compact); vin, vout: the value */
    unsigned char *in = m->scratch + m->qes, *out = in + m->svs;
    unsigned char *vin = compact ? out + m->svs : in, *vout = compact ? vin + m->vs : out;
    if (value_in)
        memcpy(vin, value_in, m->vs);
    else
        memset(vin, 0, m->vs);
    memset(vout, 0, m->vs);
    uint64_t nl = 0;
    if (compact) {
        nl = obl_nroram_random_pos(m->vo);
        st32(in, nl);
        memset(out, 0, 4);
    }
    /* the index key: the key, or its fingerprint (fingerprint mode) */
    const unsigned char *ikey = (const unsigned char *)key;
    /* 64 bytes, not 8: the copies and compares of m->iks bytes have vector
     * paths that gcc's bounds warning cannot rule out for a shorter array */
    _Alignas(64) unsigned char fpk[64] = {0};
    if (m->fp) { /* public */
        uint64_t f = omap_fingerprint(m, key);
        memcpy(fpk, &f, 8);
        ikey = fpk;
    }
    uint64_t is_put = obl_ct_eq64(op, OBL_OMAP_PUT);
    op_ctx c = {m, ikey, in, out, is_put, obl_ct_eq64(op, OBL_OMAP_ERASE),
                compact ? 1 : is_put, compact ? obl_ct_lt64(m->count, m->capacity) : 1, 0, 0};

    /* The queue: a pending entry is found here (updated or erased in the
     * last scan, once both bucket accesses are done). */
    for (uint32_t j = 0; j < m->Q; j++) {
        unsigned char *q = m->queue + (size_t)j * m->qes;
        uint64_t match = (ld32(q) & 1) & obl_ct_memeq(q + m->hs, ikey, m->iks);
        obl_ct_cmov(match, out, q + m->hs + m->iks, m->svs);
        c.found |= match;
    }

    for (unsigned t = 0; t < 2; t++) {
        obl_err e = obl_roram_update(m->oram, omap_bucket(m, t, ikey), op_fn, &c);
        if (e == OBL_ERR_STASH_OVERFLOW)
            err = e;
        else if (e != OBL_OK)
            return e;
    }

    /* A new key whose buckets were both full joins the queue. */
    uint64_t need = c.is_put & (c.found ^ 1) & (c.placed ^ 1), got = 0, occ = 0;
    for (uint32_t j = 0; j < m->Q; j++) {
        unsigned char *q = m->queue + (size_t)j * m->qes;
        uint64_t h = ld32(q);
        uint64_t fr = ((h & 1) ^ 1) & (got ^ 1);
        got |= fr;
        occ += h & 1;
    }
    uint64_t overflow = need & ((got & c.room) ^ 1);
    /* LEAK: a put of a new key that found no slot and a full queue (or, in
     * the compact layout, a map holding `capacity` entries); the public
     * capacity event OBL_ERR_FULL (obl/omap.h). Nothing was changed: the key
     * matched nowhere and no slot was written. */
    if (OBL_DECLASSIFY_VAL(overflow)) {
        m->st.operations++;
        omap_next_phase(m);
        m->st.oram_accesses += nk + 2u;
        m->st.full_errors++;
        if (found)
            *found = 0;
        return OBL_ERR_FULL;
    }
    got = 0;
    for (uint32_t j = 0; j < m->Q; j++) {
        unsigned char *q = m->queue + (size_t)j * m->qes;
        uint64_t h = ld32(q);
        /* the key's pending entry (need is 0 then): updated or erased */
        uint64_t match = (h & 1) & obl_ct_memeq(q + m->hs, ikey, m->iks);
        obl_ct_cmov(match & c.upd, q + m->hs + m->iks, in, m->svs);
        h = obl_ct_select64(match & c.is_erase, 0, h);
        uint64_t fr = ((h & 1) ^ 1) & (got ^ 1) & need;
        /* header: valid, first kick tries table 0 */
        st32(q, obl_ct_select64(fr, 1, h));
        obl_ct_cmov(fr, q + m->hs, ikey, m->iks);
        obl_ct_cmov(fr, q + m->hs + m->iks, in, m->svs);
        got |= fr;
    }
    occ += need;
    m->st.queue_max = obl_ct_max64(m->st.queue_max, occ);
    m->st.operations++;
    omap_next_phase(m);
    m->st.oram_accesses += nk + 2u;
    /* never below zero (it cannot be, unless an interrupted operation,
     * docs/omap.md, left it behind the index) */
    m->count += (c.is_put & (c.found ^ 1)) - (c.is_erase & c.found & obl_ct_nonzero64(m->count));
    uint64_t present = c.found; /* the key was in the map */
    if (compact && !m->fp) {
        obl_err e = omap_value_access(m, &c, (const unsigned char *)key, nl, vin, vout);
        m->st.oram_accesses++;
        if (e == OBL_ERR_STASH_OVERFLOW)
            err = e;
        else if (e != OBL_OK)
            return e;
    } else if (m->fp) {
        uint64_t f, match, collide;
        memcpy(&f, fpk, 8);
        obl_err e = omap_value_fp(m, &c, (const unsigned char *)key, f, nl, vin, vout, &match,
                                  &collide);
        m->st.oram_accesses++;
        if (e == OBL_ERR_STASH_OVERFLOW)
            err = e;
        else if (e != OBL_OK)
            return e;
        present = match;
        /* An erase of a key whose fingerprint belongs to another key took
         * that key's index entry out: it goes back, as a queue entry with
         * the block's new leaf (the value ORAM kept the block there). */
        uint64_t restore = c.is_erase & collide;
        uint64_t back = 0;
        for (uint32_t j = 0; j < m->Q; j++) {
            unsigned char *q = m->queue + (size_t)j * m->qes;
            uint64_t h = ld32(q);
            uint64_t fr = ((h & 1) ^ 1) & (back ^ 1) & restore;
            st32(q, obl_ct_select64(fr, 1, h));
            obl_ct_cmov(fr, q + m->hs, fpk, m->iks);
            obl_ct_cmov(fr, q + m->hs + m->iks, in, m->svs);
            back |= fr;
        }
        m->count += back;
        /* LEAK: a put of a new key whose 64-bit fingerprint is another
         * stored key's (probability about count / 2^64 per put): the public
         * capacity event OBL_ERR_FULL; the map's contents are unchanged
         * (the other key's block kept its value). And, with probability
         * below that times the queue's overflow rate, an erase that could
         * not put the other key's entry back (OBL_ERR_STATE, docs/omap.md,
         * "Fingerprints"). */
        uint64_t full = c.is_put & collide, lost = restore & (back ^ 1);
        uint64_t fail = full | lost;
        if (OBL_DECLASSIFY_VAL(fail)) {
            m->st.full_errors += OBL_DECLASSIFY_VAL(full);
            if (found)
                *found = 0;
            return OBL_DECLASSIFY_VAL(lost) ? OBL_ERR_STATE : OBL_ERR_FULL;
        }
    }
    if (value_out)
        memcpy(value_out, vout, m->vs);
    if (found)
        *found = present;
    return err;
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
void obl_omap_destroy(obl_omap *m) { omap_free(m); }
