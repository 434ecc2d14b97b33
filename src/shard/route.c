/* SPDX-License-Identifier: MIT */
/*
 * The sharded map's balancer for keys and values of any size: a batch of B
 * requests becomes S shard batches of exactly b entries, every distinct key
 * once in its shard's batch with the batch's last write of it, the rest
 * dummies; the shards' answers then go back to every request, duplicates
 * included (Snoopy, Dauterman et al., SOSP 2021, section 4). Built from
 * bitonic sorts and linear passes with constant-time selects, so the trace
 * depends on B, S, b and the sizes alone (docs/shard.md, "Balancer").
 */
#include <obl/lb.h>
#include <obl/sort.h>

#include "shard/shard_internal.h"

#include "common/secret.h"
#include "ct.h"
#include "omap/siphash.h"
#include "sort/par.h"

static inline uint64_t ld64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline void st64(unsigned char *p, uint64_t w) { memcpy(p, &w, 8); }

/* see shard_internal.h */
size_t shard_route_b(size_t B, unsigned S, unsigned lambda)
{
    return obl_lb_shard_batch_size(B, S, lambda);
}

/* bytes of working records from the balancer's arena, which grows to the
 * largest batch's need: allocating them afresh cost page faults, zeroing
 * and wiping every batch. NULL without memory. Public: bytes. */
static unsigned char *rt_arena(shard_route *r, size_t bytes)
{
    if (r->arena_bytes < bytes) { /* public */
        obl_free(r->ac, r->arena, r->arena_bytes);
        r->arena_bytes = 0;
        r->arena = (unsigned char *)obl_alloc(r->ac, bytes, 64);
        if (!r->arena)
            return NULL;
        r->arena_bytes = bytes;
    }
    return r->arena;
}

/* see shard_internal.h */
void shard_route_release(shard_route *r)
{
    if (r->arena)
        obl_free(r->ac, r->arena, r->arena_bytes);
    r->arena = NULL;
    r->arena_bytes = 0;
    if (r->order)
        obl_free(r->ac, r->order, r->order_bytes);
    r->order = NULL;
    r->order_bytes = 0;
    r->order_B = 0;
}

/* see shard_internal.h */
uint64_t shard_route_shard_of(const shard_route *r, const unsigned char *key)
{
    __extension__ typedef unsigned __int128 u128;
    uint64_t h = obl_siphash24(r->k0, r->k1, key, r->ks);
    return (uint64_t)(((u128)h * r->S) >> 64);
}

/* 1 if the kw key words at a and b are equal. */
static inline uint64_t key_eq(const unsigned char *a, const unsigned char *b, size_t kw)
{
    uint64_t acc = 0;
    for (size_t k = 0; k < kw; k++)
        acc |= ld64(a + 8 * k) ^ ld64(b + 8 * k);
    return obl_ct_nonzero64(acc) ^ 1;
}

/*
 * Sorts records [shard][key word][x] by all three (x < 2^51, shard < 2^13):
 * packed into two words (shard, key, x in 13 + 64 + 51 bits) for obl/sort.h,
 * and unpacked after (x stays in the third word). Longer keys: rt_fp_sort.
 */
#define RT_LO51 ((1ull << 51) - 1)

static void rt_pack(unsigned char *a, size_t n, size_t rs)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char *q = a + i * rs;
        uint64_t s = ld64(q), k = ld64(q + 8), x = ld64(q + 16);
        st64(q, s << 51 | k >> 13);
        st64(q + 8, (k & 0x1fff) << 51 | (x & RT_LO51));
    }
}

static void rt_unpack(unsigned char *a, size_t n, size_t rs)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char *q = a + i * rs;
        uint64_t h = ld64(q), l = ld64(q + 8);
        st64(q, h >> 51);
        st64(q + 8, (h & RT_LO51) << 13 | l >> 51);
    }
}

/* scr: the column network's buffer (shard_sort_bounded_in). */
static void rt_sort_keyed(const shard_route *r, unsigned char *a, size_t n, size_t rs,
                          uint64_t *scr, size_t scr_bytes)
{
    rt_pack(a, n, rs);
    /* shard <= S < 2^13: bounded */
    shard_sort_bounded_in(a, n, rs, 2, r->threads, r->prg, &r->ac->a, scr, scr_bytes);
    rt_unpack(a, n, rs);
}

