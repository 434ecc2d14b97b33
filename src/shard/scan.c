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

#include "common/cpu.h"
#include "common/secret.h"
#include "ct.h"
#include "omap/siphash.h"

#define SC_LAMBDA 40u        /* table overflow: at most 2^-40 per batch */
#define SC_HASH_CHUNK 64    /* entries hashed at once (siphash lanes) */
#define SC_MAX_PARTS 256u
#define SC_BLOCK_BYTES ((size_t)8 << 20) /* entries scanned per block (sc_scan) */
#define SC_PREFETCH 8     /* entries read ahead in the write scan */
#define SC_SORT_WEIGHT 16.0 /* the shape's model: see shard_scan_table_shape */
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
    uint64_t cap;
    /* Entry j at ent + j esz and its validity in valid[j] (0 or 1): apart,
     * so that an entry of 8/56 is one aligned cache line (docs/shard.md,
     * "Scan"). */
    unsigned char *ent;
    uint8_t *valid;
    obl_prg prg;             /* batch keys and dummy buckets */
    struct sc_work *pending; /* a begun batch that may write, until commit */
    int isa;                 /* the read scan's form: OBL_ISA_* (public CPU fact) */
    unsigned char *arena;    /* a batch's working memory, kept (sc_work_alloc) */
    size_t arena_bytes;
    size_t shape_b, shape_nb, shape_z; /* the last table shape, for reuse */
    size_t block_bytes;      /* sc_scan's blocks: SC_BLOCK_BYTES, or a test's */
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
 * cost, n entries times z slot probes plus the sorts and compactions of
 * t = b + nb * z records (t padded to a power of two, as the column
 * network pads; t lg t steps, a step about SC_SORT_WEIGHT slot probes), is
 * least. */
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
        double t = 1;
        while (t < (double)(b + nb * z))
            t *= 2;
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

/* see shard_internal.h */
void shard_scan_force_block(shard_scan *s, size_t bytes)
{
    s->block_bytes = bytes ? bytes : SC_BLOCK_BYTES;
}

/* see shard_internal.h */
void shard_scan_force_shape(shard_scan *s, size_t b, size_t nb, size_t z)
{
    s->shape_b = b;
    s->shape_nb = nb;
    s->shape_z = z;
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
    s->esz = 8 * s->kw + s->vs8;
    s->cap = capacity;
    size_t bytes;
    if (capacity > SIZE_MAX || !obl_mul_ok((size_t)capacity, s->esz + 8, &bytes)) {
        obl_free(&c, s, sizeof *s);
        return OBL_ERR_TOO_LARGE;
    }
    s->ent = (unsigned char *)obl_alloc(&c, (size_t)capacity * s->esz, 64);
    s->valid = (uint8_t *)obl_alloc(&c, (size_t)capacity, 64);
    if (!s->ent || !s->valid) {
        obl_free(&c, s->ent, (size_t)capacity * s->esz);
        obl_free(&c, s->valid, (size_t)capacity);
        obl_free(&c, s, sizeof *s);
        return OBL_ERR_NOMEM;
    }
    unsigned char seed[32];
    obl_prg_fill(seed_from, seed, sizeof seed);
    obl_prg_init_bytes(&s->prg, seed);
    obl_wipe(seed, sizeof seed);
    s->ac = c;
    s->isa = obl_isa_pick();
    s->block_bytes = SC_BLOCK_BYTES;
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
        s->valid[i] = 1;
        memcpy(e, k + i * s->ks, s->ks);
        memcpy(e + 8 * s->kw, v + i * s->vs, s->vs);
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
    obl_free(&c, s->valid, (size_t)s->cap);
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
    size_t zp, ow;         /* the read scan's slots per bucket (z rounded up
                            * to 4, or 8 when wide) and words per slot
                            * (value, found) */
    size_t rs;             /* table record: sk (SC_PUT ..), key words, [value] */
    size_t n0;             /* records sorted in the build: b + T */
    int writes;
    int wide;              /* the AVX-512 read scan (transposed blocks) */
    uint64_t k0, k1;       /* the batch's SipHash key */
    unsigned parts, phase; /* phase 0: read scan, 1: write scan */
    unsigned char *tab;    /* n0 records; the table is the first T */
    uint64_t *oval;        /* parts * nb * zp * ow: value and found per slot */
    uint64_t *skey, *slive; /* nb * zp * kw slot keys; all ones: a live slot */
    uint64_t *ofnd;        /* T: found flags, in table order */
    unsigned char *ins;    /* the insert's records (batches that may write) */
    uint32_t *xs, *ord;    /* cap each: entries' (public) buckets, probe order;
                            * the same memory as out, which the scan's
                            * answers use after the scan */
    uint32_t *cnt;         /* (parts + 1) * (nb + 1): the counting sort's
                            * counters per slice, then the buckets' starts */
    size_t xcut[SC_MAX_PARTS + 1]; /* part t probes buckets xcut[t] .. */
    size_t blo, bhi;       /* the block of entries being scanned (sc_scan) */
    unsigned char *out;    /* the answers' records */
    unsigned char *msg;    /* the requests' hash messages (sc_build) */
    uint64_t *h;           /* their hashes; then, the same memory, */
    uint8_t *kept;         /* the table build's compaction flags */
    uint64_t *colbuf;      /* the table sort's column buffer */
    size_t colbuf_bytes;
    size_t ins_bytes;
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
    obl_free(&w->s->ac, w->ins, w->ins_bytes);
    w->ins = NULL;
}

