/* SPDX-License-Identifier: MIT */
/*
 * The Circuit ORAM access and eviction, written once for both metadata word
 * sizes: included by nroram.c with NRW defined to 32 and then to 64.
 *
 * Circuit ORAM, Wang, Chan, Shi, CCS 2015 (eprint 2014/672), section 3:
 * ReadAndRemove on the path of the accessed block, the block put into the
 * stash with its new leaf, then eviction. Eviction (section 3.3, figures
 * 3-5): PrepareDeepest and PrepareTarget run on metadata only (ids and
 * leaves: one pass root-to-leaf, one leaf-to-root), then EvictFast moves
 * data in a single pass down the path holding at most one block.
 *
 * Evictions per access: two, on the next two paths in reverse-
 * lexicographic order (section 3.2; the order of Gentry et al. 2013), as
 * in the paper. Evicting on the accessed path instead of the first of them
 * saves a path read, but we measured it to be far weaker (N = 2^16 at full
 * load, 2 x 10^5 accesses: stash maximum 26 against 7; docs/oram.md), so
 * it is not used. The stash size is justified in docs/oram.md.
 *
 * Every loop bound below is public (P, D, Z, vs); every secret flows
 * through obl_ct_* selects and conditional moves.
 */

/* Hides a vector from the optimiser between a load and the secret-masked
 * operations on it (and before a store): otherwise the compiler may fold
 * them into a load or store masked by the secret (tests/ct/masked_ops.sh). */
#if OBL_CT_AVX512
#define NR_VBARRIER(v) __asm__("" : "+v"(v))
#endif

#define NR_CAT2(a, b) a##b
#define NR_CAT(a, b) NR_CAT2(a, b)
#define NR_F(name) NR_CAT(name, NRW)
#define NR_META NR_CAT(nr_meta, NRW)
#define NR_DUMMY NR_CAT(NR_DUMMY, NRW)
#if NRW == 32
#define NR_WORD uint32_t
#define NR_SEL(c, a, b) obl_ct_select32((c), (a), (b))
#else
#define NR_WORD uint64_t
#define NR_SEL(c, a, b) obl_ct_select64((c), (a), (b))
#endif

/* Bytes of a bucket prefetched: whole buckets up to about 1 KiB (blocks of
 * up to about 500 bytes); beyond that the prefetches would only queue. */
#define NR_PREFETCH_MAX 1024u

/* Heap index of the level-k bucket on the path to `leaf`. Public. */
static inline uint64_t NR_F(nr_bucket)(const obl_nroram *o, uint64_t leaf, uint32_t k)
{
    return (((uint64_t)1 << k) - 1) + (leaf >> (o->logL - k));
}

/* Prefetches bucket b (its first NR_PREFETCH_MAX bytes) with the
 * __builtin_prefetch arguments rw and locality (constants). With
 * o->pf_lines, every cache line the bucket overlaps (a 144-byte bucket
 * holds 2.25 lines' worth of bytes and overlaps three); else one prefetch
 * per 64 bytes from its start, which skips the straddled line (fewer
 * prefetches: faster while the tree is in cache, see nr_create).
 * Public: b. */
#define NR_PREFETCH_BUCKET(o, b, rw, locality)                                        \
    do {                                                                              \
        uintptr_t a_ = (uintptr_t)((o)->tree + (b) * (o)->bstride);                   \
        uintptr_t e_ = a_ + ((o)->bstride < NR_PREFETCH_MAX ? (o)->bstride : NR_PREFETCH_MAX); \
        if ((o)->pf_lines)                                                            \
            a_ &= ~(uintptr_t)63;                                                     \
        for (; a_ < e_; a_ += 64)                                                     \
            __builtin_prefetch((const void *)a_, rw, locality);                       \
    } while (0)

/* Prefetches for writing the buckets of an eviction path `leaf` below the
 * cached top (pf_k0), deepest first (nr_prefetch_access says why), with
 * the __builtin_prefetch locality given (a constant). Public: leaf. */
#define NR_PREFETCH_EVICT_PATH(o, leaf, locality)                                     \
    do {                                                                              \
        for (uint32_t k_ = (o)->D; k_-- > (o)->pf_k0;)                                \
            NR_PREFETCH_BUCKET(o, NR_F(nr_bucket)(o, leaf, k_), 1, locality);         \
    } while (0)

/* Bucket indices of path `leaf` into o->pathb. Public: leaf. */
static inline void NR_F(nr_path_index)(obl_nroram *o, uint64_t leaf)
{
#if OBL_CT_AVX512
    /* eight levels per vector, nr_bucket's formula in lanes; the lanes
     * past level D - 1 (pathb has NR_MAX_LEVELS = 64 entries, D <= 57)
     * hold garbage no one reads */
    const __m512i one = _mm512_set1_epi64(1), lf = _mm512_set1_epi64((long long)leaf);
    const __m512i lg = _mm512_set1_epi64((long long)o->logL);
    __m512i k = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    for (uint32_t j = 0; j < o->D; j += 8) {
        __m512i b = _mm512_add_epi64(_mm512_sub_epi64(_mm512_sllv_epi64(one, k), one),
                                     _mm512_srlv_epi64(lf, _mm512_sub_epi64(lg, k)));
        _mm512_storeu_si512((void *)&o->pathb[j], b);
        k = _mm512_add_epi64(k, _mm512_set1_epi64(8));
    }
#else
    for (uint32_t k = 0; k < o->D; k++)
        o->pathb[k] = NR_F(nr_bucket)(o, leaf, k);
#endif
}

/* Leaf of the g-th eviction: reverse-lexicographic order (public). */
static inline uint64_t NR_F(nr_evict_leaf)(const obl_nroram *o, uint64_t g)
{
    return o->logL ? nr_bitrev64(g) >> (64 - o->logL) : 0;
}

/* At the start of an access: prefetches the buckets of the accessed path
 * (o->pathb) from level pf_k0 down, so that the misses of the deep levels
 * overlap instead of queueing behind each other; the levels above pf_k0 are
 * on every path and stay in cache (prefetching them costs instructions for
 * nothing). The eviction paths are prefetched o->pf_lead evictions ahead
 * (nr_evict_next). All path prefetches go deepest level first: the deep
 * buckets are the ones likely to come from DRAM, and the prefetches stall
 * once the miss buffers are full, so the slowest start first (both choices
 * measured: docs/oram.md, "NRORAM: Circuit ORAM"). */
static inline void NR_F(nr_prefetch_access)(const obl_nroram *o)
{
    for (uint32_t k = o->D; k-- > o->pf_k0;)
        NR_PREFETCH_BUCKET(o, o->pathb[k], 0, 3);
}

/* Copies the metadata of path `leaf` into the buffer after the stash (the
 * data blocks stay in the tree: the eviction swaps them in place).
 * Public: leaf. */
static void NR_F(nr_load_path)(obl_nroram *o, uint64_t leaf)
{
    NR_META *bm = (NR_META *)o->bmeta;
    const size_t bstride = o->bstride;
    NR_F(nr_path_index)(o, leaf);
    for (uint32_t k = 0; k < o->D; k++) {
        uint64_t b = o->pathb[k];
        size_t s = o->P + (size_t)k * NR_Z;
        const unsigned char *src = o->tree + b * bstride;
        OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_TREE, OBL_TRACE_READ, b, 1);
        memcpy(&bm[s], src, NR_Z * sizeof(NR_META));
    }
}

/* Writes the buffer's metadata back to the path last loaded. Public: that
 * path. */
static void NR_F(nr_store_path)(obl_nroram *o)
{
    const NR_META *bm = (const NR_META *)o->bmeta;
    const size_t bstride = o->bstride;
    for (uint32_t k = 0; k < o->D; k++) {
        uint64_t b = o->pathb[k];
        size_t s = o->P + (size_t)k * NR_Z;
        unsigned char *dst = o->tree + b * bstride;
        OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_TREE, OBL_TRACE_WRITE, b, 1);
        memcpy(dst, &bm[s], NR_Z * sizeof(NR_META));
    }
}

/*
 * Deepest level index (0 = stash, k + 1 = tree level k) a block with leaf
 * `leaf` may occupy on the path to `e`: 1 + the length of the common prefix
 * of the two logL-bit labels. The sentinel 1 bit caps the count at logL and
 * keeps the clz argument non-zero (lzcnt/bsr take the same time for any
 * non-zero input). Secret: leaf. Public: e, logL.
 */
