/* SPDX-License-Identifier: MIT */
/*
 * Tests of the PRG (src/common/prg.h): known-answer tests of the block
 * ciphers against published vectors (FIPS-197 appendix C.1, NIST SP 800-38A
 * F.5.1, RFC 8439 section 2.3.2), the counter-mode construction against the
 * block cipher, seeding (fixed seed reproducible, different seeds different,
 * the caller's hook used, its failure reported), ranges of the bounded draws,
 * a chi-square test of uniformity, and a secret-tracking pass with the seed
 * marked secret.
 */
#include "common/prg.h"

#include <math.h>

#include "common/secret.h"
#include "testutil.h"

static void hex(const char *h, unsigned char *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (unsigned char)v;
    }
}

static void test_chacha_kat(void)
{
    /* RFC 8439 section 2.3.2: key 00..1f, nonce 00:00:00:09:00:00:00:4a:00:00:00:00, counter 1 */
    uint32_t key[8], nonce[3] = {0x09000000, 0x4a000000, 0x00000000};
    for (int i = 0; i < 8; i++)
        key[i] = (uint32_t)(4 * i) | (uint32_t)(4 * i + 1) << 8 | (uint32_t)(4 * i + 2) << 16 |
                 (uint32_t)(4 * i + 3) << 24;
    unsigned char out[64], want[64];
    hex("10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e",
        want, 64);
    obl_chacha20_block(key, 1, nonce, out);
    CHECK_MEM(out, want, 64);
    printf("  ChaCha20 RFC 8439 2.3.2 block: %s\n", memcmp(out, want, 64) ? "FAILED" : "ok");
}

#if OBL_PRG_AES
static void test_aes_kat(void)
{
    unsigned char key[16], pt[16], ct[16], want[16], rk[176];
    /* FIPS-197 appendix C.1 */
    hex("000102030405060708090a0b0c0d0e0f", key, 16);
    hex("00112233445566778899aabbccddeeff", pt, 16);
    hex("69c4e0d86a7b0430d8cdb78070b4c55a", want, 16);
    obl_aes128_expand(key, rk);
    obl_aes128_encrypt(rk, pt, ct);
    CHECK_MEM(ct, want, 16);
    printf("  AES-128 FIPS-197 C.1: %s\n", memcmp(ct, want, 16) ? "FAILED" : "ok");
    /* SP 800-38A F.5.1 CTR-AES128, first block: keystream = E(K, counter) */
    unsigned char ctr[16], p1[16], c1[16];
    hex("2b7e151628aed2a6abf7158809cf4f3c", key, 16);
    hex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff", ctr, 16);
    hex("6bc1bee22e409f96e93d7e117393172a", p1, 16);
    hex("874d6191b620e3261bef6864990db6ce", want, 16);
    obl_aes128_expand(key, rk);
    obl_aes128_encrypt(rk, ctr, c1);
    for (int i = 0; i < 16; i++)
        c1[i] ^= p1[i];
    CHECK_MEM(c1, want, 16);
    printf("  AES-128-CTR SP 800-38A F.5.1: %s\n", memcmp(c1, want, 16) ? "FAILED" : "ok");
}

/* The PRG's stream is E(K, counter) for a 128-bit little-endian counter whose
 * high half is seed[16..24): recompute two refills with the block cipher. */
static void test_ctr_construction(void)
{
    unsigned char seed[32], rk[176];
    for (int i = 0; i < 32; i++)
        seed[i] = (unsigned char)(i * 37 + 5);
    obl_prg g;
    obl_prg_init_bytes(&g, seed);
    obl_aes128_expand(seed, rk);
    uint64_t hi;
    memcpy(&hi, seed + 16, 8);
    int ok = 1;
    for (uint64_t blk = 0; blk < OBL_PRG_BUF_WORDS; blk++) { /* two refills' worth */
        unsigned char in[16], out[16];
        memcpy(in, &blk, 8);
        memcpy(in + 8, &hi, 8);
        obl_aes128_encrypt(rk, in, out);
        uint64_t w0 = obl_prg_u64(&g), w1 = obl_prg_u64(&g);
        ok &= memcmp(out, &w0, 8) == 0 && memcmp(out + 8, &w1, 8) == 0;
    }
    CHECK(ok);
    printf("  AES-CTR stream matches the block cipher: %s\n", ok ? "ok" : "FAILED");
}
#endif

static int hook_calls;
static int good_hook(void *opaque, void *buf, size_t len)
{
    hook_calls++;
    memset(buf, *(const unsigned char *)opaque, len);
    return 0;
}
static int bad_hook(void *opaque, void *buf, size_t len)
{
    (void)opaque;
    (void)buf;
    (void)len;
    return -1;
}

