/* SPDX-License-Identifier: MIT */
/*
 * The scan engine: a shard's entries scanned once per batch (Snoopy's
 * subORAM: Dauterman, Fang, Demertzis, Crooks, Popa, "Snoopy: Surpassing
 * the Scalability Bottleneck of Oblivious Storage", SOSP 2021, section 5),
 * stored in buckets of fixed capacity under the store's long-lived secret
 * SipHash key.
 *
 * Per batch: (1) an oblivious hash table of the b requests under the same
 * key: nb buckets of z slots (nb <= the store's buckets, so that a table
 * bucket is a run of consecutive store buckets), built by a sort (requests
 * plus z fillers per bucket sorted by bucket, the first z of each bucket
 * kept) and a compaction; (2) a scan of every entry in storage order, each
 * compared in constant time with the z slots of the table bucket its
 * position lies in, copying its value out to a matching slot; (3) the
 * answers routed back by a compaction or a sort. A batch that may write
 * scans a second time to update and erase, then places new keys into free
 * slots of their buckets by a sort and a compaction (docs/shard.md,
 * "Scan").
 *
 * What the scan reveals: nothing but sizes. Every entry is read in storage
 * order, every bucket in full; which keys lie in which bucket stays
 * hidden (the buckets' loads are secret, their capacity public).
 */
#include <math.h>

#include <obl/lb.h>

#include "shard/shard_internal.h"

#include "common/cpu.h"
#include "common/secret.h"
#include "ct.h"
#include "omap/siphash.h"

#define SC_LAMBDA 40u        /* table and store overflow: at most 2^-40 */
#define SC_HASH_CHUNK 64    /* keys hashed at once (siphash lanes) */
#define SC_MAX_PARTS 256u
#define SC_SORT_WEIGHT 16.0 /* the shape's model: see shard_scan_table_shape */
/* The store's buckets hold SC_STORE_MEAN to 2 SC_STORE_MEAN keys on
 * average at capacity (sc_store_shape; the choice: docs/shard.md, "Scan"). */
#define SC_STORE_MEAN 512u
/* A table record's first word: bucket (or, once ranked, slot) << 32, then
 * these flags and the request's (or filler's) index below 2^28. */
#define SC_PUT (1ull << 28)
#define SC_ERASE (1ull << 29)
#define SC_DUMMY (1ull << 30)
#define SC_FILLER (1ull << 31)
#define SC_IDX ((1ull << 28) - 1)
#define SC_LOW 0xffffffffull

struct shard_scan {
    obl_alloc_ctx ac;
    size_t ks, kw, vs, vs8;  /* key bytes, key words, value bytes, rounded */
    size_t esz;              /* entry: key words, value */
    uint64_t cap;            /* the most keys stored (FULL beyond) */
    /* nsb buckets (a power of two, lg: lgsb) of C slots: bucket X is
     * entries X C .. X C + C - 1; a key lies in bucket h(key) mod nsb,
     * h SipHash under (hk0, hk1), drawn at creation and kept. */
    size_t nsb, lgsb, C, slots;
    uint64_t hk0, hk1;
    /* Entry j at ent + j esz and its validity in valid[j] (0 or 1): apart,
     * so that an entry of 8/56 is one aligned cache line (docs/shard.md,
     * "Scan"). */
    unsigned char *ent;
    uint8_t *valid;
    obl_prg prg;             /* dummies' buckets, the sorts' randomness */
    struct sc_work *pending; /* a begun batch that may write, until commit */
    int isa;                 /* the read scan's form: OBL_ISA_* (public CPU fact) */
    unsigned char *arena;    /* a batch's working memory, kept (sc_work_alloc) */
    size_t arena_bytes;
    size_t shape_b, shape_nb, shape_z; /* the last table shape, for reuse */
};

static size_t rnd8(size_t x) { return (x + 7) & ~(size_t)7; }

static unsigned sc_lg(size_t n)
{
    unsigned lg = 0;
    while (((size_t)1 << lg) < n)
        lg++;
    return lg;
}

/* ------------------------------------------------------------ shape -- */

/* The least z with nb * P[Bin(b, 1/nb) > z] <= 2^-SC_LAMBDA (nb a power
 * of two, so the union bound is SC_LAMBDA + log2 nb bits). */
static size_t sc_slots(size_t b, size_t nb)
{
    return obl_lb_shard_batch_size(b, (unsigned)nb, SC_LAMBDA + sc_lg(nb));
}

/* The store's shape for cap keys: nsb buckets (a power of two, the most
 * with at least SC_STORE_MEAN keys each on average, or one) of C slots,
 * C the least with nsb P[Bin(cap, 1/nsb) > C] <= 2^-SC_LAMBDA: the same
 * bound as the table's, over the stored keys (docs/shard.md, "Scan").
 * Public. */
static void sc_store_shape(uint64_t cap, size_t *nsb, size_t *C)
{
    size_t n = 1;
    while (n < ((size_t)1 << 30) && cap / (2 * (uint64_t)n) >= SC_STORE_MEAN)
        n *= 2;
    *nsb = n;
    *C = n == 1 ? (size_t)cap : sc_slots((size_t)cap, n);
    if (*C == 0)
        *C = 1;
}

/* see shard_internal.h: the nb (b/1 .. b/64 buckets, or one; at most the
 * store's buckets) whose model cost, the store's slots times z slot probes
 * plus the sorts and compactions of t = b + nb * z records (t padded to a
 * power of two, as the column network pads; t lg t steps, a step about
 * SC_SORT_WEIGHT slot probes), is least. */
void shard_scan_table_shape(size_t b, size_t n, size_t *nb_out, size_t *z_out)
{
    size_t nsb, C;
    sc_store_shape(n, &nsb, &C);
    double slots = (double)nsb * (double)C;
    size_t best_nb = 1, best_z = b;
    double best = slots * (double)b;
    for (size_t mu = 1; mu <= 64; mu *= 2) {
        size_t nb = 1;
        while (nb * mu < b && nb < nsb)
            nb *= 2;
        if (nb == 1)
            break;
        size_t z = sc_slots(b, nb);
        double t = 1;
        while (t < (double)(b + nb * z))
            t *= 2;
        double cost = slots * (double)z + SC_SORT_WEIGHT * t * log2(t + 1);
        if (cost < best) {
            best = cost;
            best_nb = nb;
            best_z = z;
        }
    }
    *nb_out = best_nb;
    *z_out = best_z ? best_z : 1;
}