static inline uint64_t NR_F(nr_reach)(uint64_t leaf, uint64_t e, uint32_t logL)
{
    uint64_t x = ((leaf ^ e) << 1 | 1) << (63 - logL);
    return (uint64_t)__builtin_clzll(x) + 1;
}

/* if (c) swap the metadata entries *a and *b. Field by field: the entries
 * were just written field by field, and a wider load would wait for the
 * stores to retire (no store-to-load forwarding across widths). */
static inline void NR_F(nr_meta_cswap)(uint64_t c, NR_META *a, NR_META *b)
{
    uint64_t ai = a->id, bi = b->id, al = a->leaf, bl = b->leaf;
    nr_hold_swap(c, &ai, &bi);
    nr_hold_swap(c, &al, &bl);
    a->id = (NR_WORD)ai;
    b->id = (NR_WORD)bi;
    a->leaf = (NR_WORD)al;
    b->leaf = (NR_WORD)bl;
}

#define NR_NONE ((uint64_t)0xff)

/*
 * Circuit ORAM eviction of path e: the buffer holds the stash and, except
 * for whole-bucket evictions (which read the path's metadata from the
 * tree), the path's metadata. Section 3.3:
 * PrepareDeepest (fig. 3), PrepareTarget (fig. 4), EvictFast (fig. 5).
 * Secret: every id, leaf and value in the buffer. Public: e.
 *
 * Speed: the per-slot work (reach of every slot, the stash's maximum and
 * first empty slot, the stash pick-up) is written as plain mask arithmetic
 * on comparisons, without per-element barriers, so that the compiler
 * vectorises it (vpcmpeq/vplzcnt/masked blends); a comparison yields a
 * mask, never a branch, and the ct build checks the compiled code under
 * memcheck. The per-level chain (goal, src, dest) is sequential and uses
 * obl_ct selects. Levels, slots and reach values are below 256.
 */
/* The reach of one slot (nr_reach), 0 for an empty one. Secret: the slot.
 * Public: e, logL. */
static inline uint16_t NR_F(nr_slot_reach)(const NR_META *m, uint64_t e, uint32_t logL)
{
    uint32_t isd = (uint32_t)0 - (uint32_t)(m->id == NR_DUMMY);
#if NRW == 32
    /* logL <= 31 for 32-bit metadata: 32-bit lanes (vplzcntd) */
    uint32_t x = ((m->leaf ^ (uint32_t)e) << 1 | 1) << (31 - logL);
    return (uint16_t)(((uint32_t)__builtin_clz(x) + 1) & ~isd);
#else
    uint64_t x = (((uint64_t)m->leaf ^ e) << 1 | 1) << (63 - logL);
    return (uint16_t)(((uint32_t)__builtin_clzll(x) + 1) & ~isd);
#endif
}

#if OBL_CT_AVX512
/*
 * The stash's metadata in 512-bit chunks, for the vector scans of
 * ReadAndRemove, the stash insertion and EvictFast's pick-up: 64-bit
 * lanes, an entry (id, leaf) per lane pair with 64-bit words, per lane
 * with 32-bit ones (the id in the low half). Entry masks have a bit per
 * entry of the chunk (bit i: entry j + i); lane masks a bit per lane.
 */
#define NR_PER (NRW == 64 ? 4u : 8u) /* entries per chunk */

/* The lanes of the chunk that starts at entry j of P (public). */
static inline __mmask8 NR_F(nr_chunk_lanes)(uint32_t P, uint32_t j)
{
    uint32_t left = P - j < NR_PER ? P - j : NR_PER;
    return (__mmask8)((1u << (NRW == 64 ? 2 * left : left)) - 1);
}

/* The whole chunk at entry j, loaded behind the barrier (no secret mask may
 * fold into its load: docs/oram.md, "Masked memory operands"). Only its
 * nr_chunk_lanes are the stash's: every user masks its comparisons and
 * changes with them (or with masks inside them), and nr_chunk_store writes
 * the other lanes back as they were loaded (slots past the stash, or the
 * buffer's 64 bytes of slack). Plain loads and stores, not masked ones:
 * the scans that follow read the chunk again soon, and a masked store does
 * not forward to them (docs/oram.md, "Masked memory operands"). */
static inline __m512i NR_F(nr_chunk_load)(const NR_META *bm, uint32_t j)
{
    __m512i v = _mm512_loadu_si512((const void *)&bm[j]);
    NR_VBARRIER(v);
    return v;
}

static inline void NR_F(nr_chunk_store)(NR_META *bm, uint32_t j, __m512i v)
{
    NR_VBARRIER(v);
    _mm512_storeu_si512((void *)&bm[j], v);
}

/* The stash's 8-byte values j .. j + 7 (o->bdata) as one vector, the same
 * way: the lanes past P are the buffer's slack, changed by no user. */
static inline __m512i NR_F(nr_vals_load)(const obl_nroram *o, uint32_t j)
{
    __m512i v = _mm512_loadu_si512((const void *)(o->bdata + (size_t)j * 8));
    NR_VBARRIER(v);
    return v;
}

static inline void NR_F(nr_vals_store)(obl_nroram *o, uint32_t j, __m512i v)
{
    NR_VBARRIER(v);
    _mm512_storeu_si512((void *)(o->bdata + (size_t)j * 8), v);
}

/* The id lanes of chunk v (lanes ld) whose id is `id`: with 64-bit words
 * lanes 0, 2, 4, 6 only. Secret: v, id. */
static inline __mmask8 NR_F(nr_chunk_ideq)(__m512i v, __mmask8 ld, NR_WORD id)
{
#if NRW == 64
    return _mm512_mask_cmpeq_epi64_mask(ld & 0x55, v, _mm512_set1_epi64((long long)id));
#else
    const __m512i hi = _mm512_set1_epi64((long long)0xffffffff00000000ULL);
    return _mm512_mask_cmpeq_epi64_mask(ld, _mm512_or_si512(v, hi),
                                        _mm512_set1_epi64((long long)(0xffffffff00000000ULL | id)));
#endif
}

/* ReadAndRemove's match in chunk v (lanes ld): the id is wid and, in a
 * tagged tree (32-bit words only), the leaf word is wleaf too (lm = all
 * ones; else 0). Secret: v, wid, wleaf. Public: lm. */
static inline __mmask8 NR_F(nr_chunk_match)(__m512i v, __mmask8 ld, NR_WORD wid, NR_WORD wleaf,
                                            NR_WORD lm)
{
#if NRW == 64
    (void)wleaf;
    (void)lm;
    return NR_F(nr_chunk_ideq)(v, ld, wid);
#else
    const uint64_t hi = (uint64_t)(uint32_t)~lm << 32;
    return _mm512_mask_cmpeq_epi64_mask(
        ld, _mm512_or_si512(v, _mm512_set1_epi64((long long)hi)),
        _mm512_set1_epi64((long long)(hi | (uint64_t)wleaf << 32 | wid)));
#endif
}

/* Id lanes -> entry mask (bit i: entry i of the chunk). */
static inline uint32_t NR_F(nr_lanes_entries)(__mmask8 kl)
{
#if NRW == 64
    uint32_t k = (kl | (kl >> 1)) & 0x33; /* lanes 0, 2, 4, 6 -> bits 0 .. 3 */
    return (k | (k >> 2)) & 0x0f;
#else
    return kl;
#endif
}

/* Entry mask -> the lanes of those entries. */
static inline __mmask8 NR_F(nr_entry_lanes)(uint32_t k)
{
#if NRW == 64
    k = (k | (k << 2)) & 0x33; /* bits 0 .. 3 -> lanes 0, 2, 4, 6 */
    k = (k | (k << 1)) & 0x55;
    return (__mmask8)(k | k << 1);
#else
    return (__mmask8)k;
#endif
}

/* Chunk v with the ids in id lanes kl set to the dummy (all ones). */
static inline __m512i NR_F(nr_chunk_drop)(__m512i v, __mmask8 kl)
{
    const __m512i ones = _mm512_set1_epi64(-1);
#if NRW == 64
    return _mm512_mask_mov_epi64(v, kl, ones);
#else
    return _mm512_or_si512(v, _mm512_maskz_mov_epi64(kl, _mm512_srli_epi64(ones, 32)));
#endif
}

