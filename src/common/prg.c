/* SPDX-License-Identifier: MIT */
/*
 * AES-128-CTR (AES-NI) and ChaCha20 keystream generators behind prg.h.
 * AES: FIPS-197; the key schedule uses AESKEYGENASSIST as in Intel's AES-NI
 * white paper (Gueron 2010, section 5). ChaCha20: RFC 8439 section 2.3.
 */
#include "prg.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "alloc.h"

#if OBL_PRG_AES
#include <wmmintrin.h>
#include <emmintrin.h>
#endif

/* ---------------------------------------------------------- ChaCha20 -- */

#define ROTL32(x, n) (((x) << (n)) | ((x) >> (32 - (n))))
#define QR(a, b, c, d)                                                                 \
    do {                                                                               \
        a += b; d ^= a; d = ROTL32(d, 16);                                             \
        c += d; b ^= c; b = ROTL32(b, 12);                                             \
        a += b; d ^= a; d = ROTL32(d, 8);                                              \
        c += d; b ^= c; b = ROTL32(b, 7);                                              \
    } while (0)

static void chacha20_block_words(const uint32_t key[8], uint32_t counter,
                                 const uint32_t nonce[3], uint32_t out[16])
{
    uint32_t s[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574,
                      key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7],
                      counter, nonce[0], nonce[1], nonce[2]};
    uint32_t x[16];
    memcpy(x, s, sizeof(x));
    for (int i = 0; i < 10; i++) {
        QR(x[0], x[4], x[8], x[12]);
        QR(x[1], x[5], x[9], x[13]);
        QR(x[2], x[6], x[10], x[14]);
        QR(x[3], x[7], x[11], x[15]);
        QR(x[0], x[5], x[10], x[15]);
        QR(x[1], x[6], x[11], x[12]);
        QR(x[2], x[7], x[8], x[13]);
        QR(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; i++)
        out[i] = x[i] + s[i];
}

void obl_chacha20_block(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
                        unsigned char out[64])
{
    uint32_t w[16];
    chacha20_block_words(key, counter, nonce, w);
    for (int i = 0; i < 16; i++) { /* serialise little-endian */
        out[4 * i + 0] = (unsigned char)(w[i]);
        out[4 * i + 1] = (unsigned char)(w[i] >> 8);
        out[4 * i + 2] = (unsigned char)(w[i] >> 16);
        out[4 * i + 3] = (unsigned char)(w[i] >> 24);
    }
}

/* --------------------------------------------------------------- AES -- */

#if OBL_PRG_AES
static __m128i aes_expand_step(__m128i k, __m128i t)
{
    t = _mm_shuffle_epi32(t, 0xff);
    k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
    k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
    k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
    return _mm_xor_si128(k, t);
}

void obl_aes128_expand(const unsigned char key[16], unsigned char rk[176])
{
    __m128i k[11];
    k[0] = _mm_loadu_si128((const __m128i *)key);
    /* AESKEYGENASSIST needs an immediate round constant: unrolled */
    k[1] = aes_expand_step(k[0], _mm_aeskeygenassist_si128(k[0], 0x01));
    k[2] = aes_expand_step(k[1], _mm_aeskeygenassist_si128(k[1], 0x02));
    k[3] = aes_expand_step(k[2], _mm_aeskeygenassist_si128(k[2], 0x04));
    k[4] = aes_expand_step(k[3], _mm_aeskeygenassist_si128(k[3], 0x08));
    k[5] = aes_expand_step(k[4], _mm_aeskeygenassist_si128(k[4], 0x10));
    k[6] = aes_expand_step(k[5], _mm_aeskeygenassist_si128(k[5], 0x20));
    k[7] = aes_expand_step(k[6], _mm_aeskeygenassist_si128(k[6], 0x40));
    k[8] = aes_expand_step(k[7], _mm_aeskeygenassist_si128(k[7], 0x80));
    k[9] = aes_expand_step(k[8], _mm_aeskeygenassist_si128(k[8], 0x1b));
    k[10] = aes_expand_step(k[9], _mm_aeskeygenassist_si128(k[9], 0x36));
    for (int i = 0; i < 11; i++)
        _mm_storeu_si128((__m128i *)(rk + 16 * i), k[i]);
}

void obl_aes128_encrypt(const unsigned char rk[176], const unsigned char in[16],
                        unsigned char out[16])
{
    __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i *)in),
                              _mm_loadu_si128((const __m128i *)rk));
    for (int r = 1; r < 10; r++)
        b = _mm_aesenc_si128(b, _mm_loadu_si128((const __m128i *)(rk + 16 * r)));
    b = _mm_aesenclast_si128(b, _mm_loadu_si128((const __m128i *)(rk + 160)));
    _mm_storeu_si128((__m128i *)out, b);
}

