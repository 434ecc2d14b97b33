/*
 * The access and eviction code of the Circuit ORAM (src/oram/nroram.c has
 * creation and the public entry points; nroram_impl.h the code written once
 * for 32- and 64-bit metadata words, instantiated here). This file is
 * compiled once per instruction-set variant (src/common/cpu.h): its only
 * external names are the operations tables nr_ops32_<variant> and
 * nr_ops64_<variant>, which a tree picks when it is created.
 */
#include <string.h>

#include <obl/oram.h>

#include "ct.h"
#include "common/secret.h"
#include "common/trace.h"
#include "common/cpu.h"
#include "oram/nroram_internal.h"

/* Reverse the bits of a 64-bit word (public values only). */
static inline uint64_t nr_bitrev64(uint64_t x)
{
    x = ((x >> 1) & 0x5555555555555555ULL) | ((x & 0x5555555555555555ULL) << 1);
    x = ((x >> 2) & 0x3333333333333333ULL) | ((x & 0x3333333333333333ULL) << 2);
    x = ((x >> 4) & 0x0F0F0F0F0F0F0F0FULL) | ((x & 0x0F0F0F0F0F0F0F0FULL) << 4);
    return __builtin_bswap64(x);
}

/*
 * Short comparisons for the hot loops. nr_lt needs a, b < 2^63 (levels,
 * slots, reach values); nr_eq is exact for any words (it compares a ^ b
 * with zero through the sign of its halves). Both produce 0/1 without a
 * branch.
 */
static inline uint64_t nr_lt(uint64_t a, uint64_t b) { return obl_ct_barrier64((a - b) >> 63); }

/* a == b for a, b < 2^63 (levels, slots, NR_NONE) */
static inline uint64_t nr_eqs(uint64_t a, uint64_t b)
{
    return obl_ct_barrier64(((a ^ b) - 1) >> 63);
}

static inline uint64_t nr_eq(uint64_t a, uint64_t b)
{
    uint64_t x = a ^ b;
    return obl_ct_barrier64(((x | (x >> 1)) - 1) >> 63 & ~(x >> 63));
}

/*
 * The two sequential chains of an eviction (nr_evict_core), one step each,
 * written so that the value carried from level to level passes through
 * one compare and one conditional move per step: each chain runs once per
 * level and eviction, and its latency, not its instruction count, is what
 * it costs (running PrepareTarget's chain three times instead of once
 * measured a quarter slower an access at 2^16). The
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

/* EvictFast's held block (metadata words, 8-byte blocks), one step: if (c)
 * swap *h and *s. Two moves on one test of c, which is known ahead: the
 * held word goes through one cmov per slot (the mask form, and, xor, xor,
 * takes three steps). Secret: c, *h, *s. */
static inline void nr_hold_swap(uint64_t c, uint64_t *h, uint64_t *s)
{
#if OBL_CT_X86
    uint64_t a = *h, b = *s, t = a;
    __asm__("test %[c], %[c]\n\t"
            "cmovnz %[b], %[a]\n\t"
            "cmovnz %[t], %[b]"
            : [a] "+&r"(a), [b] "+&r"(b)
            : [c] "r"(c), [t] "r"(t)
            : "cc");
    *h = a;
    *s = b;
#else
    obl_ct_cswap64(c, h, s);
#endif
}

/* Conditional block swap, with the 8-byte case in registers (obl_ct_cswap
 * has no 8-byte fast path). */
static inline void nr_cswap_blk(uint64_t c, void *a, void *b, size_t vs)
{
    if (vs == 8) { /* public */
        uint64_t x, y, m = obl_ct_mask(c), t;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        t = m & (x ^ y);
        x ^= t;
        y ^= t;
        memcpy(a, &x, 8);
        memcpy(b, &y, 8);
        return;
    }
    obl_ct_cswap(c, a, b, vs);
}