/* The arena's split into the records (bytes), the sorts' column buffer for
 * B records (*scr) and `more` bytes after it (*extra); NULL without memory
 * (or for sizes that overflow). */
static unsigned char *rt_arena_scr(shard_route *r, size_t bytes, size_t B, uint64_t **scr,
                                   size_t *scr_bytes, size_t more, unsigned char **extra)
{
    size_t off = (bytes + 63) & ~(size_t)63, sc = shard_sort_scratch(B), end = off + sc;
    if (off < bytes || sc == 0 || end < off || end + more < end)
        return NULL;
    unsigned char *a = rt_arena(r, end + more);
    *scr = a ? (uint64_t *)(a + off) : NULL;
    *scr_bytes = sc;
    *extra = a ? a + end : NULL;
    return a;
}

/* Split records: [shard][key words][pos][op][value]; op bit 8: filler. */
#define RT_FILLER (1ull << 8)

typedef struct rt_split {
    shard_route *r;
    size_t B, b, n, rs, vo; /* records (2L), record bytes, value offset */
    size_t L;               /* max(B, S b) */
    unsigned char *a;
    uint64_t *scr;          /* the column sorts' buffer, for B records */
    size_t scr_bytes;
} rt_split;

/*
 * Keys of more than one word: the requests sorted by (shard, fingerprint,
 * position), two words of 13 + 91 + 24 bits, so that the column network
 * sorts them as it sorts one-word keys (a sort by all key words would take
 * the record network). The fingerprint is the shard hash h (64 bits) and
 * the top 27 bits of a second SipHash under the map's key (of the key
 * words and a domain word 1), a secret PRF: two distinct keys of a batch
 * share it with probability at most B^2 2^-92 (2^-44 at B = 2^24). Equal
 * keys share it, so a key's requests end adjacent, by position; the
 * unpacking checks every neighbour pair with equal fingerprints for exact
 * equality, and on a collision (a public event of that probability) the
 * requests are sorted again by all key words (docs/shard.md, "Balancer").
 */
#define RT_POS24 ((1ull << 24) - 1)
#define RT_FP_CHUNK 64 /* keys hashed at once (SipHash lanes) */

/* The sort form of the records [0][key words][pos][op]...: word 0 (shard,
 * h >> 13), key word 0 (h & 0x1fff, h2 >> 37, pos), the pos word the key's
 * first word. r->test_fp (tests): the fingerprints zeroed, so that every
 * two keys of a shard collide. */
static void rt_fp_pack(rt_split *t, const unsigned char *keys)
{
    const shard_route *r = t->r;
    __extension__ typedef unsigned __int128 u128;
    size_t kw = r->kw, mw = kw + 1, xo = 8 + 8 * kw;
    uint64_t msg[RT_FP_CHUNK * (OBL_SHARD_SCAN_MAX_KEY8 / 8 + 1)], h[RT_FP_CHUNK],
        h2[RT_FP_CHUNK];
    int isa = obl_isa_pick();
    uint64_t fpm = r->test_fp ? 0 : UINT64_MAX;
    for (size_t c = 0; c < t->B; c += RT_FP_CHUNK) {
        size_t m = t->B - c < RT_FP_CHUNK ? t->B - c : RT_FP_CHUNK;
        for (size_t i = 0; i < m; i++) {
            memcpy(msg + i * mw, t->a + (c + i) * t->rs + 8, 8 * kw);
            msg[i * mw + kw] = 1;
        }
        obl_siphash24_many_isa(isa, r->k0, r->k1, keys + c * r->ks, r->ks, r->ks, m, h);
        obl_siphash24_many_isa(isa, r->k0, r->k1, msg, 8 * mw, 8 * mw, m, h2);
        for (size_t i = 0; i < m; i++) {
            unsigned char *q = t->a + (c + i) * t->rs;
            uint64_t s = (uint64_t)(((u128)h[i] * r->S) >> 64), f = h[i] & fpm;
            uint64_t k0 = ld64(q + 8), pos = ld64(q + xo);
            st64(q, s << 51 | f >> 13);
            st64(q + 8, (f & 0x1fff) << 51 | ((h2[i] & fpm) >> 37) << 24 | pos);
            st64(q + xo, k0);
        }
    }
}

/* Back to [shard][key words][pos]...; returns 1 if two neighbours with
 * the same (shard, fingerprint) have different keys. */
