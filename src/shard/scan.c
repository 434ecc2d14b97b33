/* SPDX-License-Identifier: MIT */
/*
 * The scan engine: a shard's entries in a plain array, each batch answered
 * by one pass over all of them (Snoopy's subORAM: Dauterman, Fang, Demertzis,
 * Crooks, Popa, "Snoopy: Surpassing the Scalability Bottleneck of Oblivious
 * Storage", SOSP 2021, section 5).
 *
 * Per batch: (1) an oblivious hash table of the b requests under a fresh
 * SipHash key: nb buckets of z slots, built by two bitonic sorts (requests
 * plus z fillers per bucket sorted by bucket, the first z of each bucket
 * kept, then sorted into place); (2) a scan of every entry, which hashes its
 * key with the batch key and compares it with the z slots of that bucket in
 * constant time, copying its value out to a matching slot; (3) a sort of the
 * slots back into request order. A batch that may write scans a second time
 * to update and erase, then places new keys into free entries by a sort
 * (docs/shard.md, "Scan engine").
 *
 * What the scan reveals: the bucket each entry probes, the batch-keyed hash
 * of a stored key (or, for a free entry, of its position in a separate
 * domain); the stored keys and positions are distinct, so these are fresh
 * uniform values independent of the requests (LEAK, below).
 */
#include <math.h>

#include <obl/lb.h>

#include "shard/shard_internal.h"

#include "common/secret.h"
#include "ct.h"
#include "omap/siphash.h"

#define SC_LAMBDA 40u        /* table overflow: at most 2^-40 per batch */
#define SC_HASH_CHUNK 64    /* entries hashed at once (siphash lanes) */
#define SC_MAX_PARTS 256u
#define SC_PREFETCH 8     /* entries read ahead in the bucket-ordered scan */
#define SC_SORT_WEIGHT 8.0 /* the shape's model: see shard_scan_table_shape */
#define SC_FILLER (1ull << 9)
#define SC_DUMMY (1ull << 8)

struct shard_scan {
    obl_alloc_ctx ac;
    size_t ks, kw, vs, vs8;  /* key bytes, key words, value bytes, rounded */
    size_t esz;              /* entry: valid word, key words, value */
    uint64_t cap;
    unsigned char *ent;
    obl_prg prg;             /* batch keys and dummy buckets */
    struct sc_work *pending; /* a begun batch that may write, until commit */
    size_t shape_b, shape_nb, shape_z; /* the last table shape, for reuse */
};

static size_t rnd8(size_t x) { return (x + 7) & ~(size_t)7; }

/* ------------------------------------------------------------ shape -- */

/* The least z with nb * P[Bin(b, 1/nb) > z] <= 2^-SC_LAMBDA (nb a power
 * of two, so the union bound is SC_LAMBDA + log2 nb bits). */
static size_t sc_slots(size_t b, size_t nb)
{
    unsigned lg = 0;
    while (((size_t)1 << lg) < nb)
        lg++;
    return obl_lb_shard_batch_size(b, (unsigned)nb, SC_LAMBDA + lg);
}

/* see shard_internal.h: the nb (b/1 .. b/64 buckets, or one) whose model
 * cost, n entries times z slot probes plus the sorts of t = b + nb * z
 * records (three sorts of t lg t steps, a step about SC_SORT_WEIGHT / 3
 * probes), is least. */
void shard_scan_table_shape(size_t b, size_t n, size_t *nb_out, size_t *z_out)
{
    size_t best_nb = 1, best_z = b;
    double best = (double)n * (double)b;
    for (size_t mu = 1; mu <= 64; mu *= 2) {
        size_t nb = 1;
        while (nb * mu < b)
            nb *= 2;
        if (nb == 1)
            break;
        size_t z = sc_slots(b, nb);
        double t = (double)(b + nb * z);
        double cost = (double)n * (double)z + SC_SORT_WEIGHT * t * log2(t + 1);
        if (cost < best) {
            best = cost;
            best_nb = nb;
            best_z = z;
        }
    }
    *nb_out = best_nb;
    *z_out = best_z ? best_z : 1;
}