/* see shard_internal.h */
void shard_scan_force_shape(shard_scan *s, size_t b, size_t nb, size_t z)
{
    s->shape_b = b;
    s->shape_nb = nb;
    s->shape_z = z;
}

/* see shard_internal.h */
void shard_scan_store_shape(const shard_scan *s, size_t *nsb, size_t *C)
{
    *nsb = s->nsb;
    *C = s->C;
}

/* ------------------------------------------------------------ store -- */

/* see shard_internal.h */
obl_err shard_scan_create(shard_scan **out, uint64_t capacity, size_t key_size,
                          size_t value_size, obl_prg *seed_from, const obl_alloc_ctx *ac)
{
    *out = NULL;
    obl_alloc_ctx c = *ac;
    c.bytes = 0;
    if (capacity > UINT32_MAX)
        return OBL_ERR_TOO_LARGE;
    shard_scan *s = (shard_scan *)obl_alloc(&c, sizeof *s, 64);
    if (!s)
        return OBL_ERR_NOMEM;
    s->ks = key_size;
    s->kw = rnd8(key_size) / 8;
    s->vs = value_size;
    s->vs8 = rnd8(value_size);
    s->esz = 8 * s->kw + s->vs8;
    s->cap = capacity;
    sc_store_shape(capacity, &s->nsb, &s->C);
    s->lgsb = sc_lg(s->nsb);
    size_t bytes;
    if (!obl_mul_ok(s->nsb, s->C, &s->slots) || s->slots > UINT32_MAX ||
        !obl_mul_ok(s->slots, s->esz + 8, &bytes)) {
        obl_free(&c, s, sizeof *s);
        return OBL_ERR_TOO_LARGE;
    }
    s->ent = (unsigned char *)obl_alloc(&c, s->slots * s->esz, 64);
    s->valid = (uint8_t *)obl_alloc(&c, s->slots, 64);
    if (!s->ent || !s->valid) {
        obl_free(&c, s->ent, s->slots * s->esz);
        obl_free(&c, s->valid, s->slots);
        obl_free(&c, s, sizeof *s);
        return OBL_ERR_NOMEM;
    }
    unsigned char seed[32];
    obl_prg_fill(seed_from, seed, sizeof seed);
    obl_prg_init_bytes(&s->prg, seed);
    obl_wipe(seed, sizeof seed);
    s->hk0 = obl_prg_u64(&s->prg);
    s->hk1 = obl_prg_u64(&s->prg);
    s->ac = c;
    s->isa = obl_isa_pick();
    *out = s;
    return OBL_OK;
}

static inline uint64_t ld64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline void st64(unsigned char *p, uint64_t w) { memcpy(p, &w, 8); }

/* X[i] = the store bucket of the key of len bytes at base + i stride:
 * SipHash under the store's key of the key padded to whole words and a
 * domain word 0. Secret: keys and X. */
static void sc_hash_x(const shard_scan *s, const unsigned char *base, size_t stride, size_t len,
                      size_t n, uint64_t *X)
{
    size_t mw = s->kw + 1;
    uint64_t msg[SC_HASH_CHUNK * (OBL_SHARD_SCAN_MAX_KEY8 / 8 + 1)];
    for (size_t c = 0; c < n; c += SC_HASH_CHUNK) {
        size_t m = n - c < SC_HASH_CHUNK ? n - c : SC_HASH_CHUNK;
        memset(msg, 0, m * mw * 8);
        for (size_t i = 0; i < m; i++)
            memcpy(msg + i * mw, base + (c + i) * stride, len);
        obl_siphash24_many_isa(s->isa, s->hk0, s->hk1, msg, 8 * mw, 8 * mw, m, X + c);
        for (size_t i = 0; i < m; i++)
            X[c + i] &= s->nsb - 1;
    }
}

/* see shard_internal.h */
size_t shard_scan_bucket_of(const shard_scan *s, const void *key)
{
    uint64_t X;
    sc_hash_x(s, (const unsigned char *)key, s->ks, s->ks, 1, &X);
    return (size_t)X;
}

/* Placement records: first word, validity word, entry. */
static size_t sc_place_rs(const shard_scan *s) { return 16 + s->esz; }

/* The store's slots as placement records: slot j of bucket X sorts by
 * (X, 0 if it holds a key, 2 if free) << 32 | j. */
static void sc_slot_records(const shard_scan *s, unsigned char *r)
{
    size_t rs = sc_place_rs(s);
    for (size_t X = 0, j = 0; X < s->nsb; X++) {
        for (size_t c = 0; c < s->C; c++, j++) {
            unsigned char *q = r + j * rs;
            uint64_t v = s->valid[j] & 1;
            st64(q, ((uint64_t)X << 2 | (v ^ 1) << 1) << 32 | j);
            st64(q + 8, v);
            memcpy(q + 16, s->ent + j * s->esz, s->esz);
        }
    }
}

/* A new key's placement record: its bucket X, class 1 (after the bucket's
 * keys, before its free slots); live = 0 makes it sort last (2^63 + i) and
 * be dropped. */
static void sc_new_record(const shard_scan *s, unsigned char *q, uint64_t live, uint64_t X,
                          uint64_t i, const unsigned char *key, size_t klen,
                          const unsigned char *val)
{
    st64(q, obl_ct_select64(live, (X << 2 | 1) << 32 | i, 1ull << 63 | i));
    st64(q + 8, 1);
    memset(q + 16, 0, s->esz);
    memcpy(q + 16, key, klen);
    memcpy(q + 16 + 8 * s->kw, val, s->vs);
}

/*
 * The n placement records r (the store's slots first, then new keys) into
 * the store's layout: sorted by bucket and class, the first C of each
 * bucket kept (its keys, its new keys, then free slots), compacted to the
 * front in order and copied into the store. The caller has checked that
 * no bucket's keys and new keys exceed C. Secret: records. Public: n, the
 * shape.
 */
static void sc_place(shard_scan *s, unsigned char *r, size_t n, uint8_t *keep, unsigned threads)
{
    size_t rs = sc_place_rs(s);
    shard_sort_bounded(r, n, rs, 1, threads, &s->prg, &s->ac.a);
    uint64_t prev = UINT64_MAX, rank = 0;
    for (size_t p = 0; p < n; p++) {
        unsigned char *q = r + p * rs;
        uint64_t w = ld64(q), X = w >> 34, last = w >> 63;
        rank = obl_ct_select64(obl_ct_eq64(X, prev), rank + 1, 0);
        uint64_t k = obl_ct_lt64(rank, s->C) & (last ^ 1);
        st64(q, obl_ct_select64(k, w, 1ull << 63 | p)); /* shard_keep_first's sort form */
        keep[p] = (uint8_t)k;
        prev = X;
    }
    shard_keep_first(r, n, rs, keep, threads, &s->prg, &s->ac.a);
    for (size_t j = 0; j < s->slots; j++) {
        s->valid[j] = (uint8_t)(ld64(r + j * rs + 8) & 1);
        memcpy(s->ent + j * s->esz, r + j * rs + 16, s->esz);
    }
}