/* Encrypt OBL_PRG_BUF_WORDS/2 consecutive counter blocks, 8 in flight. */
static void aes_ctr_refill(obl_prg *g)
{
    __m128i rk[11];
    for (int i = 0; i < 11; i++)
        rk[i] = _mm_load_si128((const __m128i *)(g->rk + 16 * i));
    enum { NB = OBL_PRG_BUF_WORDS / 2, LANES = 8 };
    for (int base = 0; base < NB; base += LANES) {
        __m128i b[LANES];
        for (int j = 0; j < LANES; j++) {
            /* the counter is a 128-bit little-endian integer (lo, hi) */
            b[j] = _mm_set_epi64x((long long)g->ctr_hi, (long long)g->ctr_lo);
            g->ctr_lo++;
            g->ctr_hi += (g->ctr_lo == 0); /* carry, computed without a branch */
            b[j] = _mm_xor_si128(b[j], rk[0]);
        }
        for (int r = 1; r < 10; r++)
            for (int j = 0; j < LANES; j++)
                b[j] = _mm_aesenc_si128(b[j], rk[r]);
        for (int j = 0; j < LANES; j++)
            _mm_storeu_si128((__m128i *)&g->buf[2 * (base + j)],
                             _mm_aesenclast_si128(b[j], rk[10]));
    }
}
#endif

/* ------------------------------------------------------------- public -- */

void obl_prg_refill(obl_prg *g)
{
#if OBL_PRG_AES
    aes_ctr_refill(g);
#else
    /* ChaCha20 with a 64-bit block counter: the low word is RFC 8439's
     * counter and the high word takes the first nonce word; nonce 2..3 = 0. */
    for (int i = 0; i < OBL_PRG_BUF_WORDS / 8; i++) {
        uint32_t nonce[3] = {(uint32_t)(g->ctr_lo >> 32), 0, 0};
        chacha20_block_words(g->key32, (uint32_t)g->ctr_lo, nonce,
                             (uint32_t *)(void *)&g->buf[8 * i]);
        g->ctr_lo++;
    }
#endif
    g->pos = 0;
}

void obl_prg_init_bytes(obl_prg *g, const unsigned char seed[32])
{
    memset(g, 0, sizeof(*g));
    for (int i = 0; i < 8; i++)
        g->key32[i] = (uint32_t)seed[4 * i] | (uint32_t)seed[4 * i + 1] << 8 |
                      (uint32_t)seed[4 * i + 2] << 16 | (uint32_t)seed[4 * i + 3] << 24;
#if OBL_PRG_AES
    obl_aes128_expand(seed, g->rk);
    memcpy(&g->ctr_hi, seed + 16, 8);
    g->ctr_lo = 0;
#endif
    g->pos = OBL_PRG_BUF_WORDS; /* first draw refills */
}

void obl_prg_init_seed(obl_prg *g, uint64_t seed)
{
    /* Spread the 64-bit seed over 32 bytes with SplitMix64 (Steele, Lea,
     * Flood 2014) so that nearby seeds give unrelated keys. */
    unsigned char b[32];
    uint64_t z = seed;
    for (int i = 0; i < 4; i++) {
        z += 0x9e3779b97f4a7c15ULL;
        uint64_t x = z;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
        x ^= x >> 31;
        memcpy(b + 8 * i, &x, 8);
    }
    obl_prg_init_bytes(g, b);
    obl_wipe(b, sizeof(b));
}

obl_err obl_prg_init(obl_prg *g, obl_random_fn fn, void *opaque)
{
    unsigned char b[32];
    if (fn) {
        if (fn(opaque, b, sizeof(b)) != 0)
            return OBL_ERR_RANDOM;
    } else {
        size_t got = 0;
        while (got < sizeof(b)) {
            ssize_t r = getrandom(b + got, sizeof(b) - got, 0);
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                return OBL_ERR_RANDOM;
            }
            got += (size_t)r;
        }
    }
    obl_prg_init_bytes(g, b);
    obl_wipe(b, sizeof(b));
    return OBL_OK;
}

void obl_prg_fill(obl_prg *g, void *out, size_t len)
{
    unsigned char *o = (unsigned char *)out;
    while (len >= 8) {
        uint64_t v = obl_prg_u64(g);
        memcpy(o, &v, 8);
        o += 8;
        len -= 8;
    }
    if (len) {
        uint64_t v = obl_prg_u64(g);
        memcpy(o, &v, len);
    }
}

void obl_prg_wipe(obl_prg *g) { obl_wipe(g, sizeof(*g)); }

const char *obl_prg_cipher(void)
{
#if OBL_PRG_AES
    return "aes128-ctr";
#else
    return "chacha20";
#endif
}