static uint64_t rt_fp_unpack(rt_split *t)
{
    size_t kw = t->r->kw, xo = 8 + 8 * kw;
    uint64_t coll = 0, p0 = 0, p1 = 0;
    for (size_t p = 0; p < t->B; p++) {
        unsigned char *q = t->a + p * t->rs;
        uint64_t w0 = ld64(q), w1 = ld64(q + 8);
        uint64_t same = p ? obl_ct_eq64(w0, p0) & obl_ct_eq64(w1 >> 24, p1 >> 24) : 0;
#ifdef OBL_TEST_PLANT_FP_BRANCH
        /* tests only: the negative control of test_shard_keys' memcheck
         * run (tests/shard/tests.cmake) branches on the fingerprints */
        if (same)
            __asm__ volatile("" ::: "memory");
#endif
        st64(q, w0 >> 51);
        st64(q + 8, ld64(q + xo));
        st64(q + xo, w1 & RT_POS24);
        coll |= same & (p ? key_eq(q + 8, q + 8 - t->rs, kw) ^ 1 : 0);
        p0 = w0;
        p1 = w1;
    }
    return coll;
}

/* Longer keys' sort (above): by fingerprint, checked, and by all key
 * words after a collision. */
static void rt_fp_sort(rt_split *t, const unsigned char *keys)
{
    const shard_route *r = t->r;
    rt_fp_pack(t, keys);
    /* shard <= S < 2^13: bounded */
    shard_sort_bounded_in(t->a, t->B, t->rs, 2, r->threads, r->prg, &r->ac->a, t->scr,
                          t->scr_bytes);
    uint64_t coll = rt_fp_unpack(t);
    /* LEAK: a fingerprint collision of two keys of the batch under the
     * map's secret PRF (probability <= 2^-44); test_fp 2 (tests, the
     * negative control) ignores it */
    if (OBL_DECLASSIFY_VAL(coll) && r->test_fp != 2) /* public */
        shard_bitonic_sort_words(t->a, t->B, t->rs, 2 + r->kw);
}

/* The B requests, sorted by (shard, key, position); for keys of more than
 * one word by (shard, fingerprint, position), equal keys adjacent. */
static void rt_fill(rt_split *t, const uint64_t *ops, const unsigned char *keys,
                    const unsigned char *vin)
{
    const shard_route *r = t->r;
    int fp = r->kw > 1; /* public */
    for (size_t i = 0; i < t->B; i++) {
        unsigned char *q = t->a + i * t->rs;
        const unsigned char *k = keys + i * r->ks;
        memset(q, 0, t->rs); /* the arena holds the last batch's records */
        st64(q, fp ? 0 : shard_route_shard_of(r, k));
        memcpy(q + 8, k, r->ks);
        st64(q + 8 + 8 * r->kw, i);
        uint64_t op = ops ? ops[i] : 0; /* NULL: a get batch */
        st64(q + 16 + 8 * r->kw, obl_ct_eq64(op, 1) | obl_ct_eq64(op, 2) << 1);
        if (vin)
            memcpy(q + t->vo, vin + i * r->vs, r->vs);
    }
    if (fp)
        rt_fp_sort(t, keys);
    else
        rt_sort_keyed(r, t->a, t->B, t->rs, t->scr, t->scr_bytes);
}

/* Each record gets its key's last write so far (op and value); the last
 * record of a key, its representative (rep[p] = 1), keeps its shard and
 * its position, the others move past the last shard, all with one first
 * word, so that the representatives compacted to the front leave the B
 * records sorted. The order of the requests is kept for the join of this
 * batch (r->order: position << 1 | representative), which finds each
 * key's last request and every request's position there instead of
 * sorting its own (rt_slots_expand). */
