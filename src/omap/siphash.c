/* SPDX-License-Identifier: MIT */
/*
 * SipHash-2-4, after the reference description in Aumasson, Bernstein,
 * "SipHash: a fast short-input PRF" (INDOCRYPT 2012), section 2: four
 * 64-bit words of state, two SipRounds per 8-byte message word, four
 * finalisation rounds; the last word carries the length in its top byte.
 * Only add, rotate and xor: no branch or address depends on key or data.
 */
#include <string.h>

#include "ct.h"
#include "omap/siphash.h"

/* see siphash.h */
uint64_t obl_siphash24(uint64_t k0, uint64_t k1, const void *msg, size_t len)
{
    return obl_siphash24_inline(k0, k1, msg, len);
}

#if OBL_CT_AVX512
#define SIP_ROUND8(v0, v1, v2, v3)                                                   \
    do {                                                                             \
        v0 = _mm512_add_epi64(v0, v1);                                               \
        v1 = _mm512_rol_epi64(v1, 13);                                               \
        v1 = _mm512_xor_si512(v1, v0);                                               \
        v0 = _mm512_rol_epi64(v0, 32);                                               \
        v2 = _mm512_add_epi64(v2, v3);                                               \
        v3 = _mm512_rol_epi64(v3, 16);                                               \
        v3 = _mm512_xor_si512(v3, v2);                                               \
        v0 = _mm512_add_epi64(v0, v3);                                               \
        v3 = _mm512_rol_epi64(v3, 21);                                               \
        v3 = _mm512_xor_si512(v3, v0);                                               \
        v2 = _mm512_add_epi64(v2, v1);                                               \
        v1 = _mm512_rol_epi64(v1, 17);                                               \
        v1 = _mm512_xor_si512(v1, v2);                                               \
        v2 = _mm512_rol_epi64(v2, 32);                                               \
    } while (0)

/* Message word w (bytes 8w ..) of eight messages, or their last partial
 * word with the length byte (tail bytes, w = len / 8). Public: all but
 * the bytes. */
static inline __m512i sip_word8(const unsigned char *m, size_t stride, size_t off, size_t nb)
{
    uint64_t w[8];
    for (int l = 0; l < 8; l++) {
        uint64_t x = 0;
        memcpy(&x, m + (size_t)l * stride + off, nb); /* little-endian x86 */
        w[l] = x;
    }
    return _mm512_loadu_si512((const void *)w);
}
#endif

/* see siphash.h */
void obl_siphash24_many(uint64_t k0, uint64_t k1, const void *msgs, size_t len, size_t stride,
                        size_t count, uint64_t *out)
{
    const unsigned char *m = (const unsigned char *)msgs;
    size_t i = 0;
#if OBL_CT_AVX512
    const size_t full = len & ~(size_t)7;
    const __m512i c0 = _mm512_set1_epi64((long long)(k0 ^ 0x736f6d6570736575ULL));
    const __m512i c1 = _mm512_set1_epi64((long long)(k1 ^ 0x646f72616e646f6dULL));
    const __m512i c2 = _mm512_set1_epi64((long long)(k0 ^ 0x6c7967656e657261ULL));
    const __m512i c3 = _mm512_set1_epi64((long long)(k1 ^ 0x7465646279746573ULL));
    const __m512i lenw = _mm512_set1_epi64((long long)((uint64_t)len << 56));
    for (; i + 8 <= count; i += 8) {
        const unsigned char *mi = m + i * stride;
        __m512i v0 = c0, v1 = c1, v2 = c2, v3 = c3;
        for (size_t o = 0; o < full; o += 8) { /* len is public */
            __m512i w = sip_word8(mi, stride, o, 8);
            v3 = _mm512_xor_si512(v3, w);
            SIP_ROUND8(v0, v1, v2, v3);
            SIP_ROUND8(v0, v1, v2, v3);
            v0 = _mm512_xor_si512(v0, w);
        }
        __m512i b = lenw;
        if (len > full) /* public */
            b = _mm512_or_si512(b, sip_word8(mi, stride, full, len - full));
        v3 = _mm512_xor_si512(v3, b);
        SIP_ROUND8(v0, v1, v2, v3);
        SIP_ROUND8(v0, v1, v2, v3);
        v0 = _mm512_xor_si512(v0, b);
        v2 = _mm512_xor_si512(v2, _mm512_set1_epi64(0xff));
        SIP_ROUND8(v0, v1, v2, v3);
        SIP_ROUND8(v0, v1, v2, v3);
        SIP_ROUND8(v0, v1, v2, v3);
        SIP_ROUND8(v0, v1, v2, v3);
        __m512i h = _mm512_xor_si512(_mm512_xor_si512(v0, v1), _mm512_xor_si512(v2, v3));
        _mm512_storeu_si512((void *)(out + i), h);
    }
#endif
    for (; i < count; i++)
        out[i] = obl_siphash24(k0, k1, m + i * stride, len);
}
