/* SPDX-License-Identifier: MIT */
/*
 * Private: the per-variant copies of the sort module's public functions.
 * The module's sources are compiled once per instruction-set variant
 * (CMakeLists.txt, OBL_VARIANT_SOURCES; docs/dispatch.md): each copy of a
 * function of obl/sort.h is srt_<name>_<variant>, a hidden name, and
 * sort/dispatch.c defines the public name, which calls the variant the CPU
 * runs. Only the dispatcher is exported.
 */
#ifndef OBL_SRC_SORT_ENTRY_H
#define OBL_SRC_SORT_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include <obl/sort.h>

#include "common/cpu.h"

#define SRT_ENTRY_DECLARE(v)                                                                 \
    obl_err srt_bitonic_##v(void *recs, size_t n, const obl_sort_params *p);                 \
    obl_err srt_shuffle_##v(void *recs, size_t n, const obl_sort_params *p);                 \
    obl_err srt_shuffled_##v(void *recs, size_t n, const obl_sort_params *p);                \
    obl_err srt_sort_##v(void *recs, size_t n, const obl_sort_params *p);                    \
    obl_err srt_split_##v(void *recs, size_t n, const obl_sort_params *p, uint64_t *scratch, \
                          size_t scratch_bytes);                                             \
    obl_err srt_columns_##v(uint64_t *const *cols, size_t ncol, size_t key_words, size_t n,  \
                            unsigned threads);                                               \
    obl_err srt_compact_##v(void *recs, size_t n, const uint8_t *flags, size_t *count,       \
                            const obl_sort_params *p);                                       \
    obl_err srt_expand_##v(void *recs, size_t n, const uint8_t *flags,                       \
                           const obl_sort_params *p);
OBL_VARIANT_EACH(SRT_ENTRY_DECLARE)

#endif /* OBL_SRC_SORT_ENTRY_H */