static void rt_dedupe(rt_split *t, unsigned char *cval, uint8_t *rep)
{
    shard_route *r = t->r;
    size_t kw1 = 1 + r->kw, vb = t->vo < t->rs ? r->vs8 : 0;
    uint64_t cop = 0;
    for (size_t p = 0; p < t->B; p++) {
        unsigned char *q = t->a + p * t->rs;
        uint64_t same = p ? key_eq(q, q - t->rs, kw1) : 0;
        uint64_t op = ld64(q + 16 + 8 * r->kw), w = obl_ct_nonzero64(op);
        cop = obl_ct_select64(w, op, obl_ct_select64(same, cop, 0));
        st64(q + 16 + 8 * r->kw, cop);
        if (vb) {
            obl_ct_czero(same ^ 1, cval, vb);
            obl_ct_cmov(w, cval, q + t->vo, vb);
            memcpy(q + t->vo, cval, vb);
        }
    }
    for (size_t p = 0; p < t->B; p++) {
        unsigned char *q = t->a + p * t->rs;
        uint64_t last = p + 1 < t->B ? key_eq(q, q + t->rs, kw1) ^ 1 : 1;
        st64(r->order + 8 * p, ld64(q + 8 + 8 * r->kw) << 1 | last);
        st64(q, obl_ct_select64(last, ld64(q) << 33 | (uint64_t)p, (uint64_t)r->S << 33));
        rep[p] = (uint8_t)last;
    }
    r->order_B = t->B;
}

/* A record above every other (the merge's pads): kept by no shard. */
static void rt_split_pad(const rt_split *t, unsigned char *q)
{
    memset(q, 0, t->rs);
    st64(q, UINT64_MAX);
}

static void rt_keep(const shard_route *r, unsigned char *a, size_t n, size_t rs,
                    const uint8_t *keep);

/* The n = 2L records (L = max(B, S b)) sorted by shard: the B requests,
 * their representatives compacted to the front (rep: rt_dedupe's flags;
 * they stay in (shard, key) order, the others after them with one larger
 * first word: sorted) and laid out descending after pads in [0, L), the b
 * fillers per shard (in shard order already) and pads in [L, 2L), then one
 * bitonic merge, instead of a sort of all B + S b records (which the
 * column network would pad to the next power of two). */
static void rt_by_shard(rt_split *t, const uint8_t *rep)
{
    const shard_route *r = t->r;
    size_t sb = (size_t)r->S * t->b, rs = t->rs;
    rt_keep(r, t->a, t->B, rs, rep);
    for (size_t i = 0; i < t->B / 2; i++) /* descending */
        obl_ct_cswap(1, t->a + i * rs, t->a + (t->B - 1 - i) * rs, rs);
    memmove(t->a + (t->L - t->B) * rs, t->a, t->B * rs);
    for (size_t j = 0; j < t->L - t->B; j++)
        rt_split_pad(t, t->a + j * rs);
    for (size_t f = 0; f < sb; f++) {
        unsigned char *q = t->a + (t->L + f) * rs;
        memset(q, 0, rs);
        st64(q, (uint64_t)(f / t->b) << 33 | 1ull << 32 | (uint64_t)(t->B + f));
        st64(q + 16 + 8 * r->kw, RT_FILLER);
    }
    for (size_t j = t->L + sb; j < t->n; j++)
        rt_split_pad(t, t->a + j * rs);
    shard_bitonic_merge_words(t->a, t->n, rs, 1);
}

/* obl_compact's randomness parameter (obl_sort_params): the generator. */
static int rt_random(void *opaque, void *buf, size_t len)
{
    obl_prg_fill((obl_prg *)opaque, buf, len);
    return 0;
}

/* Sorts and compactions of at least this many records may use threads. */
#define RT_PAR_MIN ((size_t)1 << 14)

/* obl/sort.h's parameters for records of rs bytes and n of them. */
static obl_sort_params rt_params(const shard_route *r, size_t rs, size_t ks, size_t n)
{
    obl_sort_params sp = {rs, ks, n >= RT_PAR_MIN ? r->threads : 1, rt_random, r->prg,
                          &r->ac->a};
    return sp;
}

/* Moves the records with keep[i] = 1 to the front in their order:
 * ORCompact (n lg n moves) at every n, which at the balancer's sizes
 * costs less than shard_keep_first's sort below 2^13 records; that sort
 * (by the first word, which the caller sets for it) without memory. */
static void rt_keep(const shard_route *r, unsigned char *a, size_t n, size_t rs,
                    const uint8_t *keep)
{
    obl_sort_params sp = rt_params(r, rs, 8, n);
    if (obl_compact(a, n, keep, NULL, &sp) != OBL_OK)
        shard_keep_first(a, n, rs, NULL, r->threads, r->prg, &r->ac->a);
}

/* Appends b fillers per shard, sorts by shard (representatives first),
 * keeps the first b of each shard (kept[], n bytes) and compacts them into
 * place. Returns 1 if a shard had more than b keys. */
