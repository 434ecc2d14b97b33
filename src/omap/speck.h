/* SPDX-License-Identifier: MIT */
/*
 * Speck64/128 (Beaulieu, Shors, Smith, Treatman-Clark, Weeks, Wingers,
 * "The SIMON and SPECK Families of Lightweight Block Ciphers", eprint
 * 2013/404, sections 4.1-4.2): a 64-bit block cipher with a 128-bit key,
 * 27 rounds of add, rotate and xor on 32-bit words. The map uses it as a
 * keyed pseudo-random permutation of 64-bit index keys (docs/omap.md,
 * "Quotiented index"): a permutation, so that a key's bucket (the top bits
 * of its image) and the rest of the image together identify the key.
 * Constant-time: no branch or address depends on the key or the data.
 */
#ifndef OBL_SRC_OMAP_SPECK_H
#define OBL_SRC_OMAP_SPECK_H

#include <stddef.h>
#include <stdint.h>

#define OBL_SPECK_ROUNDS 27

/* The round keys of one key. */
typedef struct {
    uint32_t rk[OBL_SPECK_ROUNDS];
} obl_speck;

/*
 * Expands the key (k[0] = the paper's k0, k[1..3] = l0, l1, l2).
 * Secret: k, s.
 */
void obl_speck_init(obl_speck *s, const uint32_t k[4]);

/*
 * Encrypts the block (x, y) = (w >> 32, low 32 bits of w) and returns
 * x' << 32 | y'. Secret: everything.
 */
uint64_t obl_speck_enc(const obl_speck *s, uint64_t w);

/* The inverse of obl_speck_enc. Secret: everything. */
uint64_t obl_speck_dec(const obl_speck *s, uint64_t w);

/*
 * out[i] = obl_speck_enc(s, in[i]) for i < n (in == out is fine): the bulk
 * build's words, sixteen at a time in vector lanes where the compiler
 * has them. Secret: s, the words. Public: n.
 */
void obl_speck_enc_many(const obl_speck *s, const uint64_t *in, uint64_t *out, size_t n);

#endif /* OBL_SRC_OMAP_SPECK_H */