/* The reaches (nr_slot_reach) of the entries of chunk m, stored as
 * NR_PER 16-bit values at dst. Secret: m. Public: e, logL. */
static inline void NR_F(nr_reach_chunk)(__m512i m, uint64_t e, uint32_t logL, uint16_t *dst)
{
    /* per lane pair (id, leaf): the reach lands in the leaf lane */
#if NRW == 64
    const __m512i one = _mm512_set1_epi64(1);
    __m512i x = _mm512_sllv_epi64(
        _mm512_or_si512(_mm512_slli_epi64(_mm512_xor_si512(m, _mm512_set1_epi64((long long)e)), 1), one),
        _mm512_set1_epi64(63 - logL));
    __m512i r = _mm512_add_epi64(_mm512_lzcnt_epi64(x), one);
    __mmask8 isd = _mm512_cmpeq_epi64_mask(m, _mm512_set1_epi64(-1)) << 1; /* id -> leaf lane */
    r = _mm512_maskz_mov_epi64((__mmask8)(0xaa & ~isd), r);
    _mm_storel_epi64((__m128i *)dst, _mm512_cvtepi64_epi16(_mm512_maskz_compress_epi64(0xaa, r)));
#else
    const __m512i one = _mm512_set1_epi32(1);
    __m512i x = _mm512_sllv_epi32(
        _mm512_or_si512(_mm512_slli_epi32(_mm512_xor_si512(m, _mm512_set1_epi32((int)e)), 1), one),
        _mm512_set1_epi32((int)(31 - logL)));
    __m512i r = _mm512_add_epi32(_mm512_lzcnt_epi32(x), one);
    __mmask16 isd = (__mmask16)(_mm512_cmpeq_epi32_mask(m, _mm512_set1_epi32(-1)) << 1);
    r = _mm512_maskz_mov_epi32((__mmask16)(0xaaaa & ~isd), r);
    _mm_storeu_si128((__m128i *)dst,
                     _mm256_castsi256_si128(_mm512_cvtepi32_epi16(_mm512_maskz_compress_epi32(0xaaaa, r))));
#endif
}

#endif

/*
 * The reach of every slot of the eviction on path e into rr: 0 for an empty
 * slot, else 1 + the common prefix length of its leaf and e (nr_reach);
 * the stash's slots first, then the path's, root to leaf. With whole-bucket
 * moves (FB) the path's metadata was not copied into the buffer
 * (nr_evict_next): its slots are read in the tree, and once they are
 * loaded the eviction path pf_lead ahead is prefetched.
 * Secret: the metadata and rr. Public: e, the sizes, FB.
 */
static inline __attribute__((always_inline)) void NR_F(nr_evict_reach)(obl_nroram *o, uint64_t e,
                                                                      uint16_t *rr, const int FB)
{
    (void)FB;
    NR_META *bm = (NR_META *)o->bmeta;
    const uint32_t D = o->D, P = o->P, logL = o->logL, ns = o->nslots;
    (void)D;
    (void)P;
#if OBL_CT_AVX512
    if (!o->plan_scalar) { /* public; tests only: the portable form */
        /* the buffer's slots in whole vectors (64 bytes of slack after them;
         * rr has room for the lanes past them) */
        for (uint32_t j = 0; j < (FB ? P : ns); j += NR_PER)
            NR_F(nr_reach_chunk)(NR_F(nr_chunk_load)(bm, j), e, logL, &rr[j]);
        if (FB) { /* public */
            /* a bucket's metadata [id0 leaf0 id1 leaf1] is two entries: 4 or
             * 2 levels per vector (past the last level: unused) */
            const uint32_t per = NR_PER / 2;
            for (uint32_t k = 0; k < D; k += per) {
#if NRW == 64
                __m256i q[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
                for (uint32_t i = 0; i < per && k + i < D; i++) {
                    uint64_t b = o->pathb[k + i];
                    OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_TREE, OBL_TRACE_READ, b, 1);
                    q[i] = _mm256_loadu_si256((const __m256i *)(o->tree + b * o->bstride));
                }
                __m512i m = _mm512_inserti64x4(_mm512_castsi256_si512(q[0]), q[1], 1);
#else
                __m128i q[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(),
                                _mm_setzero_si128()};
                for (uint32_t i = 0; i < per && k + i < D; i++) {
                    uint64_t b = o->pathb[k + i];
                    OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_TREE, OBL_TRACE_READ, b, 1);
                    q[i] = _mm_loadu_si128((const __m128i *)(o->tree + b * o->bstride));
                }
                __m512i m = _mm512_inserti32x4(_mm512_castsi128_si512(q[0]), q[1], 1);
                m = _mm512_inserti32x4(m, q[2], 2);
                m = _mm512_inserti32x4(m, q[3], 3);
#endif
                NR_VBARRIER(m);
                NR_F(nr_reach_chunk)(m, e, logL, &rr[P + 2 * k]);
            }
            /* the path of the eviction pf_lead after this one
             * (nr_evict_next), once this one's metadata has been loaded:
             * issued before those loads, the prefetches waited for miss
             * buffers; at the end of the data pass, or one per level, they
             * came too late. A tree of lead two (used alone) prefetches to
             * L1, the trees of a RORAM or a map (lead one) to L2, where L1
             * gained nothing (docs/oram.md, "NRORAM: Circuit ORAM"). */
            if (o->pf_lead > 1) /* public */
                NR_PREFETCH_EVICT_PATH(o, o->pf_next, 3);
            else
                NR_PREFETCH_EVICT_PATH(o, o->pf_next, 2);
        }
    } else
#endif
    {
        for (uint32_t s = 0; s < ns; s++)
            rr[s] = NR_F(nr_slot_reach)(&bm[s], e, logL);
    }

}

#if OBL_CT_AVX512
/*
 * EvictFast's data pass with whole buckets in one vector per level (8-byte
 * values in 32- or 64-byte buckets, nr_whole_buckets): the held block (hm,
 * h8) goes down the path swapping with slot 0 or 1 as sw0 and sw1 say
 * (nr_plan); what it holds at the end is stored in o->tmp.
 * Secret: hm, h8, sw0, sw1, the buckets. Public: the path.
 */
static inline __attribute__((always_inline)) void NR_F(nr_evict_pass_fb)(obl_nroram *o,
                                                                        uint64_t sw0,
                                                                        uint64_t sw1, NR_META hm,
                                                                        uint64_t h8)
{
    const uint32_t D = o->D;
    /* 32-bit lanes of a bucket: slot 0's id, leaf and value (FB_M0),
     * slot 1's (FB_M1); the held block sits in slot 0's lanes */
#if NRW == 64
    const __mmask16 FB_M0 = 0x030f, FB_M1 = 0x0cf0;
    static const int32_t p01[16] = {0, 1, 2, 3, 0, 1, 2, 3, 8, 9, 8, 9, 12, 13, 14, 15};
    static const int32_t p10[16] = {4, 5, 6, 7, 4, 5, 6, 7, 10, 11, 10, 11, 12, 13, 14, 15};
    __m512i h = _mm512_maskz_set1_epi64(1, (long long)hm.id);
    h = _mm512_mask_set1_epi64(h, 2, (long long)hm.leaf);
    h = _mm512_mask_set1_epi64(h, 16, (long long)h8);
#else
    const __mmask16 FB_M0 = 0x33, FB_M1 = 0xcc;
    static const int32_t p01[16] = {0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15};
    static const int32_t p10[16] = {2, 3, 2, 3, 6, 7, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    __m512i h = _mm512_maskz_set1_epi32(1, (int)hm.id);
    h = _mm512_mask_set1_epi32(h, 2, (int)hm.leaf);
    h = _mm512_mask_set1_epi64(h, 4, (long long)h8);
#endif
    const __m512i i01 = _mm512_loadu_si512((const void *)p01);
    const __m512i i10 = _mm512_loadu_si512((const void *)p10);
    const size_t bstride = o->bstride;
    unsigned char *tree = o->tree;
    for (uint32_t lv = 1; lv <= D; lv++) {
        uint32_t c0 = (uint32_t)(sw0 >> (lv - 1)) & 1, c1 = (uint32_t)(sw1 >> (lv - 1)) & 1;
        __mmask16 k0 = (__mmask16)((0u - c0) & FB_M0);
        __mmask16 k1 = (__mmask16)((0u - c1) & FB_M1), k1h = (__mmask16)((0u - c1) & FB_M0);
        uint64_t b = o->pathb[lv - 1];
        unsigned char *bp = tree + b * bstride;
        if (o->pfq_i < o->pfq_n) /* public */
            NR_PREFETCH_BUCKET(o, o->pfq[o->pfq_i++], 0, 3);
        OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_TREE, OBL_TRACE_WRITE, b, 1);
        /* whole buckets by plain loads and stores, no masked ones: the
         * next eviction or access reads the top levels' buckets again
         * soon after, and a masked store does not forward to those loads
         * (masked moves measured far slower: docs/oram.md, "Masked
         * memory operands") */
#if NRW == 64
        __m512i bv = _mm512_loadu_si512((const void *)bp);
#else
        __m512i bv = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)bp));