/* ------------------------------------------------------------ store -- */

/* see shard_internal.h */
obl_err shard_scan_create(shard_scan **out, uint64_t capacity, size_t key_size,
                          size_t value_size, obl_prg *seed_from, const obl_alloc_ctx *ac)
{
    *out = NULL;
    obl_alloc_ctx c = *ac;
    c.bytes = 0;
    shard_scan *s = (shard_scan *)obl_alloc(&c, sizeof *s, 64);
    if (!s)
        return OBL_ERR_NOMEM;
    s->ks = key_size;
    s->kw = rnd8(key_size) / 8;
    s->vs = value_size;
    s->vs8 = rnd8(value_size);
    s->esz = 8 + 8 * s->kw + s->vs8;
    s->cap = capacity;
    size_t bytes;
    if (capacity > SIZE_MAX || !obl_mul_ok((size_t)capacity, s->esz, &bytes)) {
        obl_free(&c, s, sizeof *s);
        return OBL_ERR_TOO_LARGE;
    }
    s->ent = (unsigned char *)obl_alloc(&c, bytes, 64);
    if (!s->ent) {
        obl_free(&c, s, sizeof *s);
        return OBL_ERR_NOMEM;
    }
    unsigned char seed[32];
    obl_prg_fill(seed_from, seed, sizeof seed);
    obl_prg_init_bytes(&s->prg, seed);
    obl_wipe(seed, sizeof seed);
    s->ac = c;
    *out = s;
    return OBL_OK;
}

/* see shard_internal.h */
obl_err shard_scan_load(shard_scan *s, const void *keys, const void *values, uint64_t n)
{
    if (n > s->cap)
        return OBL_ERR_FULL;
    const unsigned char *k = (const unsigned char *)keys, *v = (const unsigned char *)values;
    for (uint64_t i = 0; i < n; i++) {
        unsigned char *e = s->ent + i * s->esz;
        uint64_t one = 1;
        memcpy(e, &one, 8);
        memcpy(e + 8, k + i * s->ks, s->ks);
        memcpy(e + 8 + 8 * s->kw, v + i * s->vs, s->vs);
    }
    return OBL_OK;
}

/* see shard_internal.h */
size_t shard_scan_memory_bytes(const shard_scan *s)
{
    return s ? s->ac.bytes : 0;
}

/* see shard_internal.h */
void shard_scan_destroy(shard_scan *s)
{
    if (!s)
        return;
    obl_alloc_ctx c = s->ac;
    obl_free(&c, s->ent, (size_t)s->cap * s->esz);
    obl_prg_wipe(&s->prg);
    obl_free(&c, s, sizeof *s);
}

/* ------------------------------------------------------------ batch -- */

/* One batch's working memory and shape; all sizes public. */
typedef struct sc_work {
    shard_scan *s;
    const shard_batch *bt;
    size_t nb, z, T;       /* buckets, slots per bucket, nb * z */
    size_t rs;             /* table record: sk, meta, key words, [value] */
    size_t n0;             /* records sorted in the build: b + T */
    int writes;
    uint64_t k0, k1;       /* the batch's SipHash key */
    unsigned parts, phase; /* phase 0: read scan, 1: write scan */
    unsigned char *tab;    /* n0 records; the table is the first T */
    unsigned char *oval;   /* parts * T * vs8: values copied out */
    uint64_t *ofnd;        /* parts * T: found flags */
    unsigned char *ins;    /* the insert's records (batches that may write) */
    uint32_t *xs, *ord;    /* cap each: entries' (public) buckets, probe order */
    uint32_t *cnt;         /* parts * (nb + 1): the counting sorts' counters */
    size_t tab_bytes, oval_bytes, ofnd_bytes, ins_bytes, xs_bytes, cnt_bytes;
} sc_work;