static void test_seeding(void)
{
    obl_prg a, b;
    obl_prg_init_seed(&a, 7);
    obl_prg_init_seed(&b, 7);
    int same = 1;
    for (int i = 0; i < 300; i++)
        same &= obl_prg_u64(&a) == obl_prg_u64(&b);
    CHECK(same);
    obl_prg_init_seed(&b, 8);
    int differ = 0;
    for (int i = 0; i < 10; i++)
        differ += obl_prg_u64(&a) != obl_prg_u64(&b);
    CHECK(differ >= 9);

    unsigned char fill = 0x5a;
    CHECK(obl_prg_init(&a, good_hook, &fill) == OBL_OK);
    CHECK(hook_calls == 1);
    unsigned char seed[32];
    memset(seed, 0x5a, 32);
    obl_prg_init_bytes(&b, seed);
    CHECK_EQ_U64(obl_prg_u64(&a), obl_prg_u64(&b));
    CHECK(obl_prg_init(&a, bad_hook, NULL) == OBL_ERR_RANDOM);
    /* getrandom: two generators seeded by the OS differ */
    CHECK(obl_prg_init(&a, NULL, NULL) == OBL_OK);
    CHECK(obl_prg_init(&b, NULL, NULL) == OBL_OK);
    CHECK(obl_prg_u64(&a) != obl_prg_u64(&b));

    unsigned char buf[37] = {0};
    obl_prg_init_seed(&a, 9);
    obl_prg_init_seed(&b, 9);
    obl_prg_fill(&a, buf, sizeof(buf));
    uint64_t w[5];
    for (int i = 0; i < 5; i++)
        w[i] = obl_prg_u64(&b);
    CHECK_MEM(buf, w, sizeof(buf));
    obl_prg_wipe(&a);
    printf("  seeding: %s (cipher %s)\n", T.failures ? "FAILED" : "ok", obl_prg_cipher());
}

/* Ranges, and chi-square of 16 buckets over draws of bits(4) and below(10). */
static void test_distribution(void)
{
    obl_prg g;
    obl_prg_init_seed(&g, T.seed);
    for (unsigned k = 0; k <= 64; k++) {
        uint64_t v = obl_prg_bits(&g, k);
        CHECK(k == 64 || v < ((uint64_t)1 << k));
    }
    const uint64_t ns[] = {1, 2, 3, 10, 1000, 0xffffffffffffffffULL};
    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
        for (int j = 0; j < 1000; j++)
            CHECK(obl_prg_below(&g, ns[i]) < ns[i]);

    long draws = T.ct ? 20000 : 400000;
    long c16[16] = {0}, c10[10] = {0};
    for (long i = 0; i < draws; i++) {
        c16[obl_prg_bits(&g, 4)]++;
        c10[obl_prg_below(&g, 10)]++;
    }
    double x16 = 0, x10 = 0, e16 = draws / 16.0, e10 = draws / 10.0;
    for (int i = 0; i < 16; i++)
        x16 += (c16[i] - e16) * (c16[i] - e16) / e16;
    for (int i = 0; i < 10; i++)
        x10 += (c10[i] - e10) * (c10[i] - e10) / e10;
    /* critical values at p = 0.001: 37.70 (15 dof), 27.88 (9 dof) */
    CHECK(x16 < 37.70);
    CHECK(x10 < 27.88);
    printf("  chi-square bits(4) %.2f (crit 37.70), below(10) %.2f (crit 27.88)\n", x16, x10);
}

/* Secret seed: nothing in seeding, refilling or drawing may branch on it. */
static void test_secret_tracking(void)
{
    unsigned char seed[32];
    for (int i = 0; i < 32; i++)
        seed[i] = (unsigned char)(i ^ 0xa5);
    OBL_SECRET(seed, sizeof(seed));
    obl_prg g;
    obl_prg_init_bytes(&g, seed);
    uint64_t acc = 0;
    for (int i = 0; i < 3 * OBL_PRG_BUF_WORDS; i++)
        acc ^= obl_prg_u64(&g) + obl_prg_bits(&g, 13) + obl_prg_below(&g, 1000);
    unsigned char buf[50];
    obl_prg_fill(&g, buf, sizeof(buf));
    acc ^= buf[7];
    uint32_t nonce[3] = {1, 2, 3};
    unsigned char blk[64];
    obl_chacha20_block(g.key32, 5, nonce, blk);
    acc ^= blk[0];
    OBL_DECLASSIFY(&acc, sizeof(acc));
    printf("  secret-tracking pass done (%llx)\n", (unsigned long long)(acc & 0xf));
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_prg");
    test_chacha_kat();
#if OBL_PRG_AES
    test_aes_kat();
    test_ctr_construction();
#else
    printf("  AES-NI not targeted by this build: ChaCha20 PRG\n");
#endif
    test_seeding();
    test_distribution();
    test_secret_tracking();
    return test_done("test_prg");
}