#endif
        NR_VBARRIER(bv);
        /* the held block's chain is one blend per level: the slot it
         * takes is moved into slot 0's lanes beside the chain */
        __m512i take = _mm512_mask_permutexvar_epi32(bv, k1h, i10, bv);
        __m512i nb = _mm512_mask_mov_epi32(bv, k0, h);
        nb = _mm512_mask_permutexvar_epi32(nb, k1, i01, h);
        h = _mm512_mask_mov_epi32(h, k0 | k1h, take);
        NR_VBARRIER(nb);
#if NRW == 64
        _mm512_storeu_si512((void *)bp, nb);
#else
        _mm256_storeu_si256((__m256i *)bp, _mm512_castsi512_si256(nb));
#endif
    }
    h8 = (uint64_t)_mm_cvtsi128_si64(_mm512_extracti32x4_epi32(h, NRW == 64 ? 2 : 1));
    memcpy(o->tmp, &h8, 8);
}
#endif

/* EvictFast's pick-up from the stash's metadata (bm, P slots): slot sel's
 * entry (a dummy when sel is 255: none), its id set to all ones. In chunks
 * with AVX-512: the lanes of slot sel (a comparison per lane) OR-ed out.
 * Secret: sel, the metadata. */
static inline __attribute__((always_inline)) NR_META NR_F(nr_evict_pick_meta)(NR_META *bm,
                                                                             uint32_t P,
                                                                             uint64_t sel)
{
    NR_META hm;
#if OBL_CT_AVX512
    const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i slot = NRW == 64 ? _mm512_srli_epi64(lane, 1) : lane;
    const __m512i vsel = _mm512_set1_epi64((long long)sel);
    const __m512i idw = _mm512_set1_epi64(NRW == 64 ? -1 : 0xffffffffLL);
    const __mmask8 idl = NRW == 64 ? 0x55 : 0xff;
    __m512i acc = _mm512_setzero_si512();
    for (uint32_t j = 0; j < P; j += NR_PER) {
        /* only lanes below P can match the chosen slot */
        __m512i v = NR_F(nr_chunk_load)(bm, j);
        __mmask8 k = _mm512_cmpeq_epi64_mask(
            _mm512_add_epi64(slot, _mm512_set1_epi64((long long)j)), vsel);
        acc = _mm512_mask_or_epi64(acc, k, acc, v);
        NR_F(nr_chunk_store)(bm, j, _mm512_mask_or_epi64(v, k & idl, v, idw));
    }
    NR_WORD any = (NR_WORD)0 - (NR_WORD)nr_lt(sel, P);
#if NRW == 64
    hm.id = (NR_WORD)_mm512_mask_reduce_or_epi64(0x55, acc) | ~any;
    hm.leaf = (NR_WORD)_mm512_mask_reduce_or_epi64(0xaa, acc);
#else
    uint64_t r = (uint64_t)_mm512_reduce_or_epi64(acc);
    hm.id = (NR_WORD)r | ~any;
    hm.leaf = (NR_WORD)(r >> 32);
#endif
#else
    NR_WORD hid = 0, hleaf = 0, any = 0;
    for (uint32_t j = 0; j < P; j++) {
        NR_WORD m = (NR_WORD)0 - (NR_WORD)(j == (NR_WORD)sel);
        hid |= bm[j].id & m;
        hleaf |= bm[j].leaf & m;
        any |= m;
        bm[j].id |= m; /* the picked slot becomes empty (all ones) */
    }
    hm.id = hid | ~any; /* dummy when nothing was picked */
    hm.leaf = hleaf;
#endif
    return hm;
}

/* EvictFast's pick-up of stash slot sel's 8-byte value (0 when sel is 255).
 * Secret: sel, the values. */
static inline __attribute__((always_inline)) uint64_t NR_F(nr_evict_pick8)(const obl_nroram *o,
                                                                          uint32_t P, uint64_t sel)
{
    uint64_t h8;
#if OBL_CT_AVX512
    /* eight blocks per vector, the lanes masked after the load */
    const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i vsel = _mm512_set1_epi64((long long)sel);
    __m512i acc = _mm512_setzero_si512();
    for (uint32_t j = 0; j < P; j += 8) {
        /* only lanes below P can match the chosen slot */
        __m512i v = NR_F(nr_vals_load)(o, j);
        __mmask8 k = _mm512_cmpeq_epi64_mask(
            _mm512_add_epi64(lane, _mm512_set1_epi64((long long)j)), vsel);
        acc = _mm512_mask_or_epi64(acc, k, acc, v);
    }
    h8 = (uint64_t)_mm512_reduce_or_epi64(acc);
#else
    uint64_t h = 0;
    for (uint32_t j = 0; j < P; j++) {
        uint64_t v;
        memcpy(&v, o->bdata + (size_t)j * 8, 8);
        /* through the barrier: else the loop vectorises into loads
         * masked by the secret slot (gcc 12 did) */
        h |= v & obl_ct_mask(nr_eqs(j, sel));
    }
    h8 = h;
#endif
    return h8;
}

/*
 * One eviction (EvictFast, section 3.4) on path e, specialised by the
 * constant block size vs, register count NW and whole-bucket flag FB
 * (nr_evict_buf): the reaches (nr_evict_reach), the plan (nr_plan, in
 * nr_plan.h), the stash pick-up (nr_evict_pick_meta, nr_evict_pick8, the
 * registers' below) and the data pass (nr_evict_pass_fb, or the per-level
 * loop below). One function of about 130 lines: the register pick-up and
 * the data pass share the held block in vector registers (hreg), and the
 * level step as a helper taking hreg compiled to other machine code
 * (scripts/same_code.sh; docs/dispatch.md, "Same machine code").
 * Secret: the metadata, the blocks, the plan. Public: e, the sizes.
 */
static inline __attribute__((always_inline)) void NR_F(nr_evict_core)(obl_nroram *o, uint64_t e,
                                                                     const size_t vs, const int NW,
                                                                     const int FB)
{
    (void)NW; /* no vector registers without AVX-512 */
    (void)FB;
    NR_META *bm = (NR_META *)o->bmeta;
    const uint32_t D = o->D, P = o->P;
    uint16_t rr[NR_MAX_SLOTS + 64]; /* + 64: whole vectors (nr_plan_deepest) */

    OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_STASH, OBL_TRACE_RW, 0, P);

    NR_F(nr_evict_reach)(o, e, rr, FB);

    /* The plan: which stash slot EvictFast picks up (sel, 255 for none),
     * and at level k + 1 whether the held block swaps with slot 0 (bit k
     * of sw0) or slot 1 (bit k of sw1). */
    uint64_t sw0, sw1;
    const uint64_t sel = nr_plan(o, rr, &sw0, &sw1);

    /* EvictFast: one data pass. At level lv the held block (if its
     * destination is lv) is dropped and/or the level's deepest block picked
     * up; both are one conditional swap of the hold with one slot: the
     * deepest block's slot when picking up, else the first empty slot.
     * At the stash nothing is held yet, so it is a pick-up only. */
    unsigned char *hold = o->tmp; /* free between fetch/put and here */
    NR_META hm;
    uint64_t h8 = 0; /* 8-byte blocks: the held block, in a register */
