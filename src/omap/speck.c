/* SPDX-License-Identifier: MIT */
/*
 * Speck64/128, after the specification in Beaulieu et al., "The SIMON and
 * SPECK Families of Lightweight Block Ciphers" (eprint 2013/404), section
 * 4: word size n = 32, m = 4 key words, T = 27 rounds, rotations alpha = 8
 * and beta = 3. Checked against the paper's test vector (tests/omap).
 */
#include "omap/speck.h"

/* see speck.h */
void obl_speck_init(obl_speck *s, const uint32_t k[4])
{
    /* the key schedule reuses the round function with the round number as
     * the key: l[i + 3] = (k[i] + (l[i] >>> 8)) ^ i, k[i+1] = (k[i] <<< 3) ^ l[i + 3] */
    uint32_t l[OBL_SPECK_ROUNDS + 2];
    l[0] = k[1];
    l[1] = k[2];
    l[2] = k[3];
    s->rk[0] = k[0];
    for (uint32_t i = 0; i + 1 < OBL_SPECK_ROUNDS; i++) {
        l[i + 3] = (s->rk[i] + SPK_ROR(l[i], 8)) ^ i;
        s->rk[i + 1] = SPK_ROL(s->rk[i], 3) ^ l[i + 3];
    }
    volatile uint32_t *vl = l; /* the expanded key words are key material */
    for (uint32_t i = 0; i < OBL_SPECK_ROUNDS + 2; i++)
        vl[i] = 0;
}

/* see speck.h */
uint64_t obl_speck_enc(const obl_speck *s, uint64_t w) { return obl_speck_enc_inline(s, w); }

/* see speck.h */
uint64_t obl_speck_dec(const obl_speck *s, uint64_t w)
{
    uint32_t x = (uint32_t)(w >> 32), y = (uint32_t)w;
    for (uint32_t i = OBL_SPECK_ROUNDS; i-- > 0;) {
        y = SPK_ROR(y ^ x, 3);
        x = SPK_ROL((x ^ s->rk[i]) - y, 8);
    }
    return (uint64_t)x << 32 | y;
}

/* see speck.h */
void obl_speck_enc_many(const obl_speck *s, const uint64_t *in, uint64_t *out, size_t n)
{
    enum { LANES = 16 };
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        /* the words of sixteen blocks side by side: one vector per word
         * with AVX-512 (gcc vectorises the lane loops, rotates included) */
        uint32_t x[LANES], y[LANES];
        for (int j = 0; j < LANES; j++) {
            x[j] = (uint32_t)(in[i + j] >> 32);
            y[j] = (uint32_t)in[i + j];
        }
        for (uint32_t r = 0; r < OBL_SPECK_ROUNDS; r++) {
            const uint32_t k = s->rk[r];
            for (int j = 0; j < LANES; j++) {
                x[j] = (SPK_ROR(x[j], 8) + y[j]) ^ k;
                y[j] = SPK_ROL(y[j], 3) ^ x[j];
            }
        }
        for (int j = 0; j < LANES; j++)
            out[i + j] = (uint64_t)x[j] << 32 | y[j];
    }
    for (; i < n; i++)
        out[i] = obl_speck_enc(s, in[i]);
}