#define SC_PARTS 10

/* Carves the batch's arrays out of the store's arena (kept from batch to
 * batch, grown when a batch needs more: allocating these megabytes afresh
 * cost page faults and zeroing every batch); the insert's records, needed
 * by writing batches only, are allocated apart. Sizes are public. */
static obl_err sc_work_alloc(sc_work *w)
{
    shard_scan *s = w->s;
    size_t ns = w->nb * w->zp, sz[SC_PARTS], total = 0, d = 0, o1, o2, hb;
    if (s->cap > UINT32_MAX || w->nb > UINT32_MAX || w->n0 > SC_IDX || /* sc_fill_requests */
        !obl_mul_ok(w->nb + 1, 4 * ((size_t)w->parts + 1), &sz[7]) ||
        !obl_mul_ok(w->n0, w->rs, &sz[0]) || !obl_mul_ok(ns, 8 * w->ow, &sz[1]) ||
        !obl_mul_ok(w->T, 8, &sz[2]) ||
        !obl_mul_ok(ns, 8 * s->kw, &sz[3]) || !obl_mul_ok(ns, 8, &sz[4]) ||
        !obl_mul_ok((size_t)s->cap, 4, &sz[5]) || !obl_mul_ok(w->T, 16 + s->vs8, &o1) ||
        !obl_mul_ok(w->T, 9 + 8 * s->kw + s->vs8, &o2) || !obl_mul_ok(w->bt->b, 8, &hb) ||
        !obl_mul_ok(hb, s->kw + 1, &sz[6]) ||
        (w->writes && !obl_mul_ok((size_t)s->cap + w->T, 24 + s->esz, &d)))
        return OBL_ERR_TOO_LARGE;
    /* the scan's bucket order (xs, ord) and, after the scan, the answers'
     * records (and compaction flags) share part 5 */
    size_t xo = ((sz[5] + 63) & ~(size_t)63) * 2, ob = o1 > o2 ? o1 : o2;
    if (xo < sz[5])
        return OBL_ERR_TOO_LARGE;
    sz[5] = xo > ob ? xo : ob;
    sz[8] = hb > w->n0 ? hb : w->n0;
    size_t m = 1;
    while (m < w->n0)
        m *= 2;
    if (!obl_mul_ok(m, w->rs, &sz[9])) /* the table sort's columns */
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
    w->xs = (uint32_t *)part[5];
    w->ord = (uint32_t *)((unsigned char *)part[5] + xo / 2);
    w->cnt = (uint32_t *)part[7];
    w->out = (unsigned char *)part[5];
    w->colbuf = (uint64_t *)part[9];
    w->msg = (unsigned char *)part[6];
    w->h = (uint64_t *)part[8];
    w->kept = (uint8_t *)part[8];
    w->colbuf_bytes = sz[9];
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

/* The request records: bucket (a random one for a dummy) and index. */
static void sc_fill_requests(sc_work *w, const uint64_t *h)
{
    shard_scan *s = w->s;
    const shard_batch *bt = w->bt;
    for (size_t i = 0; i < bt->b; i++) {
        unsigned char *r = w->tab + i * w->rs;
        uint64_t d = bt->dummy[i] & 1, op = bt->op[i];
        uint64_t x = obl_ct_select64(d, obl_prg_u64(&s->prg), h[i]) & (w->nb - 1);
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

/* Hashes of n messages of kw key words plus a domain word. */
static void sc_hash(const sc_work *w, const unsigned char *msgs, size_t n, uint64_t *h)
{
    size_t len = 8 * (w->s->kw + 1);
    obl_siphash24_many_isa(w->s->isa, w->k0, w->k1, msgs, len, len, n, h);
}

/* Builds the table; OBL_ERR_STASH_OVERFLOW if a bucket overflowed. */
static obl_err sc_build(sc_work *w)
{
    shard_scan *s = w->s;
    size_t mw = s->kw + 1, b = w->bt->b;
    memset(w->msg, 0, b * mw * 8); /* the arena holds the last batch's */
    for (size_t i = 0; i < b; i++) /* key words, domain word 0 */
        memcpy(w->msg + i * mw * 8, w->bt->keys + i * s->ks, s->ks);
    sc_hash(w, w->msg, b, w->h);
    sc_fill_requests(w, w->h);
    sc_sort(w, w->tab, w->n0, w->rs);
    uint64_t ovf = sc_rank(w, w->kept);
    shard_keep_first(w->tab, w->n0, w->rs, w->kept, w->parts, &s->prg, &s->ac.a);
    /* a public capacity event, like an ORAM stash overflow (<= 2^-40) */
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

/* The read scan's slot arrays from the table: slot zz of bucket x at
 * x * zp + zz, its key words and a mask, all ones for a live request (not
 * a dummy or a filler); the pad slots (zz >= z) are dead. */
static void sc_slot_arrays(sc_work *w)
{
    size_t kw = w->s->kw;
    for (size_t x = 0; x < w->nb; x++) {
        for (size_t zz = 0; zz < w->zp; zz++) {
            size_t q = x * w->zp + zz;
            if (zz >= w->z) { /* public */
                w->slive[q] = 0;
                memset(w->skey + q * kw, 0, 8 * kw);
                continue;
            }
            const unsigned char *r = w->tab + (x * w->z + zz) * w->rs;
            uint64_t dead = obl_ct_nonzero64(ld64(r) & (SC_DUMMY | SC_FILLER));
            w->slive[q] = obl_ct_mask(dead ^ 1);
            memcpy(w->skey + q * kw, r + 8, 8 * kw);
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
        const uint64_t *sk = w->skey + q * kw;
        uint64_t acc[SC_MAX_OW];
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

/* sc_read_chunk for one key word and ow = 4 or 8, four slots at a time:
 * one compare of an entry's key with four slot keys, then each slot's
 * lane of the match mask ANDed with the entry's value and ORed into that
 * slot's accumulator (no blends, no masked memory operands). nv = ow / 4
 * is a constant at the calls, so that the accumulators stay in registers. */
__attribute__((target("avx2"), always_inline)) static inline void
sc_read_chunk_avx2_nv(const sc_work *w, const sc_stage *st, size_t ne, size_t x, uint64_t *oval,
                      size_t nv)
{
    const size_t ow = 4 * nv;
    for (size_t g = 0; g < w->zp; g += 4) {
        size_t q = x * w->zp + g;
        __m256i sk = _mm256_loadu_si256((const void *)(w->skey + q));
        __m256i a[4][2];
        for (int j = 0; j < 4; j++)
            for (size_t v = 0; v < 2; v++)
                a[j][v] = v < nv ? _mm256_loadu_si256((const void *)(oval + (q + j) * ow + 4 * v))
                                 : _mm256_setzero_si256();
        for (size_t i = 0; i < ne; i++) {
            __m256i m = _mm256_cmpeq_epi64(_mm256_set1_epi64x((long long)st->key[i]), sk);
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
    if (w->ow == 8) /* public */
        sc_read_chunk_avx2_nv(w, st, ne, x, oval, 2);
    else
        sc_read_chunk_avx2_nv(w, st, ne, x, oval, 1);
}

/* Eight slots (keys sk8) against ne staged entries, on the group's block of
 * 8 * ow words held transposed (word k of slot j at blk[8 k + j]; sc_word
 * reads them so): per entry one compare of its key with the eight slot
 * keys, the match bits widened to lanes (vpmovm2q), then per word one
 * ternary-logic op, acc |= broadcast(word) & match. The mask never meets
 * a memory operand (the masked-operand audit, tests/ct/masked_ops.sh). */
__attribute__((target("avx512f,avx512dq"), always_inline)) static inline void
sc_read_group_avx512(const uint64_t *sk8, const sc_stage *st, size_t ne, uint64_t *blk,
                     size_t ow)
{
    __m512i sk = _mm512_loadu_si512((const void *)sk8), a[8];
    for (size_t k = 0; k < ow; k++)
        a[k] = _mm512_loadu_si512((const void *)(blk + 8 * k));
    for (size_t i = 0; i < ne; i++) {
        __mmask8 km = _mm512_cmpeq_epi64_mask(_mm512_set1_epi64((long long)st->key[i]), sk);
        __m512i m = _mm512_movm_epi64(km);
        const uint64_t *v = st->val + i * ow;
        for (size_t k = 0; k < ow; k++) /* 0xF8: a | (b & c) */
            a[k] = _mm512_ternarylogic_epi64(a[k], _mm512_set1_epi64((long long)v[k]), m, 0xF8);
    }
    for (size_t k = 0; k < ow; k++)
        _mm512_storeu_si512((void *)(blk + 8 * k), a[k]);
}

/* sc_read_chunk for one key word and ow = 4 or 8, eight slots at a time
 * (zp a multiple of 8), on the transposed blocks of sc_read_group_avx512. */
__attribute__((target("avx512f,avx512dq"))) static void
sc_read_chunk_avx512(const sc_work *w, const sc_stage *st, size_t ne, size_t x, uint64_t *oval)
{
    for (size_t g = 0; g < w->zp; g += 8) {
        size_t q = x * w->zp + g;
        if (w->ow == 8) /* public */
            sc_read_group_avx512(w->skey + q, st, ne, oval + q * 8, 8);
        else
            sc_read_group_avx512(w->skey + q, st, ne, oval + q * 4, 4);
    }
}
#endif

/* Prefetches entries ord[k .. k + m) (clipped to n) and their validity
 * bytes: issued for the next chunk before the probes of the current one,
 * so that the chunk's random reads overlap its probes (the order is
 * public). */
static inline void sc_prefetch(const sc_work *w, const uint32_t *ord, size_t k, size_t m, size_t n)
{
#if defined(__GNUC__)
    const shard_scan *s = w->s;
    for (size_t i = k; i < k + m && i < n; i++) { /* public */
        const unsigned char *pe = s->ent + ord[i] * s->esz;
        for (size_t o = 0; o < s->esz; o += 64)
            __builtin_prefetch(pe + o);
        __builtin_prefetch(pe + s->esz - 1); /* an entry may span two lines */
        __builtin_prefetch(s->valid + ord[i]);
        __asm__ volatile("" : : "r"(pe)); /* else gcc drops the loop */
    }
#else
    (void)w, (void)ord, (void)k, (void)m, (void)n;
#endif
}

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

/* Stages entries ord[k .. k + ne) (prefetched with the previous chunk),
 * prefetches the next chunk's and probes the staged ones against bucket
 * x. */
static void sc_read_bucket(const sc_work *w, sc_stage *st, const uint32_t *ord, size_t k,
                           size_t ne, size_t n, size_t x, uint64_t *oval)
{
    const shard_scan *s = w->s;
    size_t kw = s->kw, vw = s->vs8 / 8, ow = w->ow;
    for (size_t i = 0; i < ne; i++) {
        size_t at = ord[k + i];
        uint64_t valid = obl_ct_mask(s->valid[at] & 1);
        if (kw == 1 && vw == 7 && ow == 8) /* public: 8/56, constant sizes */
            sc_stage_one(st, i, s->ent + at * s->esz, valid, 1, 7, 8);
        else
            sc_stage_one(st, i, s->ent + at * s->esz, valid, kw, vw, ow);
    }
    sc_prefetch(w, ord, k + ne, SC_CHUNK, n);
#if defined(OBL_CT_X86)
    if (w->wide) { /* public */
        sc_read_chunk_avx512(w, st, ne, x, oval);
        return;
    }
    if (s->isa >= OBL_ISA_AVX2 && kw == 1 && ow <= 8) { /* public */
        sc_read_chunk_avx2(w, st, ne, x, oval);
        return;
    }
#endif
    if (kw == 1 && ow == 8) /* public: the common shape, unrolled */
        sc_read_chunk(w, st, ne, x, oval, 1, 8);
    else
        sc_read_chunk(w, st, ne, x, oval, kw, ow);
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
            uint64_t valid = s->valid[c + i] & 1, *m = msg + i * mw;
            OBL_TRACE_TOUCH(OBL_TRACE_REGION_MAP, OBL_TRACE_READ, c + i, 1);
            /* a free entry hashes its position in another domain */
            for (size_t k = 0; k < s->kw; k++)
                m[k] = obl_ct_select64(valid, ld64(e + 8 * k), k ? 0 : (uint64_t)(c + i));
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

/* The scan in three pool jobs, so that every part writes its own buckets
 * of one output array: (1) each part hashes its slice of the entries and
 * counts them by bucket; (between, sc_offsets) the bucket order's
 * positions and the parts' bucket ranges, from these public counts; (2)
 * each part places its slice's entries in bucket order (ord, global
 * positions); (3) each part probes its range of buckets, entry after entry
 * of a bucket while its slots are in cache. The order is a function of the
 * revealed buckets alone. */
static obl_err sc_count_task(void *arg, size_t t)
{
    const sc_work *w = (const sc_work *)arg;
    size_t n = w->bhi - w->blo, lo = w->blo + n * t / w->parts;
    size_t hi = w->blo + n * (t + 1) / w->parts;
    uint32_t *cnt = w->cnt + t * (w->nb + 1);
    sc_buckets(w, lo, hi, w->xs + lo);
    memset(cnt, 0, (w->nb + 1) * 4);
    for (size_t i = lo; i < hi; i++)
        cnt[w->xs[i]]++;
    return OBL_OK;
}

/* Slice t's count of bucket x becomes its first position in the block's
 * bucket order (from blo: buckets ascending, slices in turn within one);
 * the buckets' starts go to the last row; part t takes the buckets from
 * the first whose start reaches t n / parts of the block. Public. */
static void sc_offsets(sc_work *w)
{
    size_t P = w->parts, nb = w->nb, n = w->bhi - w->blo, pos = w->blo, t2 = 1;
    uint32_t *bst = w->cnt + P * (nb + 1);
    w->xcut[0] = 0;
    for (size_t x = 0; x < nb; x++) {
        bst[x] = (uint32_t)pos;
        for (; t2 < P && pos - w->blo >= n * t2 / P; t2++)
            w->xcut[t2] = x;
        for (size_t t = 0; t < P; t++) {
            uint32_t c = w->cnt[t * (nb + 1) + x];
            w->cnt[t * (nb + 1) + x] = (uint32_t)pos;
            pos += c;
        }
    }
    bst[nb] = (uint32_t)pos;
    for (; t2 <= P; t2++)
        w->xcut[t2] = nb;
}

static obl_err sc_place_task(void *arg, size_t t)
{
    const sc_work *w = (const sc_work *)arg;
    size_t n = w->bhi - w->blo, lo = w->blo + n * t / w->parts;
    size_t hi = w->blo + n * (t + 1) / w->parts;
    uint32_t *cnt = w->cnt + t * (w->nb + 1);
    for (size_t i = lo; i < hi; i++)
        w->ord[cnt[w->xs[i]]++] = (uint32_t)i;
    return OBL_OK;
}

static obl_err sc_probe_task(void *arg, size_t t)
{
    const sc_work *w = (const sc_work *)arg;
    const uint32_t *bst = w->cnt + w->parts * (w->nb + 1);
    size_t n = w->bhi, x0 = w->xcut[t], x1 = w->xcut[t + 1];
    if (w->phase == 0) { /* public */
        sc_stage st;
        sc_prefetch(w, w->ord, bst[x0], SC_CHUNK, bst[x1]);
        for (size_t x = x0; x < x1; x++) {
            for (size_t k = bst[x]; k < bst[x + 1]; k += SC_CHUNK) {
                size_t ne = bst[x + 1] - k < SC_CHUNK ? bst[x + 1] - k : SC_CHUNK;
                OBL_TRACE_TOUCH(OBL_TRACE_REGION_MAP, OBL_TRACE_RW, x * w->z, w->z);
                sc_read_bucket(w, &st, w->ord, k, ne, bst[x1], x, w->oval);
            }
        }
        return OBL_OK;
    }
    for (size_t k = bst[x0]; k < bst[x1]; k++) {
#if defined(__GNUC__)
        if (k + SC_PREFETCH < n) { /* public: the order is public */
            const unsigned char *pe = w->s->ent + w->ord[k + SC_PREFETCH] * w->s->esz;
            __builtin_prefetch(pe);
            __builtin_prefetch(pe + w->s->esz - 1);
        }
#endif
        sc_probe(w, w->ord[k], w->xs[w->ord[k]]);
    }
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

/* The entries in blocks of about block_bytes, each hashed, put in
 * bucket order and probed before the next: the bucket-ordered reads of a
 * block then find the lines its hash pass has just brought into the
 * cache, where one bucket order over the whole store fetched every entry
 * from memory at random (docs/shard.md, "Scan"); each block loads and
 * stores the touched slots' accumulators once more. The blocks are a
 * function of the capacity and the entry size alone. */
static void sc_scan(sc_work *w, obl_pool *pool, unsigned phase)
{
    size_t n = (size_t)w->s->cap, bb = w->s->block_bytes, nblk = (n * w->s->esz + bb - 1) / bb;
    w->phase = phase;
    if (phase == 0)
        sc_slot_arrays(w);
    for (size_t k = 0; k < nblk || k == 0; k++) {
        w->blo = nblk ? n * k / nblk : 0;
        w->bhi = nblk ? n * (k + 1) / nblk : n;
        sc_run(w, pool, sc_count_task);
        sc_offsets(w);
        sc_run(w, pool, sc_place_task);
        sc_run(w, pool, sc_probe_task);
    }
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

/* The answers in table order, with their keys: the b request slots (the
 * rest are fillers) compacted to the front (ORCompact, O(T log T) moves,
 * where the sort into request order needs O(T log^2 T)); for a caller
 * that takes the answers in any order (shard_batch.akeys). Records:
 * order word (for shard_keep_first's sort form; dummy and found flags in
 * bits 62 and 61, as the kept records may come in any order; the request's
 * index in bits 32..59), key words, value. */
static obl_err sc_answer_any(sc_work *w)
{
    shard_scan *s = w->s;
    const shard_batch *bt = w->bt;
    size_t kw = s->kw, rs = 8 + 8 * kw + s->vs8;
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
        memcpy(q + 8, t + 8, 8 * kw);
        sc_value(w, o, q + 8 + 8 * kw);
        keep[p] = (uint8_t)real;
    }
    shard_keep_first(r, w->T, rs, keep, w->parts, &s->prg, &s->ac.a);
    for (size_t i = 0; i < bt->b; i++) { /* every request holds a slot */
        const unsigned char *q = r + i * rs;
        uint64_t o = ld64(q);
        memcpy(bt->akeys + i * s->ks, q + 8, s->ks);
        bt->adummy[i] = (o >> 62) & 1;
        bt->found[i] = (o >> 61) & 1;
        if (bt->aidx) /* public */
            bt->aidx[i] = (o >> 32) & SC_IDX;
        memcpy(bt->vout + i * s->vs, q + 8 + 8 * kw, s->vs);
    }
    return OBL_OK;
}

/* 1 if the batch's new keys fit in the entries free after its erases. */
static uint64_t sc_fits(const sc_work *w)
{
    uint64_t fresh = 0, freed = 0, free_now = 0;
    for (size_t p = 0; p < w->T; p++) {
        uint64_t meta = ld64(w->tab + p * w->rs);
        uint64_t real = obl_ct_nonzero64(meta & (SC_DUMMY | SC_FILLER)) ^ 1;
        fresh += real & ((meta >> 28) & 1) & (w->ofnd[p] ^ 1);
        freed += real & ((meta >> 29) & 1) & w->ofnd[p];
    }
    for (uint64_t j = 0; j < w->s->cap; j++)
        free_now += (w->s->valid[j] & 1) ^ 1;
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
        uint64_t isfree = (s->valid[j] & 1) ^ 1;
        st64(q, obl_ct_select64(isfree, fr << 1 | 1, 1ull << 63 | j));
        st64(q + 8, j);
        st64(q + 16, isfree ^ 1);
        memcpy(q + 24, s->ent + j * s->esz, s->esz);
        fr += isfree;
    }
    for (size_t p = 0; p < w->T; p++) {
        unsigned char *q = r + (s->cap + p) * rs;
        const unsigned char *t = w->tab + p * w->rs;
        uint64_t meta = ld64(t);
        uint64_t real = obl_ct_nonzero64(meta & (SC_DUMMY | SC_FILLER)) ^ 1;
        uint64_t fresh = real & ((meta >> 28) & 1) & (w->ofnd[p] ^ 1);
        st64(q, obl_ct_select64(fresh, nr << 1, 1ull << 63 | (s->cap + p)));
        st64(q + 8, 1ull << 63 | p);
        st64(q + 16, 1);
        memcpy(q + 24, t + 8, 8 * s->kw + s->vs8);
        nr += fresh;
    }
}

/* New keys into free entries: sort so that the new key of rank r lies just
 * before the free entry of rank r, copy, sort back by position. */
static void sc_insert(sc_work *w)
{
    shard_scan *s = w->s;
    size_t rs = 24 + s->esz, n = (size_t)s->cap + w->T;
    unsigned char *r = w->ins;
    sc_insert_records(w, r, rs);
    sc_sort(w, r, n, rs);
    for (size_t p = 0; p + 1 < n; p++) {
        uint64_t sk = ld64(r + p * rs), nx = ld64(r + (p + 1) * rs);
        uint64_t m = (obl_ct_nonzero64(sk & (1ull << 63 | 1)) ^ 1) & obl_ct_eq64(nx, sk | 1);
        obl_ct_cmov(m, r + (p + 1) * rs + 16, r + p * rs + 16, 8 + s->esz);
    }
    for (size_t p = 0; p < n; p++) {
        uint64_t aux = ld64(r + p * rs + 8);
        st64(r + p * rs, aux); /* slots' 2^63 + p sort last */
    }
    sc_sort(w, r, n, rs);
    for (uint64_t j = 0; j < s->cap; j++) {
        s->valid[j] = (uint8_t)(ld64(r + j * rs + 16) & 1);
        memcpy(s->ent + j * s->esz, r + j * rs + 24, s->esz);
    }
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
    w->ow = (s->vs8 / 8 + 1 + 3) & ~(size_t)3;
    w->wide = s->isa >= OBL_ISA_AVX512 && s->kw == 1 && w->ow <= 8; /* public */
    w->zp = w->wide ? (w->z + 7) & ~(size_t)7 : (w->z + 3) & ~(size_t)3;
    w->n0 = bt->b + w->T;
    w->rs = 8 + 8 * s->kw + (w->writes ? s->vs8 : 0);
    w->k0 = obl_prg_u64(&s->prg);
    w->k1 = obl_prg_u64(&s->prg);
    s->pending = w;
    obl_err e = sc_work_alloc(w);
    if (e == OBL_OK)
        e = sc_build(w);
    if (e == OBL_OK) {
        sc_scan(w, pool, 0);
        e = bt->akeys ? sc_answer_any(w) : sc_route_back(w);
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