#if OBL_CT_AVX512
    /* Blocks of 16 to 512 bytes are held in NW vector
     * registers across the levels instead of being stored and reloaded by
     * every swap (the compiler cannot keep o->tmp in registers: it may alias
     * the tree). Measurements in docs/oram.md ("Blocks in registers"). The
     * vectors sit at nr_reg_off; in a block under 64 bytes the bytes past it
     * (outside tail) are never swapped: they carry the bytes that follow
     * the slot, stored back unchanged. */
    __m512i hreg[NR_REG_MAX_W];
    const int front = nr_reg_front(o, vs, NW);
    const __m512i tail = nr_tail_lanes(vs, front);
#endif
    {
        hm = NR_F(nr_evict_pick_meta)(bm, P, sel);
#if OBL_CT_AVX512
        if (NW) { /* public: the block goes straight into the registers */
            NR_REG_LOOP(w) /* only the NW used: zeroing all took a rep stos */
                hreg[w] = _mm512_setzero_si512();
            for (uint32_t j = 0; j < P; j++) {
                __m512i m = _mm512_set1_epi64((long long)obl_ct_mask(nr_eqs(j, sel)));
                const unsigned char *sp = o->bdata + (size_t)j * vs;
                NR_REG_LOOP(w)
                hreg[w] = _mm512_or_si512(hreg[w],
                                          _mm512_and_si512(m, _mm512_loadu_si512((const void *)(sp + nr_reg_off(vs, NW, front, w)))));
            }
        } else
#endif
        if (vs == 8) { /* public */
            h8 = NR_F(nr_evict_pick8)(o, P, sel);
        } else {
            for (uint32_t j = 0; j < P; j++)
                obl_ct_cmov(nr_eqs(j, sel), hold, o->bdata + (size_t)j * vs, vs);
        }
    }
#if OBL_CT_AVX512
    if (FB) { /* public: whole buckets in one vector (nr_evict_buf) */
        NR_F(nr_evict_pass_fb)(o, sw0, sw1, hm, h8);
        o->st.evictions++;
        return;
    }
#endif
    for (uint32_t lv = 1; lv <= D; lv++) {
        uint32_t s0 = P + (lv - 1) * NR_Z;
        uint64_t c0 = (sw0 >> (lv - 1)) & 1, c1 = (sw1 >> (lv - 1)) & 1;
        if (o->pfq_i < o->pfq_n) /* public: the read path's queue (nr_fetch_settle) */
            NR_PREFETCH_BUCKET(o, o->pfq[o->pfq_i++], 0, 3);
        NR_F(nr_meta_cswap)(c0, &hm, &bm[s0]);
        NR_F(nr_meta_cswap)(c1, &hm, &bm[s0 + 1]);
        unsigned char *bd = o->tree + o->pathb[lv - 1] * o->bstride + o->doff;
#if OBL_CT_AVX512
        if (NW) { /* public; both slots loaded and stored, as below */
            __m512i m0 = _mm512_set1_epi64((long long)obl_ct_mask(c0));
            __m512i m1 = _mm512_set1_epi64((long long)obl_ct_mask(c1));
            __m512i d0[NR_REG_MAX_W], d1[NR_REG_MAX_W];
            /* all loads before the stores: slot 0's last vector overlaps
             * the start of slot 1 when vs is not a multiple of 64 */
            NR_REG_LOOP(w)
            {
                d0[w] = _mm512_loadu_si512((const void *)(bd + nr_reg_off(vs, NW, front, w)));
                d1[w] = _mm512_loadu_si512((const void *)(bd + vs + nr_reg_off(vs, NW, front, w)));
            }
            /* each swap is two bitwise selects (vpternlog 0xca: m ? b : c),
             * one step on the held block's chain (nr_hold_swap) */
            NR_REG_LOOP(w)
            {
                __m512i mw = w == NW - 1 ? _mm512_and_si512(m0, tail) : m0, h = hreg[w];
                hreg[w] = _mm512_ternarylogic_epi64(mw, d0[w], h, 0xca);
                d0[w] = _mm512_ternarylogic_epi64(mw, h, d0[w], 0xca);
            }
            NR_REG_LOOP(w)
            {
                __m512i mw = w == NW - 1 ? _mm512_and_si512(m1, tail) : m1, h = hreg[w];
                hreg[w] = _mm512_ternarylogic_epi64(mw, d1[w], h, 0xca);
                d1[w] = _mm512_ternarylogic_epi64(mw, h, d1[w], 0xca);
            }
            /* slot 1 first when its vector starts in slot 0 (front), else
             * slot 0 first: the one whose lanes hold the shared bytes'
             * new values is stored last */
            if (front) { /* public */
                NR_REG_LOOP(w)
                _mm512_storeu_si512((void *)(bd + vs + nr_reg_off(vs, NW, front, w)), d1[w]);
                NR_REG_LOOP(w)
                _mm512_storeu_si512((void *)(bd + nr_reg_off(vs, NW, front, w)), d0[w]);
            } else {
                NR_REG_LOOP(w)
                _mm512_storeu_si512((void *)(bd + nr_reg_off(vs, NW, front, w)), d0[w]);
                NR_REG_LOOP(w)
                _mm512_storeu_si512((void *)(bd + vs + nr_reg_off(vs, NW, front, w)), d1[w]);
            }
        } else
#endif
        if (vs == 8) { /* public: both slots loaded and stored */
            uint64_t d0, d1;
            memcpy(&d0, bd, 8);
            memcpy(&d1, bd + 8, 8);
            nr_hold_swap(c0, &h8, &d0);
            nr_hold_swap(c1, &h8, &d1);
            memcpy(bd, &d0, 8);
            memcpy(bd + 8, &d1, 8);
        } else {
            nr_cswap_blk(c0, hold, bd, vs);
            nr_cswap_blk(c1, hold, bd + vs, vs);
        }
    }
    if (vs == 8) /* public */
        memcpy(hold, &h8, 8);
#if OBL_CT_AVX512
    if (NW) { /* public: o->tmp has 64 bytes of slack */
        NR_REG_LOOP(w)
        _mm512_storeu_si512((void *)(hold + nr_reg_off(vs, NW, front, w)), hreg[w]);
    }
#endif
    o->st.evictions++;
}

/* Whether evictions move whole buckets, metadata and value, in one vector
 * per level (8-byte values in 32- or 64-byte buckets, AVX-512 builds):
 * then the path's metadata is neither copied into the buffer nor back.
 * Public. */
static inline int NR_F(nr_whole_buckets)(const obl_nroram *o)
{
#if OBL_CT_AVX512
    return o->vs == 8 && o->bstride == 4 * sizeof(NR_META) && !o->plan_scalar;
#else
    (void)o;
    return 0;
#endif
}

/* The block size is a constant in the copy for 64-byte blocks (every
 * position-map level and the packed data levels of the recursive ORAM), so
 * its block moves are single vectors without a loop (nr_fetch and nr_put
 * alike). */
static int NR_F(nr_evict_buf)(obl_nroram *o, uint64_t e)
{
#define NR_EVICT_CALL(VS, NWC) NR_F(nr_evict_core)(o, e, VS, NWC, 0)
    if (o->vs == 8) { /* public: the block moves of 8-byte blocks in a register */
        if (NR_F(nr_whole_buckets)(o)) { /* public */
            NR_F(nr_evict_core)(o, e, 8, 0, 1);
            return 1;
        }
        NR_EVICT_CALL(8, 0);
    } else
        NR_BY_WORDS(o, NR_EVICT_CALL, NR_EVICT_CALL(o->vs, 0))
#undef NR_EVICT_CALL
    return 0;
}

static void NR_F(nr_settle)(obl_nroram *o);

/* Path pos indexed and prefetched, with the previous access's owed
 * evictions run while it arrives (nr_settle); they load their own paths
 * into o->pathb, so the access's is computed again. Public: pos, the
 * sizes. */