static uint64_t rt_place(rt_split *t, uint8_t *kept)
{
    const shard_route *r = t->r;
    rt_by_shard(t, kept); /* kept[0, B): the representatives (rt_dedupe) */
    uint64_t prev = UINT64_MAX, rank = 0, ovf = 0;
    for (size_t p = 0; p < t->n; p++) {
        unsigned char *q = t->a + p * t->rs;
        uint64_t w0 = ld64(q), x = w0 >> 33, filler = (w0 >> 32) & 1;
        rank = obl_ct_select64(obl_ct_eq64(x, prev), rank + 1, 0);
        uint64_t inshard = obl_ct_lt64(x, r->S), keep = obl_ct_lt64(rank, t->b) & inshard;
        ovf |= (keep ^ 1) & (filler ^ 1) & inshard;
        st64(q, obl_ct_select64(keep, x * t->b + rank, 1ull << 63 | (uint64_t)p));
        kept[p] = (uint8_t)keep;
        prev = x;
    }
    rt_keep(r, t->a, t->n, t->rs, kept);
    return ovf;
}

/* Up to this many shards the split counts each shard's representatives
 * in a pass of S selects a record and expands them into their slots
 * (rt_place_counted); with more, the merge with the fillers (rt_place). */
#define RT_COUNT_MAX_S 16u

/* The representatives compacted to the front (in (shard, key) order), each
 * shard's counted, and expanded to the S b slots: slot s b + k is real iff
 * k < count_s (obl_expand puts the k-th representative of shard s there);
 * the other slots become fillers. flag: n bytes. *ovf_out: 1 if a shard
 * had more than b keys (the slots are then not used). NOMEM or OBL_OK. */
static obl_err rt_place_counted(rt_split *t, uint8_t *flag, uint64_t *ovf_out)
{
    const shard_route *r = t->r;
    size_t sb = (size_t)r->S * t->b, rs = t->rs;
    rt_keep(r, t->a, t->B, rs, flag); /* flag[0, B): the representatives */
    uint64_t cnt[RT_COUNT_MAX_S] = {0}, ovf = 0;
    for (size_t p = 0; p < t->B; p++) {
        uint64_t x = ld64(t->a + p * rs) >> 33; /* S for the others */
        for (unsigned s = 0; s < r->S; s++)
            cnt[s] += obl_ct_eq64(x, s);
    }
    for (unsigned s = 0; s < r->S; s++)
        ovf |= obl_ct_lt64(t->b, cnt[s]);
    for (size_t d = 0; d < sb; d++)
        flag[d] = (uint8_t)obl_ct_lt64(d % t->b, cnt[d / t->b]);
    obl_sort_params sp = rt_params(r, rs, 8, sb);
    *ovf_out = ovf;
    if (obl_expand(t->a, sb, flag, &sp) != OBL_OK)
        return OBL_ERR_NOMEM;
    for (size_t d = 0; d < sb; d++) {
        unsigned char *q = t->a + d * rs;
        uint64_t f = flag[d] ^ 1;
        obl_ct_czero(f, q, rs);
        st64(q + 16 + 8 * r->kw, ld64(q + 16 + 8 * r->kw) | f * RT_FILLER);
    }
    return OBL_OK;
}

