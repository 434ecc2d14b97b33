/* SPDX-License-Identifier: MIT */
/*
 * The plan of a Circuit ORAM eviction (Wang, Chan, Shi, CCS 2015, eprint
 * 2014/672, section 3.4): from the reach of every slot of the stash and the
 * path (nr_evict_reach in nroram_impl.h), which stash block EvictFast picks
 * up and, at each level, with which slot the held block swaps. Two forms
 * with the same output: level by level (nr_plan_levels, every variant) and
 * in 16-bit vector lanes, one per level (nr_plan_deepest, nr_plan_target,
 * nr_plan_swaps; AVX-512 variants). Included by nr_access.c only; it needs
 * its nr_lt and nr_eqs. Independent of the metadata width.
 */
#ifndef OBL_SRC_ORAM_NR_PLAN_H
#define OBL_SRC_ORAM_NR_PLAN_H

#define NR_NONE ((uint64_t)0xff) /* no level, no slot */

/*
 * The two sequential chains of an eviction (nr_evict_core), one step each,
 * written so that the value carried from level to level passes through
 * one compare and one conditional move per step: each chain runs once per
 * level and eviction, and its latency, not its instruction count, is what
 * it costs (running PrepareTarget's chain three times instead of once
 * makes a whole access measurably slower). The
 * x86 versions are cmov in inline assembly (no branch; the compiler cannot
 * turn them into one); elsewhere masks. Secret: every argument but lv.
 */

/* PrepareTarget (fig. 4), one level: src == lv ? on_hit : src == none ?
 * on_idle : src, with none = 0xff (NR_NONE). The comparison with lv does
 * not wait for the first move, so src goes through two moves: about three
 * cycles per level, against six to seven for the select chain it replaced. */
static inline uint64_t nr_target_step(uint64_t src, uint64_t lv, uint64_t on_hit,
                                      uint64_t on_idle)
{
#if OBL_CT_X86
    uint64_t t = src;
    __asm__("cmp $0xff, %[s]\n\t"
            "cmove %[idle], %[t]\n\t"
            "cmp %[lv], %[s]\n\t"
            "cmove %[hit], %[t]"
            : [t] "+&r"(t)
            : [s] "r"(src), [lv] "r"(lv), [idle] "r"(on_idle), [hit] "r"(on_hit)
            : "cc");
    return t;
#else
    uint64_t t = obl_ct_select64(nr_eqs(src, 0xff), on_idle, src);
    return obl_ct_select64(nr_eqs(src, lv), on_hit, t);
#endif
}

/* PrepareDeepest's running maximum: a < b ? b : a (keys below 2^63). */
static inline uint64_t nr_max_step(uint64_t a, uint64_t b)
{
#if OBL_CT_X86
    __asm__("cmp %[b], %[a]\n\t"
            "cmovb %[b], %[a]"
            : [a] "+r"(a)
            : [b] "r"(b)
            : "cc");
    return a;
#else
    return obl_ct_select64(nr_lt(a, b), b, a);
#endif
}

/* a == b ? x : y (a, b < 2^63). Secret: every argument. */
static inline uint64_t nr_sel_eq(uint64_t a, uint64_t b, uint64_t x, uint64_t y)
{
#if OBL_CT_X86
    __asm__("cmp %[b], %[a]\n\t"
            "cmove %[x], %[y]"
            : [y] "+r"(y)
            : [a] "r"(a), [b] "r"(b), [x] "r"(x)
            : "cc");
    return y;
#else
    return obl_ct_select64(nr_eqs(a, b), x, y);
#endif
}

/*
 * PrepareTarget (fig. 4) over the arrays nr_plan_deepest fills, leaf to
 * root, into tg[0..D] (255 for none): src is the level a pending drop at
 * level dest waits for, or 255. At level lv, if src == lv the drop's block
 * is picked up here (tg[lv] = dest) and lv starts the next chain if a
 * level above has a block for it (dp[lv]); with nothing pending, lv starts
 * one if it also has an empty slot (idle[lv]); while src < lv is pending,
 * lv is passed over: one nr_target_step. A chain starts at lv exactly when
 * src changes to a level; dest also moves when src returns to 255, where
 * it is not read before the next start. Secret: every entry. Public: D.
 */