static inline __attribute__((always_inline)) void NR_F(nr_fetch_settle)(obl_nroram *o, uint64_t pos)
{
    NR_F(nr_path_index)(o, pos);
    if (o->pf_lead == 1 && o->owed) { /* public */
        /* the read path's prefetches are queued and the first eviction's
         * data pass issues one bucket per level, so they do not stall on
         * miss buffers its own loads fill (it has D levels, at least as
         * many as the queue, so the loop after settle only guards; during
         * the second eviction they came too late). For every block size:
         * issued at once, the map's 448-byte index buckets stalled the
         * prefetch instructions themselves. With a lead of 2 (a tree
         * used alone, obl_nroram_create) the evictions' paths are in cache
         * by then, their loads hold no miss buffers, and the read path is
         * prefetched at once (docs/oram.md, "NRORAM: Circuit ORAM"). */
        o->pfq_n = 0;
        o->pfq_i = 0;
        for (uint32_t k = o->D; k-- > o->pf_k0;)
            o->pfq[o->pfq_n++] = o->pathb[k];
    } else
        NR_F(nr_prefetch_access)(o);
    if (o->owed) { /* public */
        NR_F(nr_settle)(o);
        while (o->pfq_i < o->pfq_n)
            NR_PREFETCH_BUCKET(o, o->pfq[o->pfq_i++], 0, 3);
        NR_F(nr_path_index)(o, pos);
    }
}

#if OBL_CT_AVX512
/* The stash's ids (bm, P slots) compared with wid (and the leaf words with
 * wleaf under lm: nr_chunk_match) in chunks, a match's id set to all
 * ones; the matches as a bit mask (bit s: slot s; none at or past P).
 * Secret: the ids, wid, wleaf, the mask. Public: lm. */
static inline __attribute__((always_inline)) uint64_t NR_F(nr_fetch_stash_ids)(NR_META *bm,
                                                                               uint32_t P,
                                                                               NR_WORD wid,
                                                                               NR_WORD wleaf,
                                                                               NR_WORD lm)
{
    uint64_t mt = 0;
    for (uint32_t j = 0; j < P; j += NR_PER) {
        __mmask8 ld = NR_F(nr_chunk_lanes)(P, j);
        __m512i v = NR_F(nr_chunk_load)(bm, j);
        __mmask8 kl = NR_F(nr_chunk_match)(v, ld, wid, wleaf, lm);
        NR_F(nr_chunk_store)(bm, j, NR_F(nr_chunk_drop)(v, kl));
        mt |= (uint64_t)NR_F(nr_lanes_entries)(kl) << j;
    }
    return mt;
}

/* The 8-byte value of the stash slots (P of them) in mt (at most one), eight
 * per vector.
 * Secret: mt, the values. */
static inline __attribute__((always_inline)) uint64_t NR_F(nr_fetch_stash_vals8)(const obl_nroram *o,
                                                                                 uint32_t P,
                                                                                 uint64_t mt)
{
    __m512i acc = _mm512_setzero_si512();
    for (uint32_t j = 0; j < P; j += 8) {
        /* mt has no bit at or past P */
        __m512i v = NR_F(nr_vals_load)(o, j);
        acc = _mm512_mask_or_epi64(acc, (__mmask8)(mt >> j), acc, v);
    }
    return (uint64_t)_mm512_reduce_or_epi64(acc);
}

#endif

/* A fetch's take of the block at p under the match m (nr_fetch_core, whose
 * locals vs, reg64, front, acc8, acc64 and o they name): OR-ed into acc8 (8
 * bytes) or the vectors acc64 (NW of them, at nr_reg_off), else moved into
 * o->tmp. */
#if OBL_CT_AVX512
#define NR_TAKE64(p, m)                                                                  \
    do {                                                                                 \
        __m512i mv_ = _mm512_set1_epi64((long long)(m));                                 \
        NR_REG_LOOP(w)                                                                   \
        acc64[w] = _mm512_or_si512(                                                      \
            acc64[w], _mm512_and_si512(mv_, _mm512_loadu_si512((const void *)((p) + nr_reg_off(vs, NW, front, w))))); \
    } while (0)
#else
#define NR_TAKE64(p, m) ((void)(p), (void)(m))
#endif
#define NR_TAKE(p, m)                                                                    \
    do {                                                                                 \
        /* through the barrier: a plain 0 - bit lets compilers turn the AND  \
         * into a load masked by the secret match (clang 14 did) */        \
        uint64_t m_ = obl_ct_mask((uint64_t)((m) & 1));                                 \
        if (vs == 8) { /* public */                                                      \
            uint64_t v_;                                                                 \
            memcpy(&v_, (p), 8);                                                         \
            acc8 |= v_ & m_;                                                             \
        } else if (reg64) { /* public */                                                 \
            NR_TAKE64((p), m_);                                                          \
        } else {                                                                         \
            obl_ct_cmov((uint64_t)((m) & 1), o->tmp, (p), vs);                          \
        }                                                                                \
    } while (0)

/* ReadAndRemove of block id on path pos, with the previous access's owed
 * evictions run while the path arrives (nr_fetch_settle). The stash scan's
 * parts without live vectors are helpers; the rest is one function of about
 * 120 lines because the found block's registers (acc8, acc64) live across
 * both scans, and the path scans as a helper compiled to other machine code
 * (scripts/same_code.sh; docs/dispatch.md, "Same machine code"). */
static inline __attribute__((always_inline)) uint64_t NR_F(nr_fetch_core)(obl_nroram *o, uint64_t id,
                                                                          uint64_t pos, const size_t vs,
                                                                          const int NW)
{
    (void)NW;
    NR_META *bm = (NR_META *)o->bmeta;
    const size_t bstride = o->bstride, doff = o->doff;
    /* a tagged tree also matches the whole leaf word (nroram_internal.h) */
    const NR_WORD wid = o->tagged ? (NR_WORD)nr_tag_id(id) : (NR_WORD)id; /* public: tagged */
    const NR_WORD lm = (NR_WORD)0 - (NR_WORD)(o->tagged != 0);
    const NR_WORD wleaf = (NR_WORD)nr_tag_leaf(o, id, pos) & lm; /* 0 in other trees */
    const uint32_t P = o->P, D = o->D;
    NR_F(nr_fetch_settle)(o, pos);
    OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_STASH, OBL_TRACE_RW, 0, P);
    /* ReadAndRemove over the stash and then the path, in place: the block
     * is taken under its match mask and its id set to the dummy (all ones);
     * mask arithmetic as in nr_evict_buf. At most one real block matches
     * (an id is stored once: obl_nroram_insert's rule that the id be absent),
     * so 8- and 64-byte blocks are OR-ed into a register (the compiler
     * cannot keep o->tmp in one: it may alias the tree), as the eviction's
     * held block is (nr_evict_core) for 64 bytes. Other sizes are moved
     * into o->tmp. */
    NR_WORD f = 0;
    uint64_t acc8 = 0;
#if OBL_CT_AVX512
    const int reg64 = NW != 0; /* public */
    const int front = nr_reg_front(o, vs, NW);
    __m512i acc64[NR_REG_MAX_W];
    NR_REG_LOOP(w) /* only the NW used: zeroing all took a rep stos */
        acc64[w] = _mm512_setzero_si512();
#else
    const int reg64 = 0;
#endif
    if (vs != 8 && !reg64) /* public */
        memset(o->tmp, 0, vs);
#if OBL_CT_AVX512
    if (P <= 64 && !o->plan_scalar) { /* public (the switch: tests only) */
        uint64_t mt = NR_F(nr_fetch_stash_ids)(bm, P, wid, wleaf, lm);
        f = (NR_WORD)0 - (NR_WORD)((mt | (0 - mt)) >> 63);
        if (vs == 8) { /* public */
            acc8 = NR_F(nr_fetch_stash_vals8)(o, P, mt);
        } else {
            for (uint32_t s = 0; s < P; s++)
                NR_TAKE(o->bdata + (size_t)s * vs, (NR_WORD)0 - (NR_WORD)((mt >> s) & 1));
        }
    } else
#endif
    {
        /* as the path's slots below: a loop each */
#define NR_STASH_SCAN(MATCH)                                                             \
        for (uint32_t s = 0; s < P; s++) {                                               \
            NR_WORD m = (NR_WORD)0 - (NR_WORD)(MATCH);                                   \
            NR_TAKE(o->bdata + (size_t)s * vs, m);                                       \
            bm[s].id |= m;                                                               \
            f |= m;                                                                      \
        }
        if (NRW == 32 && o->tagged) { /* public */
            NR_STASH_SCAN((bm[s].id == wid) & (bm[s].leaf == wleaf))
        } else {
            NR_STASH_SCAN(bm[s].id == wid)
        }
#undef NR_STASH_SCAN
    }