/* see shard_internal.h */
obl_err shard_route_split(shard_route *r, size_t B, size_t b, const uint64_t *ops,
                          const unsigned char *keys, const unsigned char *vin, shard_bufs *out)
{
    size_t sb = (size_t)r->S * b, L = B > sb ? B : sb;
    rt_split t = {r, B, b, 2 * L, 0, 0, L, NULL, NULL, 0};
    t.vo = 8 * (3 + r->kw);
    t.rs = t.vo + (vin ? r->vs8 : 0);
    size_t bytes;
    if (L > (SIZE_MAX >> 2) || !obl_mul_ok(t.n, t.rs, &bytes) ||
        (r->kw > 1 && B > RT_POS24 + 1)) /* rt_fp_pack's 24 position bits */
        return OBL_ERR_TOO_LARGE;
    unsigned char *none;
    t.a = rt_arena_scr(r, bytes, B, &t.scr, &t.scr_bytes, 0, &none);
    r->order_B = 0;
    if (r->order_bytes < 8 * B) { /* public; B < SIZE_MAX / 32 here */
        obl_free(r->ac, r->order, r->order_bytes);
        r->order_bytes = 0;
        r->order = (unsigned char *)obl_alloc(r->ac, 8 * B, 64);
        r->order_bytes = r->order ? 8 * B : 0;
    }
    unsigned char *cval = (unsigned char *)obl_alloc(r->ac, r->vs8, 64);
    uint8_t *kept = (uint8_t *)obl_alloc(r->ac, t.n, 64);
    obl_err e = OBL_OK;
    if (!t.a || !cval || !kept || !r->order) {
        e = OBL_ERR_NOMEM;
        goto done;
    }
    rt_fill(&t, ops, keys, vin);
    rt_dedupe(&t, cval, kept);
    uint64_t ovf = 0;
    if (r->S <= RT_COUNT_MAX_S && B <= sb) /* public */
        e = rt_place_counted(&t, kept, &ovf);
    else
        ovf = rt_place(&t, kept);
    if (e != OBL_OK)
        goto done;
    /* a public capacity event: a shard got more than b keys (<= 2^-lambda) */
    if (OBL_DECLASSIFY_VAL(ovf)) {
        e = OBL_ERR_FULL;
        goto done;
    }
    for (size_t j = 0; j < (size_t)r->S * b; j++) {
        const unsigned char *q = t.a + j * t.rs;
        uint64_t op = ld64(q + 16 + 8 * r->kw);
        out->op[j] = op & 3;
        out->dummy[j] = (op >> 8) & 1;
        memcpy(out->keys + j * r->ks, q + 8, r->ks);
        if (vin)
            memcpy(out->vin + j * r->vs, q + t.vo, r->vs);
    }
done:
    obl_free(r->ac, cval, r->vs8);
    obl_free(r->ac, kept, t.n);
    return e;
}

/*
 * The join for one-word keys: no sort or merge of join records. The split
 * sent the representative of every distinct key (the last request of its
 * key in (shard, key, position) order, r->order) to slot shard * b + rank,
 * rank its place among its shard's representatives in that order, and the
 * fillers after them. So the answers of the real slots, taken by slot,
 * are the representatives' answers in request-sorted order: ORCompact
 * moves them to the front, obl_expand puts the k-th of them at the k-th
 * representative among the B sorted requests, and a backward pass hands
 * each answer to the requests of its key before the representative.
 * Answers in any order (the scan's) are first put in slot order by a
 * sort of each shard's: by request index if the engine gives it
 * (shard_bufs.aidx), else on (dummy, key). Answer records: [found][value]
 * (8 + vs8 bytes).
 */
typedef struct rt_slots {
    shard_route *r;
    size_t B, b, sb, n;    /* n = max(B, S b) records */
    size_t ar, tr;         /* answer record bytes; keyed answer record bytes */
    unsigned char *a;      /* n records of tr bytes */
    uint8_t *flag;         /* n bytes */
    uint64_t *scr;         /* the column sort's buffer, for B records */
    size_t scr_bytes;
    unsigned sort_threads; /* threads of each shard's sort (rt_sort_shards) */
    unsigned sort_tasks;   /* tasks of the indexed sorts (rt_sort_shards_idx) */
} rt_slots;

/* The real answers (flag[j] = 1) of the S b records in slot order
 * compacted to the front. */
static obl_err rt_slots_compact(rt_slots *t)
{
    obl_sort_params sp = rt_params(t->r, t->ar, 8, t->sb);
    return obl_compact(t->a, t->sb, t->flag, NULL, &sp);
}

/* Answers in request order (slot j is shard j / b's j % b-th request). */
static obl_err rt_slots_inorder(rt_slots *t, const shard_bufs *in)
{
    const shard_route *r = t->r;
    for (size_t j = 0; j < t->sb; j++) {
        unsigned char *q = t->a + j * t->ar;
        st64(q, in->found[j] & 1);
        memcpy(q + 8, in->vout + j * r->vs, r->vs);
        memset(q + 8 + r->vs, 0, r->vs8 - r->vs);
        t->flag[j] = (uint8_t)((in->adummy[j] & 1) ^ 1);
    }
    return rt_slots_compact(t);
}

/* The sorts of shards [lo, hi)'s keyed answers by (dummy, key), several
 * ranges at once (obl_par_for): shard_sort of two key words draws no
 * randomness (the record network, or obl_sort's deterministic networks
 * from 2^13 records), so the shared generator is not used from threads;
 * the allocator must be thread-safe (the sharded map's is locked). */
