/*
 * Internals of the recursive ORAM (src/oram/roram.c) for the oblivious map
 * (src/omap/omap.c), which must know before it changes anything whether
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

/* Test hook: on (the default), the leaves of trees of at most 2^16 leaves
 * are packed as 16-bit words (32 per position block, and the base);
 * off, every position is a 32-bit word, so that tests reach that layout
 * with small structures. Applies to structures created after the call. */
void ro_set_pos16(int on);

#endif /* OBL_SRC_ORAM_RORAM_INTERNAL_H */
