/* SPDX-License-Identifier: MIT */
/*
 * The per-structure pseudo-random generator.
 *
 * AES-128 in counter mode with AES-NI where the build targets it (__AES__),
 * ChaCha20 (RFC 8439) otherwise. Output is produced in bulk: one refill
 * encrypts OBL_PRG_BUF_WORDS / 2 counter blocks at once, so a draw is a load
 * and an increment. Each structure owns one generator; nothing is shared
 * between structures or threads.
 *
 * Seeding: from the caller's obl_random_fn or getrandom(2) (32 bytes: AES
 * uses 16 for the key and 8 for the counter's high half; ChaCha20 uses all 32
 * as its key), or from a 64-bit seed for tests and reproducible benchmarks.
 *
 * Ranges: obl_prg_bits(g, k) is uniform in [0, 2^k) by masking, exact. For a
 * range [0, n) that is not a power of two, obl_prg_below() returns the high
 * 64 bits of u * n for a uniform 64-bit u (Lemire 2019, without the rejection
 * step). It takes no branch and no division; each value's probability differs
 * from 1/n by less than n / 2^64 (below 2^-40 for every n < 2^24). Callers
 * that need exactness on a public n can reject on that public n themselves.
 *
 * Secret: the key, the counter and every output. Public: how many draws are
 * made (it decides when a refill happens).
 */
#ifndef OBL_SRC_PRG_H
#define OBL_SRC_PRG_H

#include <stddef.h>
#include <stdint.h>

#include <obl/obl.h>

#define OBL_PRG_BUF_WORDS 64

#if defined(__AES__) && !defined(OBL_PRG_FORCE_CHACHA)
#define OBL_PRG_AES 1
#endif

typedef struct obl_prg {
    uint64_t buf[OBL_PRG_BUF_WORDS];
    uint32_t pos;                  /* next unused word of buf */
    uint32_t key32[8];             /* ChaCha20 key words */
    uint64_t ctr_lo, ctr_hi;       /* block counter (AES: 128 bits; ChaCha: lo) */
    _Alignas(16) unsigned char rk[176]; /* AES-128 round keys */
} obl_prg;

/* Seed from fn (or getrandom when fn is NULL). OBL_ERR_RANDOM on failure. */
obl_err obl_prg_init(obl_prg *g, obl_random_fn fn, void *opaque) OBL_WARN_UNUSED;

/* Deterministic seeding for tests and benchmarks. */
void obl_prg_init_seed(obl_prg *g, uint64_t seed);

/* Seed from 32 explicit bytes. */
void obl_prg_init_bytes(obl_prg *g, const unsigned char seed[32]);

/* Refill the buffer (called by the inline draws). */
void obl_prg_refill(obl_prg *g);

/* Erase key and buffer. */
void obl_prg_wipe(obl_prg *g);

/* Name of the cipher in use: "aes128-ctr" or "chacha20". */
const char *obl_prg_cipher(void);

static inline uint64_t obl_prg_u64(obl_prg *g)
{
    if (g->pos == OBL_PRG_BUF_WORDS) /* public: the number of draws */
        obl_prg_refill(g);
    return g->buf[g->pos++];
}

/* Uniform in [0, 2^k), 0 <= k <= 64. */
static inline uint64_t obl_prg_bits(obl_prg *g, unsigned k)
{
    uint64_t v = obl_prg_u64(g);
    return k >= 64 ? v : v & (((uint64_t)1 << k) - 1);
}

/* Nearly uniform in [0, n), n >= 1; see the bias bound above. */
static inline uint64_t obl_prg_below(obl_prg *g, uint64_t n)
{
    __extension__ typedef unsigned __int128 u128;
    return (uint64_t)(((u128)obl_prg_u64(g) * n) >> 64);
}

/* Fill len bytes of out with PRG output. */
void obl_prg_fill(obl_prg *g, void *out, size_t len);

/* ---- block ciphers, exposed for the known-answer tests ---- */

/* ChaCha20 block function (RFC 8439 section 2.3): 64 bytes of keystream. */
void obl_chacha20_block(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
                        unsigned char out[64]);

#if OBL_PRG_AES
/* AES-128 key expansion and one-block encryption (FIPS-197), AES-NI. */
void obl_aes128_expand(const unsigned char key[16], unsigned char rk[176]);
void obl_aes128_encrypt(const unsigned char rk[176], const unsigned char in[16],
                        unsigned char out[16]);
#endif

#endif /* OBL_SRC_PRG_H */