static void rt_sort_shards(void *ctx, size_t lo, size_t hi)
{
    const rt_slots *t = (const rt_slots *)ctx;
    for (size_t s = lo; s < hi; s++)
        shard_sort(t->a + s * t->b * t->tr, t->b, t->tr, 2, t->sort_threads, t->r->prg,
                   &t->r->ac->a);
}

/* Answers in any order, with their keys (each shard's among its b): each
 * shard's records [dummy][key][found][value] sorted, which puts its real
 * answers in slot order (by key) and its dummies after them, as in
 * request order; then made answer records in place (record j's ends
 * before record j + 1's). */
static obl_err rt_slots_keyed(rt_slots *t, const shard_bufs *in)
{
    const shard_route *r = t->r;
    for (size_t j = 0; j < t->sb; j++) {
        unsigned char *q = t->a + j * t->tr;
        memset(q, 0, t->tr);
        st64(q, in->adummy[j] & 1);
        memcpy(q + 8, in->akeys + j * r->ks, r->ks);
        st64(q + 16, in->found[j] & 1);
        memcpy(q + 24, in->vout + j * r->vs, r->vs);
    }
    /* each shard's b apart (S b lg^2 b): with S >= T, the shards' sorts on
     * the T threads, one thread each; else one after another on T threads */
    int spread = r->S >= r->threads; /* public */
    t->sort_threads = spread ? 1 : r->threads;
    obl_par_for(spread ? r->threads : 1, r->S, 1, rt_sort_shards, t);
    for (size_t j = 0; j < t->sb; j++) {
        t->flag[j] = (uint8_t)(ld64(t->a + j * t->tr) ^ 1);
        memmove(t->a + j * t->ar, t->a + j * t->tr + 16, t->ar);
    }
    return rt_slots_compact(t);
}

/* Task k of the sorts of the shards' indexed answers [index << 1 |
 * found][value] by that word (distinct indices): shards [k S / P, (k + 1)
 * S / P) of P tasks (obl_par_for, one task a thread), each with its slice
 * of the column buffer (the last sort's, free until then). obl_sort_split
 * sorts the largest power-of-two prefix of b in columns and merges the
 * rest in, where the column network would pad b to 2^16 rows (b = 33,670)
 * and the record network takes more instructions (docs/shard.md,
 * "Balancer"). It draws no randomness. */
static void rt_sort_shards_idx(void *ctx, size_t lo, size_t hi)
{
    const rt_slots *t = (const rt_slots *)ctx;
    size_t S = t->r->S, P = t->sort_tasks, m = 1;
    while (m * 2 <= t->b)
        m *= 2;
    for (size_t k = lo; k < hi; k++) {
        size_t per = m * t->ar / 8, fits = (k + 1) * per * 8 <= t->scr_bytes; /* public */
        uint64_t *scr = fits ? t->scr + k * per : NULL;
        for (size_t s = k * S / P; s < (k + 1) * S / P; s++) {
            unsigned char *a = t->a + s * t->b * t->ar;
            obl_sort_params sp = rt_params(t->r, t->ar, 8, t->b);
            sp.threads = t->sort_threads;
            if (obl_sort_split(a, t->b, &sp, scr, fits ? per * 8 : 0) != OBL_OK) /* NOMEM */
                shard_bitonic_sort_words(a, t->b, t->ar, 1);
        }
    }
}

/* Answers in any order with their request indices (shard_bufs.aidx):
 * each shard's b records [index << 1 | found][value] sorted by index are
 * in slot order, dummies included: records of 8 + vs8 bytes sorted by one
 * word, where rt_slots_keyed sorts 24 + vs8 (padded) by two. */
static obl_err rt_slots_indexed(rt_slots *t, const shard_bufs *in)
{
    const shard_route *r = t->r;
    for (size_t j = 0; j < t->sb; j++) {
        unsigned char *q = t->a + j * t->ar;
        st64(q, in->aidx[j] << 1 | (in->found[j] & 1));
        memcpy(q + 8, in->vout + j * r->vs, r->vs);
        memset(q + 8 + r->vs, 0, r->vs8 - r->vs);
    }
    int spread = r->S >= r->threads; /* public */
    t->sort_threads = spread ? 1 : r->threads;
    t->sort_tasks = spread ? r->threads : 1;
    obl_par_for(t->sort_tasks, t->sort_tasks, 1, rt_sort_shards_idx, t);
    for (size_t j = 0; j < t->sb; j++) {
        unsigned char *q = t->a + j * t->ar;
        st64(q, ld64(q) & 1);
        t->flag[j] = (uint8_t)((in->dummy[j] & 1) ^ 1);
    }
    return rt_slots_compact(t);
}