/* see shard_internal.h: each pair into the next free slot of its bucket,
 * in input order, after the loads are checked. */
obl_err shard_scan_load(shard_scan *s, const void *keys, const void *values, uint64_t n)
{
    if (n > s->cap)
        return OBL_ERR_FULL;
    size_t bytes;
    if (!obl_mul_ok((size_t)n + s->nsb, 8, &bytes))
        return OBL_ERR_TOO_LARGE;
    uint64_t *X = (uint64_t *)obl_alloc(&s->ac, bytes, 64), *fill = X + n;
    if (!X)
        return OBL_ERR_NOMEM;
    const unsigned char *k = (const unsigned char *)keys, *v = (const unsigned char *)values;
    sc_hash_x(s, k, s->ks, s->ks, (size_t)n, X);
    uint64_t ovf = 0;
    for (size_t i = 0; i < (size_t)n; i++) {
        /* LEAK: the bucket of input position i, a value of the store's
         * secret PRF, as the omap's build reveals its buckets; the batches
         * never reveal where a key lies (docs/shard.md, "Build") */
        OBL_DECLASSIFY(&X[i], sizeof X[i]);
        ovf |= ++fill[X[i]] > s->C; /* public */
    }
    if (!ovf) {
        memset(fill, 0, 8 * s->nsb);
        for (size_t i = 0; i < (size_t)n; i++) {
            size_t j = X[i] * s->C + fill[X[i]]++;
            s->valid[j] = 1;
            memset(s->ent + j * s->esz, 0, 8 * s->kw);
            memcpy(s->ent + j * s->esz, k + i * s->ks, s->ks);
            memcpy(s->ent + j * s->esz + 8 * s->kw, v + i * s->vs, s->vs);
        }
    }
    obl_free(&s->ac, X, bytes);
    /* a public capacity event (<= 2^-40): the store stays empty */
    return ovf ? OBL_ERR_STASH_OVERFLOW : OBL_OK;
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
    obl_free(&c, s->ent, s->slots * s->esz);
    obl_free(&c, s->valid, s->slots);
    obl_free(&c, s->arena, s->arena_bytes);
    obl_prg_wipe(&s->prg);
    obl_free(&c, s, sizeof *s);
}

/* ------------------------------------------------------------ batch -- */

/* One batch's working memory and shape; all sizes public. */
typedef struct sc_work {
    shard_scan *s;
    const shard_batch *bt;
    size_t nb, z, T;       /* buckets, slots per bucket, nb * z */
    size_t sh, span;       /* table bucket x: store buckets x 2^sh ..
                            * (x + 1) 2^sh - 1, entries x span .. */
    size_t zp, ow;         /* the read scan's slots per bucket (z rounded up
                            * to 4, or 8 when wide) and words per slot
                            * (value, found) */
    size_t rs;             /* table record: sk (SC_PUT ..), key words, [value] */
    size_t n0;             /* records sorted in the build: b + T */
    int writes;
    int wide;              /* the AVX-512 read scan (transposed blocks) */
    unsigned parts, phase; /* phase 0: read scan, 1: write scan */
    unsigned char *tab;    /* n0 records; the table is the first T */
    uint64_t *oval;        /* nb * zp * ow: value and found per slot */
    uint64_t *skey, *slive; /* nb * zp * kw slot keys; all ones: a live slot */
    uint64_t *ofnd;        /* T: found flags, in table order */
    unsigned char *ins;    /* a writing batch's placement records, then */
    uint64_t *xt;          /* T: the table slots' store buckets, */
    uint64_t *occ;         /* nsb: the buckets' loads after the batch, */
    uint8_t *ikeep;        /* slots + T: the placement's flags */
    unsigned char *out;    /* the answers' records */
    uint64_t *h;           /* the requests' store buckets; then, the same */
    uint8_t *kept;         /* memory, the table build's compaction flags */
    uint64_t *colbuf;      /* the table sort's column buffer */
    size_t colbuf_bytes;
    size_t ins_bytes;
} sc_work;

static void sc_work_free(sc_work *w)
{
    obl_free(&w->s->ac, w->ins, w->ins_bytes);
    w->ins = NULL;
}

#define SC_PARTS 8

/* Carves the batch's arrays out of the store's arena (kept from batch to
 * batch, grown when a batch needs more: allocating these megabytes afresh
 * cost page faults and zeroing every batch); a writing batch's placement
 * records are allocated apart. Sizes are public. */
