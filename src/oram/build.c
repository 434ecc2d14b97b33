/* SPDX-License-Identifier: MIT */
/*
 * Oblivious bulk build of a Circuit ORAM tree (32-bit metadata): places n
 * blocks with fresh uniform secret leaves in O(n log^2 n) work with a memory
 * trace that depends on n, vs and the tree shape only.
 *
 * Why this is needed: writing each block straight into a bucket on its
 * leaf's path would touch addresses chosen by the secret leaves, and the
 * layout would reveal the position map. Instead (docs/oram.md, "Build"):
 *
 *  1. draw leaf_i for i = 0 .. n-1 (sequential, public addresses);
 *  2. bitonic-sort the keys (leaf_i << 32 | i), without the payloads
 *     (Batcher 1968; a fixed network: the compare-exchange pattern is
 *     public; blocked for the caches: obl_bsort_sort, src/sort/);
 *  3. one sequential pass over the sorted blocks computes each block's slot
 *     by first fit from the leaf bucket upwards (every bucket on a block's
 *     path is legal for it): per level a counter of the bucket currently
 *     being filled, reset when the sorted leaves enter a new bucket. Blocks
 *     that fit nowhere go to the stash (at most S of them; else the whole
 *     build is redone with fresh leaves, a public event of negligible
 *     probability);
 *  4. sort the (id, slot, leaf) triples back to id order (keys only), so
 *     that they line up with the payloads, which have not moved; then
 *     bitonic-sort the blocks with their payloads by slot (the only sort
 *     that moves payloads; the stash's slots are numbered after the
 *     tree's here), move the stash's blocks, the last few, to their slots
 *     by a scan of a window of P positions, and route the tree's blocks
 *     to their slots with an oblivious expansion: the order-preserving
 *     offset compaction of Sasy, Johnson and Goldberg (ORCompact, CCS
 *     2022) run backwards, depth first (obl_bsort_expand);
 *  5. one sequential pass writes every slot of the stash and the tree
 *     (the buckets from the last to the first when the payloads' working
 *     array lives in the tree's own memory: nr_build, "intree").
 *
 * Positions from n on hold the largest key in every sort, so the sorts
 * skip the cache blocks that start there (obl_bsort_sort, bsort.live).
 *
 * Everything but the loop bounds (n, vs, the tree's size) flows through
 * obl_ct selects and swaps; every step's addresses are fixed by n and the
 * tree size, so the build reveals nothing about the leaves or the data.
 */
#include <string.h>

#include "ct.h"
#include "common/secret.h"
#include "common/testing.h"
#include "common/trace.h"
#include "oram/nroram_internal.h"
#include "sort/bsort.h"

/* The trace hook (tests only): the build's own scan of the stash window. */
#define BS_TOUCH(i, lanes) OBL_TRACE_TOUCH(OBL_TRACE_REGION_SORT, OBL_TRACE_RW, (i), (lanes))

/* Bits of the slot code in the packed form of nr_build's step 3. */
#define BS_CODE_BITS 8u

/* Tests only: the drawn leaves are ANDed with this (all ones: unchanged),
 * so that a test can crowd the blocks onto few paths and fill the stash. */
OBL_TEST_KNOB(uint64_t, bs_leaf_mask, UINT64_MAX);

/* Tests only: 0 makes every build take the two-word form of step 3. */
OBL_TEST_KNOB(int, bs_allow_packed, 1);

#ifdef OBL_TESTING
/* see nroram_internal.h */
void nr_build_set_packing(int allow)
{
    bs_allow_packed = allow;
}

/* see nroram_internal.h */
void nr_build_set_leaf_mask(uint64_t mask)
{
    bs_leaf_mask = mask;
}

/* see nroram_internal.h */
void nr_build_set_blocks(size_t l2_bytes, size_t l3_bytes)
{
    obl_bsort_set_blocks(l2_bytes, l3_bytes);
}

/* see nroram_internal.h */
void nr_build_set_par_fault(int on)
{
    obl_bsort_set_par_fault(on);
}
#endif

