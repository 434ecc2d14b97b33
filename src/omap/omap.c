/*
 * The oblivious map's operations (obl/omap.h): creation, the combined
 * access and its three wrappers, statistics.
 *
 * Every call of obl_omap_access, whatever its op, key or outcome, runs:
 *   1. kicks_per_op kick-out steps: select the first valid queue entry (full
 *      scan), one ORAM access to the bucket of its current table (a random
 *      bucket when the queue is empty), place it in a free slot or swap it
 *      with a random occupant (random-walk cuckoo insertion, Fotakis et al.,
 *      "Space efficient hash tables with worst case constant access time",
 *      STACS 2003, section 3), write it back (full scan);
 *   2. a full scan of the queue for the key;
 *   3. one ORAM read-modify-write of the key's bucket in table 0, then one of
 *      its bucket in table 1 (obl_roram_update);
 *   4. a full scan of the queue to append the key when a put found no slot.
 * The de-amortisation follows Arbitman, Naor, Segev, "De-amortized cuckoo
 * hashing" (ICALP 2009), section 3: a queue of pending entries and a fixed
 * number of moves per operation, here with every move oblivious.
 */
#include <string.h>

#include <obl/omap.h>

#include "ct.h"
#include "common/secret.h"
#include "omap/omap_internal.h"
#include "omap/siphash.h"

__extension__ typedef unsigned __int128 omap_u128;

static inline uint64_t ld64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline void st64(unsigned char *p, uint64_t w) { memcpy(p, &w, 8); }