static obl_err sc_work_alloc(sc_work *w)
{
    shard_scan *s = w->s;
    size_t ns = w->nb * w->zp, sz[SC_PARTS] = {0}, total = 0, d = 0, o1, o2, hb, pr;
    if (w->n0 > SC_IDX || /* sc_fill_requests */
        !obl_mul_ok(w->n0, w->rs, &sz[0]) || !obl_mul_ok(ns, 8 * w->ow, &sz[1]) ||
        !obl_mul_ok(w->T, 8, &sz[2]) || !obl_mul_ok(ns, 8 * s->kw, &sz[3]) ||
        !obl_mul_ok(ns, 8, &sz[4]) || !obl_mul_ok(w->T, 16 + s->vs8, &o1) ||
        !obl_mul_ok(w->T, 9 + 8 * s->kw + s->vs8, &o2) || !obl_mul_ok(w->bt->b, 8, &hb) ||
        (w->writes && (s->slots + w->T > UINT32_MAX ||
                       !obl_mul_ok(s->slots + w->T, sc_place_rs(s) + 1, &pr) ||
                       (d = pr + 8 * (w->T + s->nsb)) < pr)))
        return OBL_ERR_TOO_LARGE;
    if (w->nb > s->nsb) /* a forced shape (tests) that the store cannot scan */
        return OBL_ERR_INVALID_ARG;
    sz[5] = o1 > o2 ? o1 : o2;
    sz[6] = hb > w->n0 ? hb : w->n0;
    size_t m = 1;
    while (m < w->n0)
        m *= 2;
    /* the table sort's columns, 8 for records of 5 to 7 words (bitonic.c) */
    if (!obl_mul_ok(m, w->rs > 32 ? 64 : w->rs, &sz[7]))
        return OBL_ERR_TOO_LARGE;
    for (size_t i = 0; i < SC_PARTS; i++) {
        size_t r = (sz[i] + 63) & ~(size_t)63;
        if (r < sz[i] || total + r < total)
            return OBL_ERR_TOO_LARGE;
        total += r;
    }
    if (s->arena_bytes < total) { /* public */
        obl_free(&s->ac, s->arena, s->arena_bytes);
        s->arena_bytes = 0;
        s->arena = (unsigned char *)obl_alloc(&s->ac, total, 64);
        if (!s->arena)
            return OBL_ERR_NOMEM;
        s->arena_bytes = total;
    }
    w->ins_bytes = d;
    if (d) { /* allocated now: a commit never fails */
        w->ins = (unsigned char *)obl_alloc(&s->ac, d, 64);
        if (!w->ins)
            return OBL_ERR_NOMEM;
        w->xt = (uint64_t *)(w->ins + (s->slots + w->T) * sc_place_rs(s));
        w->occ = w->xt + w->T;
        w->ikeep = (uint8_t *)(w->occ + s->nsb);
    }
    void *part[SC_PARTS];
    for (size_t i = 0, off = 0; i < SC_PARTS; i++) {
        part[i] = s->arena + off;
        off += (sz[i] + 63) & ~(size_t)63;
    }
    w->tab = (unsigned char *)part[0];
    w->oval = (uint64_t *)part[1];
    w->ofnd = (uint64_t *)part[2];
    w->skey = (uint64_t *)part[3];
    w->slive = (uint64_t *)part[4];
    w->out = (unsigned char *)part[5];
    w->colbuf = (uint64_t *)part[7];
    w->h = (uint64_t *)part[6];
    w->kept = (uint8_t *)part[6];
    w->colbuf_bytes = sz[7];
    memset(w->oval, 0, sz[1]); /* the probes OR into it */
    return OBL_OK;
}

/* The batch's sorts: by the first word (below UINT64_MAX in every record),
 * on the batch's threads. */
static void sc_sort(const sc_work *w, unsigned char *r, size_t n, size_t rs)
{
    shard_sort_bounded_in(r, n, rs, 1, w->parts, &w->s->prg, &w->s->ac.a, w->colbuf,
                          w->colbuf_bytes);
}

/* The request records: table bucket (the store bucket's top bits, a
 * random one for a dummy) and index. */
static void sc_fill_requests(sc_work *w, const uint64_t *h)
{
    shard_scan *s = w->s;
    const shard_batch *bt = w->bt;
    for (size_t i = 0; i < bt->b; i++) {
        unsigned char *r = w->tab + i * w->rs;
        uint64_t d = bt->dummy[i] & 1, op = bt->op[i];
        uint64_t x = obl_ct_select64(d, obl_prg_u64(&s->prg) & (w->nb - 1), h[i] >> w->sh);
        st64(r, x << 32 | obl_ct_eq64(op, 1) << 28 | obl_ct_eq64(op, 2) << 29 | d << 30 |
                    (uint64_t)i);
        memset(r + 8, 0, 8 * s->kw);
        memcpy(r + 8, bt->keys + i * s->ks, s->ks);
        if (w->writes)
            memcpy(r + 8 + 8 * s->kw, bt->vin + i * s->vs, s->vs);
    }
    for (size_t x = 0, f = 0; x < w->nb; x++) {
        for (size_t zz = 0; zz < w->z; zz++, f++) { /* z fillers per bucket */
            unsigned char *r = w->tab + (bt->b + f) * w->rs;
            st64(r, (uint64_t)x << 32 | SC_FILLER | (uint64_t)f);
            memset(r + 8, 0, w->rs - 8); /* the arena holds the last batch's */
        }
    }
}

/* After the sort by bucket: keep the first z records of each bucket (reals
 * first, then fillers): kept[p] and, for a sort instead of the compaction,
 * a first word that orders them first (slot << 32, the flags and index
 * kept below); returns 1 on overflow. */
static uint64_t sc_rank(sc_work *w, uint8_t *kept)
{
    uint64_t prev = UINT64_MAX, rank = 0, ovf = 0;
    for (size_t p = 0; p < w->n0; p++) {
        unsigned char *r = w->tab + p * w->rs;
        uint64_t sk = ld64(r), x = sk >> 32, filler = (sk >> 31) & 1;
        rank = obl_ct_select64(obl_ct_eq64(x, prev), rank + 1, 0);
        uint64_t keep = obl_ct_lt64(rank, w->z);
        ovf |= (keep ^ 1) & (filler ^ 1);
        st64(r, obl_ct_select64(keep, (x * w->z + rank) << 32 | (sk & SC_LOW),
                                1ull << 63 | (uint64_t)p));
        kept[p] = (uint8_t)keep;
        prev = x;
    }
    return ovf;
}

/* Builds the table; OBL_ERR_STASH_OVERFLOW if a bucket overflowed. */
static obl_err sc_build(sc_work *w)
{
    shard_scan *s = w->s;
    sc_hash_x(s, w->bt->keys, s->ks, s->ks, w->bt->b, w->h);
    sc_fill_requests(w, w->h);
    sc_sort(w, w->tab, w->n0, w->rs);
    uint64_t ovf = sc_rank(w, w->kept);
    shard_keep_first(w->tab, w->n0, w->rs, w->kept, w->parts, &s->prg, &s->ac.a);
    /* a public capacity event, like an ORAM stash overflow (<= 2^-40 for
     * a set of distinct keys: docs/shard.md, "Scan") */
    return OBL_DECLASSIFY_VAL(ovf) ? OBL_ERR_STASH_OVERFLOW : OBL_OK;
}

/* Phase 1's probe: entry j compares its key with the z slots of bucket x;
 * a matching put copies the slot's value into the entry, a matching erase
 * clears it. Every slot is read whatever matches. */
