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

#endif /* OBL_SRC_OMAP_SIPHASH_H */