/* see omap_internal.h */
uint64_t omap_hash(const obl_omap *m, unsigned t, const void *key)
{
    return obl_siphash24(m->sk[2 * t], m->sk[2 * t + 1], key, m->ks);
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
static uint64_t omap_size(uint64_t capacity, uint32_t load, size_t kv, uint32_t *B)
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
        uint64_t cost = nb * (OMAP_HDR + b * (uint64_t)kv);
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
    if (B > OBL_OMAP_MAX_SLOTS || load < 10 || load > 95 || Q > 1024 || kicks > 8)
        return OBL_ERR_INVALID_ARG;
    if (p->capacity > ((uint64_t)1 << 40))
        return OBL_ERR_TOO_LARGE;
    size_t kv = p->key_size + p->value_size, bsz, qes = OMAP_HDR + kv, qb;
    uint64_t M = omap_size(p->capacity, load, kv, &B);
    if (!obl_mul_ok(kv, B, &bsz) || !obl_add_ok(bsz, OMAP_HDR, &bsz) ||
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
    m->kv = kv;
    m->bsz = bsz;
    m->qes = qes;
    m->B = B;
    m->Q = Q;
    m->kicks = kicks;
    m->scan_max = p->oram_scan_max;
    m->queue_bytes = qb;
    m->scratch_bytes = qes + 2 * p->value_size;
    m->queue = (unsigned char *)obl_alloc(&m->ac, qb, 64);
    m->scratch = (unsigned char *)obl_alloc(&m->ac, m->scratch_bytes, 64);
    if (!m->queue || !m->scratch) {
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
    m->st.queue_size = Q;
    m->st.buckets = 2 * M;
    m->st.slots_per_bucket = B;
    m->st.kicks_per_op = kicks;
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
    uint64_t eh = ld64(c->e);
    uint64_t valid = eh & 1, hdr = ld64(b);
    uint64_t got = 0;
    for (uint32_t i = 0; i < m->B; i++) { /* first free slot takes the entry */
        uint64_t fr = (((hdr >> i) & 1) ^ 1) & (got ^ 1) & valid;
        obl_ct_cmov(fr, b + OMAP_HDR + i * m->kv, c->e + OMAP_HDR, m->kv);
        hdr |= fr << i;
        got |= fr;
    }
    uint64_t swap = valid & (got ^ 1);
    for (uint32_t i = 0; i < m->B; i++) /* full: swap with the random victim */
        obl_ct_cswap(swap & obl_ct_eq64(i, c->victim), b + OMAP_HDR + i * m->kv,
                     c->e + OMAP_HDR, m->kv);
    st64(b, hdr);
    /* placed: the entry leaves the queue; swapped: the victim, evicted from
     * table t, tries table 1 - t next. */
    uint64_t nt = ((eh >> 1) & 1) ^ 1;
    st64(c->e, obl_ct_select64(swap, 1 | (nt << 1), 0));
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
        uint64_t pick = (ld64(q) & 1) & (taken ^ 1);
        obl_ct_cmov(pick, e, q, m->qes);
        sel = obl_ct_select64(pick, j, sel);
        taken |= pick;
    }
    uint64_t t = (ld64(e) >> 1) & 1;
    uint64_t b0 = omap_bucket(m, 0, e + OMAP_HDR), b1 = omap_bucket(m, 1, e + OMAP_HDR);
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
    uint64_t hdr = ld64(b);
    for (uint32_t i = 0; i < m->B; i++) {
        unsigned char *s = b + OMAP_HDR + i * m->kv;
        uint64_t match = ((hdr >> i) & 1) & obl_ct_memeq(s, c->key, m->ks);
        obl_ct_cmov(match, c->out, s + m->ks, m->vs);
        obl_ct_cmov(match & c->is_put & (c->placed ^ 1), s + m->ks, c->in, m->vs);
        /* A put that already stored the key in table 0 drops the old copy. */
        uint64_t del = match & (c->is_erase | (c->is_put & c->placed));
        hdr &= ~(del << i);
        c->found |= match;
    }
    uint64_t need = c->is_put & (c->found ^ 1) & (c->placed ^ 1), got = 0;
    for (uint32_t i = 0; i < m->B; i++) {
        unsigned char *s = b + OMAP_HDR + i * m->kv;
        uint64_t fr = (((hdr >> i) & 1) ^ 1) & (got ^ 1) & need;
        obl_ct_cmov(fr, s, c->key, m->ks);
        obl_ct_cmov(fr, s + m->ks, c->in, m->vs);
        hdr |= fr << i;
        got |= fr;
    }
    c->placed |= got;
    st64(b, hdr);
}

/* see obl/omap.h */
obl_err obl_omap_access(obl_omap *m, uint64_t op, const void *key, const void *value_in,
                        void *value_out, uint64_t *found)
{
    /*
     * Secret: op, key, the values, the outcome. Public: the parameters, the
     * pointers' NULL-ness, the error code. The access sequence is fixed:
     * kicks_per_op kick steps, a queue scan, bucket h0(key), bucket
     * h1(key), a queue scan.
     */
    if (!m || !key)
        return OBL_ERR_INVALID_ARG;
    obl_err err = OBL_OK;
    for (uint32_t k = 0; k < m->kicks; k++) {
        obl_err e = omap_kick(m);
        if (e == OBL_ERR_STASH_OVERFLOW)
            err = e;
        else if (e != OBL_OK)
            return e;
    }
    unsigned char *in = m->scratch + m->qes, *out = in + m->vs;
    if (value_in)
        memcpy(in, value_in, m->vs);
    else
        memset(in, 0, m->vs);
    memset(out, 0, m->vs);
    op_ctx c = {m, (const unsigned char *)key, in, out, obl_ct_eq64(op, OBL_OMAP_PUT),
                obl_ct_eq64(op, OBL_OMAP_ERASE), 0, 0};

    /* The queue: a pending entry is found, updated or erased here. */
    for (uint32_t j = 0; j < m->Q; j++) {
        unsigned char *q = m->queue + (size_t)j * m->qes;
        uint64_t h = ld64(q);
        uint64_t match = (h & 1) & obl_ct_memeq(q + OMAP_HDR, key, m->ks);
        obl_ct_cmov(match, out, q + OMAP_HDR + m->ks, m->vs);
        obl_ct_cmov(match & c.is_put, q + OMAP_HDR + m->ks, in, m->vs);
        st64(q, obl_ct_select64(match & c.is_erase, 0, h));
        c.found |= match;
    }

    for (unsigned t = 0; t < 2; t++) {
        obl_err e = obl_roram_update(m->oram, omap_bucket(m, t, key), op_fn, &c);
        if (e == OBL_ERR_STASH_OVERFLOW)
            err = e;
        else if (e != OBL_OK)
            return e;
    }

    /* A new key whose buckets were both full joins the queue. */
    uint64_t need = c.is_put & (c.found ^ 1) & (c.placed ^ 1), got = 0, occ = 0;
    for (uint32_t j = 0; j < m->Q; j++) {
        unsigned char *q = m->queue + (size_t)j * m->qes;
        uint64_t h = ld64(q);
        uint64_t fr = ((h & 1) ^ 1) & (got ^ 1);
        got |= fr;
        occ += h & 1;
    }
    uint64_t overflow = need & (got ^ 1);
    /* LEAK: a put of a new key that found no slot and a full queue; the
     * public capacity event OBL_ERR_FULL (obl/omap.h). Nothing was changed:
     * the key matched nowhere and no slot was written. */
    if (OBL_DECLASSIFY_VAL(overflow)) {
        m->st.operations++;
        m->st.oram_accesses += m->kicks + 2u;
        m->st.full_errors++;
        if (found)
            *found = 0;
        return OBL_ERR_FULL;
    }
    got = 0;
    for (uint32_t j = 0; j < m->Q; j++) {
        unsigned char *q = m->queue + (size_t)j * m->qes;
        uint64_t fr = ((ld64(q) & 1) ^ 1) & (got ^ 1) & need;
        /* header: valid, first kick tries table 0 */
        st64(q, obl_ct_select64(fr, 1, ld64(q)));
        obl_ct_cmov(fr, q + OMAP_HDR, key, m->ks);
        obl_ct_cmov(fr, q + OMAP_HDR + m->ks, in, m->vs);
        got |= fr;
    }
    occ += need;
    m->st.queue_max = obl_ct_max64(m->st.queue_max, occ);
    m->st.operations++;
    m->st.oram_accesses += m->kicks + 2u;
    if (value_out)
        memcpy(value_out, out, m->vs);
    if (found)
        *found = c.found;
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
    if (m)
        *st = m->st;
}

/* see obl/omap.h */
uint64_t obl_omap_capacity(const obl_omap *m) { return m ? m->capacity : 0; }

/* see obl/omap.h */
size_t obl_omap_memory_bytes(const obl_omap *m)
{
    if (!m)
        return 0;
    return m->ac.bytes + obl_roram_memory_bytes(m->oram);
}

/* see obl/omap.h */
void obl_omap_destroy(obl_omap *m) { omap_free(m); }