static inline uint64_t ld64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline void st64(unsigned char *p, uint64_t w) { memcpy(p, &w, 8); }

static void sc_work_free(sc_work *w)
{
    obl_alloc_ctx *c = &w->s->ac;
    obl_free(c, w->tab, w->tab_bytes);
    obl_free(c, w->oval, w->oval_bytes);
    obl_free(c, w->ofnd, w->ofnd_bytes);
    obl_free(c, w->ins, w->ins_bytes);
    obl_free(c, w->xs, w->xs_bytes);
    obl_free(c, w->ord, w->xs_bytes);
    obl_free(c, w->cnt, w->cnt_bytes);
    w->xs = w->ord = w->cnt = NULL;
    w->tab = w->oval = w->ins = NULL;
    w->ofnd = NULL;
}

static obl_err sc_work_alloc(sc_work *w)
{
    size_t a, b, c, d = 0;
    if (w->s->cap > UINT32_MAX || w->nb > UINT32_MAX ||
        !obl_mul_ok(w->nb + 1, 4 * (size_t)w->parts, &w->cnt_bytes) ||
        !obl_mul_ok(w->n0, w->rs, &a) || !obl_mul_ok(w->T, w->s->vs8, &b) ||
        !obl_mul_ok(b, w->parts, &b) || !obl_mul_ok(w->T * 8, w->parts, &c) ||
        (w->writes && !obl_mul_ok((size_t)w->s->cap + w->T, 16 + w->s->esz, &d)))
        return OBL_ERR_TOO_LARGE;
    w->ins_bytes = d;
    if (d) { /* allocated now: a commit never fails */
        w->ins = (unsigned char *)obl_alloc(&w->s->ac, d, 64);
        if (!w->ins)
            return OBL_ERR_NOMEM;
    }
    w->tab_bytes = a;
    w->oval_bytes = b;
    w->ofnd_bytes = c;
    w->tab = (unsigned char *)obl_alloc(&w->s->ac, a, 64);
    w->oval = (unsigned char *)obl_alloc(&w->s->ac, b, 64);
    w->ofnd = (uint64_t *)obl_alloc(&w->s->ac, c, 64);
    w->xs_bytes = (size_t)w->s->cap * 4;
    w->xs = (uint32_t *)obl_alloc(&w->s->ac, w->xs_bytes, 64);
    w->ord = (uint32_t *)obl_alloc(&w->s->ac, w->xs_bytes, 64);
    w->cnt = (uint32_t *)obl_alloc(&w->s->ac, w->cnt_bytes, 64);
    if (!w->tab || !w->oval || !w->ofnd || !w->xs || !w->ord || !w->cnt) {
        sc_work_free(w);
        return OBL_ERR_NOMEM;
    }
    return OBL_OK;
}

/* The batch's sorts: by the first word (below UINT64_MAX in every record),
 * on the batch's threads. */
static void sc_sort(const sc_work *w, unsigned char *r, size_t n, size_t rs)
{
    shard_sort_bounded(r, n, rs, 1, w->parts, &w->s->prg, &w->s->ac.a);
}

/* The request records: bucket (a random one for a dummy) and index. */
static void sc_fill_requests(sc_work *w, const uint64_t *h)
{
    shard_scan *s = w->s;
    const shard_batch *bt = w->bt;
    for (size_t i = 0; i < bt->b; i++) {
        unsigned char *r = w->tab + i * w->rs;
        uint64_t d = bt->dummy[i] & 1, op = bt->op[i];
        uint64_t x = obl_ct_select64(d, obl_prg_u64(&s->prg), h[i]) & (w->nb - 1);
        st64(r, x << 33 | (uint64_t)i);
        uint64_t meta = obl_ct_eq64(op, 1) | obl_ct_eq64(op, 2) << 1 | d << 8 | (uint64_t)i << 32;
        st64(r + 8, meta);
        memset(r + 16, 0, 8 * s->kw);
        memcpy(r + 16, bt->keys + i * s->ks, s->ks);
        if (w->writes)
            memcpy(r + 16 + 8 * s->kw, bt->vin + i * s->vs, s->vs);
    }
    for (size_t f = 0; f < w->T; f++) { /* z fillers per bucket */
        unsigned char *r = w->tab + (bt->b + f) * w->rs;
        st64(r, (uint64_t)(f / w->z) << 33 | 1ull << 32 | (uint64_t)f);
        st64(r + 8, SC_FILLER);
    }
}

