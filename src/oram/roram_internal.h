/*
 * Internals of the recursive ORAM (src/oram/roram.c) for the oblivious map
 * (src/omap/access.c), which must know before it changes anything whether
 * its next accesses will be refused.
 */
#ifndef OBL_SRC_ORAM_RORAM_INTERNAL_H
#define OBL_SRC_ORAM_RORAM_INTERNAL_H

#include <obl/oram.h>

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
