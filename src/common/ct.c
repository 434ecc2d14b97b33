/*
 * Out-of-line, explicitly named variants of the constant-time block moves,
 * one per instruction set, each compiled with a target attribute so that one
 * binary holds all of them. The library's hot paths use the inline versions
 * of src/ct.h chosen at build time; these exist so that the micro-benchmark
 * and the tests can compare and check every variant on the same machine.
 */
#include "ct.h"

#include <obl/obl.h>

void obl_ct_cmov_portable_fn(uint64_t ctl, void *dst, const void *src, size_t len)
{
    obl_ct_cmov_portable(ctl, dst, src, len);
}

void obl_ct_cswap_portable_fn(uint64_t ctl, void *a, void *b, size_t len)
{
    obl_ct_cswap_portable(ctl, a, b, len);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

__attribute__((target("avx2"))) void obl_ct_cmov_avx2(uint64_t ctl, void *dst,
                                                       const void *src, size_t len)
{
    __m256i m = _mm256_set1_epi64x((long long)obl_ct_mask(ctl));
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    size_t i = 0;
    for (; i + 32 <= len; i += 32) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(d + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + i));
        _mm256_storeu_si256((__m256i *)(d + i), _mm256_blendv_epi8(a, b, m));
    }
    if (i < len)
        obl_ct_cmov_portable(ctl, d + i, s + i, len - i);
}

__attribute__((target("avx2"))) void obl_ct_cswap_avx2(uint64_t ctl, void *a, void *b,
                                                        size_t len)
{
    __m256i m = _mm256_set1_epi64x((long long)obl_ct_mask(ctl));
    unsigned char *x = (unsigned char *)a;
    unsigned char *y = (unsigned char *)b;
    size_t i = 0;
    for (; i + 32 <= len; i += 32) {
        __m256i u = _mm256_loadu_si256((const __m256i *)(x + i));
        __m256i v = _mm256_loadu_si256((const __m256i *)(y + i));
        __m256i t = _mm256_and_si256(m, _mm256_xor_si256(u, v));
        _mm256_storeu_si256((__m256i *)(x + i), _mm256_xor_si256(u, t));
        _mm256_storeu_si256((__m256i *)(y + i), _mm256_xor_si256(v, t));
    }
    if (i < len)
        obl_ct_cswap_portable(ctl, x + i, y + i, len - i);
}

__attribute__((target("avx512f,avx512bw"))) void
obl_ct_cmov_avx512(uint64_t ctl, void *dst, const void *src, size_t len)
{
    __mmask8 k = (__mmask8)obl_ct_mask(ctl);
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    size_t i = 0;
    for (; i + 64 <= len; i += 64) {
        __m512i a = _mm512_loadu_si512((const void *)(d + i));
        __m512i b = _mm512_loadu_si512((const void *)(s + i));
        _mm512_storeu_si512((void *)(d + i), _mm512_mask_mov_epi64(a, k, b));
    }
    if (i < len)
        obl_ct_cmov_avx2(ctl, d + i, s + i, len - i);
}

__attribute__((target("avx512f,avx512bw"))) void obl_ct_cswap_avx512(uint64_t ctl, void *a,
                                                                      void *b, size_t len)
{
    __m512i m = _mm512_set1_epi64((long long)obl_ct_mask(ctl));
    unsigned char *x = (unsigned char *)a;
    unsigned char *y = (unsigned char *)b;
    size_t i = 0;
    for (; i + 64 <= len; i += 64) {
        __m512i u = _mm512_loadu_si512((const void *)(x + i));
        __m512i v = _mm512_loadu_si512((const void *)(y + i));
        __m512i t = _mm512_and_si512(m, _mm512_xor_si512(u, v));
        _mm512_storeu_si512((void *)(x + i), _mm512_xor_si512(u, t));
        _mm512_storeu_si512((void *)(y + i), _mm512_xor_si512(v, t));
    }
    if (i < len)
        obl_ct_cswap_avx2(ctl, x + i, y + i, len - i);
}

int obl_ct_cpu_has_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
}

int obl_ct_cpu_has_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

#else /* not x86-64: the named SIMD variants fall back to the portable code */

void obl_ct_cmov_avx2(uint64_t ctl, void *dst, const void *src, size_t len)
{
    obl_ct_cmov_portable(ctl, dst, src, len);
}
void obl_ct_cswap_avx2(uint64_t ctl, void *a, void *b, size_t len)
{
    obl_ct_cswap_portable(ctl, a, b, len);
}
void obl_ct_cmov_avx512(uint64_t ctl, void *dst, const void *src, size_t len)
{
    obl_ct_cmov_portable(ctl, dst, src, len);
}
void obl_ct_cswap_avx512(uint64_t ctl, void *a, void *b, size_t len)
{
    obl_ct_cswap_portable(ctl, a, b, len);
}
int obl_ct_cpu_has_avx2(void) { return 0; }
int obl_ct_cpu_has_avx512(void) { return 0; }

#endif

/* see obl/obl.h */
const char *obl_ct_variant(void)
{
#if OBL_CT_AVX512
    return "avx512";
#elif OBL_CT_AVX2
    return "avx2";
#else
    return "portable";
#endif
}
