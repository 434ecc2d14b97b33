/* SPDX-License-Identifier: MIT */
/*
 * The column network (src/sort/columns.c) is compiled once per
 * instruction-set variant with its external names suffixed on the command
 * line (CMakeLists.txt, OBL_VARIANT_RENAME); these definitions of the
 * unsuffixed names call the variant the CPU runs. A sort keeps no
 * structure, so the choice is made per call, on public CPU facts only
 * (docs/dispatch.md).
 */
#include <obl/sort.h>

#include "common/cpu.h"
#include "sort/columns.h"

#define CD_DECLARE(v)                                                                        \
    void col_sort_##v(const col_arr *s);                                                     \
    obl_err obl_sort_columns_##v(uint64_t *const *cols, size_t ncol, size_t key_words,      \
                                 size_t n, unsigned threads);
OBL_VARIANT_EACH(CD_DECLARE)

/* The variant to run: the library's choice for a structure created now; the
 * portable one where there is none (the callers are portable code). */
static int cd_isa(void)
{
    int v = obl_isa_pick();
    return v < 0 ? OBL_ISA_PORTABLE : v;
}

/* see columns.h */
void col_sort(const col_arr *s)
{
    OBL_VARIANT_PICK(col_sort, cd_isa())(s);
}

/* see obl/sort.h */
obl_err obl_sort_columns(uint64_t *const *cols, size_t ncol, size_t key_words, size_t n,
                         unsigned threads)
{
    return OBL_VARIANT_PICK(obl_sort_columns, cd_isa())(cols, ncol, key_words, n, threads);
}