/*
 * Blocks held in vector registers (AVX-512 builds): a block of 16 to
 * NR_REG_MAX_W * 64 bytes is moved as
 * nr_reg_words(vs) 64-byte vectors, loaded and stored whole; the lanes of
 * the last vector past the block (the bytes outside nr_tail_lanes) are
 * never swapped, so they
 * store back the bytes they loaded (the next slot, the start of the next
 * bucket, or the 64 bytes of slack after the tree, the stash and o->tmp).
 * The next bucket is on the path only after the root (bucket 1); its
 * metadata, rewritten with the loaded bytes, is copied back from the path
 * buffer after the data pass, and its data is processed after the root's.
 * 0: not held in registers (other sizes, or no AVX-512). Public: vs.
 */
#define NR_REG_MAX_W 8
#define NR_REG_LOOP(w) _Pragma("GCC unroll 8") for (int w = 0; w < NW; w++)

static inline int nr_reg_words(size_t vs)
{
#if OBL_CT_AVX512
    if (vs >= 16 && vs <= NR_REG_MAX_W * 64)
        return (int)((vs + 63) / 64);
#else
    (void)vs;
#endif
    return 0;
}

/* Runs CALL(VS, NW) with NW = nr_reg_words(o->vs) as a constant (1 .. 8),
 * VS the constant 64 for 64-byte blocks and o->vs otherwise, so that each
 * register count gets its own code; OTHER when the block takes no register
 * path. Public: o->vs. */
#define NR_BY_WORDS(o, CALL, OTHER)                                                      \
    switch (nr_reg_words((o)->vs)) {                                                      \
    case 1:                                                                               \
        if ((o)->vs == 64)                                                                \
            CALL(64, 1);                                                                  \
        else                                                                              \
            CALL((o)->vs, 1);                                                             \
        break;                                                                            \
    case 2: CALL((o)->vs, 2); break;                                                      \
    case 3: CALL((o)->vs, 3); break;                                                      \
    case 4: CALL((o)->vs, 4); break;                                                      \
    case 5: CALL((o)->vs, 5); break;                                                      \
    case 6: CALL((o)->vs, 6); break;                                                      \
    case 7: CALL((o)->vs, 7); break;                                                      \
    case 8: CALL((o)->vs, 8); break;                                                      \
    default: OTHER; break;                                                                \
    }

#if OBL_CT_AVX512
/* All-ones bytes for the bytes of the block in its last vector. */
static inline __m512i nr_tail_lanes(size_t vs)
{
    unsigned n = (unsigned)((vs - 1) & 63) + 1;
    __mmask64 k = n == 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
    return _mm512_maskz_mov_epi8(k, _mm512_set1_epi8(-1));
}
#endif


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
static int nr_scan_max16_test(const uint16_t in[32], uint16_t out[32])
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
static int nr_scan_max16_test(const uint16_t in[32], uint16_t out[32])
{
    (void)in;
    (void)out;
    return 0;
}
#endif

#define NRW 32
#include "oram/nroram_impl.h"
#undef NRW
#define NRW 64
#include "oram/nroram_impl.h"
#undef NRW

/* Extra evictions for a tree in the `full` state (nr_ready): the owed ones
 * first (nr_settle), then up to a budget. */
static obl_err nr_recover32(obl_nroram *o)
{
    nr_settle32(o);
    int ok = nr_drain32(o, 4 * o->D + 16);
    o->full = !ok;
    return ok ? OBL_OK : OBL_ERR_STATE;
}

static obl_err nr_recover64(obl_nroram *o)
{
    nr_settle64(o);
    int ok = nr_drain64(o, 4 * o->D + 16);
    o->full = !ok;
    return ok ? OBL_OK : OBL_ERR_STATE;
}

const nr_ops OBL_V(nr_ops32) = {nr_fetch32, nr_put32, nr_recover32, nr_scan_max16_test};
const nr_ops OBL_V(nr_ops64) = {nr_fetch64, nr_put64, nr_recover64, nr_scan_max16_test};
