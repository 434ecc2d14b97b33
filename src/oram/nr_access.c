/* SPDX-License-Identifier: MIT */
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
 * NR_REG_MAX_W * 64 bytes is moved as nr_reg_words(vs) 64-byte vectors,
 * loaded and stored whole, vector w at byte nr_reg_off(vs, NW, w) of the
 * block. A block of more than 64 bytes has its last vector end at the
 * block's end: it overlaps the vector before it, whose common bytes it
 * holds too, and every swap and store gives both the same values; so no
 * load or store leaves the block (whole vectors from its start would take
 * a 216-byte block's loads 40 bytes into the next bucket, a line no
 * prefetch asked for). A
 * block of 16 to 63 bytes is one vector, which ends at the block's end
 * when a tree slot has 64 - vs bytes of its own bucket before it (the
 * metadata: nr_reg_front; the stash and o->tmp have 64 bytes of slack
 * before them), else starts at its start. The lanes outside the block
 * (outside nr_tail_lanes) are never swapped, so they store back the bytes
 * they loaded: the slot before it (a data pass stores the second slot
 * first) or the bucket's metadata, which an eviction copies back from the
 * path buffer after its data pass; or, from the start, the next slot, the
 * start of the next bucket (a line the bucket's prefetch does not cover)
 * or the 64 bytes of slack after the tree, the stash and o->tmp. The next
 * bucket is on the path only after the root (bucket 1); its metadata,
 * rewritten with the loaded bytes, is copied back from the path buffer
 * after the data pass, and its data is processed after the root's.
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
/* Whether the one vector of a block under 64 bytes ends at the block's
 * end (else it starts at its start): the tree's slots have at least
 * 64 - vs bytes of their bucket before them. Public. */
static inline int nr_reg_front(const obl_nroram *o, size_t vs, int NW)
{
    return NW == 1 && vs < 64 && o->doff + vs >= 64;
}

/* Byte offset, from the block's start, of vector w of a block of vs bytes
 * held in NW vectors (nr_reg_words): 64 w, except that the last vector of
 * a block over 64 bytes, or the one of a front block (nr_reg_front), ends
 * at the block's end. Public. */
static inline ptrdiff_t nr_reg_off(size_t vs, int NW, int front, int w)
{
    return (w == NW - 1 && vs > 64) || front ? (ptrdiff_t)vs - 64 : (ptrdiff_t)64 * w;
}

/* All-ones bytes for the bytes of the block in its last vector: every
 * byte for a block over 64 bytes, the last vs for a front block, else the
 * first (nr_reg_off). */
static inline __m512i nr_tail_lanes(size_t vs, int front)
{
    unsigned n = vs > 64 ? 64 : (unsigned)((vs - 1) & 63) + 1;
    __mmask64 k = n == 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
    if (front && n < 64)
        k <<= 64 - n;
    return _mm512_maskz_mov_epi8(k, _mm512_set1_epi8(-1));
}
#endif

#include "oram/nr_plan.h"


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

/* the prefix-maximum hook for the tests, only in their build */
#ifdef OBL_TESTING
#define NR_SCAN_TEST nr_scan_max16_test
#else
#define NR_SCAN_TEST NULL
#endif
const nr_ops OBL_V(nr_ops32) = {nr_fetch32, nr_put32, nr_recover32, NR_SCAN_TEST};
const nr_ops OBL_V(nr_ops64) = {nr_fetch64, nr_put64, nr_recover64, NR_SCAN_TEST};