static inline void nr_plan_target(const uint16_t *dp, const uint16_t *idle, uint32_t D,
                                  uint16_t *tg)
{
    uint64_t src = 0xff, dest = 0xff;
    for (uint32_t lv = D + 1; lv-- > 0;) {
        uint64_t nsrc = nr_target_step(src, lv, dp[lv], idle[lv]);
        tg[lv] = (uint16_t)nr_sel_eq(src, lv, dest, 0xff);
        dest = nr_sel_eq(nsrc, src, dest, lv);
        src = nsrc;
    }
}

#if OBL_CT_AVX512
/*
 * The metadata passes of an eviction (nr_evict_core) in 16-bit vector lanes,
 * one lane per level: lane 0 the stash, lane k + 1 tree level k. Used when
 * the stash has at most 32 slots and the path at most 31 levels (public).
 * What the scalar passes compute level by level, here for all levels at
 * once: each level's deepest-going block and empty slot, PrepareDeepest's
 * running maximum (an inclusive prefix maximum, nr_scan_max16),
 * and EvictFast's swap decisions from PrepareTarget's targets (the held
 * block's destination is a prefix maximum too: the targets grow with the
 * level, nr_evict_core). Only PrepareTarget's chain stays scalar, over the
 * arrays this stores. Secret: every lane. Public: P, D.
 */
static const uint16_t nr_iota16[32] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                       11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                       22, 23, 24, 25, 26, 27, 28, 29, 30, 31};

/* lane i <- max(x[0..i]). Within each 128-bit lane first (byte shifts,
 * one cycle each), then each lane takes the maximum of the lanes below
 * (their top words, broadcast and shifted by whole lanes): 14 instructions
 * in a chain of about 16 cycles, where five cross-lane word permutes
 * (vpermw) cost about twice that (perf: the permutes were the eviction's
 * largest item at 2^12). */
static inline __m512i nr_scan_max16(__m512i x)
{
    const __m512i z = _mm512_setzero_si512();
    x = _mm512_max_epu16(x, _mm512_bslli_epi128(x, 2));
    x = _mm512_max_epu16(x, _mm512_bslli_epi128(x, 4));
    x = _mm512_max_epu16(x, _mm512_bslli_epi128(x, 8));
    /* each lane's maximum (its word 7) in all its words */
    __m512i t = _mm512_shuffle_epi32(_mm512_shufflehi_epi16(x, 0xff), (_MM_PERM_ENUM)0xff);
    /* lane j <- max of lanes j - 1 .. 0: the maxima moved one lane up
     * (alignr by 6 qwords), then a prefix maximum over the four lanes by
     * a shift of one lane and one of two */
    __m512i u = _mm512_alignr_epi64(t, z, 6);
    u = _mm512_max_epu16(u, _mm512_alignr_epi64(u, z, 6));
    u = _mm512_max_epu16(u, _mm512_alignr_epi64(u, z, 4));
    return _mm512_max_epu16(x, u);
}

/* Tests only: out[i] = max(in[0..i]) by nr_scan_max16. */
static inline int nr_scan_max16_test(const uint16_t in[32], uint16_t out[32])
{
    _mm512_storeu_si512((void *)out, nr_scan_max16(_mm512_loadu_si512((const void *)in)));
    return 1;
}

