/* SPDX-License-Identifier: MIT */
/*
 * Internals of the recursive ORAM: the structure, shared by creation
 * (src/oram/roram.c) and the access (src/oram/ro_access.c, one copy per
 * instruction-set variant), and what the oblivious map (src/omap/access.c)
 * must know before it changes anything: whether its next accesses will be
 * refused.
 */
#ifndef OBL_SRC_ORAM_RORAM_INTERNAL_H
#define OBL_SRC_ORAM_RORAM_INTERNAL_H

#include <obl/oram.h>

#include "common/alloc.h"
#include "common/cpu.h"
#include "common/prg.h"
#include "oram/nroram_internal.h"

#define RO_MAX_LEVELS 16
#define RO_FAN_LOG 4    /* 16 positions of 32 bits per 64-byte block */
#define RO_FAN_LOG16 5  /* 32 positions of 16 bits per 64-byte block */

/* a position block's words (the block is a byte buffer) */
typedef uint16_t ro_w16 __attribute__((may_alias));
typedef uint32_t ro_w32 __attribute__((may_alias));
/* Default base-level size: see docs/oram.md, "RORAM: recursive ORAM". */
#define RO_SCAN_MAX_DEFAULT 8192u
#define RO_SCAN_VALUES_MAX 4096u

/* The access of ro_access.c. Secret: index, is_write, in/out contents, the
 * callback's work. Public: the pointers' NULL-ness, the error returned. */
typedef obl_err (*ro_access_t)(obl_roram *r, uint64_t index, uint64_t is_write, const void *in,
                               void *out, obl_oram_update_fn fn, void *ctx);

struct obl_roram {
    ro_access_t access; /* public: the variant's access, chosen at creation */
    int isa;            /* public: that variant (common/cpu.h) */
    obl_alloc_ctx ac;
    obl_prg prg;
    uint64_t n;
    size_t vs;
    uint32_t lk;        /* log2 values per data block */
    size_t bsz;         /* data block bytes: vs << lk, 33 .. 63 padded to 64 */
    uint32_t T;         /* ORAM levels; 0: the values are a scanned array */
    obl_nroram *lv[RO_MAX_LEVELS];
    uint8_t fl[RO_MAX_LEVELS]; /* l >= 1: log2 of level l's fan-out (4: 32-bit
                                  leaves of level l - 1, 5: 16-bit) */
    uint8_t sh[RO_MAX_LEVELS]; /* level l's block of data block bi is
                                  bi >> sh[l] (sh[0] = 0) */
    void *base;         /* leaves of level T - 1's blocks: 16-bit words if
                           that level has at most 2^16 leaves, else 32-bit */
    int base16;
    uint64_t nbase;
    unsigned char *scan; /* T == 0: the n values */
    unsigned char *val; /* vs bytes scratch */
    size_t base_bytes, scan_bytes;
};

/* An access cut in two (src/oram/ro_access.c, one copy per variant),
 * so that a caller can work between them (the map's batched access):
 * ro_walk checks the range, draws the new leaves and walks the levels
 * above the data level (base and position trees), which stores the data
 * block's new leaf; ro_finish then reads the data level's path ws->leaf,
 * applies the operation as obl_roram_access / _update would and remaps
 * the block. ro_access is the two back to back; the structure's accesses
 * must still come one walk, one finish at a time. ws->leaf is public (the
 * data level's path, revealed by design, 0 for a scanned array); np0 and
 * the rest are secret. Errors of ro_walk (RANGE, STATE) leave the
 * structure unchanged; a stash overflow of the walk is returned by
 * ro_finish. */
typedef struct ro_walk_state {
    uint64_t leaf; /* public: the data level's path */
    uint64_t np0;  /* secret: the data block's new leaf */
    obl_err err;   /* the walk's stash overflow, if any */
} ro_walk_state;

#define RO_SPLIT_DECLARE(v)                                                                  \
    obl_err ro_walk_##v(obl_roram *r, uint64_t index, ro_walk_state *ws);                    \
    obl_err ro_finish_##v(obl_roram *r, const ro_walk_state *ws, uint64_t index,             \
                          uint64_t is_write, const void *in, void *out,                      \
                          obl_oram_update_fn fn, void *ctx);
OBL_VARIANT_EACH(RO_SPLIT_DECLARE)

/* Brings every level out of the `full` state if it can (extra evictions,
 * as an access would); OBL_ERR_STATE if some level still has no free stash
 * slot, so that the next access would be refused. OBL_OK for a scanned
 * array. Public: the state, the result. */
obl_err ro_ready(obl_roram *r);

/* Test hook: the leaves of trees of at most 2^k leaves are packed as
 * 16-bit words (32 per position block, and the base); the others as
 * 32-bit words. k = 16 is the library's rule (the default); a test sets
 * k < 0 (every position 32 bits) or a small k (32-bit levels under 16-bit
 * ones, as trees of more than 2^16 leaves have) to reach those layouts
 * with small structures. Applies to structures created after the call. */
void ro_set_pos16_max(int k);

#endif /* OBL_SRC_ORAM_RORAM_INTERNAL_H */