/* After the sort by bucket: keep the first z records of each bucket (reals
 * first, then fillers): kept[p] and, for a sort instead of the compaction,
 * a key that orders them first; returns 1 on overflow. */
static uint64_t sc_rank(sc_work *w, uint8_t *kept)
{
    uint64_t prev = UINT64_MAX, rank = 0, ovf = 0;
    for (size_t p = 0; p < w->n0; p++) {
        unsigned char *r = w->tab + p * w->rs;
        uint64_t sk = ld64(r), x = sk >> 33, filler = (sk >> 32) & 1;
        rank = obl_ct_select64(obl_ct_eq64(x, prev), rank + 1, 0);
        uint64_t keep = obl_ct_lt64(rank, w->z);
        ovf |= (keep ^ 1) & (filler ^ 1);
        st64(r, obl_ct_select64(keep, x * w->z + rank, 1ull << 63 | (uint64_t)p));
        kept[p] = (uint8_t)keep;
        prev = x;
    }
    return ovf;
}

/* Hashes of n messages of kw key words plus a domain word. */
static void sc_hash(const sc_work *w, const unsigned char *msgs, size_t n, uint64_t *h)
{
    size_t len = 8 * (w->s->kw + 1);
    obl_siphash24_many(w->k0, w->k1, msgs, len, len, n, h);
}

/* Builds the table; OBL_ERR_STASH_OVERFLOW if a bucket overflowed. */
static obl_err sc_build(sc_work *w)
{
    shard_scan *s = w->s;
    size_t mw = s->kw + 1, b = w->bt->b;
    size_t mbytes = b * mw * 8, hbytes = b * 8;
    unsigned char *msg = (unsigned char *)obl_alloc(&s->ac, mbytes, 64);
    uint64_t *h = (uint64_t *)obl_alloc(&s->ac, hbytes, 64);
    if (!msg || !h) {
        obl_free(&s->ac, msg, mbytes);
        obl_free(&s->ac, h, hbytes);
        return OBL_ERR_NOMEM;
    }
    for (size_t i = 0; i < b; i++) /* key words, domain word 0 */
        memcpy(msg + i * mw * 8, w->bt->keys + i * s->ks, s->ks);
    sc_hash(w, msg, b, h);
    sc_fill_requests(w, h);
    obl_free(&s->ac, msg, mbytes);
    obl_free(&s->ac, h, hbytes);
    uint8_t *kept = (uint8_t *)obl_alloc(&s->ac, w->n0, 64);
    if (!kept)
        return OBL_ERR_NOMEM;
    sc_sort(w, w->tab, w->n0, w->rs);
    uint64_t ovf = sc_rank(w, kept);
    shard_keep_first(w->tab, w->n0, w->rs, kept, w->parts, &s->prg, &s->ac.a);
    obl_free(&s->ac, kept, w->n0);
    /* a public capacity event, like an ORAM stash overflow (<= 2^-40) */
    return OBL_DECLASSIFY_VAL(ovf) ? OBL_ERR_STASH_OVERFLOW : OBL_OK;
}

/* Phase 0's probe, word-wise: entry e compares its key with the z slots of
 * bucket x and copies its value (vw words) into a matching slot; every slot
 * is read and written whatever matches. */