static void sc_probe(const sc_work *w, size_t j, uint64_t x)
{
    const shard_scan *s = w->s;
    unsigned char *e = s->ent + j * s->esz, *val = e + 8 * s->kw;
    uint64_t valid = s->valid[j] & 1, anyput = 0, erase = 0;
    unsigned char nv[OBL_SHARD_SCAN_MAX_VALUE8];
    memcpy(nv, val, s->vs8); /* the entry's own value unless a put matches */
    OBL_TRACE_TOUCH(OBL_TRACE_REGION_MAP, OBL_TRACE_RW, x * w->z, w->z);
    for (size_t zz = 0; zz < w->z; zz++) {
        const unsigned char *r = w->tab + (x * w->z + zz) * w->rs;
        uint64_t meta = ld64(r), acc = 0;
        for (size_t k = 0; k < s->kw; k++)
            acc |= ld64(r + 8 + 8 * k) ^ ld64(e + 8 * k);
        uint64_t m = obl_ct_nonzero64(acc | (meta & (SC_DUMMY | SC_FILLER))) ^ 1;
        m &= valid;
        uint64_t put = m & (meta >> 28) & 1;
        obl_ct_cmov(put, nv, r + 8 + 8 * s->kw, s->vs8);
        anyput |= put;
        erase |= m & (meta >> 29) & 1;
    }
    obl_ct_cmov(anyput, val, nv, s->vs8);
    obl_ct_czero(erase, val, s->vs8);
    s->valid[j] = (uint8_t)(valid & (erase ^ 1));
}

/* Where key word k of scan slot q lies in w->skey: the slots in groups of
 * G (8 for the wide form, else 4; zp is a multiple of G), each group's
 * words transposed (word k of its slot j at G k + j), so that a probe
 * loads word k of G slots as one vector; with one key word slot q's key is
 * at q. Public. */
static inline size_t sc_skey_at(const sc_work *w, size_t q, size_t k)
{
    size_t G = w->wide ? 8 : 4;
    return (q & ~(G - 1)) * w->s->kw + k * G + (q & (G - 1));
}

/* The read scan's slot arrays from the table: slot zz of bucket x at
 * x * zp + zz, its key words (sc_skey_at) and a mask, all ones for a live
 * request (not a dummy or a filler); the pad slots (zz >= z) are dead. */
static void sc_slot_arrays(sc_work *w)
{
    size_t kw = w->s->kw;
    for (size_t x = 0; x < w->nb; x++) {
        for (size_t zz = 0; zz < w->zp; zz++) {
            size_t q = x * w->zp + zz;
            int pad = zz >= w->z; /* public */
            const unsigned char *r = w->tab + (x * w->z + (pad ? 0 : zz)) * w->rs;
            uint64_t dead = pad ? 1 : obl_ct_nonzero64(ld64(r) & (SC_DUMMY | SC_FILLER));
            w->slive[q] = obl_ct_mask(dead ^ 1);
            for (size_t k = 0; k < kw; k++)
                w->skey[sc_skey_at(w, q, k)] = pad ? 0 : ld64(r + 8 + 8 * k);
        }
    }
}

#define SC_CHUNK 32 /* entries of one bucket staged at once */
#define SC_MAX_OW ((OBL_SHARD_SCAN_MAX_VALUE8 / 8 + 1 + 3) & ~(size_t)3)

/* Up to SC_CHUNK entries of one bucket, copied in probe order: key words
 * and ow words: the value, a 1 (the found flag), zeros; all ow words zero
 * for a free entry, so that whatever slot it matches it ORs in nothing. */
typedef struct sc_stage {
    uint64_t key[SC_CHUNK * (OBL_SHARD_SCAN_MAX_KEY8 / 8)];
    uint64_t val[SC_CHUNK * SC_MAX_OW];
} sc_stage;

/* The read probes of ne staged entries against the slots of bucket x, slot
 * by slot: every slot ORs in every entry's staged words masked by key
 * equality (at most one stored entry matches a slot: stored keys are
 * distinct, and free entries stage zeros). A dead slot (dummy, filler,
 * pad) may match too: sc_scan clears its words after the scan. Every word
 * is read and written whatever matches. ow is a constant at the calls that
 * matter, so acc stays in registers there. */
static inline void sc_read_chunk(const sc_work *w, const sc_stage *st, size_t ne, size_t x,
                                 uint64_t *oval, size_t kw, size_t ow)
{
    for (size_t zz = 0; zz < w->z; zz++) {
        size_t q = x * w->zp + zz;
        uint64_t sk[OBL_SHARD_SCAN_MAX_KEY8 / 8], acc[SC_MAX_OW];
        for (size_t k = 0; k < kw; k++)
            sk[k] = w->skey[sc_skey_at(w, q, k)];
        memcpy(acc, oval + q * ow, 8 * ow);
        for (size_t i = 0; i < ne; i++) {
            uint64_t d = 0;
            for (size_t k = 0; k < kw; k++)
                d |= st->key[i * kw + k] ^ sk[k];
            uint64_t m = obl_ct_mask(obl_ct_nonzero64(d) ^ 1);
            for (size_t k = 0; k < ow; k++)
                acc[k] |= st->val[i * ow + k] & m;
        }
        memcpy(oval + q * ow, acc, 8 * ow);
    }
}

#if defined(OBL_CT_X86)
/* Lane j of m in every lane. */
#define SC_LANE(m, j) _mm256_permute4x64_epi64((m), (j) * 0x55)

/* sc_read_chunk for ow = 4 or 8, four slots at a time: one compare of an
 * entry's key with four slot keys (per key word, ANDed), then each slot's
 * lane of the match mask ANDed with the entry's value and ORed into that
 * slot's accumulator (no blends, no masked memory operands). nv = ow / 4
 * and kw are constants at the calls that matter, so that the accumulators
 * stay in registers. */
__attribute__((target("avx2"), always_inline)) static inline void
sc_read_chunk_avx2_nv(const sc_work *w, const sc_stage *st, size_t ne, size_t x, uint64_t *oval,
                      size_t nv, size_t kw)
{
    const size_t ow = 4 * nv;
    for (size_t g = 0; g < w->zp; g += 4) {
        size_t q = x * w->zp + g;
        __m256i sk[OBL_SHARD_SCAN_MAX_KEY8 / 8];
        for (size_t k = 0; k < kw; k++)
            sk[k] = _mm256_loadu_si256((const void *)(w->skey + q * kw + 4 * k));
        __m256i a[4][2];
        for (int j = 0; j < 4; j++)
            for (size_t v = 0; v < 2; v++)
                a[j][v] = v < nv ? _mm256_loadu_si256((const void *)(oval + (q + j) * ow + 4 * v))
                                 : _mm256_setzero_si256();
        for (size_t i = 0; i < ne; i++) {
            const uint64_t *key = st->key + i * kw;
            __m256i m = _mm256_cmpeq_epi64(_mm256_set1_epi64x((long long)key[0]), sk[0]);
            for (size_t k = 1; k < kw; k++)
                m = _mm256_and_si256(
                    m, _mm256_cmpeq_epi64(_mm256_set1_epi64x((long long)key[k]), sk[k]));
            __m256i v0 = _mm256_loadu_si256((const void *)(st->val + i * ow));
            __m256i v1 = nv > 1 ? _mm256_loadu_si256((const void *)(st->val + i * ow + 4)) : v0;
            __m256i m0 = SC_LANE(m, 0), m1 = SC_LANE(m, 1), m2 = SC_LANE(m, 2),
                    m3 = SC_LANE(m, 3);
            a[0][0] = _mm256_or_si256(a[0][0], _mm256_and_si256(v0, m0));
            a[1][0] = _mm256_or_si256(a[1][0], _mm256_and_si256(v0, m1));
            a[2][0] = _mm256_or_si256(a[2][0], _mm256_and_si256(v0, m2));
            a[3][0] = _mm256_or_si256(a[3][0], _mm256_and_si256(v0, m3));
            a[0][1] = _mm256_or_si256(a[0][1], _mm256_and_si256(v1, m0));
            a[1][1] = _mm256_or_si256(a[1][1], _mm256_and_si256(v1, m1));
            a[2][1] = _mm256_or_si256(a[2][1], _mm256_and_si256(v1, m2));
            a[3][1] = _mm256_or_si256(a[3][1], _mm256_and_si256(v1, m3));
        }
        for (int j = 0; j < 4; j++)
            for (size_t v = 0; v < nv; v++)
                _mm256_storeu_si256((void *)(oval + (q + j) * ow + 4 * v), a[j][v]);
    }
}

