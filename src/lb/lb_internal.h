/* SPDX-License-Identifier: MIT */
/*
 * Private: the load balancer's state (obl/lb.h), shared by lb.c (creation,
 * sizes, the PRF) and route.c (the two directions, compiled once per
 * instruction-set variant; the balancer picks one when it is created).
 */
#ifndef OBL_SRC_LB_INTERNAL_H
#define OBL_SRC_LB_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <obl/lb.h>

#include "common/alloc.h"
#include "common/cpu.h"
#include "common/prg.h"
#include "omap/speck.h"

#define LB_W 4 /* words of a working record */
#define LB_MAX_B ((size_t)1 << 24)
#define LB_MAX_S 1024u

struct obl_lb {
    obl_alloc_ctx ac;
    size_t B, b, Sb, nmax, N; /* N: B rounded up to a power of two */
    unsigned S, threads;
    unsigned char key[16]; /* the PRF key */
    obl_speck spk;      /* its round keys */
    int ct, ck, cv, cm; /* which column holds t, key, value, idx << 2 | op */
    size_t kw;          /* key words of the forward sort: 1, or 2 when padded */
    obl_prg prg;        /* the shuffles' randomness */
    uint64_t *col[4];   /* N rows {t, key, value, idx << 2 | op} as columns,
                           sorted by t = PRP(key); the padding rows last */
    uint64_t *y;        /* nmax records of LB_W words: the slots */
    uint8_t *keep;      /* B: representative that fits (secret) */
    uint8_t *rep;       /* B: last of its key's run (secret) */
    uint8_t *slot;      /* Sb: real slot (secret) */
    uint32_t *E;        /* nmax + 1 prefix counts */
    uint32_t *cnt;      /* S per-shard counts */
    int routed;         /* public: a batch awaits obl_lb_answer */
    int isa;            /* public: the variant of route.c (common/cpu.h) */
};

/* The shard of the image t: its top bits scaled to [0, S), a multiply. */
static inline uint64_t lb_shard(uint64_t t, unsigned S)
{
    __extension__ typedef unsigned __int128 u128;
    return (uint64_t)(((u128)t * S) >> 64);
}

#define LB_DECLARE(v)                                                                        \
    obl_err lb_route_##v(obl_lb *lb, const obl_lb_req *reqs, obl_lb_entry *out);              \
    obl_err lb_answer_##v(obl_lb *lb, const obl_lb_entry *in, obl_lb_req *reqs);
OBL_VARIANT_EACH(LB_DECLARE)

#endif /* OBL_SRC_LB_INTERNAL_H */
