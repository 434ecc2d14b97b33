/* SPDX-License-Identifier: MIT */
/*
 * The message layer of obl_mpi, without MPI: per-direction AES-256-GCM
 * channels between ranks (docs/mpi.md, "What the network and the hosts
 * learn").
 *
 * A sealed message: a 40-byte header in the clear and authenticated
 * (magic, kind, epoch, sequence, sender, receiver, payload length), the
 * encrypted payload, a 16-byte tag. The nonce is the sender and the
 * direction's sequence number; the key is the direction's, so no nonce
 * repeats under a key. The receiver accepts only the next sequence number
 * of the epoch it expects, with the length fixed for the kind.
 */
#ifndef OBL_SRC_MPI_MSG_H
#define OBL_SRC_MPI_MSG_H

#include <stddef.h>
#include <stdint.h>

#include <obl/obl.h>

#define MPI_MSG_HDR 40u
#define MPI_MSG_TAG 16u
#define MPI_MSG_MAGIC 0x31706d6fu /* "omp1" */

/* Kinds of messages; requests then answers. */
enum { MSG_GET = 1, MSG_MIXED = 2, MSG_BUILD = 3, MSG_STOP = 4, MSG_ANSWER = 5, MSG_KINDS = 6 };

/* The faults of obl/mpi.h's obl_mpi_fault, by the same numbers. */
enum {
    MSG_OK = 0,
    MSG_TAMPERED = 1,
    MSG_REPLAYED = 2,
    MSG_REORDERED = 3,
    MSG_TRUNCATED = 4,
    MSG_EPOCH = 5,
    MSG_HEADER = 6
};

typedef struct msg_chan {
    uint32_t self, peer;
    uint64_t seq_send, seq_recv; /* next to send, next expected */
    void *enc, *dec;             /* EVP_CIPHER_CTX, keyed once */
} msg_chan;

/* Derives the 32-byte key of direction src -> dst from a secret:
 * HKDF-SHA256(salt "obl-mpi v1", info "pair" src dst). 0 on success. */
int msg_pair_key(const unsigned char *secret, size_t len, uint32_t src, uint32_t dst,
                 unsigned char key[32]);

/* Derives `len` bytes for a label (the balancers' routing key) from the
 * secret. 0 on success. */
int msg_derive(const unsigned char *secret, size_t slen, const char *label, unsigned char *out,
               size_t len);

/* A channel from self to peer with the two directions' keys. */
obl_err msg_chan_init(msg_chan *c, uint32_t self, uint32_t peer, const unsigned char ksend[32],
                      const unsigned char krecv[32]);
void msg_chan_free(msg_chan *c);

/* Seals len payload bytes into out (MPI_MSG_HDR + len + MPI_MSG_TAG bytes).
 * Public: kind, epoch, len. Errors: IO (the cipher failed). */
obl_err msg_seal(msg_chan *c, uint32_t kind, uint64_t epoch, const void *pt, size_t len,
                 unsigned char *out);

/*
 * Opens n received bytes: the payload must have exp_len[kind] bytes
 * (SIZE_MAX for a kind not accepted now) and the message the epoch given.
 * On MSG_OK writes the payload to pt and its kind to *kind and advances
 * the sequence; otherwise changes nothing and returns the MSG_* fault.
 */
int msg_open(msg_chan *c, uint64_t epoch, const size_t exp_len[MSG_KINDS], const unsigned char *in,
             size_t n, void *pt, uint32_t *kind);

/* The fault's name ("tampered (authentication failed)", ...). */
const char *msg_fault_name(int fault);

#endif /* OBL_SRC_MPI_MSG_H */