/* The build's public shape and its working arrays, shared by the steps
 * (the header comment's numbers). Every field is public: sizes, choices made
 * from them, and where the arrays are. */
typedef struct bs_build {
    obl_nroram *o;
    uint64_t n;
    size_t m;             /* n rounded up to a power of two: the sorts' length */
    size_t E, W;          /* the tree's working positions [0, E), the stash's [E, W) */
    size_t ps, idoff;     /* payload stride; offset of an explicit id in a payload */
    int packed, kl, intree;
    unsigned threads;     /* the sorts' and the expansion's (obl_bsort_sort_par) */
    size_t kb, ab, pb, tbb; /* bytes of key, aux, pay, tb */
    uint64_t *key, *aux;  /* aux: NULL when the keys carry everything */
    unsigned char *pay;   /* the payloads (NULL: a zero build); intree: o->tree */
    unsigned char *tb;    /* intree: a bucket's blocks, read before it is written */
} bs_build;

/* The shape of the build of n blocks and the arrays it needs, allocated
 * (public: n; explicit, whether the caller gives ids; given, whether ids come
 * from the caller or the content; haspay, whether there are payloads). On
 * OBL_ERR_NOMEM, bs_release frees what was allocated. */
static obl_err bs_setup(bs_build *b, obl_nroram *o, uint64_t n, int explicit, int given,
                        int haspay)
{
    memset(b, 0, sizeof(*b));
    b->o = o;
    b->n = n;
    b->m = 1;
    while (b->m < n)
        b->m <<= 1;
    /* Working positions: the tree's slots at [0, E), E = Z * (nbuckets + 1)
     * = 4L, a power of two at least m (L >= n / 2), for the expansion;
     * the stash's slots after them, at [E, E + P) (step 4). */
    b->E = (size_t)NR_Z * ((size_t)o->nbuckets + 1);
    b->W = b->E + o->P;
    /* Payload stride: whole cache lines for blocks of up to 128 bytes, so
     * that every move is whole 64-byte vectors (nr_build_stride; docs/oram.md,
     * "Build"). Explicit ids travel with the payload, in 8 bytes after the
     * value (56-byte values and their ids fill one line). */
    b->idoff = o->vs;
    b->ps = nr_build_stride(o->vs + (explicit ? 8 : 0));
    /* Packed form (public: n and the tree's shape): when the block's id,
     * its leaf and an 8-bit code of its slot fit in 62 bits, the first
     * fit leaves them in one word, id highest, so that the sort back to
     * id order moves 8-byte keys without an aux word. The code is level *
     * Z + (slot in the bucket) for the tree, whose slot the leaf then
     * gives, or Z * D + j for stash slot j (Z * D + P <= 64 + 66). */
    const unsigned idb = n > 1 ? 64 - (unsigned)__builtin_clzll((uint64_t)n - 1) : 0;
    b->packed = bs_allow_packed && idb + o->logL + BS_CODE_BITS <= 62;
    /* With ids from the caller or from the content (public), the payload
     * sort and the expansion need no aux word either: the key is the
     * working position << 32 | leaf, and the expansion's target is key >>
     * 32 (working positions below 2^31 - 1, so below OBL_BSORT_EMPTY >> 32). */
    b->kl = given && b->W < ((size_t)1 << 31) - 1;
    b->kb = b->W * 8;
    b->pb = haspay ? b->W * b->ps : 0;
    b->ab = b->packed && b->kl ? 0 : b->kb;
    /* The payloads' working array lives in the tree's own memory when it
     * fits (public: sizes only): the tree is still all zeros, as a new
     * array would be, nr_create left room after the buckets
     * (nr_build_slack), and step 5 can then write the buckets from the last
     * to the first without overwriting a block it has yet to read, since
     * bucket b starts at b * bstride >= b * Z * ps, where its blocks are.
     * This saves the fresh memory of the largest array of the build
     * (docs/oram.md, "Build"). */
    b->intree = haspay && o->tree_zero && b->pb <= o->tree_bytes && o->bstride >= NR_Z * b->ps;
    obl_alloc_ctx *ac = &o->ac;
    b->key = (uint64_t *)obl_alloc(ac, b->kb, 64);
    b->aux = b->key && b->ab ? (uint64_t *)obl_alloc(ac, b->ab, 64) : NULL;
    b->pay = !b->key || !haspay ? NULL
             : b->intree        ? o->tree
                                : (unsigned char *)obl_alloc(ac, b->pb, 64);
    b->tbb = b->intree ? NR_Z * b->ps : 0;
    b->tb = b->pay && b->intree ? (unsigned char *)obl_alloc(ac, b->tbb, 64) : NULL;
    if (!b->key || (b->ab && !b->aux) || (haspay && !b->pay) || (b->intree && !b->tb))
        return OBL_ERR_NOMEM;
    return OBL_OK;
}