#if OBL_CT_AVX512
    /* public: one-vector buckets (the switch: tests only) */
    if (vs == 8 && bstride == 4 * sizeof(NR_META) && !o->plan_scalar && !o->tagged) {
        /* ids compared in their lanes; a match's value lane taken, its id
         * lane set to all ones; the metadata stored back whole */
        __m512i acc = _mm512_setzero_si512();
        const __m512i ones = _mm512_set1_epi64(-1);
        uint32_t any = 0;
        for (uint32_t k = 0; k < D; k++) {
            uint64_t b = o->pathb[k];
            unsigned char *bp = o->tree + b * bstride;
            OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_TREE, OBL_TRACE_RW, b, 1);
            /* plain loads and stores, as in the eviction's whole-bucket
             * pass (nr_evict_core), and the metadata stored back alone:
             * faster than a masked load and store of the bucket's part
             * (docs/oram.md, "Masked memory operands") */
#if NRW == 64
            /* lanes: id0 leaf0 id1 leaf1 value0 value1, padding */
            __m512i v = _mm512_loadu_si512((const void *)bp);
            NR_VBARRIER(v);
            uint32_t kk = _mm512_mask_cmpeq_epi64_mask(0x05, v, _mm512_set1_epi64((long long)wid));
            uint32_t dm = (kk & 1) << 4 | (kk & 4) << 3;
            acc = _mm512_mask_or_epi64(acc, (__mmask8)dm, acc, v);
            v = _mm512_mask_mov_epi64(v, (__mmask8)kk, ones);
            NR_VBARRIER(v);
            _mm256_storeu_si256((__m256i *)bp, _mm512_castsi512_si256(v));
#else
            /* 32-bit lanes: id0 leaf0 id1 leaf1, then 64-bit lanes 2, 3:
             * value0 value1 */
            __m512i v = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)bp));
            NR_VBARRIER(v);
            uint32_t kk = _mm512_mask_cmpeq_epi32_mask(0x05, v, _mm512_set1_epi32((int)wid));
            uint32_t dm = (kk & 1) << 2 | (kk & 4) << 1;
            acc = _mm512_mask_or_epi64(acc, (__mmask8)dm, acc, v);
            v = _mm512_mask_mov_epi32(v, (__mmask16)kk, ones);
            NR_VBARRIER(v);
            _mm_storeu_si128((__m128i *)bp, _mm512_castsi512_si128(v));
#endif
            any |= kk;
        }
        acc8 |= (uint64_t)_mm512_reduce_or_epi64(acc);
        f |= (NR_WORD)0 - (NR_WORD)((any | (any >> 2)) & 1);
    } else
#endif
    {
        /* the path's slots: ids match, and in a tagged tree leaf words
         * too (a loop each, so that other trees pay nothing for it) */
#define NR_PATH_SCAN(MATCH)                                                              \
        for (uint32_t k = 0; k < D; k++) {                                               \
            uint64_t b = o->pathb[k];                                                    \
            unsigned char *bp = o->tree + b * bstride;                                   \
            NR_META *tm = (NR_META *)bp;                                                 \
            OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_TREE, OBL_TRACE_RW, b, 1);             \
            for (uint32_t z = 0; z < NR_Z; z++) {                                        \
                NR_WORD m = (NR_WORD)0 - (NR_WORD)(MATCH);                               \
                NR_TAKE(bp + doff + z * vs, m);                                          \
                tm[z].id |= m;                                                           \
                f |= m;                                                                  \
            }                                                                            \
        }
        if (NRW == 32 && o->tagged) { /* public */
            NR_PATH_SCAN((tm[z].id == wid) & (tm[z].leaf == wleaf))
        } else {
            NR_PATH_SCAN(tm[z].id == wid)
        }
#undef NR_PATH_SCAN
    }
    if (vs == 8) /* public */
        memcpy(o->tmp, &acc8, 8);
#if OBL_CT_AVX512
    if (reg64) { /* public: o->tmp has 64 bytes of slack */
        NR_REG_LOOP(w)
        _mm512_storeu_si512((void *)(o->tmp + nr_reg_off(vs, NW, front, w)), acc64[w]);
    }
#endif
    return (uint64_t)(f & 1);
}

#undef NR_TAKE
#undef NR_TAKE64

/* see nroram_internal.h; block size as in nr_evict_buf */
static uint64_t NR_F(nr_fetch)(obl_nroram *o, uint64_t id, uint64_t pos)
{
#define NR_FETCH_CALL(VS, NWC) return NR_F(nr_fetch_core)(o, id, pos, VS, NWC)
    NR_BY_WORDS(o, NR_FETCH_CALL, (void)0)
#undef NR_FETCH_CALL
    if (o->vs == 8) /* public: the size-dependent step folds away */
        return NR_F(nr_fetch_core)(o, id, pos, 8, 0);
    return NR_F(nr_fetch_core)(o, id, pos, o->vs, 0);
}

/* Stash occupancy (secret). */
static inline uint64_t NR_F(nr_stash_count)(const obl_nroram *o)
{
    const NR_META *bm = (const NR_META *)o->bmeta;
#if OBL_CT_AVX512
    /* whole chunks, the lanes past the stash dropped from the
     * comparison's mask */
    if (!o->plan_scalar) { /* public; the switch: tests only */
        uint32_t c = o->P;
        for (uint32_t j = 0; j < o->P; j += NR_PER) {
            __mmask8 kl = NR_F(nr_chunk_ideq)(NR_F(nr_chunk_load)(bm, j), NR_F(nr_chunk_lanes)(o->P, j),
                                              NR_DUMMY);
            c -= (uint32_t)__builtin_popcount(kl); /* popcnt: no branch */
        }
        return c;
    }
#endif
    uint32_t c = 0;
    for (uint32_t s = 0; s < o->P; s++)
        c += bm[s].id != NR_DUMMY; /* a comparison's 0/1, summed: no branch */
    return c;
}

/* One eviction on the next reverse-lexicographic path. Public.
 * It first prefetches (with whole-bucket moves: once this eviction's
 * metadata is loaded, nr_evict_core), to L2 for writing, the path of the
 * eviction o->pf_lead after it (the order is public and known in advance):
 * those misses then overlap this eviction and what follows it, instead of
 * stalling that eviction's loads (measured: prefetching both eviction
 * paths when the access starts left their loads as the largest stall; the
 * lead: obl_nroram_create). With a lead of 2 the first two evictions of a
 * tree find their paths not prefetched. */
static void NR_F(nr_evict_next)(obl_nroram *o)
{
    uint64_t e = NR_F(nr_evict_leaf)(o, o->evict_ctr++);
    uint64_t next = NR_F(nr_evict_leaf)(o, o->evict_ctr + o->pf_lead - 1);
    if (!NR_F(nr_whole_buckets)(o)) /* public; else nr_evict_core prefetches */
        NR_PREFETCH_EVICT_PATH(o, next, 2);
    if (NR_F(nr_whole_buckets)(o)) { /* public: nr_evict_core reads the path in the tree */
        NR_F(nr_path_index)(o, e);
        o->pf_next = next;
        NR_F(nr_evict_buf)(o, e);
        return;
    }
    NR_F(nr_load_path)(o, e);
    if (!NR_F(nr_evict_buf)(o, e)) /* public */
        NR_F(nr_store_path)(o);
}

/*
 * Runs extra evictions until the stash is back to at most S blocks or the
 * budget runs out. Returns 1 if the stash is within bounds.
 * LEAK: one bit per extra eviction, "the stash is still over its bound";
 * this only happens after a revealed overflow (docs/oram.md).
 */
static int NR_F(nr_drain)(obl_nroram *o, uint32_t budget)
{
    for (uint32_t i = 0; i < budget; i++) {
        uint64_t over = obl_ct_gt64(NR_F(nr_stash_count)(o), o->S);
        if (!OBL_DECLASSIFY_VAL(over))
            return 1;
        NR_F(nr_evict_next)(o);
    }
    uint64_t over = obl_ct_gt64(NR_F(nr_stash_count)(o), o->S);
    return !OBL_DECLASSIFY_VAL(over);
}

