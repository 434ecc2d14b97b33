/* SPDX-License-Identifier: MIT */
/*
 * obl/lb.h: the oblivious load balancer (Snoopy, Dauterman et al., SOSP
 * 2021, section 4; docs/lb.md).
 *
 * A batch of B requests {op, key, value} becomes S shard batches of exactly
 * b entries each: every distinct key of the batch appears once, in the
 * batch of its shard (a keyed PRF of the key), and the rest are dummies.
 * After the shards have answered their entries in place, the balancer routes
 * the answers back to every request of the batch, duplicates included, in
 * its original position. b is the smallest n with P[Bin(B, 1/S) > n] <=
 * 2^-lambda (obl_lb_shard_batch_size).
 *
 * Semantics of one batch (what a shard engine must apply, docs/lb.md):
 * every request is answered with the state BEFORE the batch (value and
 * found); a key's entry carries the batch's last write of it in batch
 * order (OBL_LB_PUT with its value, or OBL_LB_ERASE), or OBL_LB_GET when
 * the batch only reads it. A shard engine, for each entry of its batch:
 * reads the key's old value and presence into `value` and OBL_LB_FOUND,
 * then applies `op` with the entry's input value; dummies (OBL_LB_REAL
 * clear) must change nothing, and their answers are ignored.
 *
 * Threat model: secret are the keys, values, ops, which shard each key
 * belongs to, the duplicate pattern and the answers. Public: B, S, b,
 * lambda, the thread count, and the overflow event (a shard receiving more
 * than b distinct keys, probability at most S * 2^-lambda per batch).
 *
 * Thread safety: none inside (one balancer per thread or an outside lock);
 * a call may itself use `threads` threads.
 */
#ifndef OBL_LB_H
#define OBL_LB_H

#include <stddef.h>
#include <stdint.h>

#include <obl/obl.h>

#ifdef __cplusplus
extern "C" {
#endif

OBL_API_BEGIN

/* Operations (secret). */
enum { OBL_LB_GET = 0, OBL_LB_PUT = 1, OBL_LB_ERASE = 2 };

/* obl_lb_entry.flags bits (secret). */
enum { OBL_LB_REAL = 1, OBL_LB_FOUND = 2 };

/* One request of a batch. In: op, key, value (for a put). Out (answered in
 * place by obl_lb_answer): value and found, the key's state before the
 * batch (value 0 when not found). */
typedef struct obl_lb_req {
    uint64_t key;
    uint64_t value;
    uint32_t op;
    uint32_t found;
} obl_lb_req;

/* One entry of a shard batch. In (from obl_lb_route): key, op (the batch's
 * last write of key, or OBL_LB_GET), value (the put's value, else 0),
 * flags & OBL_LB_REAL. Out (written by the shard engine): value = the
 * value before the batch (0 if absent), flags |= OBL_LB_FOUND if present. */
typedef struct obl_lb_entry {
    uint64_t key;
    uint64_t value;
    uint32_t op;
    uint32_t flags;
} obl_lb_entry;

typedef struct obl_lb obl_lb;

typedef struct obl_lb_params {
    size_t batch;                   /* B, requests per batch, 1 .. 2^24 */
    unsigned shards;                /* S, 1 .. 1024 */
    unsigned lambda;                /* 0: 40; overflow <= 2^-lambda per shard */
    unsigned threads;               /* 0 or 1: the calling thread only */
    const unsigned char *prf_key;   /* 16 bytes, or NULL: drawn from random */
    obl_random_fn random;           /* NULL: getrandom(2) */
    void *random_opaque;
    const obl_allocator *alloc;     /* NULL: obl_default_allocator() */
} obl_lb_params;

/* b for B requests over S shards at 2^-lambda: the smallest n with
 * P[Bin(B, 1/S) > n] <= 2^-lambda, from the exact binomial tail in log
 * space. 0 on bad arguments (B = 0, S = 0, lambda = 0 or > 200). Public. */
size_t obl_lb_shard_batch_size(size_t B, unsigned S, unsigned lambda);

/* Creates a balancer for batches of p->batch requests. Errors: INVALID_ARG,
 * TOO_LARGE, NOMEM, RANDOM, UNSUPPORTED (obl_ct_variant, obl/obl.h). */
obl_err obl_lb_create(obl_lb **out, const obl_lb_params *p) OBL_WARN_UNUSED;

/* The instruction-set variant the balancer took when it was created
 * (obl_ct_variant, obl/obl.h); NULL for NULL. Public. */
const char *obl_lb_variant(const obl_lb *lb);

/* b, the entries per shard batch. Public. */
size_t obl_lb_shard_batch(const obl_lb *lb);

/* The shard of key, in [0, S): the image of key under Speck64/128 (a
 * keyed permutation of 64-bit words) with the balancer's 16-byte PRF key,
 * scaled to [0, S) by a multiply (no division). Secret: key and result. */
unsigned obl_lb_shard_of(const obl_lb *lb, uint64_t key);

/* The same function from an explicit 16-byte PRF key, for a structure that
 * must place keys as a balancer with that key does (a sharded map's bulk
 * build). */
unsigned obl_lb_shard_of_key(const unsigned char prf_key[16], unsigned S, uint64_t key);

/*
 * Forward direction: reads the B requests, writes the S * b entries of out,
 * shard j's batch at out[j * b .. (j + 1) * b). Keeps what obl_lb_answer
 * needs inside the balancer (one batch at a time).
 * Errors: OBL_ERR_FULL when a shard would receive more than b distinct keys
 * (public; out is left unchanged and the balancer ready for another batch);
 * INVALID_ARG for NULL pointers.
 */
obl_err obl_lb_route(obl_lb *lb, const obl_lb_req *reqs, obl_lb_entry *out) OBL_WARN_UNUSED;

/*
 * Backward direction: given the S * b entries of the last obl_lb_route,
 * answered by the shards, writes value and found of each of the B requests.
 * Errors: OBL_ERR_STATE without a routed batch; INVALID_ARG for NULL.
 */
obl_err obl_lb_answer(obl_lb *lb, const obl_lb_entry *in, obl_lb_req *reqs) OBL_WARN_UNUSED;

/* Bytes held by the balancer (its working arrays). Public. */
size_t obl_lb_memory_bytes(const obl_lb *lb);

/* Frees the balancer, wiping its memory; NULL is fine. */
void obl_lb_destroy(obl_lb *lb);

OBL_API_END

#ifdef __cplusplus
}
#endif

#endif /* OBL_LB_H */