/* The payloads, in id order until step 4: the caller's values (ss bytes
 * each, cut to vs) and explicit ids; the rest stays zero (obl_alloc zeroed
 * the array, or the tree is all zeros: intree). */
static void bs_load(const bs_build *b, const unsigned char *data, size_t ss, size_t data_len,
                    const uint64_t *ids)
{
    const size_t ps = b->ps, n = b->n;
    unsigned char *pay = b->pay;
    if (ss > b->o->vs)
        ss = b->o->vs;
    size_t len = !data ? 0 : data_len < n * ss ? data_len : n * ss;
    for (size_t i = 0; ss && i * ss < len; i++) {
        size_t l = len - i * ss < ss ? len - i * ss : ss;
        memcpy(pay + i * ps, data + i * ss, l);
    }
    for (size_t i = 0; ids && i < n; i++)
        memcpy(pay + i * ps + b->idoff, &ids[i], 8);
    OBL_SECRET(pay, b->pb);
}

/* Steps 1 and 2: fresh leaves and the keys, sorted by (leaf, id). */
static void bs_draw(const bs_build *b, uint32_t *leaves_out)
{
    obl_nroram *o = b->o;
    uint64_t *key = b->key, *aux = b->aux;
    const size_t n = b->n, W = b->W;
    const uint32_t logL = o->logL;
    for (size_t i = 0; i < W; i++) {
        if (i < n) {
            uint64_t leaf = obl_prg_bits(&o->prg, logL) & bs_leaf_mask;
            leaves_out[i] = (uint32_t)leaf;
            key[i] = leaf << 32 | i;
        } else {
            key[i] = OBL_BSORT_EMPTY;
        }
        if (aux) /* public */
            aux[i] = 0;
    }
    /* the leaves and everything derived from them are secret */
    OBL_SECRET(key, b->kb);
    OBL_SECRET(leaves_out, n * sizeof(uint32_t));
    bsort s1 = {key, NULL, NULL, o->vs, 0, n};
    obl_bsort_sort_par(&s1, b->m, b->threads);
}

/* Step 3, first fit: the slot of each block, in the keys (packed) or in
 * aux. Per level, the fill of the bucket currently being filled is kept as
 * two bit masks over the levels (Z = 2): f1 bit k, it holds at least one
 * block; f2 bit k, two (full). Entering a block whose leaf shares pl leading
 * bits with the previous one's keeps the buckets of levels 0 .. pl and
 * starts empty ones below. The block takes the deepest level with room (the
 * highest clear bit of f2). clz and shifts by secret counts take the same
 * time for every count on x86 (lzcnt, shlx, shrx); clz gets non-zero
 * arguments only. Returns all ones (secret) when a block found no room. */
