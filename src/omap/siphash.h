/* SPDX-License-Identifier: MIT */
/*
 * SipHash-2-4 (Aumasson, Bernstein, "SipHash: a fast short-input PRF",
 * INDOCRYPT 2012): the keyed PRF the map hashes its keys with.
 * Constant-time: the work depends on the message length alone.
 */
#ifndef OBL_SRC_OMAP_SIPHASH_H
#define OBL_SRC_OMAP_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/*
 * SipHash-2-4 of msg under the 128-bit key (k0 = bytes 0..7, k1 = bytes
 * 8..15, little-endian, as in the paper). Secret: key, msg contents.
 * Public: len.
 */
uint64_t obl_siphash24(uint64_t k0, uint64_t k1, const void *msg, size_t len);

/*
 * out[i] = obl_siphash24(k0, k1, msgs + i * stride, len) for i < count:
 * the bulk build's hashes, eight messages at a time in AVX-512 lanes
 * where the build has them (the same function, computed lane-wise).
 * Secret: key, messages, out. Public: len, stride, count.
 */
void obl_siphash24_many(uint64_t k0, uint64_t k1, const void *msgs, size_t len, size_t stride,
                        size_t count, uint64_t *out);

#define SIP_ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define SIP_ROUND(v0, v1, v2, v3)                                                    \
    do {                                                                             \
        v0 += v1;                                                                    \
        v1 = SIP_ROTL(v1, 13);                                                       \
        v1 ^= v0;                                                                    \
        v0 = SIP_ROTL(v0, 32);                                                       \
        v2 += v3;                                                                    \
        v3 = SIP_ROTL(v3, 16);                                                       \
        v3 ^= v2;                                                                    \
        v0 += v3;                                                                    \
        v3 = SIP_ROTL(v3, 21);                                                       \
        v3 ^= v0;                                                                    \
        v2 += v1;                                                                    \
        v1 = SIP_ROTL(v1, 17);                                                       \
        v1 ^= v2;                                                                    \
        v2 = SIP_ROTL(v2, 32);                                                       \
    } while (0)

static inline uint64_t sip_load64_le(const unsigned char *p)
{
    uint64_t w = 0;
    for (int i = 0; i < 8; i++)
        w |= (uint64_t)p[i] << (8 * i);
    return w;
}

/* obl_siphash24, inline: for the map's key functions, compiled once per
 * instruction-set variant (src/omap/keys.c). */
static inline uint64_t obl_siphash24_inline(uint64_t k0, uint64_t k1, const void *msg, size_t len)
{
    const unsigned char *m = (const unsigned char *)msg;
    uint64_t v0 = k0 ^ 0x736f6d6570736575ULL;
    uint64_t v1 = k1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ULL;
    uint64_t v3 = k1 ^ 0x7465646279746573ULL;
    size_t full = len & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8) { /* len is public */
        uint64_t w = sip_load64_le(m + i);
        v3 ^= w;
        SIP_ROUND(v0, v1, v2, v3);
        SIP_ROUND(v0, v1, v2, v3);
        v0 ^= w;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = full; i < len; i++)
        b |= (uint64_t)m[i] << (8 * (i - full));
    v3 ^= b;
    SIP_ROUND(v0, v1, v2, v3);
    SIP_ROUND(v0, v1, v2, v3);
    v0 ^= b;
    v2 ^= 0xff;
    SIP_ROUND(v0, v1, v2, v3);
    SIP_ROUND(v0, v1, v2, v3);
    SIP_ROUND(v0, v1, v2, v3);
    SIP_ROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

#endif /* OBL_SRC_OMAP_SIPHASH_H */
