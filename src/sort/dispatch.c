/* SPDX-License-Identifier: MIT */
/*
 * The sort module (bitonic.c, bsort.c, columns.c, compact.c, shuffle.c) is
 * compiled once per instruction-set variant (CMakeLists.txt,
 * OBL_VARIANT_SOURCES): its public functions as srt_<name>_<variant>
 * (sort/entry.h), its private ones renamed on the command line
 * (OBL_VARIANT_RENAME). These definitions of the public names call the
 * variant the CPU runs. A sort keeps no structure, so the choice is made
 * per call, on public CPU facts only (docs/dispatch.md); a caller that
 * keeps a structure (the load balancer) picks once, at its creation.
 */
#include <obl/sort.h>

#include "common/cpu.h"
#include "sort/entry.h"

/* The variant to run: the library's choice for a structure created now; the
 * portable one where there is none (then the CPU lacks AES-NI, which a sort
 * does not need). */
static int sd_isa(void)
{
    int v = obl_isa_pick();
    return v < 0 ? OBL_ISA_PORTABLE : v;
}

/* see obl/sort.h */
obl_err obl_sort_bitonic(void *recs, size_t n, const obl_sort_params *p)
{
    return OBL_VARIANT_PICK(srt_bitonic, sd_isa())(recs, n, p);
}

/* see obl/sort.h */
obl_err obl_shuffle(void *recs, size_t n, const obl_sort_params *p)
{
    return OBL_VARIANT_PICK(srt_shuffle, sd_isa())(recs, n, p);
}

/* see obl/sort.h */
obl_err obl_sort_shuffled(void *recs, size_t n, const obl_sort_params *p)
{
    return OBL_VARIANT_PICK(srt_shuffled, sd_isa())(recs, n, p);
}

/* see obl/sort.h */
obl_err obl_sort(void *recs, size_t n, const obl_sort_params *p)
{
    return OBL_VARIANT_PICK(srt_sort, sd_isa())(recs, n, p);
}

/* see obl/sort.h */
obl_err obl_sort_columns(uint64_t *const *cols, size_t ncol, size_t key_words, size_t n,
                         unsigned threads)
{
    return OBL_VARIANT_PICK(srt_columns, sd_isa())(cols, ncol, key_words, n, threads);
}

/* see obl/sort.h */
obl_err obl_sort_split(void *recs, size_t n, const obl_sort_params *p, uint64_t *scratch,
                       size_t scratch_bytes)
{
    return OBL_VARIANT_PICK(srt_split, sd_isa())(recs, n, p, scratch, scratch_bytes);
}

/* see obl/sort.h */
obl_err obl_compact(void *recs, size_t n, const uint8_t *flags, size_t *count,
                    const obl_sort_params *p)
{
    return OBL_VARIANT_PICK(srt_compact, sd_isa())(recs, n, flags, count, p);
}

/* see obl/sort.h */
obl_err obl_expand(void *recs, size_t n, const uint8_t *flags, const obl_sort_params *p)
{
    return OBL_VARIANT_PICK(srt_expand, sd_isa())(recs, n, flags, p);
}