__attribute__((target("avx2"))) static void sc_read_chunk_avx2(const sc_work *w,
                                                               const sc_stage *st, size_t ne,
                                                               size_t x, uint64_t *oval)
{
    size_t kw = w->s->kw;
    if (w->ow == 8 && kw == 1) /* public */
        sc_read_chunk_avx2_nv(w, st, ne, x, oval, 2, 1);
    else if (w->ow == 8 && kw == 4)
        sc_read_chunk_avx2_nv(w, st, ne, x, oval, 2, 4);
    else if (w->ow == 8)
        sc_read_chunk_avx2_nv(w, st, ne, x, oval, 2, kw);
    else if (kw == 1)
        sc_read_chunk_avx2_nv(w, st, ne, x, oval, 1, 1);
    else
        sc_read_chunk_avx2_nv(w, st, ne, x, oval, 1, kw);
}

/* Eight slots (key words sk8, transposed: word k of slot j at sk8[8 k +
 * j]) against ne staged entries, on the group's block of 8 * ow words held
 * transposed (word k of slot j at blk[8 k + j]; sc_word reads them so):
 * per entry one compare of its key with the eight slot keys (longer keys:
 * the words' differences ORed by ternary-logic ops, then one test for
 * zero), the match bits widened to lanes (vpmovm2q), then per word one
 * ternary-logic op, acc |= broadcast(word) & match. The mask never meets
 * a memory operand (the masked-operand audit, tests/ct/masked_ops.sh). */
__attribute__((target("avx512f,avx512dq"), always_inline)) static inline void
sc_read_group_avx512(const uint64_t *sk8, const sc_stage *st, size_t ne, uint64_t *blk,
                     size_t ow, size_t kw)
{
    __m512i sk[OBL_SHARD_SCAN_MAX_KEY8 / 8], a[8];
    for (size_t k = 0; k < kw; k++)
        sk[k] = _mm512_loadu_si512((const void *)(sk8 + 8 * k));
    for (size_t k = 0; k < ow; k++)
        a[k] = _mm512_loadu_si512((const void *)(blk + 8 * k));
    for (size_t i = 0; i < ne; i++) {
        const uint64_t *key = st->key + i * kw;
        __mmask8 km;
        if (kw == 1) {
            km = _mm512_cmpeq_epi64_mask(_mm512_set1_epi64((long long)key[0]), sk[0]);
        } else {
            __m512i d = _mm512_xor_si512(_mm512_set1_epi64((long long)key[0]), sk[0]);
            for (size_t k = 1; k < kw; k++) /* 0xF6: a | (b ^ c) */
                d = _mm512_ternarylogic_epi64(d, _mm512_set1_epi64((long long)key[k]), sk[k],
                                              0xF6);
            km = _mm512_testn_epi64_mask(d, d);
        }
        __m512i m = _mm512_movm_epi64(km);
        const uint64_t *v = st->val + i * ow;
        for (size_t k = 0; k < ow; k++) /* 0xF8: a | (b & c) */
            a[k] = _mm512_ternarylogic_epi64(a[k], _mm512_set1_epi64((long long)v[k]), m, 0xF8);
    }
    for (size_t k = 0; k < ow; k++)
        _mm512_storeu_si512((void *)(blk + 8 * k), a[k]);
}

/* sc_read_chunk for ow <= 8 (the value's words and the found flag, not
 * padded), eight slots at a time (zp a multiple of 8), on the transposed
 * blocks of sc_read_group_avx512. The common sizes get constant kw and ow
 * (8/56, 8/48, 8/8, 16- and 32-byte keys with 32-byte values). */
__attribute__((target("avx512f,avx512dq"))) static void
sc_read_chunk_avx512(const sc_work *w, const sc_stage *st, size_t ne, size_t x, uint64_t *oval)
{
    size_t kw = w->s->kw, ow = w->ow;
#define SC_GROUPS(KW, OW)                                                                   \
    for (size_t g = 0; g < w->zp; g += 8) {                                                 \
        size_t q = x * w->zp + g;                                                           \
        sc_read_group_avx512(w->skey + q * (KW), st, ne, oval + q * (OW), (OW), (KW));      \
    }
    if (kw == 1 && ow == 8) { /* public */
        SC_GROUPS(1, 8)
    } else if (kw == 1 && ow == 7) {
        SC_GROUPS(1, 7)
    } else if (kw == 1 && ow == 2) {
        SC_GROUPS(1, 2)
    } else if (kw == 4 && ow == 5) {
        SC_GROUPS(4, 5)
    } else if (kw == 2 && ow == 5) {
        SC_GROUPS(2, 5)
    } else {
        SC_GROUPS(kw, ow)
    }
#undef SC_GROUPS
}
#endif

/* Stage slot i: entry e's key words and ow words: its value, a 1 (the found
 * flag), zeros; all zero for a free entry (valid = 0). */
static inline void sc_stage_one(sc_stage *st, size_t i, const unsigned char *e, uint64_t valid,
                                size_t kw, size_t vw, size_t ow)
{
    uint64_t *v = st->val + i * ow;
    memcpy(st->key + i * kw, e, 8 * kw);
    memcpy(v, e + 8 * kw, 8 * vw);
    v[vw] = 1;
    for (size_t j = 0; j <= vw; j++)
        v[j] &= valid;
    for (size_t j = vw + 1; j < ow; j++)
        v[j] = 0;
}

