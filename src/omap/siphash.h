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

/* The same with the lanes chosen at run time: AVX-512 when isa (an
 * OBL_ISA_* of common/cpu.h, the caller's obl_isa_pick) is OBL_ISA_AVX512,
 * else one message at a time. Public: isa too. */
void obl_siphash24_many_isa(int isa, uint64_t k0, uint64_t k1, const void *msgs, size_t len,
                            size_t stride, size_t count, uint64_t *out);

#endif /* OBL_SRC_OMAP_SIPHASH_H */