static uint64_t bs_first_fit(const bs_build *b)
{
    _Static_assert(NR_Z == 2, "first fit keeps two fill masks");
    const obl_nroram *o = b->o;
    uint64_t *key = b->key, *aux = b->aux;
    const size_t n = b->n;
    const int packed = b->packed;
    const uint32_t P = o->P, logL = o->logL, D = o->D;
    const uint64_t all = ((uint64_t)2 << (D - 1)) - 1; /* D <= 32 */
    uint64_t f1 = 0, f2 = 0, prev = 0, stash = 0, fail = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t leaf = key[i] >> 32, id = key[i] & 0xffffffffu;
        uint64_t x = ((leaf ^ prev) << 1 | 1) << (63 - logL);
        uint64_t keep = ((uint64_t)2 << __builtin_clzll(x)) - 1; /* levels 0 .. pl */
        f1 &= keep;
        f2 &= keep;
        uint64_t open = ~f2 & all; /* levels with room */
        uint64_t placed = obl_ct_neq64(open, 0);
        uint64_t kk = 63 - (uint64_t)__builtin_clzll(open | 1); /* the deepest */
        uint64_t bit = (uint64_t)1 << kk, mk = obl_ct_mask(placed), c = (f1 >> kk) & 1;
        uint64_t t = P + ((bit - 1) + (leaf >> (logL - kk))) * NR_Z + c;
        f2 |= f1 & bit & mk;
        f1 |= bit & mk;
        uint64_t to_stash = placed ^ 1;
        fail |= to_stash & obl_ct_ge64(stash, o->S);
        t = obl_ct_select64(to_stash, stash, t);
        uint64_t code = obl_ct_select64(to_stash, NR_Z * D + stash, kk * NR_Z + c);
        stash += to_stash;
        prev = leaf;
        if (packed) { /* public */
            key[i] = id << (logL + BS_CODE_BITS) | code << logL | leaf;
        } else {
            key[i] = id;
            aux[i] = t << 32 | leaf;
        }
    }
    return fail;
}

/* Step 4, first half: each block's sort key for the payload sort, its
 * working position (the slot, the stash's after the tree's), from the first
 * fit's result, now in id order where the payloads are (a zero build keeps
 * leaf order: nothing waits in id order, each key holds its id). */
static void bs_positions(const bs_build *b)
{
    const obl_nroram *o = b->o;
    uint64_t *key = b->key, *aux = b->aux;
    const size_t n = b->n, W = b->W, E = b->E;
    const int packed = b->packed, kl = b->kl, haspay = b->pay != NULL;
    const uint32_t P = o->P, logL = o->logL, D = o->D;
    const uint64_t lmask = ((uint64_t)1 << logL) - 1;
    for (size_t i = 0; i < W; i++) {
        uint64_t real = obl_ct_lt64(i, n); /* public */
        uint64_t wp, leaf, id;
        if (packed) { /* public: the slot from the leaf and the code */
            uint64_t w = key[i], code = (w >> logL) & ((1u << BS_CODE_BITS) - 1);
            uint64_t kk = (code / NR_Z) & 31, sh = (logL - kk) & 63; /* garbage past n */
            uint64_t ts = ((((uint64_t)1 << kk) - 1) + ((w & lmask) >> sh)) * NR_Z + code % NR_Z;
            wp = obl_ct_select64(obl_ct_lt64(code, NR_Z * D), ts, E + code - NR_Z * D);
            leaf = w & lmask;
            id = haspay ? i : w >> (logL + BS_CODE_BITS); /* public: haspay */
        } else {
            uint64_t t = aux[i] >> 32; /* the slot: stash first, then the tree */
            wp = obl_ct_select64(obl_ct_lt64(t, P), E + t, t - P);
            leaf = aux[i] & 0xffffffffu;
            id = haspay ? i : key[i] & 0xffffffffu; /* public: haspay */
        }
        if (kl) { /* public */
            key[i] = obl_ct_select64(real, wp << 32 | leaf, OBL_BSORT_EMPTY);
        } else {
            key[i] = obl_ct_select64(real, wp, OBL_BSORT_EMPTY);
            aux[i] = obl_ct_select64(real, leaf << 32 | id, 0);
        }
    }
}

/* Step 4, the stash: its blocks (at most S < P of them) are the last ones
 * of [0, n) after the payload sort: the window of the last P positions
 * holds them all. Each stash slot j takes the block whose key is E + j, by
 * a swap with the empty element there (every window position is tried). */