static inline void sc_probe_get(const sc_work *w, const unsigned char *e, uint64_t x,
                                unsigned char *oval, uint64_t *ofnd, size_t kw, size_t vw)
{
    uint64_t valid = ld64(e) & 1, key[OBL_SHARD_SCAN_MAX_KEY8 / 8];
    uint64_t val[OBL_SHARD_SCAN_MAX_VALUE8 / 8];
    for (size_t k = 0; k < kw; k++)
        key[k] = ld64(e + 8 + 8 * k);
    memcpy(val, e + 8 + 8 * kw, 8 * vw);
    OBL_TRACE_TOUCH(OBL_TRACE_REGION_MAP, OBL_TRACE_RW, x * w->z, w->z);
    for (size_t zz = 0; zz < w->z; zz++) {
        size_t slot = x * w->z + zz;
        const unsigned char *r = w->tab + slot * w->rs;
        uint64_t acc = ld64(r + 8) & (SC_DUMMY | SC_FILLER);
        for (size_t k = 0; k < kw; k++)
            acc |= ld64(r + 16 + 8 * k) ^ key[k];
        uint64_t m = (obl_ct_nonzero64(acc) ^ 1) & valid, mask = obl_ct_mask(m);
        unsigned char *o = oval + slot * 8 * vw;
        for (size_t q = 0; q < vw; q++) {
            uint64_t a = ld64(o + 8 * q);
            st64(o + 8 * q, a ^ ((a ^ val[q]) & mask));
        }
        ofnd[slot] |= m;
    }
}

/* Entry j probes its bucket's z slots. Phase 0 copies its value out to a
 * matching slot; phase 1 applies a matching put or erase to the entry. */
static void sc_probe(const sc_work *w, unsigned char *e, uint64_t x, unsigned char *oval,
                     uint64_t *ofnd)
{
    const shard_scan *s = w->s;
    uint64_t valid = ld64(e) & 1, anyput = 0, erase = 0;
    unsigned char *val = e + 8 + 8 * s->kw;
    unsigned char nv[OBL_SHARD_SCAN_MAX_VALUE8];
    memcpy(nv, val, s->vs8); /* the entry's own value unless a put matches */
    OBL_TRACE_TOUCH(OBL_TRACE_REGION_MAP, OBL_TRACE_RW, x * w->z, w->z);
    for (size_t zz = 0; zz < w->z; zz++) {
        size_t slot = x * w->z + zz;
        const unsigned char *r = w->tab + slot * w->rs;
        uint64_t meta = ld64(r + 8), acc = 0;
        for (size_t k = 0; k < s->kw; k++)
            acc |= ld64(r + 16 + 8 * k) ^ ld64(e + 8 + 8 * k);
        uint64_t m = obl_ct_nonzero64(acc | (meta & (SC_DUMMY | SC_FILLER))) ^ 1;
        m &= valid;
        if (w->phase == 0) { /* public */
            obl_ct_cmov(m, oval + slot * s->vs8, val, s->vs8);
            ofnd[slot] |= m;
        } else {
            uint64_t put = m & meta & 1;
            obl_ct_cmov(put, nv, r + 16 + 8 * s->kw, s->vs8);
            anyput |= put;
            erase |= m & (meta >> 1) & 1;
        }
    }
    if (w->phase == 1) {
        obl_ct_cmov(anyput, val, nv, s->vs8);
        obl_ct_czero(erase, val, s->vs8);
        st64(e, valid & (erase ^ 1));
    }
}

