/* SPDX-License-Identifier: MIT */
/*
 * Tests of obl_mpi's message layer (src/mpi/msg.c) without MPI: sealed
 * messages open on the peer's channel only; a flipped bit at every byte, a replay,
 * a reordering, a truncation or extension, another epoch, another pair's
 * key and an unexpected size are rejected with their fault, and a rejected
 * message changes nothing (the genuine one still opens). Keys differ per
 * direction and pair and are a function of the secret. With --ct the
 * payload is secret under memcheck through sealing and opening.
 */
#include "common/secret.h"
#include "mpi/msg.h"
#include "testutil.h"

#define PL 200

static unsigned char secret[32];

static void pair(msg_chan *a, msg_chan *b, uint32_t ra, uint32_t rb)
{
    unsigned char ab[32], ba[32];
    CHECK(msg_pair_key(secret, sizeof secret, ra, rb, ab) == 0);
    CHECK(msg_pair_key(secret, sizeof secret, rb, ra, ba) == 0);
    CHECK(msg_chan_init(a, ra, rb, ab, ba) == OBL_OK);
    CHECK(msg_chan_init(b, rb, ra, ba, ab) == OBL_OK);
}

static void expect_len(size_t exp[MSG_KINDS], int kind, size_t len)
{
    for (int k = 0; k < MSG_KINDS; k++)
        exp[k] = SIZE_MAX;
    exp[kind] = len;
}

/* Seals a secret payload and checks that the peer opens it intact. */
static void test_roundtrip(msg_chan *a, msg_chan *b, test_rng *r)
{
    unsigned char pt[PL], ct[MPI_MSG_HDR + PL + MPI_MSG_TAG], out[PL];
    size_t exp[MSG_KINDS];
    expect_len(exp, MSG_MIXED, PL);
    for (uint64_t ep = 1; ep <= 4; ep++) {
        test_rng_fill(r, pt, PL);
        OBL_SECRET(pt, PL);
        CHECK(msg_seal(a, MSG_MIXED, ep, pt, PL, ct) == OBL_OK);
        OBL_DECLASSIFY(ct, sizeof ct); /* on the wire: public */
        uint32_t kind = 0;
        int f = msg_open(b, ep, exp, ct, sizeof ct, out, &kind);
        OBL_DECLASSIFY(pt, PL);
        OBL_DECLASSIFY(out, PL);
        CHECK_EQ_U64(f, MSG_OK);
        CHECK_EQ_U64(kind, MSG_MIXED);
        CHECK_MEM(out, pt, PL);
        CHECK(memcmp(ct + MPI_MSG_HDR, pt, 16) != 0); /* encrypted */
    }
}

/* A bit flipped at every byte is rejected; then the genuine message opens. */
static void test_flips(msg_chan *a, msg_chan *b, uint64_t ep)
{
    unsigned char pt[PL] = {1, 2, 3}, ct[MPI_MSG_HDR + PL + MPI_MSG_TAG], out[PL];
    size_t exp[MSG_KINDS];
    expect_len(exp, MSG_GET, PL);
    CHECK(msg_seal(a, MSG_GET, ep, pt, PL, ct) == OBL_OK);
    long accepted = 0, tampered = 0;
    for (size_t i = 0; i < sizeof ct; i++) {
        ct[i] ^= (unsigned char)(1u << (i % 8));
        uint32_t kind;
        int f = msg_open(b, ep, exp, ct, sizeof ct, out, &kind);
        accepted += f == MSG_OK;
        tampered += f == MSG_TAMPERED;
        ct[i] ^= (unsigned char)(1u << (i % 8));
    }
    CHECK_EQ_U64(accepted, 0);
    CHECK(tampered >= (long)(PL + MPI_MSG_TAG)); /* payload and tag flips at least */
    uint32_t kind;
    CHECK_EQ_U64(msg_open(b, ep, exp, ct, sizeof ct, out, &kind), MSG_OK);
    CHECK_MEM(out, pt, PL);
}