static void bs_stash_window(const bs_build *b, unsigned tsh)
{
    uint64_t *key = b->key, *aux = b->aux;
    unsigned char *pay = b->pay;
    const size_t n = b->n, E = b->E, ps = b->ps, P = b->o->P;
    const int kl = b->kl;
    size_t w0 = n > P ? n - P : 0;
    for (size_t j = 0; j < P; j++)
        for (size_t w = w0; w < n; w++) {
            BS_TOUCH(w, 1);
            BS_TOUCH(E + j, 1);
            uint64_t c = obl_ct_eq64(key[w] >> tsh, E + j);
            obl_ct_cswap64(c, &key[w], &key[E + j]);
            if (!kl) /* public */
                obl_ct_cswap64(c, &aux[w], &aux[E + j]);
            if (pay)
                obl_ct_cswap(c, pay + w * ps, pay + (E + j) * ps, ps);
        }
}

/* Step 4: back to id order (keys only), where the payloads are; then sort
 * by working position with the payloads, and move every block to it. */
static void bs_place(const bs_build *b)
{
    if (b->pay) { /* public */
        bsort s3 = {b->key, b->packed ? NULL : b->aux, NULL, b->o->vs, 0, b->n};
        obl_bsort_sort_par(&s3, b->m, b->threads); /* ids 0 .. n - 1 in order now */
    }
    bs_positions(b);
    bsort s2 = {b->key, b->kl ? NULL : b->aux, b->pay, b->ps, b->kl ? 32u : 0u, b->n};
    obl_bsort_sort_par(&s2, b->m, b->threads);
    bs_stash_window(b, s2.tsh);
    /* the tree's blocks, at [0, n - stash), to their slots */
    obl_bsort_expand_par(&s2, 0, b->E, 0, b->threads);
}

/* Step 5: write the stash and the tree, slot by slot: the stash first, then
 * the buckets, from the last to the first when the payloads are in the
 * tree (intree: a bucket's blocks are copied to tb before it is written),
 * so that no block is overwritten before it is read. */
static void bs_write(const bs_build *b, const uint64_t *ids, nr_id_fn id_fn, const void *id_ctx)
{
    obl_nroram *o = b->o;
    const uint64_t *key = b->key, *aux = b->aux;
    const unsigned char *pay = b->pay;
    unsigned char *tb = b->tb;
    const size_t P = o->P, vs = o->vs, E = b->E, ps = b->ps, tbb = b->tbb, idoff = b->idoff;
    const size_t T = P + (size_t)NR_Z * o->nbuckets; /* all slots */
    const int intree = b->intree, kl = b->kl;
    for (size_t ii = 0; ii < T; ii++) {
        /* slot i; public */
        size_t i = !intree || ii < P ? ii : T - 1 - (ii - P);
        OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_TREE, OBL_TRACE_WRITE, i, 1);
        size_t wp = i < P ? E + i : i - P; /* working position (step 4); public */
        const unsigned char *src = pay ? pay + wp * ps : NULL;
        if (intree && i >= P) { /* public: the bucket's blocks, once per bucket */
            size_t z = (i - P) % NR_Z;
            if (z == NR_Z - 1)
                memcpy(tb, pay + (wp - z) * ps, tbb);
            src = tb + z * ps;
        }
        uint64_t valid = obl_ct_neq64(key[wp], OBL_BSORT_EMPTY);
        uint64_t id = 0, leaf;
        if (kl) { /* public */
            leaf = obl_ct_select64(valid, key[wp] & 0xffffffffu, 0);
        } else {
            id = (uint32_t)aux[wp];
            leaf = obl_ct_select64(valid, aux[wp] >> 32, 0);
        }
        if (ids) /* public */
            memcpy(&id, src + idoff, 8);
        if (id_fn) /* public; every slot, real or empty */
            id = id_fn(id_ctx, src);
        unsigned char *mp, *dst;
        if (i < P) {
            mp = (unsigned char *)o->bmeta + i * 2 * o->pb;
            dst = o->bdata + i * vs;
        } else {
            size_t bk = (i - P) / NR_Z, z = (i - P) % NR_Z; /* public */
            unsigned char *bp = o->tree + bk * o->bstride;
            mp = bp + z * 2 * o->pb;
            dst = bp + o->doff + z * vs;
        }
        if (o->pb == 4) { /* public */
            /* a tagged tree keeps the id's low word and its tag bits above
             * the leaf (nroram_internal.h); an empty slot's leaf word is 0 */
            uint32_t id32 = o->tagged ? nr_tag_id(id) : (uint32_t)id; /* public: tagged */
            leaf = obl_ct_select64(valid, nr_tag_leaf(o, id, leaf), 0);
            nr_meta32 me = {obl_ct_select32(valid, id32, NR_DUMMY32), (uint32_t)leaf};
            memcpy(mp, &me, sizeof(me));
        } else {
            nr_meta64 me = {obl_ct_select64(valid, id, NR_DUMMY64), leaf};
            memcpy(mp, &me, sizeof(me));
        }
        if (pay)
            memcpy(dst, src, vs);
        else
            memset(dst, 0, vs);
    }
    if (intree) { /* public: the bytes the buckets leave, wiped */
        size_t used = o->doff + NR_Z * vs, tail = (size_t)o->nbuckets * o->bstride;
        for (uint64_t bk = 0; used < o->bstride && bk < o->nbuckets; bk++)
            memset(o->tree + bk * o->bstride + used, 0, o->bstride - used);
        memset(o->tree + tail, 0, o->tree_bytes - tail);
    }
    o->tree_zero = 0;
}