/* Hashes entries [lo, hi) a chunk at a time: xs[j - lo] = entry j's bucket. */
static void sc_buckets(const sc_work *w, size_t lo, size_t hi, uint32_t *xs)
{
    const shard_scan *s = w->s;
    size_t mw = s->kw + 1;
    uint64_t msg[SC_HASH_CHUNK * (OBL_SHARD_SCAN_MAX_KEY8 / 8 + 1)], h[SC_HASH_CHUNK];
    for (size_t c = lo; c < hi; c += SC_HASH_CHUNK) {
        size_t n = hi - c < SC_HASH_CHUNK ? hi - c : SC_HASH_CHUNK;
        for (size_t i = 0; i < n; i++) {
            const unsigned char *e = s->ent + (c + i) * s->esz;
            uint64_t valid = ld64(e) & 1, *m = msg + i * mw;
            OBL_TRACE_TOUCH(OBL_TRACE_REGION_MAP, OBL_TRACE_READ, c + i, 1);
            /* a free entry hashes its position in another domain */
            for (size_t k = 0; k < s->kw; k++)
                m[k] = obl_ct_select64(valid, ld64(e + 8 + 8 * k), k ? 0 : (uint64_t)(c + i));
            m[s->kw] = valid ^ 1;
        }
        sc_hash(w, (const unsigned char *)msg, n, h);
        for (size_t i = 0; i < n; i++) {
            /* LEAK: the probed bucket, a batch-keyed PRF of a distinct input
             * (a stored key or a free entry's position): uniform and
             * independent of the requests (docs/shard.md, "Scan engine") */
            uint64_t x = h[i] & (w->nb - 1);
            OBL_DECLASSIFY(&x, sizeof x);
            xs[c + i - lo] = (uint32_t)x;
        }
    }
}

/* Scans entries [lo, hi): their buckets first, then the probes in bucket
 * order (a counting sort of the public buckets), so that the entries of one
 * bucket probe it while its slots are in cache. The order is a function of
 * the revealed buckets alone. */
static void sc_scan_range(const sc_work *w, size_t lo, size_t hi, unsigned char *oval,
                          uint64_t *ofnd, uint32_t *cnt)
{
    uint32_t *xs = w->xs + lo, *ord = w->ord + lo;
    size_t n = hi - lo;
    sc_buckets(w, lo, hi, xs);
    memset(cnt, 0, (w->nb + 1) * 4);
    for (size_t i = 0; i < n; i++)
        cnt[xs[i] + 1]++;
    for (size_t x = 0; x < w->nb; x++)
        cnt[x + 1] += cnt[x];
    for (size_t i = 0; i < n; i++)
        ord[cnt[xs[i]]++] = (uint32_t)i;
    for (size_t k = 0; k < n; k++) {
        size_t i = ord[k];
#if defined(__GNUC__)
        if (k + SC_PREFETCH < n) { /* public: the order is public */
            const unsigned char *pe = w->s->ent + (lo + ord[k + SC_PREFETCH]) * w->s->esz;
            __builtin_prefetch(pe);
            __builtin_prefetch(pe + w->s->esz - 1); /* an entry may span two lines */
        }
#endif
        unsigned char *e = w->s->ent + (lo + i) * w->s->esz;
        if (w->phase != 0) /* public */
            sc_probe(w, e, xs[i], oval, ofnd);
        else if (w->s->kw == 1 && w->s->vs8 == 56) /* public: the common shape, unrolled */
            sc_probe_get(w, e, xs[i], oval, ofnd, 1, 7);
        else
            sc_probe_get(w, e, xs[i], oval, ofnd, w->s->kw, w->s->vs8 / 8);
    }
}

/* Pool task t: slice t of the entries, into part t's outputs. */
static obl_err sc_scan_task(void *arg, size_t t)
{
    const sc_work *w = (const sc_work *)arg;
    size_t n = (size_t)w->s->cap;
    size_t lo = n * t / w->parts, hi = n * (t + 1) / w->parts;
    sc_scan_range(w, lo, hi, w->oval + t * w->T * w->s->vs8, w->ofnd + t * w->T,
                  w->cnt + t * (w->nb + 1));
    return OBL_OK;
}

static void sc_scan(sc_work *w, obl_pool *pool, unsigned phase)
{
    w->phase = phase;
    if (pool && w->parts > 1) {
        (void)obl_pool_run(pool, w->parts, sc_scan_task, w); /* tasks never fail */
    } else {
        for (size_t t = 0; t < w->parts; t++)
            (void)sc_scan_task(w, t);
    }
    if (phase != 0)
        return;
    size_t vb = w->T * w->s->vs8;
    for (size_t t = 1; t < w->parts; t++) { /* at most one part matched a slot */
        for (size_t i = 0; i < vb; i++)
            w->oval[i] |= w->oval[t * vb + i];
        for (size_t i = 0; i < w->T; i++)
            w->ofnd[i] |= w->ofnd[t * w->T + i];
    }
}

