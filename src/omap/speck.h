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

#define SPK_ROR(v, r) (uint32_t)(((v) >> (r)) | ((v) << (32 - (r))))
#define SPK_ROL(v, r) (uint32_t)(((v) << (r)) | ((v) >> (32 - (r))))

/* obl_speck_enc, inline: for the map's key functions, compiled once per
 * instruction-set variant (src/omap/keys.c). */
static inline uint64_t obl_speck_enc_inline(const obl_speck *s, uint64_t w)
{
    uint32_t x = (uint32_t)(w >> 32), y = (uint32_t)w;
    for (uint32_t i = 0; i < OBL_SPECK_ROUNDS; i++) {
        x = (SPK_ROR(x, 8) + y) ^ s->rk[i];
        y = SPK_ROL(y, 3) ^ x;
    }
    return (uint64_t)x << 32 | y;
}

#endif /* OBL_SRC_OMAP_SPECK_H */