static inline __attribute__((always_inline)) void NR_F(nr_stash_in)(obl_nroram *o, uint64_t keep,
                                                                    uint64_t id, uint64_t new_pos,
                                                                    const size_t vs, const int NW)
{
    (void)NW; /* no vector registers without AVX-512 */
    NR_META *bm = (NR_META *)o->bmeta;
    NR_WORD nid = NR_SEL(keep, o->tagged ? (NR_WORD)nr_tag_id(id) : (NR_WORD)id, NR_DUMMY);
    NR_WORD nleaf = (NR_WORD)nr_tag_leaf(o, id, new_pos & (o->L - 1));
#if OBL_CT_AVX512
    if (o->P <= 64 && !o->plan_scalar) { /* public (the switch: tests only) */
        /* The empty slots as a bit mask (a comparison per entry, no
         * branch), its lowest bit isolated: the slot to fill. */
        const uint32_t P = o->P;
#if NRW == 64
        const __m512i nv = _mm512_set_epi64((long long)nleaf, (long long)nid, (long long)nleaf,
                                            (long long)nid, (long long)nleaf, (long long)nid,
                                            (long long)nleaf, (long long)nid);
#else
        const __m512i nv = _mm512_set1_epi64((long long)((uint64_t)nleaf << 32 | nid));
#endif
        uint64_t emp = 0;
        for (uint32_t j = 0; j < P; j += NR_PER) {
            __mmask8 ld = NR_F(nr_chunk_lanes)(P, j);
            __mmask8 kl = NR_F(nr_chunk_ideq)(NR_F(nr_chunk_load)(bm, j), ld, NR_DUMMY);
            emp |= (uint64_t)NR_F(nr_lanes_entries)(kl) << j;
        }
        uint64_t one = emp & (0 - emp); /* one exists: nr_settle */
        for (uint32_t j = 0; j < P; j += NR_PER) {
            uint32_t k = (uint32_t)(one >> j) & ((1u << NR_PER) - 1);
            __m512i v = NR_F(nr_chunk_load)(bm, j);
            NR_F(nr_chunk_store)(bm, j, _mm512_mask_mov_epi64(v, NR_F(nr_entry_lanes)(k), nv));
        }
        if (vs == 8) { /* public */
            uint64_t t;
            memcpy(&t, o->tmp, 8);
            /* behind the barrier: else gcc 12 folds the broadcast into a
             * load of o->tmp masked by the secret slot (the masked-operand
             * audit, tests/ct/masked_ops.sh, rejects that) */
            __m512i tv = _mm512_set1_epi64((long long)t);
            NR_VBARRIER(tv);
            for (uint32_t j = 0; j < P; j += 8) {
                __m512i v = NR_F(nr_vals_load)(o, j);
                NR_F(nr_vals_store)(o, j, _mm512_mask_mov_epi64(v, (__mmask8)(one >> j), tv));
            }
        } else if (NW && vs >= 64) { /* public */
            /* the block in NW registers, each slot blended with them
             * under its mask (as the eviction's data pass swaps): the
             * vectors stay inside the slot (nr_reg_off), a slot's loads
             * come before its stores (its last two vectors overlap) */
            __m512i t[NR_REG_MAX_W];
            NR_REG_LOOP(w)
            t[w] = _mm512_loadu_si512((const void *)(o->tmp + nr_reg_off(vs, NW, 0, w)));
            for (uint32_t s = 0; s < P; s++) {
                __m512i m = _mm512_set1_epi64((long long)obl_ct_mask((one >> s) & 1));
                unsigned char *sp = o->bdata + (size_t)s * vs;
                __m512i d[NR_REG_MAX_W];
                NR_REG_LOOP(w)
                d[w] = _mm512_loadu_si512((const void *)(sp + nr_reg_off(vs, NW, 0, w)));
                NR_REG_LOOP(w)
                d[w] = _mm512_ternarylogic_epi64(m, t[w], d[w], 0xca);
                NR_REG_LOOP(w)
                _mm512_storeu_si512((void *)(sp + nr_reg_off(vs, NW, 0, w)), d[w]);
            }
        } else {
            for (uint32_t s = 0; s < P; s++)
                obl_ct_cmov((one >> s) & 1, o->bdata + (size_t)s * vs, o->tmp, vs);
        }
        return;
    }
#endif

    /* Into the first free stash slot: one exists, since at most S + 1 of
     * the P = S + 2 slots are held when an access starts (nr_settle). */
    /* through the constant-time selects: clang 14 compiled the plain
     * `id == dummy ? s : 255` of this loop into a branch on the slot's
     * emptiness (docs/timing.md, "clang") */
    uint32_t first = 255;
    for (uint32_t s = 0; s < o->P; s++) {
        uint32_t c = obl_ct_select32(nr_eq(bm[s].id, NR_DUMMY), s, 255);
        first = (uint32_t)obl_ct_min64(first, c);
    }
    for (uint32_t s = 0; s < o->P; s++) {
        NR_WORD m = (NR_WORD)0 - (NR_WORD)(s == first);
        bm[s].id ^= m & (bm[s].id ^ nid);
        bm[s].leaf ^= m & (bm[s].leaf ^ nleaf);
    }
    for (uint32_t s = 0; s < o->P; s++)
        obl_ct_cmov(nr_eq(s, first), o->bdata + (size_t)s * vs, o->tmp, vs);
}

/*
 * The evictions an access owes (section 3.2; two, or three in a tree of
 * more than 2 blocks per leaf: docs/oram.md, "Tree and buckets"), run at
 * the start of the NEXT access of the structure, once that access's path is being fetched
 * (nr_fetch_core), so that the path's cache misses overlap them; or by
 * nr_ready. The sequence of reads, stash insertions and evictions is the
 * paper's, only the call it runs in moves. Then the stash's statistics and
 * the overflow check, at the same point of that sequence as before.
 */
static void NR_F(nr_settle)(obl_nroram *o)
{
    if (!o->owed) /* public */
        return;
    o->owed = 0;
    NR_F(nr_evict_next)(o);
    NR_F(nr_evict_next)(o);
    if (o->ev > 2) /* public: over 2 blocks per leaf (nr_shape) */
        NR_F(nr_evict_next)(o);

    uint64_t cnt = NR_F(nr_stash_count)(o);
    o->st.stash_max = obl_ct_max64(o->st.stash_max, cnt);
    if (o->track_hist) /* public flag */
        for (uint32_t k = 0; k <= o->P && k < 65; k++)
            o->st.hist[k] += obl_ct_eq64(k, cnt);

    /* LEAK: whether the stash is over its bound after an access's
     * evictions. This is the overflow event (measured tail: about 2^-30
     * per access at S = 20, 2^-40 at S = 29; docs/oram.md); revealing it is
     * how it gets reported (by the call that ran the evictions). The
     * stash has S + 2 slots, so the access in progress still finds one
     * free if the extra evictions could not drain it. */
    uint64_t over = obl_ct_gt64(cnt, o->S);
    if (OBL_DECLASSIFY_VAL(over)) {
        o->pend_err = OBL_ERR_STASH_OVERFLOW; /* counted when reported */
        o->full = !NR_F(nr_drain)(o, 4 * o->D + 16);
    }
}

/* see nroram_internal.h; block size as in nr_evict_buf */
static obl_err NR_F(nr_put)(obl_nroram *o, uint64_t keep, uint64_t id, uint64_t new_pos)
{
#define NR_PUT_CALL(VS, NWC) NR_F(nr_stash_in)(o, keep, id, new_pos, VS, NWC)
    NR_BY_WORDS(o, NR_PUT_CALL,
                if (o->vs == 64) NR_PUT_CALL(64, 0); /* public */
                else NR_PUT_CALL(o->vs, 0))
#undef NR_PUT_CALL
    o->owed = 1; /* its two evictions: nr_settle */
    o->st.accesses++;
    obl_err e = o->pend_err;
    o->pend_err = OBL_OK;
    o->st.overflows += e == OBL_ERR_STASH_OVERFLOW;
    return e;
}

#undef NR_F
#undef NR_META
#undef NR_DUMMY
#undef NR_WORD
#undef NR_SEL
#undef NR_NONE
#undef NR_PER