/* Sorts the slots back into request order: out[i] = request i's answer. */
static obl_err sc_route_back(sc_work *w)
{
    shard_scan *s = w->s;
    const shard_batch *bt = w->bt;
    size_t rs = 16 + s->vs8, bytes = w->T * rs;
    unsigned char *r = (unsigned char *)obl_alloc(&s->ac, bytes, 64);
    if (!r)
        return OBL_ERR_NOMEM;
    for (size_t p = 0; p < w->T; p++) {
        uint64_t meta = ld64(w->tab + p * w->rs + 8);
        uint64_t real = ((meta >> 9) & 1) ^ 1;
        st64(r + p * rs, obl_ct_select64(real, meta >> 32, 1ull << 63 | (uint64_t)p));
        st64(r + p * rs + 8, w->ofnd[p]);
        memcpy(r + p * rs + 16, w->oval + p * s->vs8, s->vs8);
    }
    sc_sort(w, r, w->T, rs);
    for (size_t i = 0; i < bt->b; i++) { /* every request holds a slot */
        bt->found[i] = ld64(r + i * rs + 8);
        memcpy(bt->vout + i * s->vs, r + i * rs + 16, s->vs);
    }
    obl_free(&s->ac, r, bytes);
    return OBL_OK;
}

/* 1 if the batch's new keys fit in the entries free after its erases. */
static uint64_t sc_fits(const sc_work *w)
{
    uint64_t fresh = 0, freed = 0, free_now = 0;
    for (size_t p = 0; p < w->T; p++) {
        uint64_t meta = ld64(w->tab + p * w->rs + 8);
        uint64_t real = obl_ct_nonzero64(meta & (SC_DUMMY | SC_FILLER)) ^ 1;
        fresh += real & meta & (w->ofnd[p] ^ 1);
        freed += real & (meta >> 1) & w->ofnd[p];
    }
    for (uint64_t j = 0; j < w->s->cap; j++)
        free_now += (ld64(w->s->ent + j * w->s->esz) & 1) ^ 1;
    return obl_ct_le64(fresh, free_now + freed);
}

/* The insert's records: entries, then the table's slots. Key sk: a free
 * entry of rank r 2r+1, the new key of rank r 2r, others from 2^63 on. */
static void sc_insert_records(const sc_work *w, unsigned char *r, size_t rs)
{
    const shard_scan *s = w->s;
    uint64_t fr = 0, nr = 0;
    for (uint64_t j = 0; j < s->cap; j++) {
        unsigned char *q = r + j * rs;
        const unsigned char *e = s->ent + j * s->esz;
        uint64_t isfree = (ld64(e) & 1) ^ 1;
        st64(q, obl_ct_select64(isfree, fr << 1 | 1, 1ull << 63 | j));
        st64(q + 8, j);
        memcpy(q + 16, e, s->esz);
        fr += isfree;
    }
    for (size_t p = 0; p < w->T; p++) {
        unsigned char *q = r + (s->cap + p) * rs;
        const unsigned char *t = w->tab + p * w->rs;
        uint64_t meta = ld64(t + 8);
        uint64_t real = obl_ct_nonzero64(meta & (SC_DUMMY | SC_FILLER)) ^ 1;
        uint64_t fresh = real & meta & (w->ofnd[p] ^ 1);
        st64(q, obl_ct_select64(fresh, nr << 1, 1ull << 63 | (s->cap + p)));
        st64(q + 8, 1ull << 63 | p);
        st64(q + 16, 1);
        memcpy(q + 24, t + 16, 8 * s->kw + s->vs8);
        nr += fresh;
    }
}