/* max(x[0..31]), as a scalar */
static inline uint32_t nr_reduce_max16(__m512i x)
{
    __m256i a = _mm256_max_epu16(_mm512_castsi512_si256(x), _mm512_extracti64x4_epi64(x, 1));
    __m128i b = _mm_max_epu16(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    /* the maximum is the complement of the complements' minimum */
    __m128i m = _mm_minpos_epu16(_mm_xor_si128(b, _mm_set1_epi16(-1)));
    return (uint32_t)(~_mm_cvtsi128_si32(m) & 0xffff);
}

/* Fills dp[0..D] (deepest, 255 for none) and idle[0..D] (deepest where the
 * level has an empty slot, else 255) for PrepareTarget; returns the
 * per-level facts the swap decisions need: bit k of *second = level k's
 * deepest block is its slot 1, of *e0 = its slot 0 is empty; *best0 the
 * stash slot of the deepest-going stash block. */
static inline void nr_plan_deepest(const uint16_t *rr, uint32_t P, uint32_t D, uint16_t *dp,
                                   uint16_t *idle, uint32_t *second, uint32_t *e0,
                                   uint32_t *best0)
{
    const __m512i iota = _mm512_loadu_si512((const void *)nr_iota16);
    const __m512i none = _mm512_set1_epi16(255), zero = _mm512_setzero_si512();
    const __mmask32 lvm = (__mmask32)(((1u << D) - 1) << 1); /* lanes 1..D */
    const __mmask32 pm = P >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << P) - 1);

    /* the stash: the deepest-going block (reach << 8 | slot, the largest
     * wins) and whether a slot is empty (255 - slot for the empty ones).
     * rr and tg are read as whole vectors (both have room) and masked in
     * registers (docs/oram.md, "Masked memory operands"); gcc 12 folds
     * these masks, public lengths, back into masked loads */
    __m512i rs = _mm512_maskz_mov_epi16(pm, _mm512_loadu_si512((const void *)rr));
    __m512i bkey = _mm512_maskz_mov_epi16(pm, _mm512_or_si512(_mm512_slli_epi16(rs, 8), iota));
    __m512i ekey = _mm512_maskz_mov_epi16(pm & _mm512_cmpeq_epi16_mask(rs, zero),
                                          _mm512_sub_epi16(none, iota));
    uint32_t bk = nr_reduce_max16(bkey);
    uint32_t ek = nr_reduce_max16(ekey);
    *best0 = bk & 0xff;
    uint32_t he0 = (uint32_t)((0 - (uint64_t)ek) >> 63); /* ek > 0: an empty slot */

    /* the path: slot z of level k + 1 is rr[P + 2k + z] */
    uint32_t n = 2 * D;
    __mmask32 am = n >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << n) - 1);
    __mmask32 bmk = n > 32 ? (__mmask32)((1u << (n - 32)) - 1) : 0;
    __m512i a = _mm512_maskz_mov_epi16(am, _mm512_loadu_si512((const void *)(rr + P)));
    __m512i b = _mm512_maskz_mov_epi16(bmk, _mm512_loadu_si512((const void *)(rr + P + 32)));
    __m512i i0 = _mm512_slli_epi16(_mm512_sub_epi16(iota, _mm512_set1_epi16(1)), 1);
    __m512i r0 = _mm512_maskz_permutex2var_epi16(lvm, a, i0, b);
    __m512i r1 = _mm512_maskz_permutex2var_epi16(lvm, a, _mm512_add_epi16(i0, _mm512_set1_epi16(1)), b);
    __mmask32 z0 = _mm512_cmpeq_epi16_mask(r0, zero) & lvm;
    __mmask32 he = ((z0 | _mm512_cmpeq_epi16_mask(r1, zero)) & lvm) | he0;
    *second = _mm512_cmplt_epu16_mask(r0, r1) & lvm;
    *e0 = z0;

    /* PrepareDeepest (fig. 3): key reach << 8 | (255 - level), the stash's
     * in lane 0; deepest[k] comes from the maximum over the lanes above k */
    __m512i key = _mm512_or_si512(_mm512_slli_epi16(_mm512_max_epu16(r0, r1), 8),
                                  _mm512_sub_epi16(none, iota));
    key = _mm512_maskz_mov_epi16(lvm, key);
    key = _mm512_mask_mov_epi16(key, 1, _mm512_set1_epi16((short)((bk & 0xff00) | 255)));
    __m512i inc = nr_scan_max16(key);
    __m512i ex = _mm512_maskz_permutexvar_epi16((__mmask32)~1u, _mm512_sub_epi16(iota, _mm512_set1_epi16(1)), inc);
    __m512i goal = _mm512_srli_epi16(ex, 8);
    __m512i from = _mm512_sub_epi16(none, _mm512_and_si512(ex, none));
    __mmask32 hasd = _mm512_cmpge_epu16_mask(goal, iota) & lvm;
    __m512i deep = _mm512_mask_mov_epi16(none, hasd, from);
    _mm512_storeu_si512((void *)dp, deep);
    _mm512_storeu_si512((void *)idle, _mm512_mask_mov_epi16(none, he, deep));
}

/* From PrepareTarget's targets tg[0..D] (255 for none): bit k - 1 of *m0
 * (*m1) = at level k the held block swaps with slot 0 (slot 1); returns
 * the stash slot picked up (255 for none). */