/* Replay, reordering, truncation, extension and a wrong epoch. */
static void test_sequence(msg_chan *a, msg_chan *b, uint64_t ep)
{
    unsigned char pt[PL] = {9}, m1[MPI_MSG_HDR + PL + MPI_MSG_TAG + 1], m2[sizeof m1], out[PL];
    size_t exp[MSG_KINDS], n = sizeof m1 - 1;
    uint32_t kind;
    expect_len(exp, MSG_GET, PL);
    CHECK(msg_seal(a, MSG_GET, ep, pt, PL, m1) == OBL_OK);
    CHECK(msg_seal(a, MSG_GET, ep, pt, PL, m2) == OBL_OK);
    CHECK_EQ_U64(msg_open(b, ep, exp, m2, n, out, &kind), MSG_REORDERED);
    CHECK_EQ_U64(msg_open(b, ep, exp, m1, n - 1, out, &kind), MSG_TRUNCATED);
    m1[n] = 0;
    CHECK_EQ_U64(msg_open(b, ep, exp, m1, n + 1, out, &kind), MSG_TRUNCATED);
    CHECK_EQ_U64(msg_open(b, ep, exp, m1, 20, out, &kind), MSG_TRUNCATED);
    CHECK_EQ_U64(msg_open(b, ep + 1, exp, m1, n, out, &kind), MSG_EPOCH);
    size_t other[MSG_KINDS];
    expect_len(other, MSG_GET, PL - 1); /* the public size of another layout */
    CHECK_EQ_U64(msg_open(b, ep, other, m1, n, out, &kind), MSG_HEADER);
    CHECK_EQ_U64(msg_open(b, ep, exp, m1, n, out, &kind), MSG_OK);
    CHECK_EQ_U64(msg_open(b, ep, exp, m1, n, out, &kind), MSG_REPLAYED);
    CHECK_EQ_U64(msg_open(b, ep, exp, m2, n, out, &kind), MSG_OK);
    CHECK_EQ_U64(msg_open(b, ep, exp, m2, n, out, &kind), MSG_REPLAYED);
}

/* A message for another pair, or under another secret, does not open. */
static void test_keys(void)
{
    unsigned char k1[32], k2[32], k3[32], k4[32];
    CHECK(msg_pair_key(secret, sizeof secret, 0, 1, k1) == 0);
    CHECK(msg_pair_key(secret, sizeof secret, 1, 0, k2) == 0);
    CHECK(msg_pair_key(secret, sizeof secret, 0, 2, k3) == 0);
    CHECK(memcmp(k1, k2, 32) != 0 && memcmp(k1, k3, 32) != 0);
    CHECK(msg_pair_key(secret, sizeof secret, 0, 1, k4) == 0);
    CHECK_MEM(k1, k4, 32);
    unsigned char s2[32];
    memcpy(s2, secret, 32);
    s2[31] ^= 1;
    CHECK(msg_pair_key(s2, sizeof s2, 0, 1, k4) == 0);
    CHECK(memcmp(k1, k4, 32) != 0);

    msg_chan a, b, c, d;
    pair(&a, &b, 0, 1);
    pair(&c, &d, 0, 2);
    unsigned char pt[PL] = {5}, ct[MPI_MSG_HDR + PL + MPI_MSG_TAG], out[PL];
    size_t exp[MSG_KINDS];
    uint32_t kind;
    expect_len(exp, MSG_GET, PL);
    CHECK(msg_seal(&a, MSG_GET, 1, pt, PL, ct) == OBL_OK);
    CHECK_EQ_U64(msg_open(&d, 1, exp, ct, sizeof ct, out, &kind), MSG_TAMPERED);
    CHECK_EQ_U64(msg_open(&b, 1, exp, ct, sizeof ct, out, &kind), MSG_OK);
    /* a message reflected back to its sender */
    CHECK(msg_seal(&a, MSG_GET, 1, pt, PL, ct) == OBL_OK);
    msg_chan e2 = a;
    e2.seq_recv = 1;
    CHECK_EQ_U64(msg_open(&e2, 1, exp, ct, sizeof ct, out, &kind), MSG_TAMPERED);
    msg_chan_free(&a);
    msg_chan_free(&b);
    msg_chan_free(&c);
    msg_chan_free(&d);
}

/* An empty payload (the stop message) is authenticated too. */
static void test_empty(msg_chan *a, msg_chan *b, uint64_t ep)
{
    unsigned char ct[MPI_MSG_HDR + MPI_MSG_TAG], out[1];
    size_t exp[MSG_KINDS];
    uint32_t kind;
    expect_len(exp, MSG_STOP, 0);
    CHECK(msg_seal(a, MSG_STOP, ep, NULL, 0, ct) == OBL_OK);
    ct[MPI_MSG_HDR + 3] ^= 1;
    CHECK_EQ_U64(msg_open(b, ep, exp, ct, sizeof ct, out, &kind), MSG_TAMPERED);
    ct[MPI_MSG_HDR + 3] ^= 1;
    CHECK_EQ_U64(msg_open(b, ep, exp, ct, sizeof ct, out, &kind), MSG_OK);
    CHECK_EQ_U64(kind, MSG_STOP);
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_mpi_msg");
    test_rng r;
    test_rng_seed(&r, T.seed);
    test_rng_fill(&r, secret, sizeof secret);
    msg_chan a, b;
    pair(&a, &b, 3, 7);
    test_roundtrip(&a, &b, &r);
    test_flips(&a, &b, 5);
    test_sequence(&a, &b, 6);
    test_empty(&a, &b, 7);
    test_roundtrip(&b, &a, &r); /* the other direction */
    msg_chan_free(&a);
    msg_chan_free(&b);
    test_keys();
    CHECK(strcmp(msg_fault_name(MSG_REPLAYED), "replayed (old sequence number)") == 0);
    return test_done("test_mpi_msg");
}