/* New keys into free entries: sort so that the new key of rank r lies just
 * before the free entry of rank r, copy, sort back by position. */
static void sc_insert(sc_work *w)
{
    shard_scan *s = w->s;
    size_t rs = 16 + s->esz, n = (size_t)s->cap + w->T;
    unsigned char *r = w->ins;
    sc_insert_records(w, r, rs);
    sc_sort(w, r, n, rs);
    for (size_t p = 0; p + 1 < n; p++) {
        uint64_t sk = ld64(r + p * rs), nx = ld64(r + (p + 1) * rs);
        uint64_t m = (obl_ct_nonzero64(sk & (1ull << 63 | 1)) ^ 1) & obl_ct_eq64(nx, sk | 1);
        obl_ct_cmov(m, r + (p + 1) * rs + 16, r + p * rs + 16, s->esz);
    }
    for (size_t p = 0; p < n; p++) {
        uint64_t aux = ld64(r + p * rs + 8);
        st64(r + p * rs, aux); /* slots' 2^63 + p sort last */
    }
    sc_sort(w, r, n, rs);
    for (uint64_t j = 0; j < s->cap; j++)
        memcpy(s->ent + j * s->esz, r + j * rs + 16, s->esz);
}

/* ------------------------------------------------------------ entry -- */

/* see shard_internal.h */
void shard_scan_abort(shard_scan *s)
{
    if (!s || !s->pending)
        return;
    sc_work_free(s->pending);
    obl_free(&s->ac, s->pending, sizeof(sc_work));
    s->pending = NULL;
}

/* see shard_internal.h */
obl_err shard_scan_begin(shard_scan *s, const shard_batch *bt, obl_pool *pool, unsigned parts)
{
    if (s->pending)
        return OBL_ERR_STATE;
    sc_work *w = (sc_work *)obl_alloc(&s->ac, sizeof *w, 64);
    if (!w)
        return OBL_ERR_NOMEM;
    w->s = s;
    w->bt = bt;
    w->writes = bt->vin != NULL;
    w->parts = parts < 1 ? 1 : parts > SC_MAX_PARTS ? SC_MAX_PARTS : parts;
    if (s->shape_b != bt->b) { /* public: the shape is a function of b */
        shard_scan_table_shape(bt->b, (size_t)s->cap, &s->shape_nb, &s->shape_z);
        s->shape_b = bt->b;
    }
    w->nb = s->shape_nb;
    w->z = s->shape_z;
    w->T = w->nb * w->z;
    w->n0 = bt->b + w->T;
    w->rs = 16 + 8 * s->kw + (w->writes ? s->vs8 : 0);
    w->k0 = obl_prg_u64(&s->prg);
    w->k1 = obl_prg_u64(&s->prg);
    s->pending = w;
    obl_err e = sc_work_alloc(w);
    if (e == OBL_OK)
        e = sc_build(w);
    if (e == OBL_OK) {
        sc_scan(w, pool, 0);
        e = sc_route_back(w);
    }
    if (e == OBL_OK && w->writes) {
        uint64_t fits = sc_fits(w);
        /* a public capacity event: the map is full (as obl_omap's FULL) */
        if (!OBL_DECLASSIFY_VAL(fits))
            e = OBL_ERR_FULL;
    }
    if (e != OBL_OK || !w->writes)
        shard_scan_abort(s);
    return e;
}

/* see shard_internal.h */
void shard_scan_commit(shard_scan *s, obl_pool *pool)
{
    sc_work *w = s->pending;
    if (!w)
        return;
    sc_scan(w, pool, 1);
    sc_insert(w);
    shard_scan_abort(s);
}

/* see shard_internal.h */
obl_err shard_scan_batch(shard_scan *s, const shard_batch *bt, obl_pool *pool, unsigned parts)
{
    obl_err e = shard_scan_begin(s, bt, pool, parts);
    if (e == OBL_OK)
        shard_scan_commit(s, pool);
    return e;
}