static inline uint32_t nr_plan_swaps(const uint16_t *tg, uint32_t D, uint32_t second, uint32_t e0,
                                     uint32_t best0, uint64_t *m0, uint64_t *m1)
{
    const __m512i iota = _mm512_loadu_si512((const void *)nr_iota16);
    const __m512i none = _mm512_set1_epi16(255);
    const __mmask32 lvm = (__mmask32)(((1u << D) - 1) << 1);
    __m512i t = _mm512_maskz_mov_epi16(lvm | 1, _mm512_loadu_si512((const void *)tg));
    __mmask32 tgl = _mm512_cmpneq_epi16_mask(t, none) & (lvm | 1);
    /* the held block's destination on arriving at each level: the largest
     * target above it (nr_evict_core) */
    __m512i inc = nr_scan_max16(_mm512_maskz_mov_epi16(tgl, t));
    __m512i hd = _mm512_maskz_permutexvar_epi16((__mmask32)~1u, _mm512_sub_epi16(iota, _mm512_set1_epi16(1)), inc);
    __mmask32 towrite = _mm512_cmpeq_epi16_mask(hd, iota) & lvm;
    /* the slot: the deepest block's when picking up, else the first empty */
    __mmask32 s1 = (tgl & second) | (~tgl & ~e0);
    __mmask32 dos = (tgl | towrite) & lvm;
    *m0 = (uint64_t)((dos & ~s1) >> 1);
    *m1 = (uint64_t)((dos & s1) >> 1);
    uint32_t t0 = tgl & 1;
    return (uint32_t)obl_ct_select64(t0, best0, 255);
}
#else
static inline int nr_scan_max16_test(const uint16_t in[32], uint16_t out[32])
{
    (void)in;
    (void)out;
    return 0;
}
#endif

/*
 * The plan of an eviction, portable form: PrepareDeepest (fig. 3),
 * PrepareTarget (fig. 4) and EvictFast's decisions, level by level, from
 * the reaches rr[0 .. P + Z * D) (nr_evict_reach). Returns the stash slot
 * EvictFast picks up (255 for none); bit k of *sw0 (*sw1): at level k + 1
 * the held block swaps with slot 0 (slot 1). Uses o's scratch arrays.
 * Secret: rr and every output. Public: P, D.
 */