/* Stages entries k .. k + ne - 1 (consecutive, so the hardware's
 * prefetcher reads ahead) and probes them against table bucket x. */
static void sc_read_run(const sc_work *w, sc_stage *st, size_t k, size_t ne, size_t x,
                        uint64_t *oval)
{
    const shard_scan *s = w->s;
    size_t kw = s->kw, vw = s->vs8 / 8, ow = w->ow;
    for (size_t i = 0; i < ne; i++) {
        size_t at = k + i;
        uint64_t valid = obl_ct_mask(s->valid[at] & 1);
        if (kw == 1 && vw == 7 && ow == 8) /* public: 8/56, constant sizes */
            sc_stage_one(st, i, s->ent + at * s->esz, valid, 1, 7, 8);
        else if (kw == 4 && vw == 4 && ow == 5) /* 32/32 in the AVX-512 form */
            sc_stage_one(st, i, s->ent + at * s->esz, valid, 4, 4, 5);
        else
            sc_stage_one(st, i, s->ent + at * s->esz, valid, kw, vw, ow);
    }
#if defined(OBL_CT_X86)
    if (w->wide) { /* public */
        sc_read_chunk_avx512(w, st, ne, x, oval);
        return;
    }
    if (s->isa >= OBL_ISA_AVX2 && ow <= 8) { /* public */
        sc_read_chunk_avx2(w, st, ne, x, oval);
        return;
    }
#endif
    if (kw == 1 && ow == 8) /* public: the common shape, unrolled */
        sc_read_chunk(w, st, ne, x, oval, 1, 8);
    else
        sc_read_chunk(w, st, ne, x, oval, kw, ow);
}

/* Part t of the scan: table buckets nb t / parts .. nb (t + 1) / parts - 1,
 * each against its run of span entries in storage order (the parts write
 * disjoint slots of one output array). Every address is a function of the
 * sizes alone. */
static obl_err sc_probe_task(void *arg, size_t t)
{
    const sc_work *w = (const sc_work *)arg;
    size_t x0 = w->nb * t / w->parts, x1 = w->nb * (t + 1) / w->parts;
    if (w->phase == 0) { /* public */
        sc_stage st;
        for (size_t x = x0; x < x1; x++) {
            size_t end = (x + 1) * w->span;
            for (size_t k = x * w->span; k < end; k += SC_CHUNK) {
                size_t ne = end - k < SC_CHUNK ? end - k : SC_CHUNK;
                OBL_TRACE_TOUCH(OBL_TRACE_REGION_MAP, OBL_TRACE_RW, x * w->z, w->z);
                sc_read_run(w, &st, k, ne, x, w->oval);
            }
        }
        return OBL_OK;
    }
    for (size_t x = x0; x < x1; x++)
        for (size_t j = x * w->span; j < (x + 1) * w->span; j++)
            sc_probe(w, j, x);
    return OBL_OK;
}

/* One pool job of w->parts tasks, or all on the calling thread. */
static void sc_run(sc_work *w, obl_pool *pool, obl_err (*task)(void *, size_t))
{
    if (pool && w->parts > 1) {
        (void)obl_pool_run(pool, w->parts, task, w); /* tasks never fail */
    } else {
        for (size_t t = 0; t < w->parts; t++)
            (void)task(w, t);
    }
}

/* From table slot p's place q in the read scan's arrays (buckets of zp
 * slots; zz = p mod z) to slot p + 1's, without a division. */
static inline void sc_oslot_next(const sc_work *w, size_t *q, size_t *zz)
{
    if (++*zz == w->z) { /* public */
        *zz = 0;
        *q += w->zp - w->z + 1;
    } else {
        ++*q;
    }
}

/* After the read scan: word k of scan slot q (the wide form holds each
 * block of eight slots transposed, word k of its slot j at 8 k + j),
 * cleared for a dead slot (a dummy's or a filler's key may equal a stored
 * key). Public addresses. */
static inline uint64_t sc_word(const sc_work *w, size_t q, size_t k)
{
    size_t at = w->wide ? (q & ~(size_t)7) * w->ow + 8 * k + (q & 7) : q * w->ow + k;
    return w->oval[at] & w->slive[q];
}

/* Scan slot q's value words to dst. */
static void sc_value(const sc_work *w, size_t q, unsigned char *dst)
{
    for (size_t k = 0; k < w->s->vs8 / 8; k++)
        st64(dst + 8 * k, sc_word(w, q, k));
}

/* The scan: every entry once, in storage order (phase 0 reads into the
 * slots, phase 1 writes the batch's updates and erases); then phase 0's
 * found flags in table order. */
static void sc_scan(sc_work *w, obl_pool *pool, unsigned phase)
{
    w->phase = phase;
    if (phase == 0)
        sc_slot_arrays(w);
    sc_run(w, pool, sc_probe_task);
    if (phase != 0)
        return;
    size_t vw = w->s->vs8 / 8;
    for (size_t p = 0, q = 0, zz = 0; p < w->T; p++, sc_oslot_next(w, &q, &zz))
        w->ofnd[p] = sc_word(w, q, vw); /* table order */
}

/* Sorts the slots back into request order: out[i] = request i's answer. */
static obl_err sc_route_back(sc_work *w)
{
    shard_scan *s = w->s;
    const shard_batch *bt = w->bt;
    size_t rs = 16 + s->vs8;
    unsigned char *r = w->out;
    for (size_t p = 0, q = 0, zz = 0; p < w->T; p++, sc_oslot_next(w, &q, &zz)) {
        uint64_t meta = ld64(w->tab + p * w->rs);
        uint64_t real = ((meta >> 31) & 1) ^ 1;
        st64(r + p * rs, obl_ct_select64(real, meta & SC_IDX, 1ull << 63 | (uint64_t)p));
        st64(r + p * rs + 8, w->ofnd[p]);
        sc_value(w, q, r + p * rs + 16);
    }
    sc_sort(w, r, w->T, rs);
    for (size_t i = 0; i < bt->b; i++) { /* every request holds a slot */
        bt->found[i] = ld64(r + i * rs + 8);
        memcpy(bt->vout + i * s->vs, r + i * rs + 16, s->vs);
    }
    return OBL_OK;
}