/* Frees the working arrays; after a failed build that used the tree's
 * memory, the tree as it was, all zeros. */
static void bs_release(const bs_build *b, obl_err err)
{
    obl_alloc_ctx *ac = &b->o->ac;
    if (b->intree && err != OBL_OK && b->pay) /* public */
        memset(b->o->tree, 0, b->o->tree_bytes);
    obl_free(ac, b->tb, b->tbb);
    if (!b->intree)
        obl_free(ac, b->pay, b->pb);
    obl_free(ac, b->aux, b->ab);
    obl_free(ac, b->key, b->kb);
}

/* see nroram_internal.h; the steps are the header comment's */
obl_err nr_build(obl_nroram *o, uint64_t n, const unsigned char *data, size_t ss,
                 size_t data_len, const uint64_t *ids, nr_id_fn id_fn, const void *id_ctx,
                 uint32_t *leaves_out)
{
    return nr_build_par(o, n, data, ss, data_len, ids, id_fn, id_ctx, leaves_out, 1);
}

/* see nroram_internal.h */
obl_err nr_build_par(obl_nroram *o, uint64_t n, const unsigned char *data, size_t ss,
                     size_t data_len, const uint64_t *ids, nr_id_fn id_fn, const void *id_ctx,
                     uint32_t *leaves_out, unsigned threads)
{
    const uint64_t T = (uint64_t)o->P + (uint64_t)NR_Z * o->nbuckets; /* all slots */
    /* sort keys are leaf << 32 | i: leaves below 2^31, positions below 2^32 */
    if (n > o->capacity || n > UINT32_MAX - 1 || T > UINT32_MAX || o->logL > 31 ||
        (o->pb == 4 && !o->tagged && (ids || id_fn)))
        return OBL_ERR_TOO_LARGE;
    if (ids && id_fn)
        return OBL_ERR_INVALID_ARG;
    bs_build b;
    obl_err err = bs_setup(&b, o, n, ids != NULL, ids || id_fn, data || ids || id_fn);
    b.threads = threads;
    if (err == OBL_OK && b.pay)
        bs_load(&b, data, ss, data_len, ids);
    for (int attempt = 0; err == OBL_OK; attempt++) {
        bs_draw(&b, leaves_out);
        /* LEAK: whether first fit overflowed the tree and the stash; it
         * needs more than S blocks above the root, probability far below the
         * stash overflow's (docs/oram.md). The retry uses fresh leaves. */
        uint64_t fail = bs_first_fit(&b);
        if (!OBL_DECLASSIFY_VAL(fail))
            break;
        if (attempt >= 3)
            err = OBL_ERR_STASH_OVERFLOW;
    }
    if (err == OBL_OK) {
        bs_place(&b);
        bs_write(&b, ids, id_fn, id_ctx);
    }
    bs_release(&b, err);
    return err;
}