static inline __attribute__((always_inline)) uint64_t nr_plan_levels(obl_nroram *o,
                                                                    const uint16_t *rr,
                                                                    uint64_t *sw0p,
                                                                    uint64_t *sw1p)
{
    const uint32_t D = o->D, P = o->P;
    uint64_t *deepest = o->deepest, *target = o->target, *best = o->best, *empty = o->empty,
             *hasempty = o->hasempty;
    uint64_t sel, sw0 = 0, sw1 = 0;
    /* PrepareDeepest (fig. 3). First, per level and independently of the
     * others: the slot of its deepest-going block (best), its first empty
     * slot, whether it has one, and the reach of that block as a key
     * reach << 8 | (255 - level): a larger key reaches deeper, and between
     * equal reaches the level nearer the root wins, as the paper's strict
     * "goal < reach" update keeps the first. Level 0 is the stash. */
    uint64_t gk; /* the running maximum of the keys of the levels above */
    {
        uint32_t bk = 0, ek = 255;
        for (uint32_t s = 0; s < P; s++) {
            uint32_t k = (uint32_t)rr[s] << 8 | s;
            bk = bk > k ? bk : k;
            uint32_t eks = rr[s] == 0 ? s : 255;
            ek = ek < eks ? ek : eks;
        }
        best[0] = bk & 0xff;
        empty[0] = ek;
        hasempty[0] = nr_lt(ek, 255);
        gk = (bk & ~(uint32_t)0xff) | 255; /* reach 0 if the stash is empty */
    }
    /* Then, root to leaf, each level's own part and the one sequential
     * part of PrepareDeepest in the same loop: the running maximum of the
     * keys of the levels above each level gives its deepest[] (the level
     * whose block can go deepest, if that is at least this level). */
    deepest[0] = NR_NONE;
    for (uint32_t lv = 1; lv <= D; lv++) {
        uint32_t s0 = P + (lv - 1) * NR_Z;
        uint32_t r0 = rr[s0], r1 = rr[s0 + 1];
        uint32_t second = (uint32_t)(r0 < r1), sm = (uint32_t)0 - second;
        uint32_t r = r0 ^ (sm & (r0 ^ r1));
        uint32_t d0 = (uint32_t)(r0 == 0);
        best[lv] = s0 + second;
        empty[lv] = s0 + (d0 ^ 1); /* slot 0 if empty, else slot 1 */
        hasempty[lv] = d0 | (uint32_t)(r1 == 0);
        uint64_t goal = gk >> 8, from = 255 - (gk & 255);
        deepest[lv] = obl_ct_select64(nr_lt(goal, lv) ^ 1, from, NR_NONE);
        gk = nr_max_step(gk, (uint64_t)(r << 8 | (255 - lv)));
    }

    /* PrepareTarget (fig. 4): leaf to root. src is the level a pending
     * drop at level dest waits for, or NR_NONE. At level lv: if src == lv
     * (the drop's block is picked up here), target[lv] = dest and lv
     * starts the next chain if a block of a level above can come down to
     * it (deepest[lv] != NR_NONE); with nothing pending, lv starts one if
     * it also has an empty slot; while src < lv is pending, lv is passed
     * over. So the new src is deepest[lv] (NR_NONE if none) on a hit,
     * deepest[lv] or NR_NONE (no empty slot) when idle, else src: one
     * nr_target_step, with the outputs computed beside the chain. */
    {
        uint64_t src = NR_NONE, dest = NR_NONE;
        for (uint32_t lv = D + 1; lv-- > 0;) {
            uint64_t dl = deepest[lv];
            uint64_t nsrc = nr_target_step(src, lv, dl, obl_ct_select64(hasempty[lv], dl, NR_NONE));
            target[lv] = obl_ct_select64(nr_eqs(src, lv), dest, NR_NONE);
            /* a chain starts here iff src changed to a level */
            uint64_t c = (nr_eqs(nsrc, NR_NONE) | nr_eqs(nsrc, src)) ^ 1;
            dest = obl_ct_select64(c, lv, dest);
            src = nsrc;
        }
    }

    /* EvictFast's decisions, from metadata only: the targets of the
     * pick-ups grow with the level (each chain of PrepareTarget runs
     * toward the root, and the next one starts above where it ended), so
     * the block held on arriving at level lv is the one of the latest
     * pick-up, and it is dropped at lv iff the largest target so far (hd)
     * is lv. The hold swaps with one slot (c0: slot 0, c1: slot 1): the
     * deepest block's when picking up, else the first empty one. */
    uint64_t tg0 = nr_eqs(target[0], NR_NONE) ^ 1;
    sel = obl_ct_select64(tg0, best[0], 255);
    uint64_t hd = obl_ct_select64(tg0, target[0], 0);
    for (uint32_t lv = 1; lv <= D; lv++) {
        uint32_t s0 = P + (lv - 1) * NR_Z;
        uint64_t towrite = nr_eqs(hd, lv);
        uint64_t tgl = nr_eqs(target[lv], NR_NONE) ^ 1;
        uint64_t sl = obl_ct_select64(tgl, best[lv], empty[lv]);
        uint64_t doswap = tgl | towrite;
        uint64_t c1 = doswap & (sl - s0); /* sl - s0 is 0 or 1 */
        hd = obl_ct_select64(tgl, target[lv], hd);
        sw0 |= (doswap ^ c1) << (lv - 1);
        sw1 |= c1 << (lv - 1);
    }
    *sw0p = sw0;
    *sw1p = sw1;
    return sel;
}

/*
 * The plan of an eviction (as nr_plan_levels): the vector form when the
 * stash has at most 32 slots and the path at most 31 levels (AVX-512
 * variants), else the portable one. Both give the same output
 * (test_oram's "vector and scalar metadata passes agree").
 */
static inline __attribute__((always_inline)) uint64_t nr_plan(obl_nroram *o, const uint16_t *rr,
                                                             uint64_t *sw0, uint64_t *sw1)
{
#if OBL_CT_AVX512
    const uint32_t D = o->D, P = o->P;
    if (P <= 32 && D <= 31 && !o->plan_scalar) { /* public */
        uint16_t dp[32], idl[32], tgt[32];
        uint32_t second, e0, best0;
        *sw0 = 0;
        *sw1 = 0;
        nr_plan_deepest(rr, P, D, dp, idl, &second, &e0, &best0);
        nr_plan_target(dp, idl, D, tgt);
        return nr_plan_swaps(tgt, D, second, e0, best0, sw0, sw1);
    }
#endif
    return nr_plan_levels(o, rr, sw0, sw1);
}

#undef NR_NONE

#endif /* OBL_SRC_ORAM_NR_PLAN_H */