/* The representatives' answers at their places among the B sorted
 * requests, then every request's: flag[i] = request i (in r->order) is
 * its key's last; a backward pass copies each representative's answer to
 * the requests before it with its key. Each record's first word becomes
 * the request's position and found flag. */
static obl_err rt_slots_expand(rt_slots *t, unsigned char *cval)
{
    const shard_route *r = t->r;
    const unsigned char *o = r->order;
    for (size_t i = 0; i < t->B; i++)
        t->flag[i] = (uint8_t)(ld64(o + 8 * i) & 1);
    for (size_t j = t->sb; j < t->n; j++) /* B > S b: never, b >= B / S */
        memset(t->a + j * t->ar, 0, t->ar);
    obl_sort_params sp = rt_params(r, t->ar, 8, t->B);
    obl_err e = obl_expand(t->a, t->B, t->flag, &sp);
    for (size_t i = t->B; e == OBL_OK && i-- > 0;) {
        unsigned char *q = t->a + i * t->ar;
        obl_ct_cmov(t->flag[i], cval, q, t->ar);
        memcpy(q, cval, t->ar);
        st64(q, (ld64(o + 8 * i) & ~1ull) | (ld64(cval) & 1));
    }
    return e;
}

/* B slim records [position << 1 | found][value] back into batch order
 * (by that word: the column network up to 8 words) and out. */
static void rt_out_sorted(const shard_route *r, unsigned char *a, size_t B, size_t os,
                          uint64_t *scr, size_t scr_bytes, unsigned char *vout,
                          uint64_t *found)
{
    shard_sort_bounded_in(a, B, os, 1, r->threads, r->prg, &r->ac->a, scr, scr_bytes);
    for (size_t i = 0; i < B; i++) {
        found[i] = ld64(a + i * os) & 1;
        memcpy(vout + i * r->vs, a + i * os + 8, r->vs);
    }
}

/* The join (above). */
static obl_err rt_join_slots(shard_route *r, size_t B, size_t b, const shard_bufs *in,
                             unsigned char *vout, uint64_t *found)
{
    size_t sb = (size_t)r->S * b;
    /* keyed records padded to whole 32-byte vectors for the record network */
    rt_slots t = {r, B, b, sb, B > sb ? B : sb, 8 + r->vs8, (24 + r->vs8 + 31) & ~(size_t)31,
                  NULL, NULL, NULL, 0, 1, 1};
    size_t bytes;
    if (t.n > (SIZE_MAX >> 2) || !obl_mul_ok(t.n, t.tr, &bytes))
        return OBL_ERR_TOO_LARGE;
    unsigned char *fl;
    t.a = rt_arena_scr(r, bytes, B, &t.scr, &t.scr_bytes, t.n, &fl);
    t.flag = fl;
    unsigned char *cval = (unsigned char *)obl_alloc(r->ac, t.ar, 64);
    obl_err e = t.a && cval ? OBL_OK : OBL_ERR_NOMEM;
    if (e == OBL_OK) /* public: the engine's contract */
        e = in->akeys == in->keys ? rt_slots_inorder(&t, in)
            : in->aidx            ? rt_slots_indexed(&t, in)
            : r->kw == 1          ? rt_slots_keyed(&t, in)
                                  : OBL_ERR_INVALID_ARG; /* rt_fp_sort's slot order */
    if (e == OBL_OK)
        e = rt_slots_expand(&t, cval);
    if (e == OBL_OK)
        rt_out_sorted(r, t.a, B, t.ar, t.scr, t.scr_bytes, vout, found);
    obl_free(r->ac, cval, t.ar);
    return e;
}

/* see shard_internal.h */
obl_err shard_route_join(shard_route *r, size_t B, size_t b, const unsigned char *keys,
                         const shard_bufs *in, unsigned char *vout, uint64_t *found)
{
    (void)keys; /* the split kept the requests' order (r->order) */
    if (r->order_B != B) /* public: no split of this batch before */
        return OBL_ERR_INVALID_ARG;
    return rt_join_slots(r, B, b, in, vout, found);
}