/* The answers in table order: the b request slots (the rest are fillers)
 * compacted to the front (ORCompact, O(T log T) moves, where the sort into
 * request order needs O(T log^2 T)); for a caller that takes the answers
 * in any order (shard_batch.akeys). Records: order word (for
 * shard_keep_first's sort form; dummy and found flags in bits 62 and 61,
 * as the kept records may come in any order; the request's index in bits
 * 32..59), the key words unless the caller takes the indices (aidx), the
 * value. */
static obl_err sc_answer_any(sc_work *w)
{
    shard_scan *s = w->s;
    const shard_batch *bt = w->bt;
    size_t kb = bt->aidx ? 0 : 8 * s->kw, rs = 8 + kb + s->vs8; /* public */
    unsigned char *r = w->out;
    uint8_t *keep = w->out + w->T * rs;
    for (size_t p = 0, o = 0, zz = 0; p < w->T; p++, sc_oslot_next(w, &o, &zz)) {
        const unsigned char *t = w->tab + p * w->rs;
        unsigned char *q = r + p * rs;
        uint64_t meta = ld64(t), real = ((meta >> 31) & 1) ^ 1;
        uint64_t flags = ((meta >> 30) & 1) << 62 | (w->ofnd[p] & 1) << 61;
        /* the request's index in bits 32..59, for shard_batch.aidx */
        st64(q, obl_ct_select64(real, (meta & SC_IDX) << 32 | p, 1ull << 63 | (uint64_t)p) |
                    flags);
        memcpy(q + 8, t + 8, kb);
        sc_value(w, o, q + 8 + kb);
        keep[p] = (uint8_t)real;
    }
    shard_keep_first(r, w->T, rs, keep, w->parts, &s->prg, &s->ac.a);
    for (size_t i = 0; i < bt->b; i++) { /* every request holds a slot */
        const unsigned char *q = r + i * rs;
        uint64_t o = ld64(q);
        if (bt->aidx) /* public */
            bt->aidx[i] = (o >> 32) & SC_IDX;
        else
            memcpy(bt->akeys + i * s->ks, q + 8, s->ks);
        bt->adummy[i] = (o >> 62) & 1;
        bt->found[i] = (o >> 61) & 1;
        memcpy(bt->vout + i * s->vs, q + 8 + kb, s->vs);
    }
    return OBL_OK;
}

/* Table slot p's new key (a real put of a key not found) and freed entry
 * (a real erase of a key found) flags. Secret. */
static void sc_slot_delta(const sc_work *w, size_t p, uint64_t *fresh, uint64_t *freed)
{
    uint64_t meta = ld64(w->tab + p * w->rs);
    uint64_t real = obl_ct_nonzero64(meta & (SC_DUMMY | SC_FILLER)) ^ 1;
    *fresh = real & ((meta >> 28) & 1) & (w->ofnd[p] ^ 1);
    *freed = real & ((meta >> 29) & 1) & w->ofnd[p];
}

/* Whether the batch's writes fit: OBL_OK, FULL (more than cap keys after
 * it) or STASH_OVERFLOW (a bucket's keys after it exceed C, probability
 * <= 2^-40 while at most cap keys are stored). The loads are counted per
 * bucket: each table slot adds its change to every store bucket of its
 * table bucket, masked by equality (z nsb steps). Sets w->xt. */
static obl_err sc_fits(sc_work *w)
{
    const shard_scan *s = w->s;
    size_t W = (size_t)1 << w->sh;
    uint64_t stored = 0, fresh = 0, freed = 0, ovf = 0;
    sc_hash_x(s, w->tab + 8, w->rs, 8 * s->kw, w->T, w->xt);
    for (size_t X = 0, j = 0; X < s->nsb; X++) {
        uint64_t c = 0;
        for (size_t k = 0; k < s->C; k++, j++)
            c += s->valid[j] & 1;
        w->occ[X] = c;
        stored += c;
    }
    for (size_t p = 0; p < w->T; p++) {
        uint64_t fr, fd;
        sc_slot_delta(w, p, &fr, &fd);
        fresh += fr;
        freed += fd;
        size_t X0 = p / w->z * W; /* public */
        for (size_t k = 0; k < W; k++) {
            uint64_t m = obl_ct_mask(obl_ct_eq64(w->xt[p], X0 + k));
            w->occ[X0 + k] += (fr - fd) & m;
        }
    }
    for (size_t X = 0; X < s->nsb; X++)
        ovf |= obl_ct_lt64(s->C, w->occ[X]);
    uint64_t full = obl_ct_lt64(s->cap + freed, stored + fresh);
    /* public capacity events: the map is full (as obl_omap's FULL), or a
     * bucket overflowed (as an ORAM's stash) */
    if (OBL_DECLASSIFY_VAL(full))
        return OBL_ERR_FULL;
    return OBL_DECLASSIFY_VAL(ovf) ? OBL_ERR_STASH_OVERFLOW : OBL_OK;
}

/* New keys into free slots of their buckets (sc_place), after the write
 * scan's updates and erases; sc_fits has checked that they fit. */
static void sc_insert(sc_work *w)
{
    shard_scan *s = w->s;
    size_t rs = sc_place_rs(s);
    sc_slot_records(s, w->ins);
    for (size_t p = 0; p < w->T; p++) {
        uint64_t fr, fd;
        const unsigned char *t = w->tab + p * w->rs;
        sc_slot_delta(w, p, &fr, &fd);
        sc_new_record(s, w->ins + (s->slots + p) * rs, fr, w->xt[p], s->slots + p, t + 8,
                      8 * s->kw, t + 8 + 8 * s->kw);
    }
    sc_place(s, w->ins, s->slots + w->T, w->ikeep, w->parts);
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
    w->sh = w->nb <= s->nsb ? s->lgsb - sc_lg(w->nb) : 0;
    w->span = ((size_t)1 << w->sh) * s->C;
    w->wide = s->isa >= OBL_ISA_AVX512 && s->vs8 / 8 + 1 <= 8; /* public */
    w->ow = w->wide ? s->vs8 / 8 + 1 : (s->vs8 / 8 + 1 + 3) & ~(size_t)3;
    w->zp = w->wide ? (w->z + 7) & ~(size_t)7 : (w->z + 3) & ~(size_t)3;
    w->n0 = bt->b + w->T;
    w->rs = 8 + 8 * s->kw + (w->writes ? s->vs8 : 0);
    s->pending = w;
    obl_err e = sc_work_alloc(w);
    if (e == OBL_OK)
        e = sc_build(w);
    if (e == OBL_OK) {
        sc_scan(w, pool, 0);
        e = bt->akeys ? sc_answer_any(w) : sc_route_back(w);
    }
    if (e == OBL_OK && w->writes)
        e = sc_fits(w);
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
